//! The Anthropic Messages stream: the decoder of its content-block SSE events.
//!
//! Thinking is never reported as text: a `thinking` block (its text and signature) or a
//! `redacted_thinking` block (its data) is gathered whole and reported as reasoning to
//! send back, which nothing shows.

use serde::Deserialize;
use serde_json::json;

use crate::codec::{Decode, EventType, arguments, parse};
use crate::sse::SseEvent;
use crate::{ModelEvent, ProviderError, ReasoningItem, StopReason, WireFormat};

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
    /// A `thinking` block's text so far (empty at its start).
    #[serde(default)]
    thinking: Option<String>,
    /// A `thinking` block's signature so far.
    #[serde(default)]
    signature: Option<String>,
    /// A `redacted_thinking` block's encrypted thinking, whole at its start.
    #[serde(default)]
    data: Option<String>,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: u64,
    delta: DeltaBody,
}

/// A block's delta: text, a tool's JSON, or a thinking block's text or signature (kept
/// apart from the text, so thinking never reaches the reply).
#[derive(Deserialize)]
struct DeltaBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
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

/// A thinking block being streamed: a `thinking` block's text and signature, or a
/// `redacted_thinking` block's data.
struct PendingThinking {
    index: u64,
    redacted: bool,
    thinking: String,
    signature: String,
    data: String,
}

impl PendingThinking {
    /// The block as the API takes it back.
    fn block(&self) -> serde_json::Value {
        if self.redacted {
            json!({ "type": "redacted_thinking", "data": self.data })
        } else {
            json!({ "type": "thinking", "thinking": self.thinking, "signature": self.signature })
        }
    }
}

/// Decoder state for one response.
#[derive(Default)]
pub(crate) struct Decoder {
    /// The model asked, whose thinking this is.
    model: String,
    /// Indexes of open text blocks.
    text_blocks: Vec<u64>,
    tools: Vec<PendingTool>,
    thinking: Vec<PendingThinking>,
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
    output_tokens: Option<u64>,
    stop: Option<String>,
}

impl Decoder {
    /// The decoder of a response of `model`.
    pub(crate) fn new(model: &str) -> Decoder {
        Decoder {
            model: model.to_owned(),
            ..Decoder::default()
        }
    }

    fn usage(&mut self, usage: Option<Usage>) {
        if let Some(usage) = usage {
            if let Some(input) = usage.input() {
                self.input_tokens = Some(input);
            }
            if let Some(cached) = usage.cache_read_input_tokens {
                self.cached_input_tokens = Some(cached);
            }
            if let Some(written) = usage.cache_creation_input_tokens {
                self.cache_write_tokens = Some(written);
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
                let kind = start.content_block.kind.clone();
                match kind.as_str() {
                    "text" => self.text_blocks.push(start.index),
                    "tool_use" => self.tools.push(PendingTool {
                        index: start.index,
                        id: start.content_block.id.unwrap_or_default(),
                        name: start.content_block.name.unwrap_or_default(),
                        json: String::new(),
                    }),
                    kind @ ("thinking" | "redacted_thinking") => {
                        let block = start.content_block;
                        self.thinking.push(PendingThinking {
                            index: start.index,
                            redacted: kind == "redacted_thinking",
                            thinking: block.thinking.unwrap_or_default(),
                            signature: block.signature.unwrap_or_default(),
                            data: block.data.unwrap_or_default(),
                        });
                    }
                    // Server tools: nothing to report.
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
                    "thinking_delta" | "signature_delta" => {
                        if let Some(block) =
                            self.thinking.iter_mut().find(|t| t.index == delta.index)
                        {
                            block
                                .thinking
                                .push_str(&delta.delta.thinking.unwrap_or_default());
                            block
                                .signature
                                .push_str(&delta.delta.signature.unwrap_or_default());
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
                if let Some(at) = self.thinking.iter().position(|t| t.index == stop.index) {
                    let block = self.thinking.remove(at).block();
                    out.push(ModelEvent::Reasoning(ReasoningItem {
                        format: WireFormat::AnthropicMessages,
                        model: self.model.clone(),
                        raw: block.to_string(),
                    }));
                }
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
                        cache_write_tokens: self.cache_write_tokens,
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

    #[test]
    fn thinking_blocks_are_reported_whole_to_go_back_and_never_as_text() {
        let events = [
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"First, "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"look."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB=="}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwK=="}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Done."}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
        ];
        let mut decoder = Decoder::new("claude-sonnet-4-5");
        let mut out = Vec::new();
        for data in events {
            let event = SseEvent {
                event: String::new(),
                data: data.to_owned(),
            };
            decoder.event(&event, &mut out).unwrap();
        }
        let blocks: Vec<serde_json::Value> = out
            .iter()
            .filter_map(|e| match e {
                ModelEvent::Reasoning(item) => {
                    assert_eq!(item.model, "claude-sonnet-4-5");
                    assert_eq!(item.format, WireFormat::AnthropicMessages);
                    Some(serde_json::from_str(&item.raw).unwrap())
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            blocks,
            [
                json!({"type": "thinking", "thinking": "First, look.", "signature": "EqQB=="}),
                json!({"type": "redacted_thinking", "data": "EmwK=="}),
            ]
        );
        assert_eq!(out.last(), Some(&ModelEvent::TextDelta("Done.".into())));
        assert_eq!(
            out.iter()
                .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
                .count(),
            1
        );
    }
}
