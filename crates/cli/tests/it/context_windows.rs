//! Context windows and token usage through the real binary: each model request's usage
//! recorded as the provider reported it, with the window the request was held to, that
//! window known from the settings, the cached catalog's metadata, the shipped table or
//! the default; compaction driven by it without a hand-set window, a conversation
//! that cannot fit ending the turn with a diagnostic, and the output limit sent as each
//! wire format's bound.

use crate::common::approval::{env_for, records};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{ActivityKind, Event, ModelRefreshParams, RunFinished, RunOutcome};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

/// The default window of a model nothing is known of.
const DEFAULT_WINDOW: u64 = 32_768;

async fn started(env: &TestEnv, extra: &[&str]) -> Backend {
    let mut names = vec!["session.create", "turn.start", "shutdown"];
    names.extend_from_slice(extra);
    let mut backend = env.spawn();
    backend.initialize(&names).await.unwrap().unwrap();
    backend
}

async fn turn(backend: &mut Backend, session: &str, prompt: &str) -> (Vec<Event>, RunFinished) {
    start_turn(backend, session, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    (seen, finished)
}

fn usage_records(env: &TestEnv, session: &str) -> Vec<Value> {
    records(env, session)
        .into_iter()
        .filter(|r| r["kind"] == "usage")
        .collect()
}

fn compacted(events: &[Event]) -> bool {
    events.iter().any(|e| {
        matches!(e, Event::Activity(a)
        if a.kind == ActivityKind::Compaction && a.summary == "conversation compacted")
    })
}

#[tokio::test]
async fn every_request_records_the_usage_the_provider_reported() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("c1", "list", [r#"{"path":"."}"#])
            .usage(40, 6),
    );
    mock.enqueue(Reply::stream().text(["Done."]).usage(55, 3));
    let env = env_for(&mock);
    let mut backend = started(&env, &[]).await;
    let session = new_session(&mut backend).await;
    let (_, finished) = turn(&mut backend, &session, "look around").await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let turn_id = records(&env, &session)
        .iter()
        .find(|r| r["kind"] == "turn_started")
        .map(|r| r["turn_id"].clone())
        .unwrap();
    let expected = |input: u64, output: u64| {
        json!({
            "turn_id": turn_id, "input_tokens": input, "cached_input_tokens": null,
            "output_tokens": output, "reasoning_tokens": null,
            "context_window": DEFAULT_WINDOW, "context_used": input + output,
        })
    };
    let usage: Vec<Value> = usage_records(&env, &session)
        .into_iter()
        .map(|mut r| {
            let object = r.as_object_mut().unwrap();
            for envelope in ["v", "session_id", "ts", "kind"] {
                object.remove(envelope);
            }
            r
        })
        .collect();
    assert_eq!(usage, [expected(40, 6), expected(55, 3)]);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_well_known_model_has_its_window_from_the_table() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hi."]));
    let env = env_for(&mock).var("MAGI_MODEL", "gpt-4o-mini");
    let mut backend = started(&env, &[]).await;
    let session = new_session(&mut backend).await;
    let (_, finished) = turn(&mut backend, &session, "hello").await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let usage = usage_records(&env, &session);
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0]["context_window"], 128_000);
    // The mock reported nothing: the counts are unknown, not zero.
    assert_eq!(usage[0]["input_tokens"], Value::Null);
    assert_eq!(usage[0]["context_used"], Value::Null);
    shutdown_clean(&mut backend).await;
}

/// The estimated tokens (one per four bytes, as the runner counts) of the text a
/// one-turn session of `env` sends with the prompt `prompt`: the instructions, the
/// environment and the turn's context note with it. The windows below are derived from
/// it, so they hold whatever the instructions' length.
async fn first_request_tokens(env: &TestEnv, mock: &MockServer, prompt: &str) -> u64 {
    let before = mock.requests().len();
    mock.enqueue(Reply::stream().text(["Hi."]));
    let mut backend = started(env, &[]).await;
    let session = new_session(&mut backend).await;
    let (_, finished) = turn(&mut backend, &session, prompt).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    let body = &mock.requests()[before].body;
    let bytes: usize = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["content"].as_str())
        .map(str::len)
        .sum();
    bytes as u64 / 4
}

/// The settings that give `openai-chat/mock-model` a window of `tokens`.
fn window_setting(tokens: u64) -> String {
    format!("[models.\"openai-chat/mock-model\"]\ncontext_window = {tokens}\n")
}

