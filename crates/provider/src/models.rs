//! Fetching a provider's model list, for a deliberate `model.refresh`: `GET
//! {base}/models` for the OpenAI formats, `GET {base}/v1/models` paged by `after_id` for
//! Anthropic.
//!
//! The fetch is bounded as a whole: at most `REFRESH_RESPONSE_BYTES` read over every
//! page, at most `CATALOG_MODELS` models, at most `REFRESH_TIMEOUT_MS` from the first
//! connection to the last byte. Redirects are not followed, nothing is retried, and the
//! body of an error response is never read.

use std::collections::HashSet;
use std::time::Duration;

use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    CATALOG_MODELS, CATALOG_STRING_BYTES, REFRESH_RESPONSE_BYTES, REFRESH_TIMEOUT_MS,
};
use reqwest::header::{ACCEPT, HeaderMap};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::http::{CONNECT_TIMEOUT, secret};
use crate::{Endpoint, ProviderError, WireFormat, anthropic};

/// The whole refresh's deadline, `REFRESH_TIMEOUT_MS`.
pub const REFRESH_TIMEOUT: Duration = Duration::from_millis(REFRESH_TIMEOUT_MS);

/// Models asked for per Anthropic page: the most the API serves at once.
const ANTHROPIC_PAGE_LIMIT: &str = "1000";

/// One model as the provider listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedModel {
    /// The model ID, exactly as listed: 1 to `CATALOG_STRING_BYTES` bytes. It may hold
    /// anything else the provider put there; whoever shows it checks it first.
    pub id: String,
    /// The display name, when the provider gave a non-empty one (Anthropic's
    /// `display_name`; the OpenAI formats have none). Not checked for safety: the
    /// catalog cache drops names that are not safe to show.
    pub name: Option<String>,
}

/// Why a model list could not be fetched. Only these codes leave the crate: never a
/// key, a header or a provider's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshError {
    /// The provider refused the credential (HTTP 401 or 403), or the key cannot be a
    /// header value.
    Unauthorized,
    /// The provider could not be reached, failed (5xx), asked to slow down (429), or
    /// did not finish within the deadline.
    Unreachable,
    /// The response was over `REFRESH_RESPONSE_BYTES`, listed more than
    /// `CATALOG_MODELS` models, or an ID over `CATALOG_STRING_BYTES` bytes.
    Limit,
    /// The response was not a model list: another status, not the JSON expected, an
    /// empty or repeated ID, or paging that does not advance.
    Malformed,
    /// The fetch was cancelled.
    Cancelled,
}

impl RefreshError {
    /// The protocol error code `model.refresh` answers with.
    pub const fn error_code(self) -> ErrorCode {
        match self {
            RefreshError::Unauthorized | RefreshError::Unreachable => {
                ErrorCode::ProviderUnavailable
            }
            RefreshError::Limit => ErrorCode::CatalogLimit,
            RefreshError::Malformed => ErrorCode::CatalogUnavailable,
            RefreshError::Cancelled => ErrorCode::OperationCancelled,
        }
    }
}

impl std::fmt::Display for RefreshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RefreshError::Unauthorized => "the provider refused the credential",
            RefreshError::Unreachable => "the provider could not be reached",
            RefreshError::Limit => "the model list exceeds its bounds",
            RefreshError::Malformed => "the response is not a model list",
            RefreshError::Cancelled => "the model list fetch was cancelled",
        })
    }
}

impl std::error::Error for RefreshError {}

/// Fetches every model `endpoint` lists, in the provider's order, within the refresh
/// bounds and the `REFRESH_TIMEOUT` deadline. Cancelling `cancel` drops the request at
/// once (the connection closes) and returns [`RefreshError::Cancelled`].
pub async fn list_models(
    endpoint: &Endpoint,
    cancel: &CancellationToken,
) -> Result<Vec<ListedModel>, RefreshError> {
    list_models_within(endpoint, cancel, REFRESH_TIMEOUT).await
}

