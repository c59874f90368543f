//! The requests each client sends, as the mock server recorded them: paths, headers
//! (the credential present or absent) and bodies (items, tool calls and results, tools).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::{KEY, conversation, endpoint, prompt, run, run_with};
use magi_provider::{DEFAULT_MAX_TOKENS, Endpoint, WireFormat};
use magi_testkit::{MockServer, RecordedRequest, Reply};
use serde_json::json;

async fn recorded(format: WireFormat, key: Option<&str>) -> RecordedRequest {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["ok"]));
    let (_, result) = run_with(endpoint(&server, format, key), &conversation()).await;
    assert_eq!(result, Ok(()));
    let mut requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

fn assert_common(request: &RecordedRequest) {
    assert_eq!(request.method, "POST");
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    assert_eq!(request.body["stream"], true);
    assert_eq!(request.body["model"], "mock-model");
}

#[tokio::test]
async fn responses_request_shape() {
    let request = recorded(WireFormat::OpenAiResponses, Some(KEY)).await;
    assert_common(&request);
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(request.body["store"], false);
    assert_eq!(request.body["instructions"], "Be brief.");
    assert_eq!(request.body["reasoning"], json!({ "summary": "auto" }));
    assert_eq!(
        request.body["input"],
        json!([
            { "type": "message", "role": "user", "content": "hi" },
            { "type": "message", "role": "assistant", "content": "ok" },
            { "type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\":\"a\"}" },
            { "type": "function_call", "call_id": "c2", "name": "list_dir", "arguments": "{}" },
            { "type": "function_call_output", "call_id": "c1", "output": "A" },
            { "type": "function_call_output", "call_id": "c2", "output": "no such dir" },
        ])
    );
    assert_eq!(
        request.body["tools"][0],
        json!({
            "type": "function", "name": "read_file", "description": "Reads a file.",
            "parameters": { "type": "object", "properties": { "path": { "type": "string" } } },
        })
    );
    assert_eq!(request.body["tools"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn chat_request_shape() {
    let request = recorded(WireFormat::ChatCompletions, Some(KEY)).await;
    assert_common(&request);
    assert_eq!(request.path, "/v1/chat/completions");
    // Only the Responses API takes the reasoning-summary request.
    assert!(request.body.get("reasoning").is_none());
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        request.body["stream_options"],
        json!({ "include_usage": true })
    );
    assert_eq!(
        request.body["messages"],
        json!([
            { "role": "system", "content": "Be brief." },
            { "role": "user", "content": "hi" },
            { "role": "assistant", "content": "ok", "tool_calls": [
                { "id": "c1", "type": "function", "function": { "name": "read_file", "arguments": "{\"path\":\"a\"}" } },
                { "id": "c2", "type": "function", "function": { "name": "list_dir", "arguments": "{}" } },
            ] },
            { "role": "tool", "tool_call_id": "c1", "content": "A" },
            { "role": "tool", "tool_call_id": "c2", "content": "no such dir" },
        ])
    );
    assert_eq!(
        request.body["tools"][1],
        json!({ "type": "function", "function": {
            "name": "list_dir", "description": "Lists a directory.", "parameters": { "type": "object" },
        } })
    );
}

#[tokio::test]
async fn chat_tool_calls_without_text_get_an_assistant_message_of_their_own() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["ok"]));
    let mut request = conversation();
    request.items.remove(1);
    request.instructions = None;
    let (_, result) = run(&server, WireFormat::ChatCompletions, &request).await;
    assert_eq!(result, Ok(()));
    let messages = &server.requests()[0].body["messages"];
    assert_eq!(messages[0], json!({ "role": "user", "content": "hi" }));
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], json!(null));
    assert_eq!(messages[1]["tool_calls"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn anthropic_request_shape() {
    let request = recorded(WireFormat::AnthropicMessages, Some(KEY)).await;
    assert_common(&request);
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.body["max_tokens"], DEFAULT_MAX_TOKENS);
    // The system prompt, and the two newest user messages' last blocks, are cache
    // breakpoints.
    let breakpoint = json!({ "type": "ephemeral" });
    assert_eq!(
        request.body["system"],
        json!([{ "type": "text", "text": "Be brief.", "cache_control": breakpoint }])
    );
    assert_eq!(
        request.body["messages"],
        json!([
            { "role": "user", "content": [
                { "type": "text", "text": "hi", "cache_control": breakpoint },
            ] },
            { "role": "assistant", "content": [
                { "type": "text", "text": "ok" },
                { "type": "tool_use", "id": "c1", "name": "read_file", "input": { "path": "a" } },
                { "type": "tool_use", "id": "c2", "name": "list_dir", "input": {} },
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "c1", "content": "A" },
                { "type": "tool_result", "tool_use_id": "c2", "content": "no such dir",
                  "is_error": true, "cache_control": breakpoint },
            ] },
        ])
    );
    assert_eq!(
        request.body["tools"][0],
        json!({
            "name": "read_file", "description": "Reads a file.",
            "input_schema": { "type": "object", "properties": { "path": { "type": "string" } } },
        })
    );
}

