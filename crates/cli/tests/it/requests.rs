//! What the model is sent, read from the requests the mock model received, in each wire
//! format: a response's parallel calls go back together, live and replayed from the log.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_protocol::messages::RunOutcome;
use magi_testkit::{MockServer, Reply};
use serde_json::Value;

/// Runs a turn of `prompt` in `session` to its completed end.
async fn completed_turn(backend: &mut magi_client::Backend, session: &str, prompt: &str) {
    start_turn(backend, session, prompt).await;
    let finished = until_finished(backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{finished:?}");
}

/// A Chat Completions conversation as `role` or `role:call,call` (an assistant message
/// with its calls) or `tool:id`, from the first assistant message on.
fn chat_shape(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().unwrap();
    let first = messages
        .iter()
        .position(|m| m["role"] == "assistant")
        .unwrap();
    messages[first..]
        .iter()
        .map(|m| match m["role"].as_str().unwrap() {
            "tool" => format!("tool:{}", m["tool_call_id"].as_str().unwrap()),
            "assistant" => {
                let calls: Vec<&str> = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| c["id"].as_str().unwrap())
                    .collect();
                format!("assistant:{}", calls.join(","))
            }
            role => role.to_owned(),
        })
        .collect()
}

/// A Responses conversation as item types (`function_call:id`,
/// `function_call_output:id`, `message:role`), from the first assistant item on.
fn responses_shape(body: &Value) -> Vec<String> {
    let input = body["input"].as_array().unwrap();
    let first = input
        .iter()
        .position(|i| i["role"] == "assistant" || i["type"] == "function_call")
        .unwrap();
    input[first..]
        .iter()
        .map(|i| match i["type"].as_str().unwrap() {
            "message" => format!("message:{}", i["role"].as_str().unwrap()),
            kind => format!("{kind}:{}", i["call_id"].as_str().unwrap_or_default()),
        })
        .collect()
}

/// An Anthropic conversation as `role:block,block`, from the first assistant message on.
fn anthropic_shape(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().unwrap();
    let first = messages
        .iter()
        .position(|m| m["role"] == "assistant")
        .unwrap();
    messages[first..]
        .iter()
        .map(|m| {
            let blocks: Vec<String> = m["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| match b["type"].as_str().unwrap() {
                    "tool_use" => format!("tool_use:{}", b["id"].as_str().unwrap()),
                    "tool_result" => format!("tool_result:{}", b["tool_use_id"].as_str().unwrap()),
                    kind => kind.to_owned(),
                })
                .collect();
            format!("{}:{}", m["role"].as_str().unwrap(), blocks.join(","))
        })
        .collect()
}

#[tokio::test]
async fn parallel_calls_go_back_together_in_every_format_live_and_replayed() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(
            Reply::stream()
                .text(["Reading all three."])
                .tool_call("ca", "read", [r#"{"path":"a.txt"}"#])
                .tool_call("cb", "read", [r#"{"path":"b.txt"}"#])
                .tool_call("cc", "list", [r#"{"path":"."}"#]),
        );
        mock.enqueue(Reply::stream().text(["All read."]));
        mock.enqueue(Reply::stream().text(["You are welcome."]));
        let env = env_for_wire(wire, &mock);
        std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(env.cwd().join("b.txt"), "beta\n").unwrap();
        let mut backend = env.spawn();
        backend
            .initialize(&["session.create", "turn.start", "shutdown"])
            .await
            .unwrap()
            .unwrap();
        let session = new_session(&mut backend).await;
        completed_turn(
            &mut backend,
            &session,
            "Read a.txt and b.txt, list the folder.",
        )
        .await;
        // The next turn's request replays the first from the session log.
        completed_turn(&mut backend, &session, "Thanks.").await;
        shutdown_clean(&mut backend).await;
        let requests = mock.requests();
        assert_eq!(requests.len(), 3, "{wire:?}");
        // Live (the turn's second request) and replayed (the next turn's), the same.
        for body in [&requests[1].body, &requests[2].body] {
            let shape = match wire {
                Wire::Chat => chat_shape(body),
                Wire::Responses => responses_shape(body),
                Wire::Anthropic => anthropic_shape(body),
            };
            let expected: &[&str] = match wire {
                Wire::Chat => &["assistant:ca,cb,cc", "tool:ca", "tool:cb", "tool:cc"],
                Wire::Responses => &[
                    "message:assistant",
                    "function_call:ca",
                    "function_call:cb",
                    "function_call:cc",
                    "function_call_output:ca",
                    "function_call_output:cb",
                    "function_call_output:cc",
                ],
                Wire::Anthropic => &[
                    "assistant:text,tool_use:ca,tool_use:cb,tool_use:cc",
                    "user:tool_result:ca,tool_result:cb,tool_result:cc",
                ],
            };
            assert_eq!(&shape[..expected.len()], expected, "{wire:?}: {shape:?}");
        }
    }
}

/// The wire format's name in the mock.
fn format_of(wire: Wire) -> magi_testkit::Format {
    match wire {
        Wire::Responses => magi_testkit::Format::Responses,
        Wire::Chat => magi_testkit::Format::ChatCompletions,
        Wire::Anthropic => magi_testkit::Format::AnthropicMessages,
    }
}

#[tokio::test]
async fn a_turns_second_request_repeats_the_first_byte_for_byte_for_the_prompt_cache() {
    use magi_testkit::prefix::{breakpoints, cache_eligible_bytes, segment_bytes};
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().tool_call("c1", "read", [r#"{"path":"a.txt"}"#]));
        mock.enqueue(Reply::stream().text(["It says alpha."]));
        mock.enqueue(Reply::stream().text(["Yes."]));
        let env = env_for_wire(wire, &mock);
        std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
        let mut backend = env.spawn();
        backend
            .initialize(&["session.create", "turn.start", "shutdown"])
            .await
            .unwrap()
            .unwrap();
        let session = new_session(&mut backend).await;
        completed_turn(&mut backend, &session, "What does a.txt say?").await;
        completed_turn(&mut backend, &session, "Sure?").await;
        shutdown_clean(&mut backend).await;
        let requests = mock.requests();
        let format = format_of(wire);
        // Each request begins with the whole of the one before (the next turn's too):
        // all of it is there for the provider's prompt cache.
        for pair in requests.windows(2) {
            let (before, after) = (&pair[0].body, &pair[1].body);
            assert_eq!(
                cache_eligible_bytes(format, before, after),
                segment_bytes(format, before),
                "{wire:?}"
            );
        }
        match wire {
            // The system prompt and the newest user message mark the first request,
            // and the one before it too from the second on: three of the four allowed.
            Wire::Anthropic => {
                assert_eq!(breakpoints(&requests[0].body), 2);
                assert_eq!(breakpoints(&requests[1].body), 3);
                assert_eq!(breakpoints(&requests[2].body), 3);
            }
            // Every request of the session is routed to one cache.
            Wire::Responses => {
                for request in &requests {
                    assert_eq!(request.body["prompt_cache_key"], session.as_str());
                }
            }
            Wire::Chat => assert!(requests[0].body.get("prompt_cache_key").is_none()),
        }
    }
}
