//! The Anthropic Messages API (`POST {base}/v1/messages`): the request body, its
//! headers and the decoder of its content-block SSE events.

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::codec::{Decode, EventType, arguments, parse, secret};
use crate::sse::SseEvent;
use crate::{Item, ModelEvent, ModelRequest, ProviderError, StopReason};

/// The API version sent as `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens`, which the API requires, for a request that names no bound (a model
/// nothing is known of): room for a long reply or a large file in one tool call.
pub const DEFAULT_MAX_TOKENS: u64 = 32_000;

/// The request URL. A base URL already ending in `/v1` is taken as versioned, so the
/// same `http://host/v1` base serves all three formats.
pub(crate) fn url(base: &str) -> String {
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// `x-api-key` when there is a key, and always `anthropic-version`.
pub(crate) fn headers(key: Option<&str>) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        headers.insert("x-api-key", secret(key)?);
    }
    headers.insert(
        "anthropic-version",
        HeaderValue::from_static(ANTHROPIC_VERSION),
    );
    Ok(headers)
}

/// The streamed request: items folded into alternating user and assistant messages
/// of content blocks (`text`, `tool_use`, `tool_result`, a tool's `image` inside its
/// `tool_result`), instructions as `system`.
pub(crate) fn body(request: &ModelRequest) -> Value {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for item in &request.items {
        let (role, block) = match item {
            Item::User { text } => ("user", json!({ "type": "text", "text": text })),
            // The API refuses empty text blocks; an empty segment says nothing anyway.
            Item::Assistant { text } if text.is_empty() => continue,
            Item::Assistant { text } => ("assistant", json!({ "type": "text", "text": text })),
            Item::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                // `input` must be an object; arguments that were not one (the runner
                // reported them as invalid) are sent as an empty object.
                let input = match serde_json::from_str::<Value>(arguments) {
                    Ok(Value::Object(map)) => Value::Object(map),
                    _ => Value::Object(Map::new()),
                };
                (
                    "assistant",
                    json!({ "type": "tool_use", "id": call_id, "name": name, "input": input }),
                )
            }
            Item::ToolResult {
                call_id,
                output,
                is_error,
            } => {
                let mut block =
                    json!({ "type": "tool_result", "tool_use_id": call_id, "content": output });
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", block)
            }
            // It joins the prompt's user message, after the text.
            Item::UserImage { media_type, data } => (
                "user",
                json!({
                    "type": "image",
                    "source": { "type": "base64", "media_type": media_type, "data": data },
                }),
            ),
            Item::Image {
                call_id,
                media_type,
                data,
            } => {
                let image = json!({
                    "type": "image",
                    "source": { "type": "base64", "media_type": media_type, "data": data },
                });
                // The image joins its call's `tool_result`, whose content becomes blocks.
                let result = messages.last_mut().and_then(|(role, blocks)| {
                    (*role == "user").then_some(())?;
                    blocks.iter_mut().rev().find(|b| {
                        b["type"] == "tool_result" && b["tool_use_id"] == call_id.as_str()
                    })
                });
                if let Some(result) = result {
                    let text = result["content"].take();
                    result["content"] = json!([{ "type": "text", "text": text }, image]);
                    continue;
                }
                ("user", image)
            }
        };
        // Consecutive items of one role form one message: tool results must all sit
        // in the user message right after the calls.
        match messages.last_mut() {
            Some((last, blocks)) if *last == role => blocks.push(block),
            _ => messages.push((role, vec![block])),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    if let Some(instructions) = &request.instructions {
        body["system"] = json!(instructions);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.parameters }))
            .collect();
        body["tools"] = json!(tools);
    }
    body
}

#[derive(Deserialize)]
struct MessageStart {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize, Default)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

impl Usage {
    /// All input tokens: the uncached ones plus those written to or read from cache.
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

#[derive(Deserialize)]
struct BlockStart {
    index: u64,
    content_block: ContentBlock,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: u64,
    delta: DeltaBody,
}

/// A block's delta; `thinking_delta` and `signature_delta` are read as neither text
/// nor JSON, so thinking never leaves the decoder.
#[derive(Deserialize)]
struct DeltaBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    delta: Option<StopDelta>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct StopDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type", default)]
    kind: String,
}

/// A tool-use block being streamed.
struct PendingTool {
    index: u64,
    id: String,
    name: String,
    json: String,
}

/// Decoder state for one response.
#[derive(Default)]
pub(crate) struct Decoder {
    /// Indexes of open text blocks.
    text_blocks: Vec<u64>,
    tools: Vec<PendingTool>,
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    stop: Option<String>,
}

impl Decoder {
    fn usage(&mut self, usage: Option<Usage>) {
        if let Some(usage) = usage {
            if let Some(input) = usage.input() {
                self.input_tokens = Some(input);
            }
            if let Some(cached) = usage.cache_read_input_tokens {
                self.cached_input_tokens = Some(cached);
            }
            if let Some(output) = usage.output_tokens {
                self.output_tokens = Some(output);
            }
        }
    }
}

