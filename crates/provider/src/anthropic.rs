//! The Anthropic Messages API (`POST {base}/v1/messages`): the request body and its
//! headers (its stream is read in `stream`).
//!
//! The body marks what the prompt cache may serve with `cache_control` breakpoints: the
//! system prompt (so the tools and instructions before it, the prefix that never
//! changes), and the last block of the two newest user messages (the newest is where
//! this request's cache entry is written; the one before is where the previous
//! request's was, so it is read even when a round added more blocks than the cache
//! looks back over). Three of the API's four.
//!
//! A thinking model is given its effort as `thinking` (a budget of tokens, or adaptive
//! thinking with `output_config.effort`), and its `thinking` and `redacted_thinking`
//! blocks go back unmodified, first in their assistant message, while the model and
//! the thinking stay the same.

mod stream;

pub(crate) use stream::Decoder;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use crate::codec::secret;
use crate::{Item, ModelRequest, ProviderError, Reasoning, WireFormat, effort_value};
use magi_protocol::messages::Effort;

/// The API version sent as `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens`, which the API requires, for a request that names no bound (a model
/// nothing is known of): room for a long reply or a large file in one tool call.
pub const DEFAULT_MAX_TOKENS: u64 = 32_000;

/// The beta that lets a model given a thinking budget think between its tool calls
/// (adaptive thinking does so without it).
pub const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// The smallest thinking budget the API takes.
pub const MIN_THINKING_BUDGET: u64 = 1_024;

/// The thinking budget of each effort a budget model takes (the budget stays below
/// `max_tokens`, as the API requires).
pub const THINKING_BUDGETS: [(Effort, u64); 3] = [
    (Effort::Low, 4_096),
    (Effort::Medium, 12_288),
    (Effort::High, 32_000),
];

/// The breakpoint every `cache_control` marker sets.
fn breakpoint() -> Value {
    json!({ "type": "ephemeral" })
}

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

/// What `request` adds to the headers: the interleaved-thinking beta when it gives the
/// model a thinking budget.
pub(crate) fn request_headers(request: &ModelRequest, headers: &mut HeaderMap) {
    if let Some(Reasoning::AnthropicBudget { .. }) = request.reasoning {
        headers.insert(
            "anthropic-beta",
            HeaderValue::from_static(INTERLEAVED_THINKING_BETA),
        );
    }
}

