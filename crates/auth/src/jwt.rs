//! What a sign-in's tokens say about themselves: the claims of a JSON Web Token, read
//! without checking its signature (the token is ours, from our own sign-in; only its
//! issuer can verify it, and only the expiry and the account are read here).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

/// The claims under which OpenAI's tokens name the ChatGPT account and plan.
const OPENAI_AUTH_CLAIM: &str = "https://api.openai.com/auth";
/// The claims under which OpenAI's tokens may carry the email.
const OPENAI_PROFILE_CLAIM: &str = "https://api.openai.com/profile";

/// What a token's claims say, where they say it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    /// When the token expires (`exp`).
    pub expires_at: Option<SystemTime>,
    /// The person's email (`email`, or OpenAI's profile claim).
    pub email: Option<String>,
    /// The ChatGPT account (workspace) the token acts for.
    pub account_id: Option<String>,
    /// The ChatGPT plan (`plus`, `pro`, …).
    pub plan: Option<String>,
}

/// The claims of `token`, or `None` when it is not a JWT: three dot-separated parts
/// whose middle one is base64url of a JSON object.
pub fn claims(token: &str) -> Option<Claims> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(_signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if header.is_empty() || payload.is_empty() {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let Value::Object(object) = serde_json::from_slice::<Value>(&bytes).ok()? else {
        return None;
    };
    let text = |map: &Map<String, Value>, key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let openai = object.get(OPENAI_AUTH_CLAIM).and_then(Value::as_object);
    let profile = object.get(OPENAI_PROFILE_CLAIM).and_then(Value::as_object);
    Some(Claims {
        // A negative or absurd `exp` is no expiry anyone can use: unknown.
        expires_at: object
            .get("exp")
            .and_then(Value::as_u64)
            .and_then(|secs| UNIX_EPOCH.checked_add(Duration::from_secs(secs))),
        email: text(&object, "email").or_else(|| profile.and_then(|p| text(p, "email"))),
        account_id: openai.and_then(|o| text(o, "chatgpt_account_id")),
        plan: openai.and_then(|o| text(o, "chatgpt_plan_type")),
    })
}

/// A JWT with `claims` as its payload and a fixed fake signature: what the mock OAuth
/// servers of the tests issue, and what the tests here read back.
pub fn unsigned(claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.c2lnbmF0dXJl")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_claims_are_read() {
        let token = unsigned(&json!({
            "exp": 1_700_000_000u64,
            "https://api.openai.com/profile": {"email": "ada@example.com"},
            "https://api.openai.com/auth": {
                "chatgpt_account_id": "acct-1",
                "chatgpt_plan_type": "plus"
            }
        }));
        let claims = claims(&token).unwrap();
        assert_eq!(
            claims.expires_at,
            Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        );
        assert_eq!(claims.email.as_deref(), Some("ada@example.com"));
        assert_eq!(claims.account_id.as_deref(), Some("acct-1"));
        assert_eq!(claims.plan.as_deref(), Some("plus"));
    }

    #[test]
    fn a_token_that_is_not_a_jwt_has_no_claims() {
        for token in [
            "",
            "opaque-access-token",
            "a.b",
            "a.b.c.d",
            ".e30.sig",
            "eyJ.!!!.sig",
            // A payload that is JSON but not an object.
            &format!("h.{}.s", URL_SAFE_NO_PAD.encode("[1]")),
        ] {
            assert_eq!(claims(token), None, "{token}");
        }
        // A JWT without `exp` has claims, and no expiry.
        let token = unsigned(&json!({"email": "e@x"}));
        assert_eq!(claims(&token).unwrap().expires_at, None);
        let token = unsigned(&json!({"exp": -5}));
        assert_eq!(claims(&token).unwrap().expires_at, None);
    }
}
