//! Auto-compaction through the real binary: a small configured context window makes the
//! next request summarise the conversation first; the summary is recorded, shown in
//! history and replaces the older conversation for the model; its closing `Title:` line
//! is recorded as the session's title.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::messages::{
    ActivityKind, EmptyParams, EntryKind, Event, HistoryPageParams, RunOutcome,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};

async fn turn(backend: &mut Backend, session: &str, prompt: &str) -> (Vec<Event>, Option<String>) {
    start_turn(backend, session, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    (seen, finished.revision)
}

#[tokio::test]
async fn a_small_context_window_compacts_before_the_request() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["FIRST-ANSWER"]));
    mock.enqueue(Reply::stream().text([
        "SUMMARY-TEXT: the user asked twice.\n",
        "Title: Asked twice",
    ]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    env.write_settings("[compaction]\ncontext_window_tokens = 200\n");
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id;
    // A short first turn stays under the trigger.
    let (first, _) = turn(&mut backend, &session, "first question").await;
    assert!(
        !first
            .iter()
            .any(|e| matches!(e, Event::Activity(a) if a.kind == ActivityKind::Compaction))
    );
    // A long prompt takes the estimate past 80% of 200 tokens: compaction first.
    let long = format!("LONG-PROMPT {}", "words ".repeat(200));
    let (second, revision) = turn(&mut backend, &session, &long).await;
    assert!(second.iter().any(|e| matches!(e, Event::Activity(a)
        if a.kind == ActivityKind::Compaction && a.summary == "conversation compacted")));
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let compacting = requests[1].body.to_string();
    assert!(
        compacting.contains("Summarise the conversation so far"),
        "{compacting}"
    );
    assert!(compacting.contains("FIRST-ANSWER"));
    let after = requests[2].body.to_string();
    assert!(after.contains("SUMMARY-TEXT"), "{after}");
    assert!(
        !after.contains("FIRST-ANSWER"),
        "the summary replaced the old turns"
    );
    let params = HistoryPageParams {
        session_id: session.clone(),
        revision: revision.unwrap(),
        cursor: None,
    };
    let page = backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    assert!(
        page.entries
            .iter()
            .any(|e| e.kind == EntryKind::Compaction && e.text.contains("SUMMARY-TEXT"))
    );
    shutdown_clean(&mut backend).await;
    // The summary's closing title line is the compaction's title, not summary text.
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    let compaction: serde_json::Value = log
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|record| record["kind"] == "compaction")
        .unwrap();
    assert_eq!(compaction["title"], "Asked twice");
    assert_eq!(compaction["summary"], "SUMMARY-TEXT: the user asked twice.");
}