/// [`list_models`] with another deadline for the whole fetch (a caller with less time
/// left, or a test that cannot wait 30 seconds).
pub async fn list_models_within(
    endpoint: &Endpoint,
    cancel: &CancellationToken,
    deadline: Duration,
) -> Result<Vec<ListedModel>, RefreshError> {
    tokio::select! {
        // Cancellation wins a tie, and dropping the fetch closes the connection.
        biased;
        () = cancel.cancelled() => Err(RefreshError::Cancelled),
        fetched = tokio::time::timeout(deadline, fetch(endpoint)) => {
            fetched.unwrap_or(Err(RefreshError::Unreachable))
        }
    }
}

/// The whole fetch, every page, without the deadline.
async fn fetch(endpoint: &Endpoint) -> Result<Vec<ListedModel>, RefreshError> {
    let base = endpoint.base_url.trim_end_matches('/');
    // A key that is empty is no key, as for model requests.
    let key = endpoint.api_key.as_deref().filter(|k| !k.is_empty());
    let http = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        // A redirect must not carry the credential elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|_| RefreshError::Unreachable)?;
    let mut fetch = Fetch {
        http,
        budget: REFRESH_RESPONSE_BYTES,
        models: Vec::new(),
        seen: HashSet::new(),
    };
    match endpoint.format {
        WireFormat::OpenAiResponses | WireFormat::ChatCompletions => {
            let url =
                Url::parse(&format!("{base}/models")).map_err(|_| RefreshError::Unreachable)?;
            let headers = bearer(key)?;
            let body = fetch.get(url, &headers).await?;
            let list: OpenAiList = parse(&body)?;
            for model in list.data {
                fetch.add(model.id, None)?;
            }
        }
        WireFormat::AnthropicMessages => {
            let url =
                Url::parse(&anthropic_models_url(base)).map_err(|_| RefreshError::Unreachable)?;
            let headers = anthropic::headers(key).map_err(from_header_error)?;
            let mut after: Option<String> = None;
            loop {
                let mut page_url = url.clone();
                {
                    let mut query = page_url.query_pairs_mut();
                    query.append_pair("limit", ANTHROPIC_PAGE_LIMIT);
                    if let Some(after) = &after {
                        query.append_pair("after_id", after);
                    }
                }
                let body = fetch.get(page_url, &headers).await?;
                let page: AnthropicPage = parse(&body)?;
                let listed = page.data.len();
                for model in page.data {
                    fetch.add(model.id, model.display_name)?;
                }
                if !page.has_more {
                    break;
                }
                // A page that promises more must say where to continue, and from a
                // point it has not continued from before: otherwise it would loop
                // until the deadline.
                match page.last_id {
                    Some(last) if listed > 0 && after.as_deref() != Some(last.as_str()) => {
                        after = Some(last);
                    }
                    _ => return Err(RefreshError::Malformed),
                }
            }
        }
    }
    Ok(fetch.models)
}

/// The model-list URL of an Anthropic base: the messages URL's folder, so the
/// versioning rule (a base already ending in `/v1` is versioned) is the one
/// [`anthropic::url`] applies.
fn anthropic_models_url(base: &str) -> String {
    let messages = anthropic::url(base);
    let versioned = messages.strip_suffix("/messages").unwrap_or(&messages);
    format!("{versioned}/models")
}

/// `Authorization: Bearer <key>` when there is a key, nothing otherwise, as the OpenAI
/// formats' model requests send it.
fn bearer(key: Option<&str>) -> Result<HeaderMap, RefreshError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            secret(&format!("Bearer {key}")).map_err(from_header_error)?,
        );
    }
    Ok(headers)
}

/// A credential that cannot be a header value is one the provider would refuse.
fn from_header_error(_: ProviderError) -> RefreshError {
    RefreshError::Unauthorized
}

/// The state of one fetch across its pages.
struct Fetch {
    http: reqwest::Client,
    /// Response bytes still allowed, over every page.
    budget: usize,
    models: Vec<ListedModel>,
    seen: HashSet<String>,
}

