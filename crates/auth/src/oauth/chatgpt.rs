//! ChatGPT's sign-in, as Codex's open-source client makes it: the browser flow (PKCE,
//! a loopback callback on one of the two ports Codex registered), the device-code flow
//! for a machine without a browser, and revocation. Every URL hangs off one base, the
//! issuer (`https://auth.openai.com`), which settings may point elsewhere.

use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::callback::{self, Ports};
use super::http::{Body, OAuthHttp, refusal, shown_url};
use super::pkce::{Pkce, random};
use super::refresh::{Grant, tokens_of};
use super::{OAuthError, OAuthErrorKind, field};
use crate::jwt;
use crate::tokens::Tokens;

/// The OAuth client ChatGPT's sign-in knows: Codex's public client. Its registered
/// redirect URIs are the loopback ports below, so no other client or port works.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The issuer all of the sign-in's URLs hang off.
pub const DEFAULT_AUTH_URL: &str = "https://auth.openai.com";
/// The callback ports Codex registered, in order of preference.
pub const CALLBACK_PORTS: [u16; 2] = [1455, 1457];
/// The callback's path.
const CALLBACK_PATH: &str = "/auth/callback";
/// What the sign-in asks for: identity, and a refresh token.
const SCOPE: &str = "openid profile email offline_access";
/// Who asks, as the sign-in's pages and the ChatGPT backend know Codex's clients.
pub const ORIGINATOR: &str = "codex_cli_rs";
/// The device-code wait between polls when the server names none.
const DEFAULT_POLL: Duration = Duration::from_secs(5);
/// Fewest and most seconds between polls, whatever the server says.
const POLL_BOUNDS: (u64, u64) = (1, 30);

/// The sign-in's endpoints, all under one issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    auth_url: String,
}

impl Endpoints {
    /// The endpoints under `auth_url` (`https://auth.openai.com`, or a test server).
    pub fn new(auth_url: &str) -> Endpoints {
        Endpoints {
            auth_url: auth_url.trim_end_matches('/').to_owned(),
        }
    }

    /// Where the browser signs in.
    pub fn authorize(&self) -> String {
        format!("{}/oauth/authorize", self.auth_url)
    }

    /// Where codes and refresh tokens are exchanged.
    pub fn token(&self) -> String {
        format!("{}/oauth/token", self.auth_url)
    }

    /// Where tokens are revoked.
    pub fn revoke(&self) -> String {
        format!("{}/oauth/revoke", self.auth_url)
    }

    fn device_code(&self) -> String {
        format!("{}/api/accounts/deviceauth/usercode", self.auth_url)
    }

    fn device_token(&self) -> String {
        format!("{}/api/accounts/deviceauth/token", self.auth_url)
    }

    fn device_page(&self) -> String {
        format!("{}/codex/device", self.auth_url)
    }

    fn device_redirect(&self) -> String {
        format!("{}/deviceauth/callback", self.auth_url)
    }

    /// How a refresh of this sign-in is asked for.
    pub fn grant(&self) -> Grant {
        Grant::ChatGpt {
            token_url: self.token(),
            client_id: CLIENT_ID.to_owned(),
        }
    }
}

/// A completed sign-in: the tokens and the account they act for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The tokens.
    pub tokens: Tokens,
    /// The ChatGPT account (from the ID token's claims).
    pub account_id: Option<String>,
}

/// A browser sign-in under way: the URL to open, and the callback waiting for it.
#[derive(Debug)]
pub struct BrowserSignIn {
    /// The URL the person opens.
    pub url: String,
    /// The port the callback listens on.
    pub port: u16,
    endpoints: Endpoints,
    callback: callback::Callback,
    pkce: Pkce,
    state: String,
    redirect_uri: String,
}

