//! Rendering a [`Script`] as the SSE events of each wire format, the way the real
//! services stream them (field names, event order, terminal events).

use bytes::Bytes;
use serde_json::{Value, json};

use crate::reply::{Part, Script, Stop, ToolCall};

/// The wire format a model route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenAI Responses API, `POST /v1/responses`.
    Responses,
    /// OpenAI Chat Completions, `POST /v1/chat/completions`.
    ChatCompletions,
    /// Anthropic Messages API, `POST /v1/messages`.
    AnthropicMessages,
}

impl Format {
    /// The format served at this path, if it is a model route.
    pub fn from_path(path: &str) -> Option<Format> {
        match path {
            "/v1/responses" => Some(Format::Responses),
            "/v1/chat/completions" => Some(Format::ChatCompletions),
            "/v1/messages" => Some(Format::AnthropicMessages),
            _ => None,
        }
    }
}

/// The garbage event [`crate::Reply::malformed_after`] inserts: a `data:` line that is
/// not JSON.
pub(crate) const MALFORMED_EVENT: &str = "data: {\"this is not json\n\n";

/// One SSE event: an optional `event:` line, one `data:` line, a blank line. The JSON
/// serializer never emits a raw newline, so one `data:` line always suffices.
fn sse(event: Option<&str>, data: &Value) -> Bytes {
    let data = data.to_string();
    let mut out = String::with_capacity(data.len() + 48);
    if let Some(event) = event {
        out.push_str("event: ");
        out.push_str(event);
        out.push('\n');
    }
    out.push_str("data: ");
    out.push_str(&data);
    out.push_str("\n\n");
    Bytes::from(out)
}

/// The events of `script` in `format` answering the request `body`, with the scripted
/// garbage event inserted and the list cut where the scripted disconnect happens. The
/// second value says whether the connection must then be broken instead of ended. The
/// reasoning given is sealed for the request's model (see `checks`): a Responses
/// reasoning item carries `encrypted_content` when the request asked for it.
pub(crate) fn render(format: Format, script: &Script, body: &Value) -> (Vec<Bytes>, bool) {
    let model = body["model"].as_str().unwrap_or("mock-model");
    let mut events = match format {
        Format::Responses => {
            let encrypted = body["include"]
                .as_array()
                .is_some_and(|asked| asked.iter().any(|i| i == "reasoning.encrypted_content"));
            responses(script, encrypted.then_some(model))
        }
        Format::ChatCompletions => chat(script),
        Format::AnthropicMessages => anthropic(script, model),
    };
    if let Some(at) = script.malformed_after {
        events.insert(
            at.min(events.len()),
            Bytes::from_static(MALFORMED_EVENT.as_bytes()),
        );
    }
    match script.disconnect_after {
        Some(n) => {
            events.truncate(n);
            (events, true)
        }
        None => (events, false),
    }
}