#[tokio::test]
async fn the_output_bound_is_sent_in_each_format_and_only_anthropic_has_one_without_it() {
    let fields = [
        (WireFormat::OpenAiResponses, "max_output_tokens"),
        (WireFormat::ChatCompletions, "max_tokens"),
        (WireFormat::AnthropicMessages, "max_tokens"),
    ];
    for (format, field) in fields {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().text(["ok"]));
        server.enqueue(Reply::stream().text(["ok"]));
        let mut request = prompt("hi");
        request.max_output_tokens = Some(1_234);
        let (_, result) = run(&server, format, &request).await;
        assert_eq!(result, Ok(()));
        request.max_output_tokens = None;
        let (_, result) = run(&server, format, &request).await;
        assert_eq!(result, Ok(()));
        let requests = server.requests();
        assert_eq!(requests[0].body[field], 1_234, "{format:?}");
        let unbounded = &requests[1].body;
        if format == WireFormat::AnthropicMessages {
            assert_eq!(unbounded[field], DEFAULT_MAX_TOKENS);
        } else {
            assert!(unbounded.get(field).is_none(), "{format:?}: {unbounded}");
            assert!(unbounded.get("max_completion_tokens").is_none());
        }
    }
}

#[tokio::test]
async fn no_key_no_credential_header() {
    for format in [WireFormat::OpenAiResponses, WireFormat::ChatCompletions] {
        let request = recorded(format, None).await;
        assert_eq!(request.header("authorization"), None, "{format:?}");
        // An empty key is no key either.
        let request = recorded(format, Some("")).await;
        assert_eq!(request.header("authorization"), None, "{format:?}");
    }
    let request = recorded(WireFormat::AnthropicMessages, None).await;
    assert_eq!(request.header("x-api-key"), None);
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn no_tools_no_tools_field_and_no_instructions_no_system() {
    for format in [
        WireFormat::OpenAiResponses,
        WireFormat::ChatCompletions,
        WireFormat::AnthropicMessages,
    ] {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().text(["ok"]));
        let (_, result) = run(&server, format, &prompt("hi")).await;
        assert_eq!(result, Ok(()));
        let body = &server.requests()[0].body;
        assert!(body.get("tools").is_none(), "{format:?}");
        assert!(
            body.get("instructions").is_none() && body.get("system").is_none(),
            "{format:?}"
        );
    }
}

#[tokio::test]
async fn an_anthropic_base_ending_in_v1_and_trailing_slashes_are_accepted() {
    for base in ["{origin}/v1", "{origin}/v1/", "{origin}/"] {
        let server = MockServer::start().await;
        server.enqueue(Reply::stream().text(["ok"]));
        let endpoint = Endpoint {
            format: WireFormat::AnthropicMessages,
            base_url: base.replace("{origin}", &server.origin()),
            api_key: None,
        };
        let (_, result) = run_with(endpoint, &prompt("hi")).await;
        assert_eq!(result, Ok(()), "{base}");
        assert_eq!(server.requests()[0].path, "/v1/messages");
    }
}