/// Starts a browser sign-in: listens on the first free registered port and makes the
/// authorization URL.
pub async fn start_browser(endpoints: &Endpoints) -> Result<BrowserSignIn, OAuthError> {
    let callback = callback::bind(Ports::Fixed(&CALLBACK_PORTS)).await?;
    let pkce = Pkce::new()?;
    let state = random(32)?;
    let redirect_uri = format!("http://localhost:{}{CALLBACK_PATH}", callback.port);
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", CLIENT_ID)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("scope", SCOPE)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("id_token_add_organizations", "true")
        .append_pair("codex_cli_simplified_flow", "true")
        .append_pair("state", &state)
        .append_pair("originator", ORIGINATOR)
        .finish();
    Ok(BrowserSignIn {
        url: format!("{}?{query}", endpoints.authorize()),
        port: callback.port,
        endpoints: endpoints.clone(),
        callback,
        pkce,
        state,
        redirect_uri,
    })
}

impl BrowserSignIn {
    /// Waits at most `wait` for the browser, then exchanges the code for tokens.
    pub async fn finish(self, wait: Duration) -> Result<SignedIn, OAuthError> {
        let code = self.callback.code(CALLBACK_PATH, &self.state, wait).await?;
        exchange(
            &self.endpoints,
            &code,
            &self.redirect_uri,
            &self.pkce.verifier,
        )
        .await
    }
}

