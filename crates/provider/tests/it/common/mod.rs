//! Helpers shared by the provider tests: a client pointed at the mock server, a run
//! that collects every event with a bounded wait, and a sample conversation.

use std::time::Duration;

use magi_provider::{
    Endpoint, Failure, Item, ModelEvent, ModelRequest, ProviderError, ToolSpec, WireFormat, client,
};
use magi_testkit::MockServer;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// No test waits longer than this for anything.
pub const BOUND: Duration = Duration::from_secs(20);

/// The key the tests send; it must never appear in anything the client reports.
pub const KEY: &str = "sk-test-9f8e7d6c5b4a-never-show";

pub const FORMATS: [WireFormat; 3] = [
    WireFormat::OpenAiResponses,
    WireFormat::ChatCompletions,
    WireFormat::AnthropicMessages,
];

/// The endpoint of `server` for `format`; Anthropic gets the bare origin, as its real
/// base URL has no `/v1`.
pub fn endpoint(server: &MockServer, format: WireFormat, key: Option<&str>) -> Endpoint {
    let base_url = match format {
        WireFormat::AnthropicMessages => server.origin(),
        WireFormat::OpenAiResponses | WireFormat::ChatCompletions | WireFormat::CodexResponses => {
            server.base_url()
        }
    };
    Endpoint {
        format,
        base_url,
        api_key: key.map(str::to_owned),
    }
}

/// A one-prompt request.
pub fn prompt(text: &str) -> ModelRequest {
    ModelRequest {
        model: "mock-model".to_owned(),
        instructions: None,
        items: vec![Item::User {
            text: text.to_owned(),
        }],
        tools: Vec::new(),
        reasoning_summaries: false,
        reasoning: None,
        max_output_tokens: None,
        cache_key: None,
    }
}

/// A conversation with text, two tool calls and their results, and two tools.
pub fn conversation() -> ModelRequest {
    ModelRequest {
        model: "mock-model".to_owned(),
        instructions: Some("Be brief.".to_owned()),
        items: vec![
            Item::User {
                text: "hi".to_owned(),
            },
            Item::Assistant {
                text: "ok".to_owned(),
            },
            Item::ToolCall {
                call_id: "c1".to_owned(),
                name: "read_file".to_owned(),
                arguments: r#"{"path":"a"}"#.to_owned(),
            },
            Item::ToolCall {
                call_id: "c2".to_owned(),
                name: "list_dir".to_owned(),
                arguments: "{}".to_owned(),
            },
            Item::ToolResult {
                call_id: "c1".to_owned(),
                output: "A".to_owned(),
                is_error: false,
            },
            Item::ToolResult {
                call_id: "c2".to_owned(),
                output: "no such dir".to_owned(),
                is_error: true,
            },
        ],
        tools: vec![
            ToolSpec {
                name: "read_file".to_owned(),
                description: "Reads a file.".to_owned(),
                parameters: json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
            },
            ToolSpec {
                name: "list_dir".to_owned(),
                description: "Lists a directory.".to_owned(),
                parameters: json!({ "type": "object" }),
            },
        ],
        reasoning_summaries: true,
        reasoning: None,
        max_output_tokens: None,
        cache_key: None,
    }
}

/// Streams `request` to completion, collecting the output events (retry notices left
/// out) and the failure's code; bounded by [`BOUND`].
pub async fn run_with(
    endpoint: Endpoint,
    request: &ModelRequest,
) -> (Vec<ModelEvent>, Result<(), ProviderError>) {
    let (events, result) = run_full(endpoint, request).await;
    let output = events
        .into_iter()
        .filter(|e| !matches!(e, ModelEvent::Retrying(_)))
        .collect();
    (output, result.map_err(|failure| failure.error))
}

/// Streams `request` to completion, collecting every event and the whole failure;
/// bounded by [`BOUND`].
pub async fn run_full(
    endpoint: Endpoint,
    request: &ModelRequest,
) -> (Vec<ModelEvent>, Result<(), Failure>) {
    let client = client(endpoint);
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel(16);
    let collect = async {
        let mut events = Vec::new();
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
        events
    };
    let both = async { tokio::join!(client.stream(request, tx, &cancel), collect) };
    let (result, events) = tokio::time::timeout(BOUND, both)
        .await
        .expect("the stream ended in time");
    (events, result)
}

/// [`run_with`] against `server` in `format` with the test key.
pub async fn run(
    server: &MockServer,
    format: WireFormat,
    request: &ModelRequest,
) -> (Vec<ModelEvent>, Result<(), ProviderError>) {
    run_with(endpoint(server, format, Some(KEY)), request).await
}

/// The text of all deltas.
pub fn text(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}
