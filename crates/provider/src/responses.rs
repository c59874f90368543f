//! The OpenAI Responses API (`POST {base}/responses`): the request body and the
//! decoder of its typed SSE events.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::codec::{Decode, EventType, arguments, parse};
use crate::sse::SseEvent;
use crate::{
    Item, ModelEvent, ModelRequest, ProviderError, Reasoning, ReasoningItem, StopReason,
    WireFormat, effort_value,
};

/// The request URL for a base URL without its trailing slash.
pub(crate) fn url(base: &str) -> String {
    format!("{base}/responses")
}

/// The streamed request: conversation items as `input`, tools as function tools, and
/// `store: false`, since every request carries the whole conversation: a reasoning
/// model's reasoning is asked for encrypted and goes back with it.
pub(crate) fn body(request: &ModelRequest) -> Value {
    let mut input: Vec<Value> = Vec::new();
    // Images wait for the end of the response's tool outputs, in one user message.
    let mut images: Vec<Value> = Vec::new();
    for item in &request.items {
        if !matches!(item, Item::ToolResult { .. } | Item::Image { .. }) {
            flush_images(&mut input, &mut images);
        }
        match item {
            Item::User { text } => {
                input.push(json!({ "type": "message", "role": "user", "content": text }))
            }
            Item::Assistant { text } => input
                .push(json!({ "type": "message", "role": "assistant", "content": text })),
            Item::Reasoning(reasoning) => {
                input.extend(reasoning.for_request(WireFormat::OpenAiResponses, request))
            }
            Item::ToolCall {
                call_id,
                name,
                arguments,
            } => input.push(
                json!({ "type": "function_call", "call_id": call_id, "name": name, "arguments": arguments }),
            ),
            // The API has no error flag on a tool output; the output text says it.
            Item::ToolResult { call_id, output, .. } => input.push(
                json!({ "type": "function_call_output", "call_id": call_id, "output": output }),
            ),
            Item::UserImage { media_type, data } => crate::push_user_part(
                &mut input,
                "input_text",
                json!({
                    "type": "input_image",
                    "image_url": Item::data_url(media_type, data),
                    "detail": "auto",
                }),
                json!({ "type": "message", "role": "user" }),
            ),
            Item::Image {
                call_id,
                media_type,
                data,
            } => {
                images.push(json!({ "type": "input_text", "text": format!("The image of tool call {call_id}:") }));
                images.push(json!({
                    "type": "input_image",
                    "image_url": Item::data_url(media_type, data),
                    "detail": "auto",
                }));
            }
        }
    }
    flush_images(&mut input, &mut images);
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if let Some(instructions) = &request.instructions {
        body["instructions"] = json!(instructions);
    }
    if let Some(tokens) = request.max_output_tokens {
        body["max_output_tokens"] = json!(tokens);
    }
    if request.reasoning_summaries {
        body["reasoning"] = json!({ "summary": "auto" });
    }
    if let Some(Reasoning::Responses { effort }) = request.reasoning {
        // Nothing is stored: the reasoning comes back encrypted, to be sent again.
        body["include"] = json!(["reasoning.encrypted_content"]);
        if let Some(effort) = effort_value(effort) {
            body["reasoning"]["effort"] = json!(effort);
        }
    }
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function", "name": t.name, "description": t.description,
                    "parameters": t.parameters,
                })
            })
            .collect();
        body["tools"] = json!(tools);
    }
    body
}

/// The images waiting, as one user message.
fn flush_images(input: &mut Vec<Value>, images: &mut Vec<Value>) {
    if !images.is_empty() {
        let content = std::mem::take(images);
        input.push(json!({ "type": "message", "role": "user", "content": content }));
    }
}

#[derive(Deserialize)]
struct Delta {
    delta: String,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    summary_index: u64,
}

