//! Long turns through the real binary: hundreds of serial tool calls, the optional
//! `[turns] max_steps`, loop detection, and older tool output pruned from the requests
//! in every wire format while the session log keeps it whole.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{Event, RunFinished, RunOutcome};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

/// A reply asking for one `read` of `path` with `offset`.
fn read_call(id: &str, path: &str, offset: usize) -> Reply {
    let arguments = json!({ "path": path, "offset": offset }).to_string();
    Reply::stream().tool_call(id, "read", [arguments.as_str()])
}

/// Writes `text` to `name` in the backend's working directory.
/// Settings giving the model a window far beyond what these turns send.
const LARGE_WINDOW: &str = "[compaction]\ncontext_window_tokens = 4000000\n";

fn write_work(env: &TestEnv, name: &str, text: &str) {
    std::fs::create_dir_all(env.cwd()).unwrap();
    std::fs::write(env.cwd().join(name), text).unwrap();
}

/// The `content` of the session's tool results, in the log's order.
fn recorded_results(env: &TestEnv, session: &str) -> Vec<String> {
    std::fs::read_to_string(log_path(env, session))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "tool_result")
        .map(|r| r["content"].as_str().unwrap().to_owned())
        .collect()
}

/// Runs one turn of `prompt` in a new session; returns the session, its events and its
/// end.
async fn one_turn(env: &TestEnv, prompt: &str) -> (Backend, String, Vec<Event>, RunFinished) {
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = session_with_turn(&mut backend, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    (backend, session, seen, finished)
}

fn diagnostics(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Diagnostic(d) => Some(d.code.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_turn_of_three_hundred_serial_tool_calls_completes() {
    let mock = MockServer::start().await;
    for n in 1..=300 {
        mock.enqueue(read_call(&format!("c{n}"), "notes.txt", n));
    }
    mock.enqueue(Reply::stream().text(["All read."]));
    let env = env_for_wire(Wire::Chat, &mock);
    // A model with room for the whole turn: what is tested is that nothing else stops it.
    env.write_settings(LARGE_WINDOW);
    write_work(&env, "notes.txt", &"a line\n".repeat(400));
    let (mut backend, session, events, finished) = one_turn(&env, "read it all").await;
    assert_eq!(
        finished.outcome,
        RunOutcome::Completed,
        "{:?}",
        diagnostics(&events)
    );
    assert_eq!(mock.requests().len(), 301);
    let results = recorded_results(&env, &session);
    assert_eq!(results.len(), 300);
    assert!(
        results.iter().all(|r| r.contains("a line")),
        "{:?}",
        &results[..2]
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn max_steps_ends_the_turn_with_step_limit() {
    let mock = MockServer::start().await;
    for n in 1..=5 {
        mock.enqueue(read_call(&format!("c{n}"), "notes.txt", n));
    }
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[turns]\nmax_steps = 3\n");
    write_work(&env, "notes.txt", &"a line\n".repeat(10));
    let (mut backend, _, events, finished) = one_turn(&env, "read").await;
    assert_eq!(finished.outcome, RunOutcome::Failed);
    assert_eq!(finished.error_code, Some(ErrorCode::ExecutionFailed));
    assert_eq!(diagnostics(&events), ["step_limit"]);
    assert_eq!(mock.requests().len(), 3, "three round trips, no fourth");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_repeated_identical_call_is_noted_then_ends_the_turn() {
    let mock = MockServer::start().await;
    for n in 1..=5 {
        // The same call, arguments and (unchanged file) result, under new call IDs.
        mock.enqueue(read_call(&format!("c{n}"), "notes.txt", 1));
    }
    mock.enqueue(Reply::stream().text(["I will try another way."]));
    let env = env_for_wire(Wire::Chat, &mock);
    write_work(&env, "notes.txt", "the same\n");
    let (mut backend, session, events, finished) = one_turn(&env, "read").await;
    assert_eq!(finished.outcome, RunOutcome::Failed);
    assert_eq!(finished.error_code, Some(ErrorCode::ExecutionFailed));
    assert_eq!(diagnostics(&events), ["loop_detected"]);
    let results = recorded_results(&env, &session);
    assert!(
        results.iter().all(|r| r.contains("the same")),
        "{results:?}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "five identical rounds, then the end");
    let noted = |n: usize| requests[n].body.to_string().contains("same tool calls");
    assert!(!noted(2), "no note after two rounds");
    assert!(noted(3) && noted(4), "the note after the third round, kept");
    // The log keeps the note where the model was given it: after the third round's
    // result, before the fourth round's call.
    let kinds: Vec<(String, Value)> = std::fs::read_to_string(log_path(&env, &session))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| {
            ["tool_call", "tool_result", "loop_note"].contains(&r["kind"].as_str().unwrap())
        })
        .map(|r| (r["kind"].as_str().unwrap().to_owned(), r))
        .collect();
    let notes: Vec<usize> = (0..kinds.len())
        .filter(|&i| kinds[i].0 == "loop_note")
        .collect();
    assert_eq!(
        notes,
        [6],
        "{:?}",
        kinds.iter().map(|k| &k.0).collect::<Vec<_>>()
    );
    let note = &kinds[6].1;
    assert!(note["text"].as_str().unwrap().contains("same tool calls"));
    assert_eq!(note["turn_id"], kinds[5].1["turn_id"]);
    // A later turn replays it: the model is given once what it was told.
    start_turn(&mut backend, &session, "go on").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    let body = requests[5].body.to_string();
    assert_eq!(body.matches("same tool calls").count(), 1, "{body}");
    shutdown_clean(&mut backend).await;
}

/// Every call and every result of a request body, in any wire format, in document order:
/// (is a result, call ID, result text).
fn calls_and_results(body: &Value, found: &mut Vec<(bool, String, String)>) {
    match body {
        Value::Array(values) => values.iter().for_each(|v| calls_and_results(v, found)),
        Value::Object(map) => {
            let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
            match map.get("type").and_then(Value::as_str) {
                Some("function_call") => {
                    found.push((false, text("call_id").unwrap(), String::new()))
                }
                Some("function_call_output") => {
                    found.push((true, text("call_id").unwrap(), text("output").unwrap()))
                }
                Some("tool_use") => found.push((false, text("id").unwrap(), String::new())),
                Some("tool_result") => found.push((
                    true,
                    text("tool_use_id").unwrap(),
                    text("content").unwrap_or_default(),
                )),
                _ if map.contains_key("function") && map.contains_key("id") => {
                    found.push((false, text("id").unwrap(), String::new()))
                }
                _ if map.get("role").and_then(Value::as_str) == Some("tool") => found.push((
                    true,
                    text("tool_call_id").unwrap(),
                    text("content").unwrap(),
                )),
                _ => map.values().for_each(|v| calls_and_results(v, found)),
            }
        }
        _ => {}
    }
}

/// The results a request gave the model, in order, after checking that each call is
/// followed by its result and each result answers the call before it.
fn paired_results(body: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    calls_and_results(body, &mut found);
    let mut open: Vec<String> = Vec::new();
    let mut results = Vec::new();
    for (is_result, id, text) in found {
        if is_result {
            assert!(open.contains(&id), "result {id} without its call: {body}");
            open.retain(|o| *o != id);
            results.push((id, text));
        } else {
            assert!(!open.contains(&id));
            open.push(id);
        }
    }
    assert!(open.is_empty(), "calls without results {open:?}: {body}");
    results
}

#[tokio::test]
async fn eight_large_reads_send_the_newest_whole_and_stubs_before_them_in_every_wire() {
    for wire in [Wire::Responses, Wire::Chat, Wire::Anthropic] {
        let mock = MockServer::start().await;
        let env = env_for_wire(wire, &mock);
        // Room for every read whole, so what keeps them out of the request is pruning.
        env.write_settings(LARGE_WINDOW);
        for n in 1..=8 {
            // 48 KiB of distinct text in each file.
            let line = format!("{n:02} {}\n", "z".repeat(60));
            write_work(
                &env,
                &format!("big{n}.txt"),
                &line.repeat(48 * 1024 / line.len()),
            );
            mock.enqueue(read_call(&format!("c{n}"), &format!("big{n}.txt"), 1));
        }
        mock.enqueue(Reply::stream().text(["Read them all."]));
        let (mut backend, session, events, finished) = one_turn(&env, "read the files").await;
        assert_eq!(
            finished.outcome,
            RunOutcome::Completed,
            "{wire:?} {:?}",
            diagnostics(&events)
        );
        // The log keeps all eight results whole.
        let whole = recorded_results(&env, &session);
        assert_eq!(whole.len(), 8);
        assert!(whole.iter().all(|c| c.len() > 48_000), "{wire:?}");
        // Newest first, results within 40,000 estimated tokens (bytes / 4) stay whole.
        let mut tokens = 0;
        let kept = whole
            .iter()
            .rev()
            .take_while(|c| {
                tokens += c.len() / 4;
                tokens <= 40_000
            })
            .count();
        assert!((2..8).contains(&kept), "{kept}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 9);
        let mut pruned_before = 0;
        for (n, request) in requests.iter().enumerate() {
            let results = paired_results(&request.body);
            assert_eq!(results.len(), n, "{wire:?}: every earlier result is sent");
            let stubs = results
                .iter()
                .take_while(|(_, t)| t.starts_with("[pruned"))
                .count();
            // Stubs only ever precede whole results, and a pruned result stays pruned.
            assert!(
                results[stubs..]
                    .iter()
                    .all(|(_, t)| !t.starts_with("[pruned"))
            );
            assert!(
                stubs >= pruned_before,
                "{wire:?}: request {n} unpruned a result"
            );
            pruned_before = stubs;
            for (index, (_, text)) in results.iter().enumerate().skip(stubs) {
                assert_eq!(
                    text, &whole[index],
                    "{wire:?}: a whole result is the recorded one"
                );
            }
        }
        // Older output is pruned in whole blocks of half the budget (20,000 tokens),
        // counted from the conversation's start: at least the budget's worth of the
        // newest results is whole, and at most a block more.
        let total: usize = whole.iter().map(|c| c.len() / 4).sum();
        let pruned_up_to = total.saturating_sub(40_000) / 20_000 * 20_000;
        let mut position = 0;
        let expected_pruned = whole
            .iter()
            .take_while(|c| {
                position += c.len() / 4;
                position <= pruned_up_to
            })
            .count();
        let last = paired_results(&requests[8].body);
        assert_eq!(
            pruned_before, expected_pruned,
            "{wire:?}: the older results are pruned in whole blocks"
        );
        assert!(
            8 - pruned_before >= kept,
            "{wire:?}: the newest results are whole"
        );
        let (_, stub) = &last[0];
        assert!(stub.contains("`read`") && stub.contains("bytes"), "{stub}");
        // The stub names where the whole text is kept, and it is there.
        let path = stub
            .split("kept at ")
            .nth(1)
            .unwrap()
            .split(": read")
            .next()
            .unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), whole[0]);
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn the_summary_request_carries_the_pruned_conversation() {
    let mock = MockServer::start().await;
    let env = env_for_wire(Wire::Chat, &mock);
    // A 16,000-token window (compaction past 12,800) and little room for whole output:
    // the second, larger read alone passes the trigger, the first is pruned by then.
    env.write_settings(
        "[compaction]\ncontext_window_tokens = 16000\n[context]\nprune_protect_tokens = 1000\n",
    );
    let first = format!("01 {}\n", "y".repeat(60));
    write_work(&env, "first.txt", &first.repeat(24 * 1024 / first.len()));
    let second = format!("02 {}\n", "x".repeat(60));
    write_work(&env, "second.txt", &second.repeat(56 * 1024 / second.len()));
    mock.enqueue(read_call("c1", "first.txt", 1));
    mock.enqueue(read_call("c2", "second.txt", 1));
    mock.enqueue(Reply::stream().text(["Read two files.\nTitle: Two reads"]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let (mut backend, _session, events, finished) = one_turn(&env, "read both").await;
    assert_eq!(
        finished.outcome,
        RunOutcome::Completed,
        "{:?}",
        diagnostics(&events)
    );
    // The third request is the summary's: the first read only as its stub, the second
    // (the current round) whole.
    let summary_request = mock.requests()[2].body.to_string();
    assert!(
        summary_request.contains("[pruned"),
        "{summary_request:.400}"
    );
    assert!(!summary_request.contains(first.trim_end()));
    assert!(summary_request.contains(second.trim_end()));
    shutdown_clean(&mut backend).await;
}
