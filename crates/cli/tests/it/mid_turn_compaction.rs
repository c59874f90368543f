//! A turn compacted in its middle goes on: rounds of tool calls, then a compaction (asked
//! for with `magi_control`, or forced by a small context window), then more rounds of
//! tool calls, and the turn completes with its history readable to the end.
//!
//! Both once killed the backend: the loop's watch for repeated rounds kept an index into
//! the conversation taken before the round, and the compaction inside the round
//! replaced the conversation with its shorter summary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::messages::{ActivityKind, Event, HistoryPageParams, RunOutcome};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

fn read(id: &str, path: &str) -> Reply {
    Reply::stream().tool_call(id, "read", [json!({ "path": path }).to_string()])
}

fn write_work(env: &TestEnv, name: &str, text: &str) {
    std::fs::write(env.cwd().join(name), text).unwrap();
}

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    backend
}

/// Runs a turn of `prompt` in a new session to its end; the session, the events and
/// whether the run completed.
async fn run(backend: &mut Backend, prompt: &str) -> (String, Vec<Event>) {
    let session = session_with_turn(backend, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    // The history reads to its end, the compaction and the calls after it included.
    let page = backend
        .call::<methods::HistoryPage>(&HistoryPageParams {
            session_id: session.clone(),
            revision: finished.revision.clone().unwrap(),
            cursor: None,
        })
        .await
        .unwrap()
        .unwrap();
    assert!(page.complete, "{page:?}");
    (session, seen)
}

fn compacted(seen: &[Event]) -> bool {
    seen.iter().any(|e| {
        matches!(e, Event::Activity(a)
            if a.kind == ActivityKind::Compaction && a.summary == "conversation compacted")
    })
}

#[tokio::test]
async fn a_turn_compacted_by_magi_control_goes_on_with_more_tool_calls() {
    let mock = MockServer::start().await;
    for n in 1..=3 {
        mock.enqueue(read(&format!("r{n}"), &format!("f{n}.txt")));
    }
    mock.enqueue(Reply::stream().tool_call(
        "c1",
        "magi_control",
        [json!({"operation": "compact"}).to_string()],
    ));
    mock.enqueue(Reply::stream().text(["SUMMARY: read three files."]));
    mock.enqueue(read("r4", "f1.txt"));
    mock.enqueue(read("r5", "f2.txt"));
    mock.enqueue(Reply::stream().text(["All read."]));
    let env = env_for_wire(Wire::Chat, &mock);
    for n in 1..=3 {
        write_work(&env, &format!("f{n}.txt"), &format!("file {n}\n"));
    }
    let mut backend = ready(&env).await;
    let (_, seen) = run(&mut backend, "read the files").await;
    assert!(compacted(&seen));
    let requests = mock.requests();
    assert_eq!(requests.len(), 8);
    // The calls after the compaction went to the model with the summary before them.
    let last = requests[7].body.to_string();
    assert!(last.contains("SUMMARY: read three files."), "{last}");
    assert!(last.contains("file 2"), "{last}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_turn_compacted_by_a_small_window_goes_on_with_more_tool_calls() {
    let mock = MockServer::start().await;
    mock.enqueue(read("r0", "small.txt"));
    mock.enqueue(read("r1", "small.txt"));
    mock.enqueue(read("r2", "big.txt"));
    // The read's result takes the conversation past the trigger: the next request is
    // the summary's.
    mock.enqueue(Reply::stream().text(["SUMMARY: read the big file."]));
    mock.enqueue(read("r3", "small.txt"));
    mock.enqueue(read("r4", "small.txt"));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[models.\"openai-chat/mock-model\"]\ncontext_window = 3000\n");
    write_work(&env, "big.txt", &"a line of the big file\n".repeat(600));
    write_work(&env, "small.txt", "small\n");
    let mut backend = ready(&env).await;
    let (_, seen) = run(&mut backend, "read the big file").await;
    assert!(compacted(&seen), "{seen:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 7);
    assert!(
        requests[3]
            .body
            .to_string()
            .contains("Summarise the conversation")
    );
    shutdown_clean(&mut backend).await;
}
