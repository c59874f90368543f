//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`), as OpenAI,
//! llama.cpp's server, vLLM, Ollama, LM Studio and OpenRouter stream it: the request
//! body and the decoder of its `chat.completion.chunk` stream.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::codec::{Decode, arguments, parse};
use crate::sse::SseEvent;
use crate::{Item, ModelEvent, ModelRequest, ProviderError, Reasoning, StopReason, effort_value};

/// The request URL for a base URL without its trailing slash.
pub(crate) fn url(base: &str) -> String {
    format!("{base}/chat/completions")
}

/// The streamed request: instructions as the system message, tool calls folded into
/// the assistant message they belong to, tool results as `role: tool` messages, and
/// usage asked for in the stream.
pub(crate) fn body(request: &ModelRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    if let Some(instructions) = &request.instructions {
        messages.push(json!({ "role": "system", "content": instructions }));
    }
    // Images wait for the end of the response's tool messages, which must follow the
    // calls unbroken, and go in one user message.
    let mut images: Vec<Value> = Vec::new();
    for item in &request.items {
        if !matches!(item, Item::ToolResult { .. } | Item::Image { .. }) {
            flush_images(&mut messages, &mut images);
        }
        match item {
            Item::User { text } => messages.push(json!({ "role": "user", "content": text })),
            Item::Assistant { text } => {
                messages.push(json!({ "role": "assistant", "content": text }))
            }
            // Chat Completions takes no reasoning back.
            Item::Reasoning(_) => {}
            Item::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                let call = json!({
                    "id": call_id, "type": "function",
                    "function": { "name": name, "arguments": arguments },
                });
                // Calls join the assistant message just before them (its text, or the
                // calls before them), as the model produced them in one reply.
                match messages.last_mut() {
                    Some(last) if last["role"] == "assistant" => {
                        match last["tool_calls"].as_array_mut() {
                            Some(calls) => calls.push(call),
                            None => last["tool_calls"] = json!([call]),
                        }
                    }
                    _ => messages.push(
                        json!({ "role": "assistant", "content": null, "tool_calls": [call] }),
                    ),
                }
            }
            Item::ToolResult {
                call_id, output, ..
            } => {
                messages
                    .push(json!({ "role": "tool", "tool_call_id": call_id, "content": output }));
            }
            Item::UserImage { media_type, data } => crate::push_user_part(
                &mut messages,
                "text",
                json!({
                    "type": "image_url",
                    "image_url": { "url": Item::data_url(media_type, data) },
                }),
                json!({ "role": "user" }),
            ),
            Item::Image {
                call_id,
                media_type,
                data,
            } => {
                images.push(
                    json!({ "type": "text", "text": format!("The image of tool call {call_id}:") }),
                );
                images.push(json!({
                    "type": "image_url",
                    "image_url": { "url": Item::data_url(media_type, data) },
                }));
            }
        }
    }
    flush_images(&mut messages, &mut images);
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    // `max_tokens` rather than OpenAI's newer `max_completion_tokens`: every compatible
    // server (llama.cpp, vLLM, Ollama, LM Studio, OpenRouter) takes it.
    if let Some(tokens) = request.max_output_tokens {
        body["max_tokens"] = json!(tokens);
    }
    if let Some(Reasoning::Chat { effort }) = request.reasoning
        && let Some(effort) = effort_value(Some(effort))
    {
        body["reasoning_effort"] = json!(effort);
    }
    // Some servers refuse an empty tools array, so none is sent without tools.
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": { "name": t.name, "description": t.description, "parameters": t.parameters },
                })
            })
            .collect();
        body["tools"] = json!(tools);
    }
    body
}

