//! The HTTP exchanges with OAuth servers: one client with a deadline per exchange,
//! redirects never followed (a token request must not be carried elsewhere), answers
//! read within `OAUTH_RESPONSE_BYTES`, and an error's body read only for its code.

use std::time::Duration;

use magi_protocol::limits::{OAUTH_REQUEST_MS, OAUTH_RESPONSE_BYTES, PROVIDER_CONNECT_TIMEOUT_MS};
use magi_protocol::text::sanitize;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use serde_json::Value;

use super::{OAuthError, OAuthErrorKind};

/// Longest piece of a server's own error description shown to a person.
const DESCRIPTION_CHARS: usize = 200;

/// What a request sends.
#[derive(Debug, Clone)]
pub enum Body {
    /// A JSON object (OpenAI's sign-in endpoints).
    Json(Value),
    /// `application/x-www-form-urlencoded` pairs (RFC 6749).
    Form(Vec<(&'static str, String)>),
    /// Nothing (a `GET`).
    None,
}

/// A server's answer: its status, the headers a flow reads, and its body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// `Location`, for a redirect.
    pub location: Option<String>,
    /// `WWW-Authenticate`, for a 401.
    pub www_authenticate: Option<String>,
    /// The body, at most `OAUTH_RESPONSE_BYTES`.
    pub body: Vec<u8>,
}

impl Answer {
    /// Whether the status is a success.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as a JSON object, if it is one.
    pub fn object(&self) -> Option<serde_json::Map<String, Value>> {
        match serde_json::from_slice(&self.body) {
            Ok(Value::Object(object)) => Some(object),
            _ => None,
        }
    }

    /// The OAuth error code: `error` as a string (RFC 6749), or `error.code` (OpenAI),
    /// when it is a short identifier; anything else is no code.
    pub fn error_code(&self) -> Option<String> {
        let object = self.object()?;
        let code = match object.get("error")? {
            Value::String(code) => code.clone(),
            Value::Object(error) => error
                .get("code")
                .or_else(|| error.get("type"))?
                .as_str()?
                .to_owned(),
            _ => return None,
        };
        let identifier = !code.is_empty()
            && code.len() <= 64
            && code
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        identifier.then_some(code)
    }

    /// The server's own description of its error, made safe to show and shortened.
    pub fn error_description(&self) -> Option<String> {
        let object = self.object()?;
        let text = object
            .get("error_description")
            .and_then(Value::as_str)
            .or_else(|| object.get("error")?.get("message")?.as_str())?;
        let safe: String = sanitize(text).chars().take(DESCRIPTION_CHARS).collect();
        (!safe.trim().is_empty()).then_some(safe)
    }

    /// The error as a person reads it: `<code>: <description>`, or the status alone.
    pub fn error_said(&self) -> String {
        match (self.error_code(), self.error_description()) {
            (Some(code), Some(description)) => format!("{code}: {description}"),
            (Some(code), None) => code,
            (None, Some(description)) => format!("HTTP {}: {description}", self.status),
            (None, None) => format!("HTTP {}", self.status),
        }
    }
}

/// A client for OAuth servers: plain `http://` ones (loopback test servers, a local
/// proxy) are reached without loading the system's root certificates.
#[derive(Debug, Clone)]
pub struct OAuthHttp {
    client: reqwest::Client,
}

impl OAuthHttp {
    /// A client for requests to `url`'s kind of server.
    pub fn for_url(url: &str) -> Result<OAuthHttp, OAuthError> {
        let plain = url
            .get(..7)
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(PROVIDER_CONNECT_TIMEOUT_MS))
            .timeout(Duration::from_millis(OAUTH_REQUEST_MS))
            .redirect(reqwest::redirect::Policy::none());
        if plain {
            builder = builder.tls_certs_only(Vec::<reqwest::Certificate>::new());
        }
        let client = builder.build().map_err(|e| OAuthError {
            kind: OAuthErrorKind::Unreachable,
            message: format!("no HTTP client could be made ({e})"),
        })?;
        Ok(OAuthHttp { client })
    }

