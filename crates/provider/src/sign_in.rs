//! A credential that changes: a sign-in's access token, asked for before each request
//! (refreshed first when it is due) and once more after the provider refused it. The
//! runtime implements it over its token store; this crate only asks.

use crate::{BoxFuture, ProviderError};

/// The token to send, and the account it acts for. `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct Bearer {
    /// The access token.
    pub token: String,
    /// The ChatGPT account, sent as `chatgpt-account-id`.
    pub account_id: Option<String>,
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bearer")
            .field("token", &"[hidden]")
            .field("account_id", &self.account_id)
            .finish()
    }
}

/// Why no token could be had, said for a person: never a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInFailure {
    /// [`ProviderError::AuthenticationFailed`] when a new sign-in is needed,
    /// [`ProviderError::Unavailable`] when the refresh could not be made now.
    pub error: ProviderError,
    /// What happened.
    pub what: String,
    /// What to do.
    pub fix: String,
}

/// Where a signed-in client gets its token.
pub trait SignIn: Send + Sync {
    /// The token to send now. `rejected` is a token the provider just refused: the
    /// answer is another one (refreshed), or a failure.
    fn bearer<'a>(
        &'a self,
        rejected: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Bearer, SignInFailure>>;
}