/// The images waiting, as one user message.
fn flush_images(messages: &mut Vec<Value>, images: &mut Vec<Value>) {
    if !images.is_empty() {
        let content = std::mem::take(images);
        messages.push(json!({ "role": "user", "content": content }));
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// The parts of a delta this client reads: `reasoning_content` and the like are raw
/// reasoning, never reported. `refusal` is OpenAI's: the model declined, in these words
/// (the streamed form of a message's `refusal`).
#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolDelta>>,
}

#[derive(Deserialize)]
struct ToolDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// A tool call being streamed.
struct PendingCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

/// Decoder state for one response.
#[derive(Default)]
pub(crate) struct Decoder {
    calls: Vec<PendingCall>,
    finish: Option<String>,
    usage: Option<ModelEvent>,
    emitted_calls: usize,
    /// A `refusal` delta came: the response ends as a refusal.
    refused: bool,
}

impl Decoder {
    fn tool_delta(&mut self, position: usize, delta: ToolDelta) {
        // Servers that send whole calls in one chunk sometimes omit the index; the
        // position in the array stands in for it.
        let index = delta.index.unwrap_or(position as u64);
        let id = delta.id.filter(|id| !id.is_empty());
        let existing = self.calls.iter().rposition(|c| c.index == index);
        // A new ID at an index already in use is a new call from a server that reuses
        // index 0 for every call.
        let call = match (existing, &id) {
            (Some(at), Some(id)) if !self.calls[at].id.is_empty() && self.calls[at].id != *id => {
                None
            }
            (Some(at), _) => Some(at),
            (None, _) => None,
        };
        let at = match call {
            Some(at) => at,
            None => {
                self.calls.push(PendingCall {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        if let Some(id) = id
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name
                && call.name.is_empty()
            {
                call.name = name;
            }
            if let Some(fragment) = function.arguments {
                call.arguments.push_str(&fragment);
            }
        }
    }

    /// Reports every call gathered so far, in the order they began.
    fn flush_calls(&mut self, out: &mut Vec<ModelEvent>) {
        for call in self.calls.drain(..) {
            self.emitted_calls += 1;
            let call_id = if call.id.is_empty() {
                // A server that sends no ID still needs results matched to calls.
                format!("call_{}", self.emitted_calls)
            } else {
                call.id
            };
            out.push(ModelEvent::ToolCall {
                call_id,
                name: call.name,
                arguments: arguments(call.arguments),
            });
        }
    }
}

impl Decode for Decoder {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<ModelEvent>,
    ) -> Result<bool, ProviderError> {
        if event.data.trim() == "[DONE]" {
            self.flush_calls(out);
            out.extend(self.usage.take());
            let stop = match self.finish.as_deref() {
                _ if self.refused => StopReason::Refusal,
                Some("content_filter") => StopReason::Refusal,
                Some("stop") if self.emitted_calls > 0 => StopReason::ToolCalls,
                Some("stop") => StopReason::EndTurn,
                Some("tool_calls" | "function_call") => StopReason::ToolCalls,
                Some("length") => StopReason::MaxTokens,
                _ => StopReason::Other,
            };
            out.push(ModelEvent::Completed(stop));
            return Ok(true);
        }
        let chunk: Chunk = parse(&event.data)?;
        if chunk.error.is_some() {
            return Err(ProviderError::ServerError);
        }
        // Only the last usage counts: some servers repeat running totals.
        if let Some(usage) = chunk.usage {
            self.usage = Some(ModelEvent::Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
                cached_input_tokens: usage.prompt_tokens_details.and_then(|d| d.cached_tokens),
                cache_write_tokens: None,
                reasoning_tokens: usage
                    .completion_tokens_details
                    .and_then(|d| d.reasoning_tokens),
            });
        }
        // One completion is asked for, so only the first choice matters.
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(false);
        };
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content
                && !text.is_empty()
            {
                out.push(ModelEvent::TextDelta(text));
            }
            // The refusal is the reply: its words are text; the end says it refused.
            if let Some(refusal) = delta.refusal {
                self.refused = true;
                if !refusal.is_empty() {
                    out.push(ModelEvent::TextDelta(refusal));
                }
            }
            for (position, tool) in delta.tool_calls.into_iter().flatten().enumerate() {
                self.tool_delta(position, tool);
            }
        }
        if let Some(reason) = choice.finish_reason {
            // The calls are complete once the choice finished.
            self.flush_calls(out);
            self.finish = Some(reason);
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_follows_the_tool_messages_as_a_user_image_url() {
        let body = body(&crate::image_request());
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        // The tool messages stay right after the calls; the image comes after them.
        assert_eq!(
            roles,
            ["user", "assistant", "tool", "tool", "user", "assistant"]
        );
        let image = &body["messages"][4]["content"][1];
        assert_eq!(image["type"], "image_url");
        assert_eq!(image["image_url"]["url"], "data:image/png;base64,AAAA");
        assert!(
            body["messages"][4]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("c1")
        );
    }

    fn feed(lines: &[&str]) -> Vec<ModelEvent> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for line in lines {
            let event = SseEvent {
                event: String::new(),
                data: (*line).to_owned(),
            };
            decoder.event(&event, &mut out).unwrap();
        }
        out
    }

    fn call(id: &str, name: &str, arguments: &str) -> ModelEvent {
        ModelEvent::ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn interleaved_fragments_are_reassembled_per_index() {
        let out = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{\"p\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"y","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            out,
            [
                call("a", "x", "{\"p\":1}"),
                call("b", "y", "{}"),
                ModelEvent::Completed(StopReason::ToolCalls)
            ]
        );
    }

    #[test]
    fn whole_calls_without_index_or_id_and_a_reused_index() {
        let out = feed(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"x","arguments":"{}"}},{"function":{"name":"y","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"z","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c2","function":{"name":"w","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        // Index 0 is taken by "x" (no ID), so "z" with an ID extends it; "w" has a
        // different ID at a used index and starts a new call.
        let names: Vec<&str> = out
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCall { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["x", "y", "w"]);
        assert_eq!(
            out.last(),
            Some(&ModelEvent::Completed(StopReason::ToolCalls))
        );
    }

    #[test]
    fn reasoning_content_is_never_reported() {
        let out = feed(&[
            r#"{"choices":[{"delta":{"reasoning_content":"hidden"}}]}"#,
            r#"{"choices":[{"delta":{"content":"shown"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            out,
            [
                ModelEvent::TextDelta("shown".into()),
                ModelEvent::Completed(StopReason::MaxTokens)
            ]
        );
    }

    #[test]
    fn a_refusal_delta_is_the_reply_and_ends_the_response_as_a_refusal() {
        // As OpenAI streams a refusal: `content` null, the words in `refusal`, then
        // `finish_reason: "stop"`.
        let out = feed(&[
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"refusal":"I'm sorry, "},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"refusal":"I can't help."},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            out,
            [
                ModelEvent::TextDelta("I'm sorry, ".into()),
                ModelEvent::TextDelta("I can't help.".into()),
                ModelEvent::Completed(StopReason::Refusal)
            ]
        );
    }

    #[test]
    fn a_content_filter_finish_is_a_refusal() {
        let out = feed(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Part"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            out,
            [
                ModelEvent::TextDelta("Part".into()),
                ModelEvent::Completed(StopReason::Refusal)
            ]
        );
    }

    #[test]
    fn an_error_chunk_is_a_server_error() {
        let mut decoder = Decoder::default();
        let event = SseEvent {
            event: String::new(),
            data: r#"{"error":{"message":"boom"}}"#.to_owned(),
        };
        assert_eq!(
            decoder.event(&event, &mut Vec::new()),
            Err(ProviderError::ServerError)
        );
    }

    #[test]
    fn cached_and_reasoning_tokens_are_read_from_the_details() {
        let out = feed(&[
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":12}}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            out[0],
            ModelEvent::Usage {
                input_tokens: 100,
                output_tokens: 20,
                cached_input_tokens: Some(64),
                cache_write_tokens: None,
                reasoning_tokens: Some(12),
            }
        );
    }
}