#[tokio::test]
async fn the_settings_window_of_a_model_drives_compaction() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let base = first_request_tokens(&env, &mock, "first question").await;
    // A second prompt of a third of that; compaction's trigger (80% of the window) half
    // way through it, so the first turn fits, the second does not until compacted, and
    // the summary with the prompt after it fits the window again.
    let long_tokens = base / 3;
    let long = format!(
        "LONG-PROMPT {}",
        "words ".repeat(long_tokens as usize * 4 / 6)
    );
    let window = (base + long_tokens / 2) * 100 / 80;
    env.write_settings(&window_setting(window));
    mock.enqueue(Reply::stream().text(["FIRST-ANSWER"]));
    mock.enqueue(Reply::stream().text(["SUMMARY-TEXT"]).usage(90, 4));
    mock.enqueue(Reply::stream().text(["Done."]));
    let mut backend = started(&env, &[]).await;
    let session = new_session(&mut backend).await;
    let (first, _) = turn(&mut backend, &session, "first question").await;
    assert!(!compacted(&first));
    let (second, finished) = turn(&mut backend, &session, &long).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{second:?}");
    assert!(compacted(&second));
    let usage = usage_records(&env, &session);
    // The first turn's request, the compaction's and the second turn's.
    assert_eq!(usage.len(), 3);
    assert!(usage.iter().all(|r| r["context_window"] == window));
    assert_eq!(usage[1]["input_tokens"], 90);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_catalog_metadata_gives_the_window_after_a_refresh() {
    let mock = MockServer::start().await;
    mock.set_models_body(Some(
        json!({"data": [{"id": "mock-model", "context_length": 123_456,
                         "top_provider": {"max_completion_tokens": 1_000}}]})
        .to_string(),
    ));
    mock.enqueue(Reply::stream().text(["Hi."]));
    let env = env_for(&mock);
    let mut backend = started(&env, &["model.refresh"]).await;
    let params = ModelRefreshParams {
        provider: "openai-chat".to_owned(),
    };
    let refreshed = backend
        .call::<methods::ModelRefresh>(&params)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(refreshed.cached_models, 1);
    let session = new_session(&mut backend).await;
    let (_, finished) = turn(&mut backend, &session, "hello").await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(usage_records(&env, &session)[0]["context_window"], 123_456);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_default_window_compacts_without_any_setting() {
    let mock = MockServer::start().await;
    // 1,500 lines of 80 bytes: about 30,000 tokens, past 80% of the default window.
    let line = format!("{}\n", "x".repeat(79));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("big.txt"), line.repeat(1_500)).unwrap();
    mock.enqueue(Reply::stream().tool_call("r1", "read", [r#"{"path":"big.txt"}"#]));
    mock.enqueue(Reply::stream().text(["SUMMARY-TEXT: a big file was read."]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let mut backend = started(&env, &[]).await;
    let session = new_session(&mut backend).await;
    let (events, finished) = turn(&mut backend, &session, "read big.txt").await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    assert!(compacted(&events));
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("Summarise the conversation so far")
    );
    let after = requests[2].body.to_string();
    assert!(after.contains("SUMMARY-TEXT") && !after.contains(&line.repeat(2)));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_conversation_that_cannot_fit_ends_the_turn_with_a_diagnostic() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let base = first_request_tokens(&env, &mock, "first question").await;
    // A window the first turn fits, and that a second prompt as long as everything else
    // overflows by itself: compaction is tried, fails, and cannot have helped anyway.
    let window = base + base / 2;
    env.write_settings(&window_setting(window));
    mock.enqueue(Reply::stream().text(["FIRST-ANSWER"]));
    // The compaction request fails: the conversation stays over the whole window.
    mock.enqueue(Reply::error(400, r#"{"error":{"message":"no"}}"#));
    let mut backend = started(&env, &[]).await;
    let session = new_session(&mut backend).await;
    let (_, finished) = turn(&mut backend, &session, "first question").await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let before = mock.requests().len();
    let long = format!("LONG-PROMPT {}", "words ".repeat(base as usize * 4 / 6));
    let (events, finished) = turn(&mut backend, &session, &long).await;
    assert_eq!(finished.outcome, RunOutcome::Failed);
    assert_eq!(finished.error_code, Some(ErrorCode::ExecutionFailed));
    let said = events
        .iter()
        .find_map(|e| match e {
            Event::Diagnostic(d) if d.code == "context_exceeded" => Some(d.summary.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no context_exceeded diagnostic: {events:?}"));
    assert!(said.contains(&format!("{window} tokens")), "{said}");
    assert!(
        said.contains("[models.\"openai-chat/mock-model\"]"),
        "{said}"
    );
    // Only the compaction was asked: no request the model cannot take.
    assert_eq!(mock.requests().len(), before + 1);
    // A first turn's prompt alone holds nothing to compact: no request at all.
    let fresh = new_session(&mut backend).await;
    let (events, finished) = turn(&mut backend, &fresh, &long).await;
    assert_eq!(finished.outcome, RunOutcome::Failed, "{events:?}");
    assert_eq!(mock.requests().len(), before + 1);
    shutdown_clean(&mut backend).await;
}

/// The output bound `field` of the request a one-turn session of `env` sends first
/// (null when absent), after `settings`.
async fn bound_sent(mock: &MockServer, env: &TestEnv, settings: &str, field: &str) -> Value {
    env.write_settings(settings);
    let before = mock.requests().len();
    mock.enqueue(Reply::stream().text(["Hi."]));
    let mut backend = started(env, &[]).await;
    let session = new_session(&mut backend).await;
    let (events, finished) = turn(&mut backend, &session, "hello").await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    shutdown_clean(&mut backend).await;
    let body = &mock.requests()[before].body;
    body.get(field).cloned().unwrap_or(Value::Null)
}

#[tokio::test]
async fn the_output_limit_is_sent_where_each_format_takes_one() {
    let mock = MockServer::start().await;
    let own = |provider: &str, model: &str, line: &str| {
        format!("[models.\"{provider}/{model}\"]\n{line}\n")
    };
    // Chat Completions and Responses: only a limit the settings or the provider's
    // metadata stated, never the shipped table's.
    let chat = env_for_wire(Wire::Chat, &mock);
    assert_eq!(
        bound_sent(&mock, &chat, "", "max_tokens").await,
        Value::Null
    );
    let table = env_for_wire(Wire::Chat, &mock).var("MAGI_MODEL", "gpt-4o-mini");
    assert_eq!(
        bound_sent(&mock, &table, "", "max_tokens").await,
        Value::Null
    );
    let settings = own("openai-chat", "mock-model", "max_output_tokens = 5000");
    assert_eq!(
        bound_sent(&mock, &chat, &settings, "max_tokens").await,
        5_000
    );
    mock.set_models_body(Some(
        json!({"data": [{"id": "mock-model", "context_length": 100000,
                         "top_provider": {"max_completion_tokens": 7000}}]})
        .to_string(),
    ));
    let cataloged = env_for_wire(Wire::Chat, &mock);
    let mut backend = started(&cataloged, &["model.refresh"]).await;
    let refresh = ModelRefreshParams {
        provider: "openai-chat".to_owned(),
    };
    let refreshed = backend.call::<methods::ModelRefresh>(&refresh).await;
    assert_eq!(refreshed.unwrap().unwrap().cached_models, 1);
    shutdown_clean(&mut backend).await;
    assert_eq!(bound_sent(&mock, &cataloged, "", "max_tokens").await, 7_000);
    mock.set_models_body(None);
    let responses = env_for_wire(Wire::Responses, &mock);
    let field = "max_output_tokens";
    assert_eq!(bound_sent(&mock, &responses, "", field).await, Value::Null);
    let settings = own("openai", "mock-model", "max_output_tokens = 5000");
    assert_eq!(bound_sent(&mock, &responses, &settings, field).await, 5_000);
    // Anthropic's required `max_tokens`: the limit from any source, the table's too.
    let haiku = env_for_wire(Wire::Anthropic, &mock).var("MAGI_MODEL", "claude-3-5-haiku-latest");
    assert_eq!(bound_sent(&mock, &haiku, "", "max_tokens").await, 8_192);
    let settings = own(
        "anthropic",
        "claude-3-5-haiku-latest",
        "max_output_tokens = 4000",
    );
    assert_eq!(
        bound_sent(&mock, &haiku, &settings, "max_tokens").await,
        4_000
    );
    // A model nothing is known of gets the default, within the room its request leaves
    // in the default window.
    let unknown = env_for_wire(Wire::Anthropic, &mock);
    let sent = bound_sent(&mock, &unknown, "", "max_tokens").await;
    let sent = sent.as_u64().unwrap();
    assert!((20_000..=32_000).contains(&sent), "{sent}");
    // The bound never passes the room the request leaves in the window.
    let settings = own(
        "openai-chat",
        "mock-model",
        "context_window = 100000\nmax_output_tokens = 99990",
    );
    let sent = bound_sent(&mock, &chat, &settings, "max_tokens").await;
    let sent = sent.as_u64().unwrap();
    assert!((90_000..99_990).contains(&sent), "{sent}");
}