/// Exchanges an authorization code for tokens (form-encoded, RFC 6749 §4.1.3).
async fn exchange(
    endpoints: &Endpoints,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<SignedIn, OAuthError> {
    let url = endpoints.token();
    let http = OAuthHttp::for_url(&url)?;
    let answer = http
        .send(
            "the token endpoint",
            &url,
            Body::Form(vec![
                ("grant_type", "authorization_code".to_owned()),
                ("code", code.to_owned()),
                ("redirect_uri", redirect_uri.to_owned()),
                ("client_id", CLIENT_ID.to_owned()),
                ("code_verifier", verifier.to_owned()),
            ]),
        )
        .await?;
    if !answer.ok() {
        return Err(refusal("the token endpoint", &shown_url(&url), &answer));
    }
    let tokens = tokens_of(&answer, "the token endpoint", SystemTime::now())?;
    if tokens.refresh_token.is_none() {
        return Err(OAuthError::protocol(format!(
            "the token endpoint at {} gave no refresh token, so the sign-in would end within \
             the hour",
            shown_url(&url)
        )));
    }
    let account_id = tokens
        .id_token
        .as_deref()
        .and_then(jwt::claims)
        .and_then(|c| c.account_id)
        .or_else(|| jwt::claims(&tokens.access_token).and_then(|c| c.account_id));
    Ok(SignedIn { tokens, account_id })
}

/// A device-code sign-in under way: the page and the code the person enters there.
#[derive(Debug)]
pub struct DeviceSignIn {
    /// The page to open on any device.
    pub verification_url: String,
    /// The one-time code to enter there.
    pub user_code: String,
    endpoints: Endpoints,
    device_auth_id: String,
    interval: Duration,
}

/// Asks for a device code. ChatGPT gives one only to accounts that enabled device-code
/// sign-in in their security settings: a refusal says so.
pub async fn start_device(endpoints: &Endpoints) -> Result<DeviceSignIn, OAuthError> {
    let url = endpoints.device_code();
    let http = OAuthHttp::for_url(&url)?;
    let answer = http
        .send(
            "the device-code endpoint",
            &url,
            Body::Json(json!({ "client_id": CLIENT_ID })),
        )
        .await?;
    if matches!(answer.status, 400 | 401 | 403 | 404) {
        return Err(OAuthError {
            kind: OAuthErrorKind::Refused,
            message: format!(
                "ChatGPT did not give a device code (the device-code endpoint at {} answered \
                 {}): device-code sign-in must first be enabled in ChatGPT's settings, under \
                 Security; enable it there and try again, or sign in with the browser: \
                 magi-code login codex",
                shown_url(&url),
                answer.error_said()
            ),
        });
    }
    if !answer.ok() {
        return Err(refusal(
            "the device-code endpoint",
            &shown_url(&url),
            &answer,
        ));
    }
    let object = answer
        .object()
        .ok_or_else(|| OAuthError::protocol("the device-code endpoint did not answer JSON"))?;
    let user_code = super::optional(&object, "user_code")
        .or_else(|| super::optional(&object, "usercode"))
        .ok_or_else(|| OAuthError::protocol("the device-code endpoint gave no user code"))?;
    Ok(DeviceSignIn {
        verification_url: endpoints.device_page(),
        user_code,
        device_auth_id: field(&object, "device_auth_id", "the device-code endpoint")?,
        interval: poll_interval(object.get("interval")),
        endpoints: endpoints.clone(),
    })
}

/// The wait between polls a server asked for (a number or a string of seconds), within
/// bounds.
pub(crate) fn poll_interval(value: Option<&Value>) -> Duration {
    let secs = value.and_then(|v| v.as_u64().or_else(|| v.as_str()?.trim().parse().ok()));
    secs.map_or(DEFAULT_POLL, |s| {
        Duration::from_secs(s.clamp(POLL_BOUNDS.0, POLL_BOUNDS.1))
    })
}

impl DeviceSignIn {
    /// Polls until the person has entered the code (at most `wait`), then exchanges the
    /// authorization code the server hands over.
    pub async fn finish(self, wait: Duration) -> Result<SignedIn, OAuthError> {
        let url = self.endpoints.device_token();
        let http = OAuthHttp::for_url(&url)?;
        let deadline = Instant::now() + wait;
        loop {
            let answer = http
                .send(
                    "the device-code endpoint",
                    &url,
                    Body::Json(json!({
                        "device_auth_id": self.device_auth_id,
                        "user_code": self.user_code,
                    })),
                )
                .await?;
            if answer.ok() {
                let object = answer.object().ok_or_else(|| {
                    OAuthError::protocol("the device-code endpoint did not answer JSON")
                })?;
                let what = "the device-code endpoint";
                let code = field(&object, "authorization_code", what)?;
                let verifier = field(&object, "code_verifier", what)?;
                return exchange(
                    &self.endpoints,
                    &code,
                    &self.endpoints.device_redirect(),
                    &verifier,
                )
                .await;
            }
            // 403 and 404 mean "not yet": the person has not entered the code.
            if !matches!(answer.status, 403 | 404) {
                return Err(refusal(
                    "the device-code endpoint",
                    &shown_url(&url),
                    &answer,
                ));
            }
            if Instant::now() + self.interval > deadline {
                return Err(OAuthError::local(format!(
                    "the code was not entered within {} s: run the command again for a new \
                     code",
                    wait.as_secs()
                )));
            }
            tokio::time::sleep(self.interval).await;
        }
    }
}

/// Revokes the sign-in's refresh token (and with it the session), best effort for the
/// caller: an error says what the server answered.
pub async fn revoke(endpoints: &Endpoints, tokens: &Tokens) -> Result<(), OAuthError> {
    let (token, hint) = match &tokens.refresh_token {
        Some(refresh) => (refresh.as_str(), "refresh_token"),
        None => (tokens.access_token.as_str(), "access_token"),
    };
    let url = endpoints.revoke();
    let http = OAuthHttp::for_url(&url)?;
    let answer = http
        .send(
            "the revocation endpoint",
            &url,
            Body::Json(json!({
                "token": token,
                "token_type_hint": hint,
                "client_id": CLIENT_ID,
            })),
        )
        .await?;
    if answer.ok() {
        Ok(())
    } else {
        Err(refusal(
            "the revocation endpoint",
            &shown_url(&url),
            &answer,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_are_read_in_either_form_and_bounded() {
        assert_eq!(poll_interval(Some(&json!("3"))), Duration::from_secs(3));
        assert_eq!(poll_interval(Some(&json!(2))), Duration::from_secs(2));
        assert_eq!(poll_interval(Some(&json!(0))), Duration::from_secs(1));
        assert_eq!(poll_interval(Some(&json!(999))), Duration::from_secs(30));
        assert_eq!(poll_interval(Some(&json!("soon"))), DEFAULT_POLL);
        assert_eq!(poll_interval(None), DEFAULT_POLL);
    }
}
