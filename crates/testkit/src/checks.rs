//! The checks a real API makes of the reasoning a client sends back, made the same way
//! here, so a client that drops or alters it fails against the mock as it would against
//! the provider.
//!
//! The mock seals what it gives: a Responses reasoning item's `encrypted_content` and an
//! Anthropic thinking block's `signature` are a digest of the model and the content, so
//! reasoning sent back to another model, or with its content changed, does not verify.
//! What is refused, with the provider's status and error shape (the words are the
//! mock's own):
//!
//! - Responses: a `reasoning` input item whose `encrypted_content` does not verify
//!   (400, `invalid_encrypted_content`); one without it, which under `store: false` names
//!   an item that was never stored (400, `invalid_request_error`, the item not found).
//! - Anthropic: a `thinking` block whose signature does not verify, a
//!   `redacted_thinking` block whose data the mock never gave (400,
//!   `invalid_request_error`); and with `thinking` of `type: "enabled"`, a conversation
//!   ending in tool results whose assistant message does not begin with its thinking
//!   (400, `invalid_request_error`), as the API requires a thinking model's tool loop to
//!   keep its thinking.

use serde_json::{Value, json};

use crate::render::Format;
use crate::seal::{responses_content, seal};

/// The HTTP status and JSON body a real API answers `body` with when its reasoning
/// does not pass its checks; none when it passes.
pub(crate) fn rejection(format: Format, body: &Value) -> Option<(u16, String)> {
    let model = body["model"].as_str().unwrap_or_default();
    match format {
        Format::Responses => responses(model, body),
        Format::AnthropicMessages => anthropic(model, body),
        Format::ChatCompletions => None,
    }
}

fn responses(model: &str, body: &Value) -> Option<(u16, String)> {
    let error = |code: &str, message: String| {
        let error = json!({ "error": {
            "message": message, "type": "invalid_request_error", "param": "input", "code": code,
        }});
        Some((400, error.to_string()))
    };
    for item in body["input"].as_array().into_iter().flatten() {
        if item["type"] != "reasoning" {
            continue;
        }
        let id = item["id"].as_str().unwrap_or_default();
        match item["encrypted_content"].as_str() {
            None => {
                return error(
                    "item_not_found",
                    format!(
                        "mock: item {id:?} was not found: with store false nothing is stored, \
                         so a reasoning item must carry its encrypted content"
                    ),
                );
            }
            Some(sealed) if sealed != seal(model, &responses_content(item)) => {
                return error(
                    "invalid_encrypted_content",
                    format!("mock: the encrypted content of item {id:?} could not be verified"),
                );
            }
            Some(_) => {}
        }
    }
    None
}

fn anthropic(model: &str, body: &Value) -> Option<(u16, String)> {
    let error = |message: String| {
        let error = json!({ "type": "error", "error": {
            "type": "invalid_request_error", "message": message,
        }});
        Some((400, error.to_string()))
    };
    let messages = body["messages"].as_array()?;
    for (at, message) in messages.iter().enumerate() {
        for (index, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let verified = match block["type"].as_str() {
                Some("thinking") => {
                    let thinking = block["thinking"].as_str().unwrap_or_default();
                    block["signature"].as_str() == Some(seal(model, thinking).as_str())
                }
                Some("redacted_thinking") => block["data"]
                    .as_str()
                    .is_some_and(|data| data.starts_with("mock-seal-")),
                _ => true,
            };
            if !verified {
                return error(format!(
                    "mock: messages.{at}.content.{index}: the thinking block's signature does \
                     not verify for model {model:?}"
                ));
            }
        }
    }
    // A thinking budget's tool loop keeps its thinking: the assistant message that the
    // closing tool results answer begins with it.
    if body["thinking"]["type"] != "enabled" {
        return None;
    }
    let last = messages.len().checked_sub(1)?;
    let ends_in_results = messages[last]["role"] == "user"
        && messages[last]["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
    if !ends_in_results || last == 0 {
        return None;
    }
    let first = &messages[last - 1]["content"][0]["type"];
    if first != "thinking" && first != "redacted_thinking" {
        return error(format!(
            "mock: messages.{}.content.0: expected `thinking` or `redacted_thinking` but found \
             {first}; with thinking enabled, the assistant message before the last tool \
             results must begin with its thinking blocks",
            last - 1
        ));
    }
    None
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    #[test]
    fn responses_reasoning_must_come_back_sealed_for_its_model() {
        let item = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "S"}]});
        let sealed = {
            let mut item = item.clone();
            item["encrypted_content"] = json!(seal("o3", &responses_content(&item)));
            item
        };
        let body = |model: &str, item: &Value| json!({"model": model, "input": [item]});
        assert_eq!(rejection(Format::Responses, &body("o3", &sealed)), None);
        let (status, error) = rejection(Format::Responses, &body("o4-mini", &sealed)).unwrap();
        assert_eq!(status, 400);
        assert!(error.contains("invalid_encrypted_content"), "{error}");
        let (_, error) = rejection(Format::Responses, &body("o3", &item)).unwrap();
        assert!(error.contains("item_not_found"), "{error}");
    }

    #[test]
    fn anthropic_thinking_must_verify_and_lead_a_budgeted_tool_loop() {
        let thinking = json!({"type": "thinking", "thinking": "T", "signature": seal("m", "T")});
        let call = json!({"type": "tool_use", "id": "c", "name": "read", "input": {}});
        let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "x"}]});
        let body = |assistant: Vec<Value>, kind: &str| {
            json!({"model": "m", "thinking": {"type": kind, "budget_tokens": 1024}, "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": assistant},
                result,
            ]})
        };
        let format = Format::AnthropicMessages;
        assert_eq!(
            rejection(
                format,
                &body(vec![thinking.clone(), call.clone()], "enabled")
            ),
            None
        );
        assert!(rejection(format, &body(vec![call.clone()], "enabled")).is_some());
        // Adaptive thinking may answer without thinking.
        assert_eq!(
            rejection(format, &body(vec![call.clone()], "adaptive")),
            None
        );
        let mut altered = thinking;
        altered["thinking"] = json!("T, changed");
        assert!(rejection(format, &body(vec![altered, call], "adaptive")).is_some());
    }
}