impl Decode for Decoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<ModelEvent>,
    ) -> Result<bool, ProviderError> {
        let head: EventType<'_> = parse(&event.data)?;
        match head.kind.as_ref() {
            "message_start" => {
                let start: MessageStart = parse(&event.data)?;
                self.usage(start.message.usage);
            }
            "content_block_start" => {
                let start: BlockStart = parse(&event.data)?;
                match start.content_block.kind.as_str() {
                    "text" => self.text_blocks.push(start.index),
                    "tool_use" => self.tools.push(PendingTool {
                        index: start.index,
                        id: start.content_block.id.unwrap_or_default(),
                        name: start.content_block.name.unwrap_or_default(),
                        json: String::new(),
                    }),
                    // Thinking, redacted thinking, server tools: nothing to report.
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta: BlockDelta = parse(&event.data)?;
                match delta.delta.kind.as_str() {
                    "text_delta" if self.text_blocks.contains(&delta.index) => {
                        if let Some(text) = delta.delta.text.filter(|t| !t.is_empty()) {
                            out.push(ModelEvent::TextDelta(text));
                        }
                    }
                    "input_json_delta" => {
                        if let (Some(tool), Some(json)) = (
                            self.tools.iter_mut().find(|t| t.index == delta.index),
                            delta.delta.partial_json,
                        ) {
                            tool.json.push_str(&json);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let stop: BlockStop = parse(&event.data)?;
                self.text_blocks.retain(|&i| i != stop.index);
                if let Some(at) = self.tools.iter().position(|t| t.index == stop.index) {
                    let tool = self.tools.remove(at);
                    out.push(ModelEvent::ToolCall {
                        call_id: tool.id,
                        name: tool.name,
                        arguments: arguments(tool.json),
                    });
                }
            }
            "message_delta" => {
                let delta: MessageDelta = parse(&event.data)?;
                if let Some(reason) = delta.delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(reason);
                }
                self.usage(delta.usage);
            }
            "message_stop" => {
                if self.input_tokens.is_some() || self.output_tokens.is_some() {
                    out.push(ModelEvent::Usage {
                        input_tokens: self.input_tokens.unwrap_or(0),
                        output_tokens: self.output_tokens.unwrap_or(0),
                        cached_input_tokens: self.cached_input_tokens,
                        // Thinking tokens are counted in the output, not apart.
                        reasoning_tokens: None,
                    });
                }
                let stop = match self.stop.as_deref() {
                    Some("end_turn") => StopReason::EndTurn,
                    Some("tool_use") => StopReason::ToolCalls,
                    Some("max_tokens") => StopReason::MaxTokens,
                    Some("refusal") => StopReason::Refusal,
                    _ => StopReason::Other,
                };
                out.push(ModelEvent::Completed(stop));
                return Ok(true);
            }
            "error" => {
                let error: ErrorEvent = parse(&event.data)?;
                let kind = error.error.map(|e| e.kind).unwrap_or_default();
                return Err(match kind.as_str() {
                    "rate_limit_error" => ProviderError::RateLimited,
                    "authentication_error" | "permission_error" => {
                        ProviderError::AuthenticationFailed
                    }
                    "invalid_request_error" | "not_found_error" | "request_too_large" => {
                        ProviderError::Rejected
                    }
                    _ => ProviderError::ServerError,
                });
            }
            // `ping` and future event types carry nothing this client reports.
            _ => {}
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_joins_its_calls_tool_result_as_a_base64_image_block() {
        let body = body(&crate::image_request());
        let results = &body["messages"][2]["content"];
        assert_eq!(body["messages"][2]["role"], "user");
        assert_eq!(results[0]["tool_use_id"], "c1");
        assert_eq!(results[0]["content"][0]["text"], "result c1");
        let image = &results[0]["content"][1];
        assert_eq!(image["type"], "image");
        assert_eq!(
            image["source"],
            serde_json::json!({"type": "base64", "media_type": "image/png", "data": "AAAA"})
        );
        // The other call's result stays text.
        assert_eq!(results[1]["content"], "result c2");
        assert_eq!(body["messages"].as_array().unwrap().len(), 4);
    }

    #[test]
    fn a_versioned_base_is_not_versioned_twice() {
        assert_eq!(
            url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            url("http://127.0.0.1:9/v1"),
            "http://127.0.0.1:9/v1/messages"
        );
    }

    #[test]
    fn cached_input_counts_as_input() {
        let usage: Usage = serde_json::from_str(
            r#"{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}"#,
        )
        .unwrap();
        assert_eq!(usage.input(), Some(110));
        assert_eq!(Usage::default().input(), None);
    }

    #[test]
    fn a_refusal_stop_reason_ends_the_response_as_a_refusal() {
        // As the API streams a refusal: the text so far, then `stop_reason: "refusal"`.
        let events = [
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I can't"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},"usage":{"output_tokens":3}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for data in events {
            let event = SseEvent {
                event: String::new(),
                data: data.to_owned(),
            };
            decoder.event(&event, &mut out).unwrap();
        }
        assert_eq!(out[0], ModelEvent::TextDelta("I can't".into()));
        assert_eq!(
            out.last(),
            Some(&ModelEvent::Completed(StopReason::Refusal))
        );
    }

    #[test]
    fn stream_errors_map_to_codes() {
        let mut decoder = Decoder::default();
        let event = SseEvent {
            event: "error".to_owned(),
            data: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .to_owned(),
        };
        assert_eq!(
            decoder.event(&event, &mut Vec::new()),
            Err(ProviderError::ServerError)
        );
    }
}
