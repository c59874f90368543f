//! `ast_grep` through the real binary against the mock model: the model is told the
//! structural matches (a call matched, the same text in a comment not), runs without an
//! approval, its card live and from `history.page` gives the scan's counts, and
//! `[tools] disabled` leaves it out of the offer.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::env_for;
use crate::common::*;
use magi_client::Backend;
use magi_protocol::cards::{Block, Card, CardOutcome, ToolKind};
use magi_protocol::messages::{Event, RunOutcome};
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const METHODS: [&str; 5] = [
    "session.create",
    "turn.start",
    "history.page",
    "shutdown",
    "tool.cards",
];

fn results_rows(card: &Card) -> Vec<(String, Option<String>)> {
    card.blocks
        .iter()
        .find_map(|b| match b {
            Block::Results(results) => Some(
                results
                    .rows
                    .iter()
                    .map(|r| (r.label.clone(), r.value.clone()))
                    .collect(),
            ),
            _ => None,
        })
        .expect("a results block")
}

async fn saved_card(backend: &mut Backend, session: &str, revision: &str) -> Card {
    saved_cards(backend, session, revision)
        .await
        .into_iter()
        .next()
        .expect("a saved card")
}

#[tokio::test]
async fn a_structural_search_reaches_the_model_and_its_card_counts_the_scan() {
    let mock = MockServer::start().await;
    let arguments = json!({"pattern": "target($A)", "language": "rust"}).to_string();
    mock.enqueue(Reply::stream().tool_call("a1", "ast_grep", [arguments]));
    mock.enqueue(Reply::stream().text(["One call."]));
    let env = env_for(&mock);
    std::fs::create_dir_all(env.cwd().join("src")).unwrap();
    std::fs::write(
        env.cwd().join("src/a.rs"),
        "fn f() {\n    // target(1)\n    target(2);\n}\n",
    )
    .unwrap();
    std::fs::write(env.cwd().join("src/b.py"), "target(3)\n").unwrap();
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "Find the calls").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    // A read-only tool: it ran without anyone approving it.
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");

    let requests = mock.requests();
    assert!(offered_tool_names(&requests[0].body).contains(&"ast_grep".to_owned()));
    let told = tool_outputs(&requests[1].body);
    assert_eq!(
        told,
        ["src/a.rs:3:5: target(2)\n[scanned 1 file of rust]"],
        "{told:?}"
    );

    let live = seen
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::ToolCard(e) if e.card.outcome.is_some() => Some(e.card.clone()),
            _ => None,
        })
        .expect("a final card");
    assert_eq!(live.tool_kind, ToolKind::Search);
    assert_eq!(live.outcome, Some(CardOutcome::Success));
    let rows = results_rows(&live);
    for (label, value) in [
        ("Language", "rust"),
        ("Matches", "1 match"),
        ("Files scanned", "1 file"),
        ("Files skipped", "0 files"),
        ("Scan", "complete"),
    ] {
        assert!(
            rows.contains(&(label.to_owned(), Some(value.to_owned()))),
            "{label}: {rows:?}"
        );
    }
    let saved = saved_card(&mut backend, &session, &finished.revision.unwrap()).await;
    assert_eq!(results_rows(&saved), rows);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_disabled_ast_grep_is_not_offered() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hi."]));
    let env = env_for(&mock);
    env.write_settings("[tools]\ndisabled = [\"ast_grep\"]\n");
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "Hello").await;
    let mut seen = Vec::new();
    until_finished(&mut backend, &mut seen).await;
    let offered = offered_tool_names(&mock.requests()[0].body);
    assert!(!offered.contains(&"ast_grep".to_owned()), "{offered:?}");
    assert!(offered.contains(&"grep".to_owned()), "{offered:?}");
    shutdown_clean(&mut backend).await;
}