/// The streamed request: items folded into alternating user and assistant messages
/// of content blocks (`thinking`, `text`, `tool_use`, `tool_result`, a tool's `image`
/// inside its `tool_result`), instructions as `system`, with the cache breakpoints and
/// the thinking configuration.
pub(crate) fn body(request: &ModelRequest) -> Value {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for item in &request.items {
        let (role, block) = match item {
            Item::User { text } => ("user", json!({ "type": "text", "text": text })),
            // The API refuses empty text blocks; an empty segment says nothing anyway.
            Item::Assistant { text } if text.is_empty() => continue,
            Item::Assistant { text } => ("assistant", json!({ "type": "text", "text": text })),
            Item::Reasoning(reasoning) => {
                match reasoning.for_request(WireFormat::AnthropicMessages, request) {
                    Some(block) => ("assistant", block),
                    None => continue,
                }
            }
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
    // The two newest user messages end with a breakpoint each.
    for (_, blocks) in messages
        .iter_mut()
        .rev()
        .filter(|(role, _)| *role == "user")
        .take(2)
    {
        if let Some(last) = blocks.last_mut() {
            last["cache_control"] = breakpoint();
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect();
    let mut max_tokens = request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let thinking = match request.reasoning {
        Some(Reasoning::AnthropicBudget { effort }) => {
            let wanted = THINKING_BUDGETS
                .iter()
                .find(|(level, _)| *level == effort)
                .map(|(_, budget)| *budget);
            wanted.map(|wanted| {
                // At least the API's minimum, and below `max_tokens`.
                let budget = wanted
                    .min(max_tokens.saturating_sub(1))
                    .max(MIN_THINKING_BUDGET);
                max_tokens = max_tokens.max(budget + 1);
                json!({ "type": "enabled", "budget_tokens": budget })
            })
        }
        Some(Reasoning::AnthropicAdaptive { .. }) => Some(json!({ "type": "adaptive" })),
        Some(Reasoning::Responses { .. } | Reasoning::Chat { .. }) | None => None,
    };
    let mut body = json!({
        "model": request.model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": true,
    });
    if let Some(thinking) = thinking {
        body["thinking"] = thinking;
    }
    if let Some(Reasoning::AnthropicAdaptive { effort }) = request.reasoning
        && let Some(effort) = effort_value(Some(effort))
    {
        body["output_config"] = json!({ "effort": effort });
    }
    if let Some(instructions) = &request.instructions {
        body["system"] =
            json!([{ "type": "text", "text": instructions, "cache_control": breakpoint() }]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ModelRequest;

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

    fn thinking_request(model: &str, reasoning: Option<Reasoning>, max: u64) -> ModelRequest {
        let block = r#"{"type":"thinking","thinking":"Let me see.","signature":"sig=="}"#;
        ModelRequest {
            model: model.into(),
            instructions: Some("Be brief.".into()),
            items: vec![
                Item::User { text: "go".into() },
                Item::Reasoning(crate::ReasoningItem {
                    format: WireFormat::AnthropicMessages,
                    model: "claude-sonnet-4-5".into(),
                    raw: block.into(),
                }),
                Item::ToolCall {
                    call_id: "c1".into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                },
                Item::ToolResult {
                    call_id: "c1".into(),
                    output: "text".into(),
                    is_error: false,
                },
            ],
            tools: Vec::new(),
            reasoning_summaries: false,
            reasoning,
            max_output_tokens: Some(max),
            cache_key: None,
        }
    }

    #[test]
    fn a_budget_thinks_below_max_tokens_and_its_blocks_lead_their_message() {
        let request = thinking_request(
            "claude-sonnet-4-5",
            Some(Reasoning::AnthropicBudget {
                effort: Effort::Medium,
            }),
            64_000,
        );
        let body = body(&request);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 12_288})
        );
        let assistant = &body["messages"][1]["content"];
        assert_eq!(assistant[0]["type"], "thinking");
        assert_eq!(assistant[0]["signature"], "sig==");
        assert_eq!(assistant[1]["type"], "tool_use");
        let mut headers = HeaderMap::new();
        request_headers(&request, &mut headers);
        assert_eq!(headers["anthropic-beta"], INTERLEAVED_THINKING_BETA);
        // A small bound: the budget stays below it, never under the minimum.
        let small = body_of(thinking_request(
            "claude-sonnet-4-5",
            Some(Reasoning::AnthropicBudget {
                effort: Effort::High,
            }),
            600,
        ));
        assert_eq!(small["thinking"]["budget_tokens"], MIN_THINKING_BUDGET);
        assert_eq!(small["max_tokens"], MIN_THINKING_BUDGET + 1);
    }

    fn body_of(request: ModelRequest) -> Value {
        body(&request)
    }

    #[test]
    fn adaptive_thinking_sends_the_effort_and_other_models_or_no_thinking_get_no_blocks() {
        let adaptive = body_of(thinking_request(
            "claude-sonnet-4-5",
            Some(Reasoning::AnthropicAdaptive {
                effort: Effort::Max,
            }),
            64_000,
        ));
        assert_eq!(adaptive["thinking"], json!({"type": "adaptive"}));
        assert_eq!(adaptive["output_config"], json!({"effort": "max"}));
        let mut headers = HeaderMap::new();
        request_headers(
            &thinking_request(
                "m",
                Some(Reasoning::AnthropicAdaptive {
                    effort: Effort::Low,
                }),
                1,
            ),
            &mut headers,
        );
        assert!(headers.get("anthropic-beta").is_none());
        // Another model's blocks, or a request without thinking: none go back.
        for request in [
            thinking_request(
                "claude-opus-4-5",
                Some(Reasoning::AnthropicBudget {
                    effort: Effort::Low,
                }),
                64_000,
            ),
            thinking_request("claude-sonnet-4-5", None, 64_000),
        ] {
            let body = body(&request);
            assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
        }
        assert!(
            body_of(thinking_request("claude-sonnet-4-5", None, 64_000))
                .get("thinking")
                .is_none()
        );
    }

    #[test]
    fn breakpoints_mark_the_system_prompt_and_the_two_newest_user_messages() {
        let mut request = thinking_request("m", None, 1_000);
        request.items.push(Item::Assistant {
            text: "done".into(),
        });
        request.items.push(Item::User {
            text: "next".into(),
        });
        let body = body(&request);
        assert_eq!(
            body["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        let marked: Vec<(usize, usize)> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .flat_map(|(m, message)| {
                message["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .filter(|(_, block)| block.get("cache_control").is_some())
                    .map(move |(b, _)| (m, b))
            })
            .collect();
        // The tool result (the newest but one user message) and the new prompt.
        assert_eq!(marked, [(2, 0), (4, 0)]);
        assert_eq!(magi_testkit::prefix::breakpoints(&body), 3);
    }
}
