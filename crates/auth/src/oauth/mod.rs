//! The OAuth flows that fill and refresh sign-ins: the exchanges with authorization
//! servers (`http`), PKCE and the random values it needs (`pkce`), the loopback page
//! a browser comes back to (`callback`), ChatGPT's sign-in as Codex's client makes it
//! (`chatgpt`), an MCP server's sign-in by the MCP authorization rules (`mcp`), and
//! the refresh of a token either way (`refresh`).

pub mod callback;
pub mod chatgpt;
pub mod http;
pub mod mcp;
pub mod pkce;
pub mod refresh;

/// What kind of failure an OAuth exchange had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthErrorKind {
    /// The server said no: a grant, a code or a client refused, revoked, expired or
    /// already used. A new sign-in is the way out.
    Refused,
    /// The server could not be reached, failed (5xx), or did not answer in time.
    Unreachable,
    /// The server answered something the protocol does not allow here: a redirect, a
    /// body that is not the JSON expected, a missing field.
    Protocol,
    /// The sign-in could not be made on this side: a port in use, nothing that can
    /// register this client, no answer from the person in time.
    Local,
}

/// A failed OAuth exchange, said for a person: what happened and where (the
/// endpoint's URL, never a token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    /// The kind of failure.
    pub kind: OAuthErrorKind,
    /// The sentence.
    pub message: String,
}

impl std::fmt::Display for OAuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OAuthError {}

impl OAuthError {
    pub(crate) fn local(message: impl Into<String>) -> OAuthError {
        OAuthError {
            kind: OAuthErrorKind::Local,
            message: message.into(),
        }
    }

    pub(crate) fn protocol(message: impl Into<String>) -> OAuthError {
        OAuthError {
            kind: OAuthErrorKind::Protocol,
            message: message.into(),
        }
    }
}

/// A string field of a JSON answer, non-empty; its absence is a protocol error naming
/// the endpoint and the field.
pub(crate) fn field(
    object: &serde_json::Map<String, serde_json::Value>,
    name: &str,
    what: &str,
) -> Result<String, OAuthError> {
    optional(object, name)
        .ok_or_else(|| OAuthError::protocol(format!("{what} answered without `{name}`")))
}

/// A string field of a JSON answer, when it is there and non-empty.
pub(crate) fn optional(
    object: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Option<String> {
    object
        .get(name)
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