impl Fetch {
    /// One GET, its body read whole within the remaining byte budget. A response that
    /// is not a success is judged by its status alone: its body is never read.
    async fn get(&mut self, url: Url, headers: &HeaderMap) -> Result<Vec<u8>, RefreshError> {
        let mut response = self
            .http
            .get(url)
            .headers(headers.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|_| RefreshError::Unreachable)?;
        let status = response.status();
        if !status.is_success() {
            return Err(match status {
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => RefreshError::Unauthorized,
                StatusCode::TOO_MANY_REQUESTS => RefreshError::Unreachable,
                s if s.is_server_error() => RefreshError::Unreachable,
                // A redirect, a missing route or another refusal: no model list here.
                _ => RefreshError::Malformed,
            });
        }
        // A declared length over the budget fails before any byte is read.
        if response
            .content_length()
            .is_some_and(|length| length > self.budget as u64)
        {
            return Err(RefreshError::Limit);
        }
        let mut body = Vec::new();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(_) => return Err(RefreshError::Unreachable),
            };
            if chunk.len() > self.budget {
                return Err(RefreshError::Limit);
            }
            self.budget -= chunk.len();
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Adds one listed model, within the model and ID bounds; an empty or repeated ID
    /// is no model list.
    fn add(&mut self, id: String, name: Option<String>) -> Result<(), RefreshError> {
        if id.is_empty() {
            return Err(RefreshError::Malformed);
        }
        if id.len() > CATALOG_STRING_BYTES || self.models.len() >= CATALOG_MODELS {
            return Err(RefreshError::Limit);
        }
        if !self.seen.insert(id.clone()) {
            return Err(RefreshError::Malformed);
        }
        let name = name.filter(|n| !n.is_empty());
        self.models.push(ListedModel { id, name });
        Ok(())
    }
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, RefreshError> {
    serde_json::from_slice(body).map_err(|_| RefreshError::Malformed)
}

/// `{"data":[{"id":…}, …]}`; other fields, of the list and of each model, are ignored.
#[derive(Deserialize)]
struct OpenAiList {
    data: Vec<OpenAiModel>,
}

#[derive(Deserialize)]
struct OpenAiModel {
    id: String,
}

/// `{"data":[{"id":…,"display_name":…}],"has_more":…,"last_id":…}`; other fields are
/// ignored, and a page without `has_more` is the last.
#[derive(Deserialize)]
struct AnthropicPage {
    data: Vec<AnthropicModel>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    last_id: Option<String>,
}

#[derive(Deserialize)]
struct AnthropicModel {
    id: String,
    #[serde(default)]
    display_name: Option<String>,
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use std::time::Instant;

    use magi_testkit::MockServer;
    use serde_json::json;

    use super::*;

    const KEY: &str = "sk-test-key-for-models";

    fn endpoint(server: &MockServer, format: WireFormat) -> Endpoint {
        let base_url = match format {
            WireFormat::AnthropicMessages => server.origin(),
            _ => server.base_url(),
        };
        Endpoint {
            format,
            base_url,
            api_key: Some(KEY.to_owned()),
        }
    }

    async fn list(
        server: &MockServer,
        format: WireFormat,
    ) -> Result<Vec<ListedModel>, RefreshError> {
        list_models_within(
            &endpoint(server, format),
            &CancellationToken::new(),
            Duration::from_secs(10),
        )
        .await
    }