    /// One exchange: `body` sent to `url` (a `GET` without a body), the answer read
    /// within its bound. `what` names the endpoint for the messages ("the token
    /// endpoint").
    pub async fn send(&self, what: &str, url: &str, body: Body) -> Result<Answer, OAuthError> {
        let shown = shown_url(url);
        let parsed = reqwest::Url::parse(url).map_err(|_| OAuthError {
            kind: OAuthErrorKind::Protocol,
            message: format!("{what} {shown:?} is not a valid URL"),
        })?;
        let request = match body {
            Body::None => self.client.get(parsed),
            Body::Json(value) => self
                .client
                .post(parsed)
                .header(CONTENT_TYPE, "application/json")
                .body(value.to_string()),
            Body::Form(pairs) => {
                let encoded = url::form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())))
                    .finish();
                self.client
                    .post(parsed)
                    .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .body(encoded)
            }
        };
        let mut response = request
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| OAuthError {
                kind: OAuthErrorKind::Unreachable,
                message: format!("{what} at {shown} could not be reached ({})", cause(&e)),
            })?;
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let (location, www_authenticate) = (header(LOCATION), header(WWW_AUTHENTICATE));
        let status = response.status().as_u16();
        let too_large = || OAuthError {
            kind: OAuthErrorKind::Protocol,
            message: format!("{what} at {shown} answered more than {OAUTH_RESPONSE_BYTES} bytes"),
        };
        if response
            .content_length()
            .is_some_and(|n| n > OAUTH_RESPONSE_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > OAUTH_RESPONSE_BYTES {
                        return Err(too_large());
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Err(OAuthError {
                        kind: OAuthErrorKind::Unreachable,
                        message: format!("{what} at {shown} broke off its answer ({})", cause(&e)),
                    });
                }
            }
        }
        Ok(Answer {
            status,
            location,
            www_authenticate,
            body,
        })
    }

    /// An exchange whose answer must be a success with a JSON object: a redirect, an
    /// error status or another body is an error naming the endpoint.
    pub async fn object(
        &self,
        what: &str,
        url: &str,
        body: Body,
    ) -> Result<serde_json::Map<String, Value>, OAuthError> {
        let answer = self.send(what, url, body).await?;
        let shown = shown_url(url);
        if !answer.ok() {
            return Err(refusal(what, &shown, &answer));
        }
        answer.object().ok_or_else(|| OAuthError {
            kind: OAuthErrorKind::Protocol,
            message: format!("{what} at {shown} did not answer a JSON object"),
        })
    }
}

/// What a failed answer means: a redirect (never followed), a refusal (4xx) or the
/// server failing (5xx).
pub fn refusal(what: &str, shown: &str, answer: &Answer) -> OAuthError {
    if (300..400).contains(&answer.status) {
        let to = answer.location.as_deref().map_or_else(
            || "elsewhere".to_owned(),
            |l| format!("to {}", shown_url(l)),
        );
        return OAuthError {
            kind: OAuthErrorKind::Protocol,
            message: format!(
                "{what} at {shown} answered with a redirect {to} (HTTP {}), which is not \
                 followed: check the URL in the settings",
                answer.status
            ),
        };
    }
    let kind = if answer.status >= 500 || answer.status == 429 {
        OAuthErrorKind::Unreachable
    } else {
        OAuthErrorKind::Refused
    };
    OAuthError {
        kind,
        message: format!(
            "{what} at {shown} refused the request ({})",
            answer.error_said()
        ),
    }
}

/// A URL as it may be shown: no user information, query or fragment.
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => sanitize(url.split(['?', '#']).next().unwrap_or_default()),
    }
}

/// The kind of transport failure, in a few words.
fn cause(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "no answer in time"
    } else if error.is_connect() {
        "the connection failed"
    } else {
        "the request failed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            location: None,
            www_authenticate: None,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn error_codes_of_both_shapes_are_read() {
        let rfc = answer(
            400,
            r#"{"error":"invalid_grant","error_description":"revoked"}"#,
        );
        assert_eq!(rfc.error_code().as_deref(), Some("invalid_grant"));
        assert_eq!(rfc.error_said(), "invalid_grant: revoked");
        let openai = answer(
            401,
            r#"{"error":{"code":"refresh_token_reused","message":"already used"}}"#,
        );
        assert_eq!(openai.error_code().as_deref(), Some("refresh_token_reused"));
        assert_eq!(openai.error_said(), "refresh_token_reused: already used");
        // No code out of prose, no token out of a description.
        let odd = answer(
            400,
            r#"{"error":"two words","error_description":"sk-abcdef123"}"#,
        );
        assert_eq!(odd.error_code(), None);
        assert_eq!(odd.error_said(), "HTTP 400: [redacted]");
        assert_eq!(answer(502, "<html>").error_said(), "HTTP 502");
    }

    #[test]
    fn a_redirect_is_named_and_not_followed() {
        let mut moved = answer(302, "");
        moved.location = Some("https://elsewhere.example/login?code=secret".into());
        let error = refusal("the token endpoint", "https://auth.example/token", &moved);
        assert_eq!(error.kind, OAuthErrorKind::Protocol);
        assert!(
            error.message.contains("to https://elsewhere.example/login")
                && !error.message.contains("secret"),
            "{}",
            error.message
        );
        assert_eq!(
            refusal("x", "u", &answer(503, "")).kind,
            OAuthErrorKind::Unreachable
        );
    }
}
