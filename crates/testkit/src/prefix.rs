//! What of a model request a provider's prompt cache can serve: the request read in the
//! order the provider's cache reads it, and the part of it that repeats the previous
//! request's beginning.
//!
//! A prompt cache serves the longest beginning of a request that an earlier request
//! already sent. The JSON key order of a body says nothing of that order, so a request
//! is read here as the provider reads it, one segment per unit the provider caches:
//! the tools, then the instructions (Responses `instructions`, Anthropic `system`),
//! then each conversation item (a Responses `input` item, a Chat Completions message,
//! an Anthropic content block). Anthropic's `cache_control` markers are not content and
//! are left out of the segments; its cache serves a request only up to its last
//! breakpoint, so an Anthropic request without one has nothing eligible.

use serde_json::Value;

use crate::render::Format;

/// The segments of `body` in the order `format`'s prompt cache reads them, each the
/// JSON text of one unit, `cache_control` left out.
pub fn cache_segments(format: Format, body: &Value) -> Vec<String> {
    let mut segments: Vec<String> = Vec::new();
    if let Some(tools) = body.get("tools") {
        segments.push(without_markers(tools).to_string());
    }
    match format {
        Format::Responses => {
            if let Some(instructions) = body.get("instructions") {
                segments.push(instructions.to_string());
            }
            for item in body["input"].as_array().into_iter().flatten() {
                segments.push(item.to_string());
            }
        }
        Format::ChatCompletions => {
            for message in body["messages"].as_array().into_iter().flatten() {
                segments.push(message.to_string());
            }
        }
        Format::AnthropicMessages => {
            for block in system_blocks(body) {
                segments.push(without_markers(&block).to_string());
            }
            for (role, block) in message_blocks(body) {
                segments.push(format!("{role}:{}", without_markers(&block)));
            }
        }
    }
    segments
}

/// The bytes of `body` its provider's cache could serve after `previous` was sent: the
/// segments both begin with (whole segments only), and for Anthropic no further than
/// `body`'s last `cache_control` breakpoint.
pub fn cache_eligible_bytes(format: Format, previous: &Value, body: &Value) -> usize {
    let before = cache_segments(format, previous);
    let now = cache_segments(format, body);
    let shared = before.iter().zip(&now).take_while(|(a, b)| a == b).count();
    let limit = match format {
        Format::AnthropicMessages => last_breakpoint(body),
        Format::Responses | Format::ChatCompletions => now.len(),
    };
    now[..shared.min(limit)].iter().map(String::len).sum()
}

/// The bytes of all of `body`'s segments.
pub fn segment_bytes(format: Format, body: &Value) -> usize {
    cache_segments(format, body).iter().map(String::len).sum()
}

/// How many of an Anthropic body's segments reach its last `cache_control` breakpoint
/// (the segment that carries it included); 0 without one.
pub fn last_breakpoint(body: &Value) -> usize {
    let mut marked = Vec::new();
    if let Some(tools) = body["tools"].as_array() {
        marked.push(tools.iter().any(has_marker));
    }
    marked.extend(system_blocks(body).iter().map(has_marker));
    marked.extend(
        message_blocks(body)
            .iter()
            .map(|(_, block)| has_marker(block)),
    );
    marked.iter().rposition(|m| *m).map_or(0, |at| at + 1)
}

/// How many `cache_control` breakpoints an Anthropic body sets.
pub fn breakpoints(body: &Value) -> usize {
    fn count(value: &Value) -> usize {
        match value {
            Value::Object(map) => {
                usize::from(map.contains_key("cache_control"))
                    + map.values().map(count).sum::<usize>()
            }
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 0,
        }
    }
    count(body)
}

fn has_marker(value: &Value) -> bool {
    value.get("cache_control").is_some()
}

/// The system prompt's blocks (a plain string is one text block).
fn system_blocks(body: &Value) -> Vec<Value> {
    match &body["system"] {
        Value::String(text) => vec![serde_json::json!({ "type": "text", "text": text })],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// Every message's content blocks with their role (a plain string is one text block).
fn message_blocks(body: &Value) -> Vec<(String, Value)> {
    let mut blocks = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default().to_owned();
        match &message["content"] {
            Value::String(text) => {
                blocks.push((role, serde_json::json!({ "type": "text", "text": text })))
            }
            Value::Array(content) => {
                blocks.extend(content.iter().map(|block| (role.clone(), block.clone())))
            }
            _ => {}
        }
    }
    blocks
}

/// `value` without its `cache_control` keys, at any depth.
fn without_markers(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), without_markers(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_markers).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_grown_conversation_shares_what_came_before() {
        let first = json!({"tools": [{"name": "t"}], "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "u"}]});
        let second = json!({"tools": [{"name": "t"}], "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
            {"role": "assistant", "content": "a"}]});
        let format = Format::ChatCompletions;
        let shared = cache_eligible_bytes(format, &first, &second);
        assert_eq!(shared, segment_bytes(format, &first));
        assert!(shared < segment_bytes(format, &second));
        let changed = json!({"tools": [{"name": "x"}], "messages": []});
        assert_eq!(cache_eligible_bytes(format, &first, &changed), 0);
    }

    #[test]
    fn anthropic_is_served_only_up_to_its_last_breakpoint_and_markers_are_not_content() {
        let first = json!({"system": "s", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "u", "cache_control": {"type": "ephemeral"}}]}]});
        let unmarked = json!({"system": "s", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "u"}]},
            {"role": "assistant", "content": "a"}]});
        let format = Format::AnthropicMessages;
        assert_eq!(cache_eligible_bytes(format, &first, &unmarked), 0);
        let marked = json!({"system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
            "messages": [
            {"role": "user", "content": [{"type": "text", "text": "u"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]}]});
        assert_eq!(breakpoints(&marked), 2);
        assert_eq!(last_breakpoint(&marked), 3);
        assert_eq!(
            cache_eligible_bytes(format, &first, &marked),
            segment_bytes(format, &first)
        );
    }
}