#[derive(Deserialize)]
struct SummaryDone {
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    summary_index: u64,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct RefusalDone {
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct ItemEvent {
    item: OutputItem,
}

/// An item event whose item is kept as the JSON text it came as.
#[derive(Deserialize)]
struct RawItemEvent<'a> {
    #[serde(borrow)]
    item: &'a serde_json::value::RawValue,
}

#[derive(Deserialize)]
struct OutputItem {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    /// A reasoning item's encrypted reasoning (asked for with `include`).
    #[serde(default)]
    encrypted_content: Option<String>,
}

#[derive(Deserialize)]
struct ResponseEvent {
    response: Response,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    #[serde(default)]
    code: Option<String>,
}

/// A function call being streamed.
struct PendingCall {
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
}

/// The summary parts of one reasoning item.
struct Summary {
    item_id: Option<String>,
    parts: Vec<String>,
}

/// Decoder state for one response.
#[derive(Default)]
pub(crate) struct Decoder {
    /// The model asked, whose reasoning items these are.
    model: String,
    calls: Vec<PendingCall>,
    summaries: Vec<Summary>,
    saw_tool_call: bool,
    /// A `refusal` content part came: the response ends as a refusal.
    refused: bool,
    /// Some of the current refusal part's text came as deltas, so its `done` event
    /// repeats what was reported.
    refusal_streamed: bool,
}

impl Decoder {
    /// The decoder of a response of `model`.
    pub(crate) fn new(model: &str) -> Decoder {
        Decoder {
            model: model.to_owned(),
            ..Decoder::default()
        }
    }

    fn summary_part(&mut self, item_id: Option<String>, index: u64) -> &mut String {
        let at = match self.summaries.iter().position(|s| s.item_id == item_id) {
            Some(at) => at,
            None => {
                self.summaries.push(Summary {
                    item_id,
                    parts: Vec::new(),
                });
                self.summaries.len() - 1
            }
        };
        let parts = &mut self.summaries[at].parts;
        // Indexes come from the provider: grow only as far as a plausible index needs.
        let index = usize::try_from(index)
            .unwrap_or(usize::MAX)
            .min(parts.len());
        if index == parts.len() {
            parts.push(String::new());
        }
        &mut parts[index]
    }

