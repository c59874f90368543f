//! Sign-ins in the runtime: whether the `codex` provider's ChatGPT sign-in is ready
//! (decided locally, from its files, at startup, at each turn's admission and in each
//! catalog scan), the sign-in a turn's client and a model refresh use, and the bridge
//! from the token store's sign-in to the provider's.
//!
//! Readiness never touches the network; a turn or a `model.refresh` refreshes the
//! token when it is due, on the thread that does the work. `review` is what the
//! commands that sign in and out, and `doctor`, read.

mod review;

pub use review::{ChatGptContext, McpContext, SignIns, chatgpt_context, mcp_context, review};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use magi_auth::chatgpt::{Found, Places};
use magi_auth::oauth::chatgpt::Endpoints;
use magi_auth::{SignIn, SignInErrorKind};
use magi_config::{ConfigError, Credential, Env, ProviderDefinition};
use magi_provider::{Bearer, BoxFuture, ProviderError, SignInFailure};

/// Codex's home as this environment names it: `$CODEX_HOME`, else `$HOME/.codex`.
pub fn codex_home(env: &Env) -> Option<PathBuf> {
    magi_auth::codex::codex_home(env.get_os("CODEX_HOME"), env.get_os("HOME"))
}

/// Where the ChatGPT sign-in may be for `MC_HOME` at `home`.
pub fn chatgpt_places(home: &Path, env: &Env) -> Places {
    Places::new(home, codex_home(env))
}

/// Whether the selected provider's sign-in (if it takes one) is ready at this moment,
/// decided locally; the error says why not and how to sign in.
pub fn check_ready(
    home: &Path,
    env: &Env,
    provider: &ProviderDefinition,
) -> Result<(), ConfigError> {
    match &provider.credential {
        Credential::ChatGpt { .. } => {
            magi_auth::chatgpt::ready(&chatgpt_places(home, env), SystemTime::now())
                .map(drop)
                .map_err(ConfigError::ProviderUnavailable)
        }
        _ => Ok(()),
    }
}

/// Whether a provider with `credential` can authenticate now, decided locally: a
/// required key present, or a usable sign-in.
pub(crate) fn authenticated(home: &Path, env: &Env, credential: &Credential) -> bool {
    match credential {
        Credential::None | Credential::OptionalEnv(_) => true,
        Credential::ChatGpt { .. } => {
            magi_auth::chatgpt::ready(&chatgpt_places(home, env), SystemTime::now()).is_ok()
        }
        credential => magi_config::read_credential(credential, env).is_some(),
    }
}

/// The ChatGPT sign-in a turn or a model refresh of `provider` uses, when it takes
/// one: found and ready now, or the reason it is not.
pub(crate) fn chatgpt_sign_in(
    home: &Path,
    env: &Env,
    provider: &ProviderDefinition,
) -> Option<Result<(Found, Arc<SignIn>), String>> {
    let Credential::ChatGpt { auth_url } = &provider.credential else {
        return None;
    };
    Some(
        magi_auth::chatgpt::ready(&chatgpt_places(home, env), SystemTime::now()).map(|found| {
            let sign_in = magi_auth::chatgpt::sign_in(&found, &Endpoints::new(auth_url));
            (found, Arc::new(sign_in))
        }),
    )
}

/// The token store's sign-in as a provider's.
pub struct ProviderSignIn(pub Arc<SignIn>);

impl magi_provider::SignIn for ProviderSignIn {
    fn bearer<'a>(
        &'a self,
        rejected: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Bearer, SignInFailure>> {
        Box::pin(async move {
            self.0
                .token(rejected)
                .await
                .map(|current| Bearer {
                    token: current.access_token,
                    account_id: current.account_id,
                })
                .map_err(|e| SignInFailure {
                    error: match e.kind {
                        SignInErrorKind::Unavailable => ProviderError::Unavailable,
                        SignInErrorKind::Missing | SignInErrorKind::Refused => {
                            ProviderError::AuthenticationFailed
                        }
                    },
                    what: e.what,
                    fix: e.fix,
                })
        })
    }
}
