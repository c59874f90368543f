//! What `magi-mock-mcp --oauth-issuer URL` checks before serving MCP: a bearer token
//! its authorization server issued (a JWT whose `iss` is that server and whose `exp`
//! has not passed) and that the test has not rejected since (listed in the file of
//! `--rejected-tokens`). Without one it answers 401 with a challenge pointing at its
//! protected resource metadata (RFC 9728), which it serves too.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// The path of the protected resource metadata, for an MCP endpoint at `/mcp`.
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Whether `authorization` (the header's value) carries a token of `issuer` that is
/// still valid and not listed in `rejected` (a file of one token a line, if any).
pub fn admits(issuer: &str, authorization: Option<&str>, rejected: Option<&Path>) -> bool {
    let Some(token) = authorization.and_then(|h| h.strip_prefix("Bearer ")) else {
        return false;
    };
    if let Some(path) = rejected
        && let Ok(listed) = std::fs::read_to_string(path)
        && listed.lines().any(|line| line.trim() == token)
    {
        return false;
    }
    let Some(payload) = token.split('.').nth(1) else {
        return false;
    };
    let Some(claims) = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    else {
        return false;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    claims["iss"] == issuer && claims["exp"].as_u64().is_some_and(|exp| exp > now)
}

/// The challenge of a 401 from the server at `origin`.
pub fn challenge(origin: &str) -> String {
    format!("Bearer resource_metadata=\"{origin}{RESOURCE_METADATA_PATH}\", scope=\"mcp\"")
}

/// The protected resource metadata of the server at `origin`.
pub fn resource_metadata(origin: &str, issuer: &str) -> Value {
    json!({
        "resource": format!("{origin}/mcp"),
        "authorization_servers": [issuer],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    })
}
