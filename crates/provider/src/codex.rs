//! ChatGPT's Codex backend (`https://chatgpt.com/backend-api/codex`): the Responses
//! wire format with a ChatGPT sign-in. The body is the Responses body with what the
//! backend requires (`instructions` always present, `store: false`, streaming) and
//! without the output bound it does not take; the headers carry the sign-in's token,
//! its ChatGPT account and who asks.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::codec::secret;
use crate::sign_in::Bearer;
use crate::{ModelRequest, ProviderError, responses};

/// The header naming the ChatGPT account (workspace) a request acts for.
pub const ACCOUNT_HEADER: &str = "chatgpt-account-id";
/// Who asks: the client the ChatGPT sign-in was made as (Codex's).
pub const ORIGINATOR: &str = "codex_cli_rs";
/// The client version the backend's model list is filtered by (it lists the models a
/// client of at least their minimal version may use).
pub const CLIENT_VERSION: &str = "1.0.0";

/// The request body.
pub(crate) fn body(request: &ModelRequest) -> Value {
    let mut body = responses::body(request);
    if body.get("instructions").is_none() {
        body["instructions"] = json!("");
    }
    if let Some(object) = body.as_object_mut() {
        object.remove("max_output_tokens");
    }
    body
}

/// The headers of a request made with `bearer`.
pub(crate) fn headers(bearer: &Bearer) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    headers.insert(AUTHORIZATION, secret(&format!("Bearer {}", bearer.token))?);
    if let Some(account) = &bearer.account_id {
        headers.insert(
            HeaderName::from_static(ACCOUNT_HEADER),
            HeaderValue::from_str(account).map_err(|_| ProviderError::AuthenticationFailed)?,
        );
    }
    headers.insert(
        HeaderName::from_static("originator"),
        HeaderValue::from_static(ORIGINATOR),
    );
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_always_instructs_and_never_bounds() {
        let mut request = crate::image_request();
        request.max_output_tokens = Some(100);
        let body = body(&request);
        assert_eq!(body["instructions"], "");
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert!(body.get("max_output_tokens").is_none());
    }

    #[test]
    fn the_headers_name_the_account_and_hide_the_token() {
        let bearer = Bearer {
            token: "secret-value".into(),
            account_id: Some("acct".into()),
        };
        let headers = headers(&bearer).unwrap();
        assert!(headers[AUTHORIZATION].is_sensitive());
        assert_eq!(headers[ACCOUNT_HEADER], "acct");
        assert_eq!(headers["originator"], ORIGINATOR);
        assert!(!format!("{bearer:?}").contains("secret-value"));
    }
}
