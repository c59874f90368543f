//! Exchanging a refresh token for new tokens: ChatGPT's way (a JSON body to its token
//! endpoint, as Codex does) or RFC 6749's (a form, with the resource of RFC 8707 for an
//! MCP server).

use std::time::{Duration, SystemTime};

use serde_json::json;

use super::http::{Answer, Body, OAuthHttp, refusal, shown_url};
use super::{OAuthError, OAuthErrorKind, field, optional};
use crate::tokens::Tokens;

/// The OpenAI code for a refresh token that was already exchanged: someone else (Codex,
/// another backend) refreshed first.
pub const REUSED: &str = "refresh_token_reused";

/// How a refresh is asked for.
#[derive(Debug, Clone)]
pub enum Grant {
    /// ChatGPT's sign-in: JSON `{client_id, grant_type, refresh_token}`.
    ChatGpt {
        /// The token endpoint.
        token_url: String,
        /// The client the sign-in was made with.
        client_id: String,
    },
    /// RFC 6749 §6, form-encoded, with the resource indicator.
    OAuth {
        /// The token endpoint.
        token_url: String,
        /// The registered client.
        client_id: String,
        /// Its secret, when registration gave one.
        client_secret: Option<String>,
        /// The resource the tokens are for (RFC 8707).
        resource: String,
    },
}

/// A refused or failed refresh, with the server's error code when it gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshFailure {
    /// What happened.
    pub error: OAuthError,
    /// The OAuth error code (`invalid_grant`, `refresh_token_reused`, …).
    pub code: Option<String>,
}

impl RefreshFailure {
    /// Whether the server refused because the refresh token was already used.
    pub fn reused(&self) -> bool {
        self.code.as_deref() == Some(REUSED)
    }
}

/// Exchanges `refresh_token`. The new tokens keep the old refresh token when the
/// server did not rotate it.
pub async fn refresh(grant: &Grant, refresh_token: &str) -> Result<Tokens, RefreshFailure> {
    let (token_url, body) = match grant {
        Grant::ChatGpt {
            token_url,
            client_id,
        } => (
            token_url,
            Body::Json(json!({
                "client_id": client_id,
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
            })),
        ),
        Grant::OAuth {
            token_url,
            client_id,
            client_secret,
            resource,
        } => {
            let mut pairs = vec![
                ("grant_type", "refresh_token".to_owned()),
                ("refresh_token", refresh_token.to_owned()),
                ("client_id", client_id.clone()),
                ("resource", resource.clone()),
            ];
            if let Some(secret) = client_secret {
                pairs.push(("client_secret", secret.clone()));
            }
            (token_url, Body::Form(pairs))
        }
    };
    let failed = |error: OAuthError| RefreshFailure { error, code: None };
    let http = OAuthHttp::for_url(token_url).map_err(failed)?;
    let answer = http
        .send("the token endpoint", token_url, body)
        .await
        .map_err(failed)?;
    if !answer.ok() {
        return Err(refused(token_url, &answer));
    }
    let tokens = tokens_of(&answer, "the token endpoint", SystemTime::now()).map_err(failed)?;
    Ok(Tokens {
        refresh_token: tokens
            .refresh_token
            .or_else(|| Some(refresh_token.to_owned())),
        ..tokens
    })
}

/// The tokens of a successful token answer: `access_token` required, the others when
/// given; `expires_in` read from `now`.
pub(crate) fn tokens_of(
    answer: &Answer,
    what: &str,
    now: SystemTime,
) -> Result<Tokens, OAuthError> {
    let object = answer
        .object()
        .ok_or_else(|| OAuthError::protocol(format!("{what} did not answer a JSON object")))?;
    let expires_in = object
        .get("expires_in")
        .and_then(|v| v.as_u64().or_else(|| v.as_str()?.trim().parse().ok()));
    Ok(Tokens {
        access_token: field(&object, "access_token", what)?,
        refresh_token: optional(&object, "refresh_token"),
        id_token: optional(&object, "id_token"),
        expires_at: expires_in.and_then(|secs| now.checked_add(Duration::from_secs(secs))),
    })
}

/// A refused refresh, said with what the code means.
fn refused(token_url: &str, answer: &Answer) -> RefreshFailure {
    let code = answer.error_code();
    let shown = shown_url(token_url);
    let mut error = refusal("the token endpoint", &shown, answer);
    let meaning = match code.as_deref() {
        Some("refresh_token_expired") => Some("the refresh token has expired"),
        Some(REUSED) => Some("the refresh token was already used (refreshed elsewhere)"),
        Some("refresh_token_invalidated") => Some("the refresh token was revoked"),
        Some("invalid_grant") => Some("the refresh token is no longer valid"),
        _ => None,
    };
    if let Some(meaning) = meaning {
        error = OAuthError {
            kind: OAuthErrorKind::Refused,
            message: format!(
                "the token endpoint at {shown} refused the refresh: {meaning} ({})",
                answer.error_said()
            ),
        };
    }
    RefreshFailure { error, code }
}