    fn tool_call(&mut self, call: PendingCall, out: &mut Vec<ModelEvent>) {
        self.saw_tool_call = true;
        out.push(ModelEvent::ToolCall {
            call_id: call.call_id,
            name: call.name,
            arguments: arguments(call.arguments),
        });
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
            "response.output_text.delta" => {
                let delta: Delta = parse(&event.data)?;
                if !delta.delta.is_empty() {
                    out.push(ModelEvent::TextDelta(delta.delta));
                }
            }
            // A refusal is the reply: its words are text, and the response's end says
            // it was a refusal.
            "response.refusal.delta" => {
                let delta: Delta = parse(&event.data)?;
                self.refused = true;
                if !delta.delta.is_empty() {
                    self.refusal_streamed = true;
                    out.push(ModelEvent::TextDelta(delta.delta));
                }
            }
            "response.refusal.done" => {
                let done: RefusalDone = parse(&event.data)?;
                self.refused = true;
                // A refusal that came whole, with no deltas, is never lost.
                if !std::mem::take(&mut self.refusal_streamed)
                    && let Some(text) = done.refusal.filter(|t| !t.is_empty())
                {
                    out.push(ModelEvent::TextDelta(text));
                }
            }
            "response.reasoning_summary_text.delta" => {
                let delta: Delta = parse(&event.data)?;
                let part = self.summary_part(delta.item_id.clone(), delta.summary_index);
                // A later part joins the one before with a blank line, as the whole
                // summary does.
                let joined = part.is_empty() && delta.summary_index > 0;
                part.push_str(&delta.delta);
                if !delta.delta.is_empty() {
                    let text = if joined {
                        format!("\n\n{}", delta.delta)
                    } else {
                        delta.delta
                    };
                    out.push(ModelEvent::ReasoningSummaryDelta {
                        item_id: delta.item_id,
                        text,
                    });
                }
            }
            "response.reasoning_summary_text.done" => {
                let done: SummaryDone = parse(&event.data)?;
                let part = self.summary_part(done.item_id.clone(), done.summary_index);
                if let Some(text) = done.text {
                    *part = text;
                }
                // The whole summary of the item so far: a repeated item ID replaces it.
                if let Some(summary) = self.summaries.iter().find(|s| s.item_id == done.item_id) {
                    out.push(ModelEvent::ReasoningSummary {
                        item_id: summary.item_id.clone(),
                        text: summary.parts.join("\n\n"),
                    });
                }
            }
            "response.output_item.added" => {
                let ItemEvent { item } = parse(&event.data)?;
                if item.kind == "function_call" {
                    let item_id = item.id.unwrap_or_default();
                    self.calls.push(PendingCall {
                        call_id: item.call_id.unwrap_or_else(|| item_id.clone()),
                        item_id,
                        name: item.name.unwrap_or_default(),
                        arguments: item.arguments.unwrap_or_default(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                let delta: Delta = parse(&event.data)?;
                let item_id = delta.item_id.unwrap_or_default();
                if let Some(call) = self.calls.iter_mut().find(|c| c.item_id == item_id) {
                    call.arguments.push_str(&delta.delta);
                }
            }
            "response.output_item.done" => {
                let ItemEvent { item } = parse(&event.data)?;
                if item.kind == "reasoning" && item.encrypted_content.is_some() {
                    // The item goes back as it came: its encrypted content is opaque.
                    let done: RawItemEvent<'_> = parse(&event.data)?;
                    out.push(ModelEvent::Reasoning(ReasoningItem {
                        format: WireFormat::OpenAiResponses,
                        model: self.model.clone(),
                        raw: done.item.get().to_owned(),
                    }));
                }
                if item.kind == "function_call" {
                    let item_id = item.id.unwrap_or_default();
                    let pending = self
                        .calls
                        .iter()
                        .position(|c| c.item_id == item_id)
                        .map(|at| self.calls.remove(at));
                    // The finished item is authoritative; the streamed pieces fill in
                    // what it leaves out.
                    let call = match pending {
                        Some(p) => PendingCall {
                            call_id: item.call_id.unwrap_or(p.call_id),
                            name: item.name.unwrap_or(p.name),
                            arguments: item.arguments.unwrap_or(p.arguments),
                            item_id,
                        },
                        None => PendingCall {
                            call_id: item.call_id.unwrap_or_else(|| item_id.clone()),
                            name: item.name.unwrap_or_default(),
                            arguments: item.arguments.unwrap_or_default(),
                            item_id,
                        },
                    };
                    self.tool_call(call, out);
                }
            }
            kind @ ("response.completed" | "response.incomplete") => {
                let ResponseEvent { response } = parse(&event.data)?;
                // A call whose item never finished is still a call the model made.
                for call in std::mem::take(&mut self.calls) {
                    self.tool_call(call, out);
                }
                if let Some(usage) = response.usage {
                    out.push(ModelEvent::Usage {
                        input_tokens: usage.input_tokens,
                        output_tokens: usage.output_tokens,
                        cached_input_tokens: usage
                            .input_tokens_details
                            .and_then(|d| d.cached_tokens),
                        cache_write_tokens: None,
                        reasoning_tokens: usage
                            .output_tokens_details
                            .and_then(|d| d.reasoning_tokens),
                    });
                }
                let stop = if self.refused {
                    StopReason::Refusal
                } else if kind == "response.completed" {
                    if self.saw_tool_call {
                        StopReason::ToolCalls
                    } else {
                        StopReason::EndTurn
                    }
                } else {
                    match response
                        .incomplete_details
                        .and_then(|d| d.reason)
                        .as_deref()
                    {
                        Some("max_output_tokens") => StopReason::MaxTokens,
                        Some("content_filter") => StopReason::Refusal,
                        _ => StopReason::Other,
                    }
                };
                out.push(ModelEvent::Completed(stop));
                return Ok(true);
            }
            "response.failed" => return Err(ProviderError::ServerError),
            "error" => {
                let error: ErrorEvent = parse(&event.data)?;
                let rate_limited = error.code.is_some_and(|c| c.contains("rate_limit"));
                return Err(if rate_limited {
                    ProviderError::RateLimited
                } else {
                    ProviderError::ServerError
                });
            }
            // Everything else (created, in_progress, content parts, raw reasoning,
            // annotations, ...) carries nothing this client reports.
            _ => {}
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use magi_protocol::messages::Effort;

    use super::*;

    #[test]
    fn an_image_follows_the_tool_outputs_as_a_user_input_image() {
        let body = body(&crate::image_request());
        let types: Vec<&str> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "message",
                "function_call",
                "function_call",
                "function_call_output",
                "function_call_output",
                "message",
                "message"
            ]
        );
        let message = &body["input"][5];
        assert_eq!(message["role"], "user");
        assert_eq!(message["content"][1]["type"], "input_image");
        assert_eq!(
            message["content"][1]["image_url"],
            "data:image/png;base64,AAAA"
        );
    }

    #[test]
    fn an_explicit_effort_is_sent_and_default_is_not() {
        let request = |effort| ModelRequest {
            model: "o3".into(),
            instructions: None,
            items: Vec::new(),
            tools: Vec::new(),
            reasoning_summaries: false,
            reasoning: Some(Reasoning::Responses { effort }),
            max_output_tokens: None,
            cache_key: Some("session-1".into()),
        };
        let high = body(&request(Some(Effort::High)));
        assert_eq!(high["reasoning"]["effort"], "high");
        assert_eq!(high["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(high["prompt_cache_key"], "session-1");
        let default = body(&request(Some(Effort::Default)));
        assert!(default.get("reasoning").is_none());
        // A reasoning model's reasoning is kept whatever the effort.
        assert_eq!(default["include"], json!(["reasoning.encrypted_content"]));
        let plain = ModelRequest {
            reasoning: None,
            ..request(None)
        };
        assert!(body(&plain).get("reasoning").is_none());
        assert!(body(&plain).get("include").is_none());
    }

    #[test]
    fn an_encrypted_reasoning_item_goes_back_as_it_came_to_its_own_model_only() {
        let raw = r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA=="}"#;
        let (out, _) = feed(&[
            json!({"type":"response.output_item.done","output_index":0,"item": serde_json::from_str::<Value>(raw).unwrap()}),
            // Without encrypted content an item cannot go back (nothing is stored).
            json!({"type":"response.output_item.done","output_index":1,"item":{"type":"reasoning","id":"rs_2","summary":[]}}),
        ]);
        let item = match &out[..] {
            [ModelEvent::Reasoning(item)] => item.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(item.model, "o3");
        assert_eq!(
            serde_json::from_str::<Value>(&item.raw).unwrap(),
            serde_json::from_str::<Value>(raw).unwrap()
        );
        let request = |model: &str, reasoning| ModelRequest {
            model: model.into(),
            instructions: None,
            items: vec![Item::Reasoning(item.clone())],
            tools: Vec::new(),
            reasoning_summaries: false,
            reasoning,
            max_output_tokens: None,
            cache_key: None,
        };
        let same = body(&request("o3", Some(Reasoning::Responses { effort: None })));
        assert_eq!(same["input"][0]["encrypted_content"], "gAAA==");
        // Another model, or a request that does not reason, leaves it out.
        let other = body(&request(
            "o4-mini",
            Some(Reasoning::Responses { effort: None }),
        ));
        assert_eq!(other["input"], json!([]));
        assert_eq!(body(&request("o3", None))["input"], json!([]));
    }

    fn feed(lines: &[Value]) -> (Vec<ModelEvent>, Result<bool, ProviderError>) {
        let mut decoder = Decoder::new("o3");
        let mut out = Vec::new();
        let mut last = Ok(false);
        for line in lines {
            let event = SseEvent {
                event: String::new(),
                data: line.to_string(),
            };
            last = decoder.event(&event, &mut out);
            if last.is_err() {
                break;
            }
        }
        (out, last)
    }

    #[test]
    fn summary_parts_of_one_item_are_joined_and_replace_earlier_text() {
        let (out, _) = feed(&[
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs","summary_index":0,"delta":"A"}),
            json!({"type":"response.reasoning_summary_text.done","item_id":"rs","summary_index":0,"text":"A."}),
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs","summary_index":1,"delta":"B"}),
            json!({"type":"response.reasoning_summary_text.done","item_id":"rs","summary_index":1}),
        ]);
        let delta = |text: &str| ModelEvent::ReasoningSummaryDelta {
            item_id: Some("rs".into()),
            text: text.into(),
        };
        let summaries: Vec<&ModelEvent> = out.iter().collect();
        assert_eq!(
            summaries,
            [
                &delta("A"),
                &ModelEvent::ReasoningSummary {
                    item_id: Some("rs".into()),
                    text: "A.".into()
                },
                &delta("\n\nB"),
                &ModelEvent::ReasoningSummary {
                    item_id: Some("rs".into()),
                    text: "A.\n\nB".into()
                },
            ]
        );
    }

    #[test]
    fn raw_reasoning_text_is_never_reported() {
        let (out, _) = feed(&[
            json!({"type":"response.reasoning_text.delta","item_id":"rs","delta":"secret thoughts"}),
            json!({"type":"response.reasoning_text.done","item_id":"rs","text":"secret thoughts"}),
        ]);
        assert!(out.is_empty());
    }

    #[test]
    fn a_call_without_a_done_item_is_reported_at_completion() {
        let (out, last) = feed(&[
            json!({"type":"response.output_item.added","item":{"type":"function_call","id":"fc","call_id":"c","name":"n","arguments":""}}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc","delta":"{\"a\""}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc","delta":":1}"}),
            json!({"type":"response.completed","response":{"usage":null}}),
        ]);
        assert_eq!(last, Ok(true));
        assert_eq!(
            out,
            [
                ModelEvent::ToolCall {
                    call_id: "c".into(),
                    name: "n".into(),
                    arguments: "{\"a\":1}".into()
                },
                ModelEvent::Completed(StopReason::ToolCalls),
            ]
        );
    }

    #[test]
    fn failures_in_the_stream_map_to_codes() {
        assert_eq!(
            feed(&[json!({"type":"response.failed","response":{}})]).1,
            Err(ProviderError::ServerError)
        );
        let limited = json!({"type":"error","code":"rate_limit_exceeded","message":"x"});
        assert_eq!(feed(&[limited]).1, Err(ProviderError::RateLimited));
        assert_eq!(
            feed(&[json!({"no":"type"})]).1,
            Err(ProviderError::MalformedStream)
        );
    }

    #[test]
    fn a_refusal_part_is_the_reply_and_ends_the_response_as_a_refusal() {
        // The events as the API streams a refusal (`store: false`, one message item).
        let at = json!({"item_id":"msg_1","output_index":0,"content_index":0});
        let with = |kind: &str, extra: Value| {
            let mut event = at.clone();
            event["type"] = json!(kind);
            for (k, v) in extra.as_object().unwrap() {
                event[k] = v.clone();
            }
            event
        };
        let (out, last) = feed(&[
            json!({"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}}),
            with(
                "response.content_part.added",
                json!({"part":{"type":"refusal","refusal":""}}),
            ),
            with("response.refusal.delta", json!({"delta":"I can't "})),
            with("response.refusal.delta", json!({"delta":"help with that."})),
            with(
                "response.refusal.done",
                json!({"refusal":"I can't help with that."}),
            ),
            with(
                "response.content_part.done",
                json!({"part":{"type":"refusal","refusal":"I can't help with that."}}),
            ),
            json!({"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}}),
            json!({"type":"response.completed","response":{"status":"completed","usage":null}}),
        ]);
        assert_eq!(last, Ok(true));
        assert_eq!(
            out,
            [
                ModelEvent::TextDelta("I can't ".into()),
                ModelEvent::TextDelta("help with that.".into()),
                ModelEvent::Completed(StopReason::Refusal),
            ]
        );
        // Given whole, with no deltas, the refusal's words still come.
        let (out, _) = feed(&[
            with("response.refusal.done", json!({"refusal":"No."})),
            json!({"type":"response.completed","response":{"usage":null}}),
        ]);
        assert_eq!(
            out,
            [
                ModelEvent::TextDelta("No.".into()),
                ModelEvent::Completed(StopReason::Refusal),
            ]
        );
    }

    #[test]
    fn an_output_withheld_by_the_content_filter_is_a_refusal() {
        let (out, _) = feed(&[
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Part"}),
            json!({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"usage":null}}),
        ]);
        assert_eq!(
            out,
            [
                ModelEvent::TextDelta("Part".into()),
                ModelEvent::Completed(StopReason::Refusal),
            ]
        );
    }

    #[test]
    fn cached_and_reasoning_tokens_are_read_from_the_details() {
        let (out, _) = feed(
            &[json!({"type": "response.completed", "response": {"usage": {
                "input_tokens": 100, "output_tokens": 20,
                "input_tokens_details": {"cached_tokens": 64},
                "output_tokens_details": {"reasoning_tokens": 12},
            }}})],
        );
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
