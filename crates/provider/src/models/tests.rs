//! Model list fetching against a local server: formats, paging, bounds and failures.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

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

async fn list(server: &MockServer, format: WireFormat) -> Result<Vec<ListedModel>, RefreshError> {
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
                    name: None,
                    limits: Default::default(),
                },
                ListedModel {
                    id: "gpt-5-mini".to_owned(),
                    name: None,
                    limits: Default::default(),
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
                name: Some("Claude A".to_owned()),
                limits: Default::default(),
            },
            ListedModel {
                id: "claude-b".to_owned(),
                name: None,
                limits: Default::default(),
            },
            ListedModel {
                id: "claude-c".to_owned(),
                name: Some("Claude C".to_owned()),
                limits: Default::default(),
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
            name: None,
            limits: Default::default(),
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

#[tokio::test]
async fn model_metadata_is_read_where_the_list_gives_it() {
    let server = MockServer::start().await;
    // OpenRouter-style, llama.cpp-style, and a model with metadata of the wrong shape.
    server.set_models_body(Some(
        serde_json::json!({"data": [
            {"id": "vendor/big", "context_length": 200000,
             "top_provider": {"max_completion_tokens": 8192},
             "architecture": {"input_modalities": ["text", "image"]}},
            {"id": "local.gguf", "meta": {"n_ctx_train": 131072}},
            {"id": "odd", "context_length": "a lot", "architecture": {"input_modalities": "text"}},
        ]})
        .to_string(),
    ));
    let models = list(&server, WireFormat::ChatCompletions).await.unwrap();
    let limits: Vec<ListedLimits> = models.iter().map(|m| m.limits).collect();
    assert_eq!(
        limits,
        [
            ListedLimits {
                context_window: Some(200_000),
                max_output_tokens: Some(8_192),
                images: Some(true),
            },
            ListedLimits {
                context_window: Some(131_072),
                ..Default::default()
            },
            ListedLimits::default(),
        ]
    );

    let server = MockServer::start().await;
    server.set_models_body(Some(
        serde_json::json!({"data": [
            {"id": "claude-x", "display_name": "Claude X",
             "max_input_tokens": 1000000, "max_tokens": 64000},
        ], "has_more": false})
        .to_string(),
    ));
    let models = list(&server, WireFormat::AnthropicMessages).await.unwrap();
    assert_eq!(
        models[0].limits,
        ListedLimits {
            context_window: Some(1_000_000),
            max_output_tokens: Some(64_000),
            images: None,
        }
    );
}
