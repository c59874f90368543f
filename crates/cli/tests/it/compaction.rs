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

/// A window of 20,000 tokens: compaction runs past 16,000 (80%), which the instructions
/// and a short prompt are far from, and a reply of 64 KiB (about 16,400 tokens) passes.
const WINDOW_SETTINGS: &str = "[compaction]\ncontext_window_tokens = 20000\n";

/// The messages' roles and texts of a Chat Completions request, without the turns'
/// context notes.
fn messages(body: &serde_json::Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .filter(|(_, text)| !is_turn_context(text))
        .collect()
}

#[tokio::test]
async fn a_small_context_window_compacts_before_the_request() {
    let mock = MockServer::start().await;
    let padding = "x".repeat(64 * 1024);
    mock.enqueue(Reply::stream().text(["FIRST-ANSWER ", padding.as_str()]));
    mock.enqueue(Reply::stream().text([
        "SUMMARY-TEXT: the user asked twice.\n",
        "Title: Asked twice",
    ]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    env.write_settings(WINDOW_SETTINGS);
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
    // Its long answer takes the next request past 80% of the window: compaction first.
    let (second, revision) = turn(&mut backend, &session, "SECOND-PROMPT, word for word").await;
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
    // The summary is told that the prompt follows it, not to answer it.
    assert!(compacting.contains("do not answer it"), "{compacting}");
    let after = messages(&requests[2].body);
    assert!(
        !requests[2].body.to_string().contains("FIRST-ANSWER"),
        "the summary replaced the old turns"
    );
    // The summary, then the newest prompt word for word: the model still has its task.
    let (last, summary) = (&after[after.len() - 1], &after[after.len() - 2]);
    assert_eq!(
        (last.0.as_str(), last.1.as_str()),
        ("user", "SECOND-PROMPT, word for word")
    );
    assert!(summary.1.contains("SUMMARY-TEXT"), "{summary:?}");
    // History shows the summary (after the long answer's pages).
    let mut params = HistoryPageParams {
        session_id: session.clone(),
        revision: revision.unwrap(),
        cursor: None,
    };
    let mut entries = Vec::new();
    loop {
        let page = backend
            .call::<methods::HistoryPage>(&params)
            .await
            .unwrap()
            .unwrap();
        entries.extend(page.entries);
        match page.next_cursor {
            Some(cursor) => params.cursor = Some(cursor),
            None => break,
        }
    }
    assert!(
        entries
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

#[tokio::test]
async fn a_compaction_in_the_middle_of_a_turn_keeps_the_prompt_after_the_summary() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("r1", "read", ["{\"path\":\"big.txt\"}"]));
    mock.enqueue(Reply::stream().text(["SUMMARY-TEXT: read big.txt.\nTitle: Reading"]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    env.write_settings(WINDOW_SETTINGS);
    // About 17,000 tokens of lines, within `read`'s own bound.
    std::fs::write(
        env.cwd().join("big.txt"),
        format!("{}\n", "y".repeat(99)).repeat(680),
    )
    .unwrap();
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id;
    let (events, _) = turn(&mut backend, &session, "MID-TURN-PROMPT: read big.txt").await;
    assert!(events.iter().any(|e| matches!(e, Event::Activity(a)
        if a.kind == ActivityKind::Compaction && a.summary == "conversation compacted")));
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "the read, the summary, the answer");
    assert!(requests[1].body.to_string().contains("do not answer it"));
    let after = messages(&requests[2].body);
    let users: Vec<&str> = after
        .iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(users.len(), 2, "{after:?}");
    assert!(users[0].contains("SUMMARY-TEXT"));
    assert_eq!(users[1], "MID-TURN-PROMPT: read big.txt");
    shutdown_clean(&mut backend).await;
}
