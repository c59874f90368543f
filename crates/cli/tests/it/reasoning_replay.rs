//! Reasoning that survives tool calls, through the real binary against a mock that
//! checks it as the real APIs do (`magi_testkit`'s reasoning checks): a Responses
//! model's encrypted reasoning and an Anthropic model's thinking blocks go back
//! unmodified through a tool call and after a restart; a model switch drops what the new
//! model cannot take; reasoning altered in the log is refused as the provider refuses
//! it; the effort reaches each format's own field; nothing of the raw reasoning is ever
//! shown.

use magi_client::Backend;
use magi_protocol::messages::{Event, RunOutcome};
use magi_testkit::{MockServer, Reply};
use serde_json::Value;

use crate::common::*;

/// What the model thinks in these tests: it must never reach a client.
const THOUGHT: &str = "PRIVATE-THOUGHT about the file";

/// A backend of `env`, initialized for turns, with `model` over the environment's.
async fn backend(env: &TestEnv, model: &str) -> Backend {
    let mut backend = env.command().env("MAGI_MODEL", model).spawn().unwrap();
    backend
        .initialize(&[
            "session.create",
            "session.open",
            "turn.start",
            "history.page",
            "shutdown",
        ])
        .await
        .unwrap()
        .unwrap();
    backend
}