/// Responses API: `response.created`, then per output item its `added`, deltas,
/// `done` events, then `response.completed` (or `response.incomplete`). With `sealed_for`
/// a model, reasoning items carry their encrypted content, sealed for it.
fn responses(script: &Script, sealed_for: Option<&str>) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut seq = 0u64;
    let mut emit = |out: &mut Vec<Bytes>, kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(seq);
        seq += 1;
        out.push(sse(Some(kind), &data));
    };
    let response = |status: &str, output: &[Value]| {
        json!({
            "id": "resp_mock", "object": "response", "model": "mock-model",
            "status": status, "output": output,
        })
    };
    emit(
        &mut out,
        "response.created",
        json!({ "response": response("in_progress", &[]) }),
    );
    emit(
        &mut out,
        "response.in_progress",
        json!({ "response": response("in_progress", &[]) }),
    );
    let mut done_items = Vec::new();
    for (index, part) in script.parts.iter().enumerate() {
        match part {
            Part::Reasoning(chunks) => {
                let id = format!("rs_{index}");
                let text = chunks.concat();
                let at = json!({ "item_id": id, "output_index": index, "summary_index": 0 });
                emit(
                    &mut out,
                    "response.output_item.added",
                    json!({ "output_index": index, "item": { "type": "reasoning", "id": id, "summary": [] } }),
                );
                let mut added = at.clone();
                added["part"] = json!({ "type": "summary_text", "text": "" });
                emit(&mut out, "response.reasoning_summary_part.added", added);
                for chunk in chunks {
                    let mut delta = at.clone();
                    delta["delta"] = json!(chunk);
                    emit(&mut out, "response.reasoning_summary_text.delta", delta);
                }
                let mut done = at.clone();
                done["text"] = json!(text);
                emit(&mut out, "response.reasoning_summary_text.done", done);
                let mut part_done = at;
                part_done["part"] = json!({ "type": "summary_text", "text": text });
                emit(&mut out, "response.reasoning_summary_part.done", part_done);
                let mut item = json!({
                    "type": "reasoning", "id": id,
                    "summary": [{ "type": "summary_text", "text": text }],
                });
                if let Some(model) = sealed_for {
                    item["encrypted_content"] = json!(crate::seal::seal(
                        model,
                        &crate::seal::responses_content(&item)
                    ));
                }
                emit(
                    &mut out,
                    "response.output_item.done",
                    json!({ "output_index": index, "item": item }),
                );
                done_items.push(item);
            }
            Part::Refusal(chunks) => {
                let id = format!("msg_{index}");
                let text = chunks.concat();
                let at = json!({ "item_id": id, "output_index": index, "content_index": 0 });
                emit(
                    &mut out,
                    "response.output_item.added",
                    json!({ "output_index": index, "item": {
                        "type": "message", "id": id, "status": "in_progress",
                        "role": "assistant", "content": [],
                    } }),
                );
                let mut added = at.clone();
                added["part"] = json!({ "type": "refusal", "refusal": "" });
                emit(&mut out, "response.content_part.added", added);
                for chunk in chunks {
                    let mut delta = at.clone();
                    delta["delta"] = json!(chunk);
                    emit(&mut out, "response.refusal.delta", delta);
                }
                let mut done = at.clone();
                done["refusal"] = json!(text);
                emit(&mut out, "response.refusal.done", done);
                let content = json!({ "type": "refusal", "refusal": text });
                let mut part_done = at;
                part_done["part"] = content.clone();
                emit(&mut out, "response.content_part.done", part_done);
                let item = json!({
                    "type": "message", "id": id, "status": "completed",
                    "role": "assistant", "content": [content],
                });
                emit(
                    &mut out,
                    "response.output_item.done",
                    json!({ "output_index": index, "item": item }),
                );
                done_items.push(item);
            }
            Part::Text(chunks) => {
                let id = format!("msg_{index}");
                let text = chunks.concat();
                let at = json!({ "item_id": id, "output_index": index, "content_index": 0 });
                emit(
                    &mut out,
                    "response.output_item.added",
                    json!({ "output_index": index, "item": {
                        "type": "message", "id": id, "status": "in_progress",
                        "role": "assistant", "content": [],
                    } }),
                );
                let mut added = at.clone();
                added["part"] = json!({ "type": "output_text", "text": "", "annotations": [] });
                emit(&mut out, "response.content_part.added", added);
                for chunk in chunks {
                    let mut delta = at.clone();
                    delta["delta"] = json!(chunk);
                    emit(&mut out, "response.output_text.delta", delta);
                }
                let mut done = at.clone();
                done["text"] = json!(text);
                emit(&mut out, "response.output_text.done", done);
                let content = json!({ "type": "output_text", "text": text, "annotations": [] });
                let mut part_done = at;
                part_done["part"] = content.clone();
                emit(&mut out, "response.content_part.done", part_done);
                let item = json!({
                    "type": "message", "id": id, "status": "completed",
                    "role": "assistant", "content": [content],
                });
                emit(
                    &mut out,
                    "response.output_item.done",
                    json!({ "output_index": index, "item": item }),
                );
                done_items.push(item);
            }
            Part::Tool(call) => {
                let id = format!("fc_{index}");
                let item = |arguments: String, status: &str| {
                    json!({
                        "type": "function_call", "id": id, "call_id": call.call_id,
                        "name": call.name, "arguments": arguments, "status": status,
                    })
                };
                emit(
                    &mut out,
                    "response.output_item.added",
                    json!({ "output_index": index, "item": item(String::new(), "in_progress") }),
                );
                for fragment in &call.fragments {
                    emit(
                        &mut out,
                        "response.function_call_arguments.delta",
                        json!({ "item_id": id, "output_index": index, "delta": fragment }),
                    );
                }
                emit(
                    &mut out,
                    "response.function_call_arguments.done",
                    json!({ "item_id": id, "output_index": index, "arguments": call.arguments() }),
                );
                let done = item(call.arguments(), "completed");
                emit(
                    &mut out,
                    "response.output_item.done",
                    json!({ "output_index": index, "item": done }),
                );
                done_items.push(done);
            }
        }
    }
    let usage = match script.usage {
        Some((input, output)) => {
            let mut usage = json!({
                "input_tokens": input, "output_tokens": output, "total_tokens": input + output,
            });
            if let Some((read, _)) = script.cache {
                usage["input_tokens_details"] = json!({ "cached_tokens": read });
            }
            usage
        }
        None => Value::Null,
    };
    let incomplete = match script.stop() {
        Stop::EndTurn | Stop::ToolCalls => None,
        // A refusal part is the refusal; the response itself completed.
        Stop::Refusal if script.refuses() => None,
        Stop::MaxTokens => Some("max_output_tokens"),
        Stop::Refusal => Some("content_filter"),
    };
    match incomplete {
        None => {
            let mut response = response("completed", &done_items);
            response["usage"] = usage;
            emit(
                &mut out,
                "response.completed",
                json!({ "response": response }),
            );
        }
        Some(reason) => {
            let mut response = response("incomplete", &done_items);
            response["usage"] = usage;
            response["incomplete_details"] = json!({ "reason": reason });
            emit(
                &mut out,
                "response.incomplete",
                json!({ "response": response }),
            );
        }
    }
    out
}

