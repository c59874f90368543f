//! Benchmark scenarios: fixed conversations the mock plays for every request, so the
//! same runs can be repeated by anyone (`docs/providers.md` describes each).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use serde_json::Value;

use crate::render::{Format, render};
use crate::reply::{Kind, Reply};

/// How many deltas [`Scenario::Deltas10000`] streams.
pub const DELTAS: usize = 10_000;
/// How many tool calls [`Scenario::Tools10`] asks for.
pub const TOOL_CALLS: usize = 10;

/// A benchmark scenario. Every reply reports usage and streams at once (no delay).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scenario {
    /// Every request gets one short text reply in five deltas.
    Text,
    /// A request whose conversation does not end in a tool result gets ten tool calls
    /// in one response; one that ends in a tool result gets a short text reply.
    Tools10 {
        /// The tool to call; `None` calls the first tool the request offers (or
        /// `read_file` when it offers none).
        tool: Option<String>,
        /// The arguments JSON text of every call.
        arguments: String,
    },
    /// Every request gets a text reply streamed as 10,000 deltas.
    Deltas10000,
    /// Every request gets the model's refusal, in the words and the stop each format
    /// refuses with (see [`crate::Reply::refusal`]).
    Refusal,
}

impl Scenario {
    /// The scenario with this command-line name: `text`, `tools10`, `deltas10000`,
    /// `refusal`.
    pub fn from_name(name: &str) -> Option<Scenario> {
        match name {
            "text" => Some(Scenario::Text),
            "tools10" => Some(Scenario::Tools10 {
                tool: None,
                arguments: "{}".to_owned(),
            }),
            "deltas10000" => Some(Scenario::Deltas10000),
            "refusal" => Some(Scenario::Refusal),
            _ => None,
        }
    }
}

/// The fixed replies, rendered once per format and reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Fixed {
    Text,
    ToolsDone,
    Deltas,
    Refusal,
}

fn fixed_reply(which: Fixed) -> Reply {
    match which {
        Fixed::Text => Reply::stream()
            .text(["Hello", " from", " the", " mock", " model."])
            .usage(12, 5),
        Fixed::ToolsDone => Reply::stream()
            .text(["All ten", " tool calls", " returned."])
            .usage(40, 6),
        Fixed::Deltas => Reply::stream()
            .text((0..DELTAS).map(|i| format!("w{i} ")))
            .usage(12, DELTAS as u64),
        Fixed::Refusal => Reply::stream()
            .refusal(["I can't help", " with that."])
            .usage(12, 6),
    }
}

/// Plays a scenario: picks each request's reply and keeps the rendered fixed ones.
pub(crate) struct Player {
    scenario: Scenario,
    cache: Mutex<HashMap<(Format, Fixed), Vec<Bytes>>>,
    /// Numbers the tool calls, so call IDs stay unique across a benchmark's turns.
    calls: AtomicU64,
    /// How long each answer waits before its first byte, as a model thinks.
    pub(crate) answer_delay: std::time::Duration,
}

impl Player {
    pub(crate) fn new(scenario: Scenario) -> Player {
        Player {
            scenario,
            cache: Mutex::new(HashMap::new()),
            calls: AtomicU64::new(0),
            answer_delay: std::time::Duration::ZERO,
        }
    }

    /// The events answering a request in `format` whose JSON body is `body`.
    pub(crate) fn events(&self, format: Format, body: &Value) -> Vec<Bytes> {
        let fixed = match &self.scenario {
            Scenario::Text => Fixed::Text,
            Scenario::Deltas10000 => Fixed::Deltas,
            Scenario::Refusal => Fixed::Refusal,
            Scenario::Tools10 { .. } if ends_in_tool_result(format, body) => Fixed::ToolsDone,
            Scenario::Tools10 { tool, arguments } => {
                let name = tool.clone().unwrap_or_else(|| first_tool(format, body));
                let first = self.calls.fetch_add(TOOL_CALLS as u64, Ordering::Relaxed);
                // Two fragments per call, so clients reassemble arguments here too.
                let split = arguments
                    .char_indices()
                    .nth(1)
                    .map_or(arguments.len(), |(i, _)| i);
                let (head, tail) = arguments.split_at(split);
                let mut reply = Reply::stream();
                for n in first..first + TOOL_CALLS as u64 {
                    reply = reply.tool_call(format!("call_{n}"), name.clone(), [head, tail]);
                }
                return rendered(format, &reply.usage(20, 10 * TOOL_CALLS as u64));
            }
        };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .entry((format, fixed))
            .or_insert_with(|| rendered(format, &fixed_reply(fixed)))
            .clone()
    }
}

fn rendered(format: Format, reply: &Reply) -> Vec<Bytes> {
    match &reply.kind {
        Kind::Stream(script) => render(format, script, &Value::Null).0,
        Kind::Error { .. } => Vec::new(),
    }
}

/// Whether the request's conversation ends with a tool result.
fn ends_in_tool_result(format: Format, body: &Value) -> bool {
    match format {
        Format::Responses => body["input"]
            .as_array()
            .and_then(|items| items.last())
            .is_some_and(|item| item["type"] == "function_call_output"),
        Format::ChatCompletions => body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .is_some_and(|message| message["role"] == "tool"),
        Format::AnthropicMessages => body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .and_then(|message| message["content"].as_array())
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result")),
    }
}

/// The name of the first tool the request offers, else `read_file`.
fn first_tool(format: Format, body: &Value) -> String {
    let tool = &body["tools"][0];
    let name = match format {
        Format::ChatCompletions => &tool["function"]["name"],
        Format::Responses | Format::AnthropicMessages => &tool["name"],
    };
    name.as_str().unwrap_or("read_file").to_owned()
}