/// Runs a turn of `prompt` in `session`: its events and its end.
async fn turn(
    backend: &mut Backend,
    session: &str,
    prompt: &str,
) -> (Vec<Event>, magi_protocol::messages::RunFinished) {
    start_turn(backend, session, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    (seen, finished)
}

/// Queues a response that thinks, then reads `a.txt`; then a reply.
fn enqueue_thinking_round(mock: &MockServer, call: &str) {
    mock.enqueue(
        Reply::stream()
            .reasoning_summary(["PRIVATE-THOUGHT ", "about the file"])
            .tool_call(call, "read", [r#"{"path":"a.txt"}"#]),
    );
    mock.enqueue(Reply::stream().text(["It says alpha."]));
}

/// The `provider_reasoning` records of `session`'s log.
fn reasoning_records(env: &TestEnv, session: &str) -> Vec<Value> {
    std::fs::read_to_string(log_path(env, session))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["kind"] == "provider_reasoning")
        .collect()
}

/// Nothing a client saw carries the thought.
fn never_shown(events: &[Event]) {
    let shown = serde_json::to_string(events).unwrap();
    assert!(!shown.contains("PRIVATE-THOUGHT"), "{shown}");
}

#[tokio::test]
async fn encrypted_reasoning_goes_back_through_a_tool_call_and_after_a_restart() {
    let mock = MockServer::start().await;
    enqueue_thinking_round(&mock, "c1");
    mock.enqueue(Reply::stream().text(["Still alpha."]));
    let env = env_for_wire(Wire::Responses, &mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let mut first = backend(&env, "o3").await;
    let session = new_session(&mut first).await;
    let (events, finished) = turn(&mut first, &session, "What does a.txt say?").await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    never_shown(&events);
    shutdown_clean(&mut first).await;
    // A restarted backend replays the session from its log.
    let mut second = backend(&env, "o3").await;
    open_session(&mut second, &session).await.unwrap();
    let (events, finished) = turn(&mut second, &session, "And now?").await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    shutdown_clean(&mut second).await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    // Every request asks for the reasoning, since nothing is stored.
    for request in &requests {
        assert_eq!(request.body["store"], false);
        assert_eq!(request.body["include"][0], "reasoning.encrypted_content");
    }
    // The item went back before the call it led to, through the tool call and after
    // the restart, byte for byte as recorded.
    let recorded = reasoning_records(&env, &session);
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["format"], "responses");
    assert_eq!(recorded[0]["model"], "o3");
    let item: Value = serde_json::from_str(recorded[0]["item"].as_str().unwrap()).unwrap();
    assert!(
        item["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("mock-seal-")
    );
    for request in &requests[1..] {
        let input = request.body["input"].as_array().unwrap();
        let at = input
            .iter()
            .position(|i| *i == item)
            .expect("the reasoning item");
        assert_eq!(input[at + 1]["type"], "function_call");
    }
}

#[tokio::test]
async fn thinking_blocks_go_back_unmodified_through_a_tool_call_and_after_a_restart() {
    let mock = MockServer::start().await;
    enqueue_thinking_round(&mock, "c1");
    mock.enqueue(Reply::stream().text(["Still alpha."]));
    let env = env_for_wire(Wire::Anthropic, &mock);
    env.write_settings("effort = \"medium\"\n");
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let mut first = backend(&env, "claude-sonnet-4-5").await;
    let session = new_session(&mut first).await;
    let (events, finished) = turn(&mut first, &session, "What does a.txt say?").await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    never_shown(&events);
    shutdown_clean(&mut first).await;
    let mut second = backend(&env, "claude-sonnet-4-5").await;
    open_session(&mut second, &session).await.unwrap();
    let (events, finished) = turn(&mut second, &session, "And now?").await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    never_shown(&events);
    shutdown_clean(&mut second).await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    // The settings' default effort is a thinking budget, the same for every request.
    for request in &requests {
        assert_eq!(
            request.body["thinking"],
            serde_json::json!({"type": "enabled", "budget_tokens": 12_288})
        );
        assert_eq!(
            request.header("anthropic-beta"),
            Some("interleaved-thinking-2025-05-14")
        );
    }
    // The thinking block leads the assistant message of the tool call, whole.
    for request in &requests[1..] {
        let messages = request.body["messages"].as_array().unwrap();
        let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
        let thinking = &assistant["content"][0];
        assert_eq!(thinking["type"], "thinking");
        assert_eq!(thinking["thinking"], THOUGHT);
        assert!(
            thinking["signature"]
                .as_str()
                .unwrap()
                .starts_with("mock-seal-")
        );
        assert_eq!(assistant["content"][1]["type"], "tool_use");
    }
    // History shows no raw thinking.
    let mut third = backend(&env, "claude-sonnet-4-5").await;
    let opened = open_session(&mut third, &session).await.unwrap();
    let page = third
        .call::<magi_protocol::methods::HistoryPage>(&magi_protocol::messages::HistoryPageParams {
            session_id: session.clone(),
            revision: opened.revision,
            cursor: None,
        })
        .await
        .unwrap()
        .unwrap();
    let shown = serde_json::to_string(&page).unwrap();
    assert!(!shown.contains("PRIVATE-THOUGHT"), "{shown}");
    shutdown_clean(&mut third).await;
}

#[tokio::test]
async fn a_model_switch_drops_the_reasoning_the_new_model_cannot_take() {
    for (wire, before, after) in [
        (Wire::Anthropic, "claude-sonnet-4-5", "claude-opus-4-5"),
        (Wire::Responses, "o3", "o4-mini"),
    ] {
        let mock = MockServer::start().await;
        enqueue_thinking_round(&mock, "c1");
        mock.enqueue(Reply::stream().text(["Switched."]));
        let env = env_for_wire(wire, &mock);
        env.write_settings("effort = \"low\"\n");
        std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
        let mut first = backend(&env, before).await;
        let session = new_session(&mut first).await;
        let (_, finished) = turn(&mut first, &session, "What does a.txt say?").await;
        assert_eq!(finished.outcome, RunOutcome::Completed, "{wire:?}");
        shutdown_clean(&mut first).await;
        // The same session, another model: the mock refuses the old model's reasoning
        // as the provider does, so the turn completes only if none is sent.
        let mut second = backend(&env, after).await;
        open_session(&mut second, &session).await.unwrap();
        let (events, finished) = turn(&mut second, &session, "Again, please.").await;
        assert_eq!(
            finished.outcome,
            RunOutcome::Completed,
            "{wire:?}: {events:?}"
        );
        shutdown_clean(&mut second).await;
        let last = mock.requests().last().unwrap().body.to_string();
        assert!(!last.contains("mock-seal-"), "{wire:?}: {last}");
        // The log still holds it, for the model that made it.
        assert_eq!(reasoning_records(&env, &session).len(), 1, "{wire:?}");
    }
}

#[tokio::test]
async fn reasoning_altered_in_the_log_is_refused_as_the_provider_refuses_it() {
    let mock = MockServer::start().await;
    enqueue_thinking_round(&mock, "c1");
    let env = env_for_wire(Wire::Anthropic, &mock);
    env.write_settings("effort = \"high\"\n");
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let mut first = backend(&env, "claude-sonnet-4-5").await;
    let session = new_session(&mut first).await;
    let (_, finished) = turn(&mut first, &session, "What does a.txt say?").await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut first).await;
    // Someone edits the thought in the log: its signature no longer verifies.
    let path = log_path(&env, &session);
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(log.contains("PRIVATE-THOUGHT"));
    std::fs::write(&path, log.replace("PRIVATE-THOUGHT", "EDITED-THOUGHT")).unwrap();
    let mut second = backend(&env, "claude-sonnet-4-5").await;
    open_session(&mut second, &session).await.unwrap();
    let (events, finished) = turn(&mut second, &session, "Again.").await;
    assert_eq!(finished.outcome, RunOutcome::Failed);
    assert!(
        events.iter().any(|e| matches!(e, Event::Diagnostic(d)
            if d.code == "provider_rejected_request" && d.summary.contains("400"))),
        "{events:?}"
    );
    shutdown_clean(&mut second).await;
}

#[tokio::test]
async fn chat_sends_reasoning_effort_where_the_provider_takes_one_and_exec_sets_the_default() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["One."]));
    mock.enqueue(Reply::stream().text(["Two."]));
    mock.enqueue(Reply::stream().text(["Three."]));
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("effort = \"high\"\n[providers.openai-chat]\nreasoning_effort = true\n");
    let output = env.run_cli(&["exec", "first"]).await;
    assert!(output.status.success(), "{output:?}");
    let output = env.run_cli(&["exec", "--effort", "low", "second"]).await;
    assert!(output.status.success(), "{output:?}");
    // Without the provider's say-so, nothing is sent.
    env.write_settings("effort = \"high\"\n");
    let output = env.run_cli(&["exec", "third"]).await;
    assert!(output.status.success(), "{output:?}");
    let requests = mock.requests();
    assert_eq!(requests[0].body["reasoning_effort"], "high");
    assert_eq!(requests[1].body["reasoning_effort"], "low");
    assert!(requests[2].body.get("reasoning_effort").is_none());
}