    fn ids(models: &[ListedModel]) -> Vec<&str> {
        models.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn anthropic_urls_follow_the_messages_versioning() {
        assert_eq!(
            anthropic_models_url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/models"
        );
        assert_eq!(
            anthropic_models_url("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1/models"
        );
    }

    #[test]
    fn errors_map_to_protocol_codes() {
        let codes: Vec<&str> = [
            RefreshError::Unauthorized,
            RefreshError::Unreachable,
            RefreshError::Limit,
            RefreshError::Malformed,
            RefreshError::Cancelled,
        ]
        .iter()
        .map(|e| e.error_code().as_str())
        .collect();
        assert_eq!(
            codes,
            [
                "provider_unavailable",
                "provider_unavailable",
                "catalog_limit",
                "catalog_unavailable",
                "operation_cancelled",
            ]
        );
    }

    #[tokio::test]
    async fn openai_formats_read_the_data_list_with_a_bearer_key() {
        for format in [WireFormat::OpenAiResponses, WireFormat::ChatCompletions] {
            let server = MockServer::start().await;
            server.set_models([("gpt-5", Some("ignored")), ("gpt-5-mini", None)]);
            let models = list(&server, format).await.unwrap();
            assert_eq!(
                models,
                [
                    ListedModel {
                        id: "gpt-5".to_owned(),
                        name: None
                    },
                    ListedModel {
                        id: "gpt-5-mini".to_owned(),
                        name: None
                    },
                ]
            );
            let requests = server.requests();
            assert_eq!(requests.len(), 1);
            assert_eq!(requests[0].method, "GET");
            assert_eq!(requests[0].path, "/v1/models");
            assert_eq!(requests[0].query, None);
            let bearer = format!("Bearer {KEY}");
            assert_eq!(requests[0].header("authorization"), Some(bearer.as_str()));
            assert_eq!(requests[0].header("x-api-key"), None);
        }
    }

    #[tokio::test]
    async fn a_keyless_local_server_gets_no_credential_header() {
        let server = MockServer::start().await;
        server.set_models([("local", None)]);
        let endpoint = Endpoint {
            format: WireFormat::ChatCompletions,
            base_url: format!("{}/", server.base_url()),
            api_key: Some(String::new()),
        };
        let models = list_models(&endpoint, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(ids(&models), ["local"]);
        assert_eq!(server.requests()[0].header("authorization"), None);
    }

    #[tokio::test]
    async fn extra_fields_are_ignored_and_other_shapes_are_malformed() {
        let server = MockServer::start().await;
        let body = json!({ "object": "list", "data": [{ "id": "m", "object": "model", "meta": { "n": 1 } }], "extra": [] });
        server.set_models_body(Some(body.to_string()));
        assert_eq!(
            ids(&list(&server, WireFormat::ChatCompletions).await.unwrap()),
            ["m"]
        );
        for garbage in [
            "not json at all",
            "",
            "[]",
            r#"{"models":[]}"#,
            r#"{"data":[{"name":"no id"}]}"#,
            r#"{"data":[{"id":5}]}"#,
            r#"{"data":[{"id":""}]}"#,
            r#"{"data":[{"id":"a"},{"id":"a"}]}"#,
        ] {
            server.set_models_body(Some(garbage.to_owned()));
            assert_eq!(
                list(&server, WireFormat::OpenAiResponses).await,
                Err(RefreshError::Malformed),
                "{garbage}"
            );
        }
    }

    #[tokio::test]
    async fn anthropic_pages_are_followed_by_after_id() {
        let server = MockServer::start().await;
        server.set_models([
            ("claude-a", Some("Claude A")),
            ("claude-b", None),
            ("claude-c", Some("Claude C")),
        ]);
        server.set_models_page_size(Some(2));
        let models = list(&server, WireFormat::AnthropicMessages).await.unwrap();
        assert_eq!(
            models,
            [
                ListedModel {
                    id: "claude-a".to_owned(),
                    name: Some("Claude A".to_owned())
                },
                ListedModel {
                    id: "claude-b".to_owned(),
                    name: None
                },
                ListedModel {
                    id: "claude-c".to_owned(),
                    name: Some("Claude C".to_owned())
                },
            ]
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert!(
            requests
                .iter()
                .all(|r| r.path == "/v1/models" && r.method == "GET")
        );
        assert_eq!(requests[0].query.as_deref(), Some("limit=1000"));
        assert_eq!(
            requests[1].query.as_deref(),
            Some("limit=1000&after_id=claude-b")
        );
        assert_eq!(requests[0].header("x-api-key"), Some(KEY));
        assert_eq!(
            requests[0].header("anthropic-version"),
            Some(anthropic::ANTHROPIC_VERSION)
        );
        assert_eq!(requests[0].header("authorization"), None);
    }

    #[tokio::test]
    async fn an_anthropic_base_ending_in_v1_is_not_versioned_twice() {
        let server = MockServer::start().await;
        server.set_models([("claude-a", None)]);
        let models = list(&server, WireFormat::AnthropicMessages).await.unwrap();
        assert_eq!(ids(&models), ["claude-a"]);
        let versioned = Endpoint {
            base_url: server.base_url(),
            ..endpoint(&server, WireFormat::AnthropicMessages)
        };
        let models = list_models(&versioned, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(ids(&models), ["claude-a"]);
        assert!(server.requests().iter().all(|r| r.path == "/v1/models"));
    }

    #[tokio::test]
    async fn anthropic_paging_that_does_not_advance_is_malformed() {
        let server = MockServer::start().await;
        for body in [
            json!({ "data": [{ "id": "a" }], "has_more": true, "last_id": null }),
            json!({ "data": [], "has_more": true, "last_id": "a" }),
            json!({ "data": [{ "id": "a" }], "has_more": true }),
        ] {
            server.set_models_body(Some(body.to_string()));
            assert_eq!(
                list(&server, WireFormat::AnthropicMessages).await,
                Err(RefreshError::Malformed),
                "{body}"
            );
        }
        // A server that answers every page alike never advances: its second page
        // repeats the model (and the cursor) of the first.
        server.set_models_body(Some(
            json!({ "data": [{ "id": "a" }], "has_more": true, "last_id": "a" }).to_string(),
        ));
        assert_eq!(
            list(&server, WireFormat::AnthropicMessages).await,
            Err(RefreshError::Malformed)
        );
        // A page without `has_more` is the last.
        server.set_models_body(Some(
            json!({ "data": [{ "id": "a", "display_name": "" }] }).to_string(),
        ));
        let models = list(&server, WireFormat::AnthropicMessages).await.unwrap();
        assert_eq!(
            models,
            [ListedModel {
                id: "a".to_owned(),
                name: None
            }]
        );
    }

    #[tokio::test]
    async fn refused_credentials_are_unauthorized() {
        for (status, format) in [
            (401, WireFormat::OpenAiResponses),
            (403, WireFormat::AnthropicMessages),
        ] {
            let server = MockServer::start().await;
            server.set_models_status(Some(status));
            assert_eq!(list(&server, format).await, Err(RefreshError::Unauthorized));
        }
    }

    #[tokio::test]
    async fn a_key_that_cannot_be_a_header_is_unauthorized_and_nothing_is_sent() {
        let server = MockServer::start().await;
        let endpoint = Endpoint {
            api_key: Some("bad\nkey".to_owned()),
            ..endpoint(&server, WireFormat::ChatCompletions)
        };
        let result = list_models(&endpoint, &CancellationToken::new()).await;
        assert_eq!(result, Err(RefreshError::Unauthorized));
        assert!(server.requests().is_empty());
    }

    #[tokio::test]
    async fn server_errors_and_rate_limits_are_unreachable_and_not_retried() {
        for status in [500, 503, 429] {
            let server = MockServer::start().await;
            server.set_models_status(Some(status));
            assert_eq!(
                list(&server, WireFormat::ChatCompletions).await,
                Err(RefreshError::Unreachable)
            );
            assert_eq!(server.requests().len(), 1, "{status}");
        }
    }

    #[tokio::test]
    async fn other_statuses_are_no_model_list() {
        for status in [302, 400, 404] {
            let server = MockServer::start().await;
            server.set_models_status(Some(status));
            assert_eq!(
                list(&server, WireFormat::OpenAiResponses).await,
                Err(RefreshError::Malformed),
                "{status}"
            );
        }
    }

    #[tokio::test]
    async fn nothing_listening_is_unreachable() {
        let server = MockServer::start().await;
        let endpoint = endpoint(&server, WireFormat::ChatCompletions);
        drop(server);
        let result = list_models(&endpoint, &CancellationToken::new()).await;
        assert_eq!(result, Err(RefreshError::Unreachable));
        let bad = Endpoint {
            base_url: "not a url".to_owned(),
            ..endpoint
        };
        let result = list_models(&bad, &CancellationToken::new()).await;
        assert_eq!(result, Err(RefreshError::Unreachable));
    }

    #[tokio::test]
    async fn the_response_byte_bound_is_inclusive_and_spans_pages() {
        let server = MockServer::start().await;
        let exact = {
            let mut body = json!({ "data": [{ "id": "m" }] }).to_string();
            body.push_str(&" ".repeat(REFRESH_RESPONSE_BYTES - body.len()));
            body
        };
        server.set_models_body(Some(exact.clone()));
        assert_eq!(
            ids(&list(&server, WireFormat::ChatCompletions).await.unwrap()),
            ["m"]
        );
        server.set_models_body(Some(format!("{exact} ")));
        assert_eq!(
            list(&server, WireFormat::ChatCompletions).await,
            Err(RefreshError::Limit)
        );

        // Anthropic pages that each fit but together do not: 1,500 models (under the
        // model bound) with short IDs and long display names, 100 a page, about
        // 1.4 MiB in all.
        let server = MockServer::start().await;
        let models: Vec<(String, Option<String>)> = (0..1_500)
            .map(|i| (format!("m{i}"), Some("n".repeat(850))))
            .collect();
        server.set_models(models);
        server.set_models_page_size(Some(100));
        assert_eq!(
            list(&server, WireFormat::AnthropicMessages).await,
            Err(RefreshError::Limit)
        );
        assert!(server.requests().len() > 1);
    }

    #[tokio::test]
    async fn the_model_bound_is_inclusive() {
        let server = MockServer::start().await;
        let many = |n: usize| -> Vec<(String, Option<String>)> {
            (0..n).map(|i| (format!("m{i}"), None)).collect()
        };
        server.set_models(many(CATALOG_MODELS));
        let models = list(&server, WireFormat::OpenAiResponses).await.unwrap();
        assert_eq!(models.len(), CATALOG_MODELS);
        server.set_models(many(CATALOG_MODELS + 1));
        assert_eq!(
            list(&server, WireFormat::OpenAiResponses).await,
            Err(RefreshError::Limit)
        );
        // Across Anthropic pages too.
        server.set_models_page_size(Some(1_000));
        assert_eq!(
            list(&server, WireFormat::AnthropicMessages).await,
            Err(RefreshError::Limit)
        );
    }

    #[tokio::test]
    async fn an_over_long_id_is_over_the_limit() {
        let server = MockServer::start().await;
        server.set_models([("i".repeat(CATALOG_STRING_BYTES), None)]);
        assert!(list(&server, WireFormat::ChatCompletions).await.is_ok());
        server.set_models([("i".repeat(CATALOG_STRING_BYTES + 1), None)]);
        assert_eq!(
            list(&server, WireFormat::ChatCompletions).await,
            Err(RefreshError::Limit)
        );
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_unreachable_at_the_deadline() {
        let server = MockServer::start().await;
        server.set_models_hang(true);
        let started = Instant::now();
        let result = list_models_within(
            &endpoint(&server, WireFormat::AnthropicMessages),
            &CancellationToken::new(),
            Duration::from_millis(300),
        )
        .await;
        assert_eq!(result, Err(RefreshError::Unreachable));
        let elapsed = started.elapsed();
        // The given deadline applied, not the default one.
        assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
        assert!(elapsed < REFRESH_TIMEOUT, "{elapsed:?}");
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn cancellation_ends_the_fetch() {
        let server = MockServer::start().await;
        server.set_models_hang(true);
        let cancel = CancellationToken::new();
        let chat = endpoint(&server, WireFormat::ChatCompletions);
        // Cancel once the request is in flight (the server has it), no sooner.
        let trigger = async {
            let deadline = Instant::now() + Duration::from_secs(10);
            while server.requests().is_empty() && Instant::now() < deadline {
                tokio::task::yield_now().await;
            }
            cancel.cancel();
        };
        let started = Instant::now();
        let (result, ()) = tokio::join!(list_models(&chat, &cancel), trigger);
        assert_eq!(server.requests().len(), 1, "cancelled in flight");
        assert_eq!(result, Err(RefreshError::Cancelled));
        // The cancellation ended it, not the deadline.
        assert!(started.elapsed() < REFRESH_TIMEOUT);

        // A token already cancelled sends nothing.
        let server = MockServer::start().await;
        server.set_models([("m", None)]);
        let result = list_models(&endpoint(&server, WireFormat::ChatCompletions), &cancel).await;
        assert_eq!(result, Err(RefreshError::Cancelled));
        assert!(server.requests().is_empty());
    }
}