/// Chat Completions: `chat.completion.chunk` objects whose `choices[0].delta` carries
/// the role, `content`, `refusal`, `reasoning_content` or `tool_calls` fragments; the last choice
/// chunk has the `finish_reason`; an optional usage chunk with no choices; `[DONE]`.
fn chat(script: &Script) -> Vec<Bytes> {
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            &json!({
                "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                "model": "mock-model",
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
            }),
        )
    };
    let mut out = vec![chunk(
        json!({ "role": "assistant", "content": "" }),
        Value::Null,
    )];
    let mut tool_index = 0u64;
    for part in &script.parts {
        match part {
            Part::Reasoning(chunks) => {
                for c in chunks {
                    out.push(chunk(json!({ "reasoning_content": c }), Value::Null));
                }
            }
            Part::Text(chunks) => {
                for c in chunks {
                    out.push(chunk(json!({ "content": c }), Value::Null));
                }
            }
            Part::Refusal(chunks) => {
                for c in chunks {
                    out.push(chunk(json!({ "content": null, "refusal": c }), Value::Null));
                }
            }
            Part::Tool(ToolCall {
                call_id,
                name,
                fragments,
            }) => {
                out.push(chunk(
                    json!({ "tool_calls": [{
                        "index": tool_index, "id": call_id, "type": "function",
                        "function": { "name": name, "arguments": "" },
                    }] }),
                    Value::Null,
                ));
                for fragment in fragments {
                    out.push(chunk(
                        json!({ "tool_calls": [{
                            "index": tool_index, "function": { "arguments": fragment },
                        }] }),
                        Value::Null,
                    ));
                }
                tool_index += 1;
            }
        }
    }
    let finish = match script.stop() {
        Stop::EndTurn => "stop",
        Stop::ToolCalls => "tool_calls",
        Stop::MaxTokens => "length",
        // OpenAI ends a refusal it gave in words as it ends any reply.
        Stop::Refusal if script.refuses() => "stop",
        Stop::Refusal => "content_filter",
    };
    out.push(chunk(json!({}), json!(finish)));
    if let Some((input, output)) = script.usage {
        let mut usage = json!({
            "prompt_tokens": input, "completion_tokens": output,
            "total_tokens": input + output,
        });
        if let Some((read, _)) = script.cache {
            usage["prompt_tokens_details"] = json!({ "cached_tokens": read });
        }
        out.push(sse(
            None,
            &json!({
                "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                "model": "mock-model", "choices": [],
                "usage": usage,
            }),
        ));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// Anthropic Messages: `message_start`, a `ping`, per content block its
/// `content_block_start`, deltas and `content_block_stop`, then `message_delta` with
/// the stop reason and output usage, then `message_stop`. A thinking block's signature
/// is sealed for `model`.
fn anthropic(script: &Script, model: &str) -> Vec<Bytes> {
    let mut out = Vec::new();
    let emit = |out: &mut Vec<Bytes>, kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        out.push(sse(Some(kind), &data));
    };
    let mut message = json!({
        "id": "msg_mock", "type": "message", "role": "assistant", "content": [],
        "model": "mock-model", "stop_reason": null, "stop_sequence": null,
    });
    if let Some((input, _)) = script.usage {
        message["usage"] = json!({ "input_tokens": input, "output_tokens": 1 });
        if let Some((read, written)) = script.cache {
            // The API counts cache reads and writes apart from `input_tokens`.
            message["usage"]["input_tokens"] = json!(input.saturating_sub(read + written));
            message["usage"]["cache_read_input_tokens"] = json!(read);
            message["usage"]["cache_creation_input_tokens"] = json!(written);
        }
    }
    emit(&mut out, "message_start", json!({ "message": message }));
    emit(&mut out, "ping", json!({}));
    for (index, part) in script.parts.iter().enumerate() {
        let (block, deltas): (Value, Vec<Value>) = match part {
            Part::Reasoning(chunks) => {
                let mut deltas: Vec<Value> = chunks
                    .iter()
                    .map(|c| json!({ "type": "thinking_delta", "thinking": c }))
                    .collect();
                let signature = crate::seal::seal(model, &chunks.concat());
                deltas.push(json!({ "type": "signature_delta", "signature": signature }));
                (json!({ "type": "thinking", "thinking": "" }), deltas)
            }
            Part::Text(chunks) | Part::Refusal(chunks) => (
                json!({ "type": "text", "text": "" }),
                chunks
                    .iter()
                    .map(|c| json!({ "type": "text_delta", "text": c }))
                    .collect(),
            ),
            Part::Tool(call) => (
                json!({ "type": "tool_use", "id": call.call_id, "name": call.name, "input": {} }),
                call.fragments
                    .iter()
                    .map(|f| json!({ "type": "input_json_delta", "partial_json": f }))
                    .collect(),
            ),
        };
        emit(
            &mut out,
            "content_block_start",
            json!({ "index": index, "content_block": block }),
        );
        for delta in deltas {
            emit(
                &mut out,
                "content_block_delta",
                json!({ "index": index, "delta": delta }),
            );
        }
        emit(&mut out, "content_block_stop", json!({ "index": index }));
    }
    let stop = match script.stop() {
        Stop::EndTurn => "end_turn",
        Stop::ToolCalls => "tool_use",
        Stop::MaxTokens => "max_tokens",
        Stop::Refusal => "refusal",
    };
    let mut delta = json!({ "delta": { "stop_reason": stop, "stop_sequence": null } });
    if let Some((_, output)) = script.usage {
        delta["usage"] = json!({ "output_tokens": output });
    }
    emit(&mut out, "message_delta", delta);
    emit(&mut out, "message_stop", json!({}));
    out
}
