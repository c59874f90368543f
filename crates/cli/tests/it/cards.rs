//! The `tool.cards` extension through the real binary: negotiation, live cards in order
//! with increasing revisions, and base clients that see nothing of it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_protocol::cards::{
    Card, CardOutcome, CardState, Changes, Origin, ProtectionDecision, ToolKind,
};
use magi_protocol::messages::{ActivityState, Event, HistoryPageParams, RunOutcome, SavedCard};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const BASE: [&str; 6] = [
    "session.create",
    "turn.start",
    "approval.answer",
    "history.page",
    "shutdown",
    "status",
];

fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
}

#[tokio::test]
async fn tool_cards_are_advertised_only_when_required() {
    let env = TestEnv::new();
    let mut rich = env.spawn();
    let required = [&BASE[..], &["tool.cards"]].concat();
    // Raw, so the advertisement is read exactly as it was sent.
    let response = rich
        .request_raw("initialize", json!({ "required_capabilities": required }))
        .await
        .unwrap();
    let result = response.outcome.clone().unwrap();
    let names: Vec<&str> = result["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 17);
    assert_eq!(names[16], "tool.cards");
    let descriptor: serde_json::Value = serde_json::from_str(
        r#"{"schema_version":1,"event":"tool.card","history_field":"tool_card","snapshot_parts":1,"card_bytes":16384,"core_bytes":2048,"cards_per_run":4096,"snapshots_per_run":16384,"run_snapshot_bytes":33554432,"retained_card_bytes":8388608,"blocks_per_card":16,"rows_per_block":32,"diff_lines_per_block":128,"children_per_block":32,"children_depth":8,"string_bytes":1024,"title_bytes":256,"metadata_bytes":512,"preview_bytes":4096}"#,
    )
    .unwrap();
    assert_eq!(result["extensions"]["tool.cards"], descriptor);
    assert_eq!(result["extensions"].as_object().unwrap().len(), 1);
    shutdown_clean(&mut rich).await;

    let mut base = env.spawn();
    let response = base
        .request_raw("initialize", json!({ "required_capabilities": BASE }))
        .await
        .unwrap();
    let result = response.outcome.unwrap();
    assert_eq!(result["capabilities"].as_array().unwrap().len(), 16);
    assert!(result.get("extensions").is_none(), "{result}");
    shutdown_clean(&mut base).await;
}

#[tokio::test]
async fn live_cards_follow_their_activities_with_increasing_revisions() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("r1", "read", ["{\"path\":\"notes.txt\"}"])
            .tool_call("b1", "bash", ["{\"command\":\"echo hi\"}"])
            .tool_call("w1", "write", ["{\"path\":\"x.txt\",\"content\":\"x\"}"]),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"bash\"]\ndeny = [\"write\"]\n");
    std::fs::write(env.cwd().join("notes.txt"), "one\ntwo\n").unwrap();
    let mut backend = env.spawn();
    let required = [&BASE[..], &["tool.cards"]].concat();
    // The client library checks the advertisement and the descriptor here.
    backend.initialize(&required).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "Go").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);

    // Every card follows its activity's started event, and its final snapshot follows
    // the activity's end; revisions increase per card.
    let mut started = std::collections::HashSet::new();
    let mut ended = std::collections::HashSet::new();
    let mut revisions = std::collections::HashMap::new();
    let mut finals = std::collections::HashMap::new();
    for event in &seen {
        match event {
            Event::Activity(a) if a.state == ActivityState::Started => {
                started.insert(a.activity_id.clone());
            }
            Event::Activity(a) => {
                ended.insert(a.activity_id.clone());
            }
            Event::ToolCard(e) => {
                assert!(started.contains(&e.activity_id), "card before its activity");
                let last = revisions.insert(e.activity_id.clone(), e.card.revision);
                assert!(last.is_none_or(|r| r < e.card.revision));
                if e.card.state == CardState::Finished {
                    assert!(ended.contains(&e.activity_id), "final card before the end");
                    finals.insert(e.activity_id.clone(), e.card.clone());
                }
            }
            _ => {}
        }
    }
    assert_eq!(finals.len(), 3);
    let read = &finals["tool-1"];
    assert_eq!(read.tool_kind, ToolKind::Read);
    assert_eq!(read.outcome, Some(CardOutcome::Success));
    assert_eq!(read.changes, Changes::NotApplicable);
    let bash = &finals["tool-2"];
    assert_eq!(bash.tool_kind, ToolKind::Command);
    assert_eq!(bash.outcome, Some(CardOutcome::Success));
    assert_eq!(
        bash.metadata.public_protection.decision,
        ProtectionDecision::Allowed
    );
    let command = serde_json::to_value(bash).unwrap();
    let block = command["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "command")
        .unwrap();
    assert_eq!(block["command"], "echo hi");
    assert_eq!(block["exit_code"], 0);
    let write = &finals["tool-3"];
    assert_eq!(write.outcome, Some(CardOutcome::Failure));
    assert_eq!(
        write.metadata.public_protection.decision,
        ProtectionDecision::Denied
    );
    assert!(!env.cwd().join("x.txt").exists());

    // The saved cards of the same calls, projected from the log, agree with the live
    // final cards on everything that does not depend on identity or origin.
    let params = HistoryPageParams {
        session_id: session.clone(),
        revision: finished.revision.clone().unwrap(),
        cursor: None,
    };
    let page = backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    magi_client::cards::check_page(&page, true, false).unwrap();
    let saved: Vec<&Card> = page
        .entries
        .iter()
        .filter_map(|e| match &e.tool_card {
            SavedCard::Card(card) => Some(&**card),
            _ => None,
        })
        .collect();
    assert_eq!(saved.len(), 3);
    for (live, saved) in ["tool-1", "tool-2", "tool-3"].iter().zip(saved) {
        let live = &finals[*live];
        assert_eq!(saved.origin, Origin::Saved);
        assert_eq!(saved.revision, 0);
        assert_eq!(
            (saved.tool_kind, saved.state, saved.outcome, saved.changes),
            (live.tool_kind, live.state, live.outcome, live.changes)
        );
        assert_eq!(saved.title, live.title);
        assert_eq!(saved.metadata.tool_name, live.metadata.tool_name);
        assert_eq!(saved.metadata.resource_path, live.metadata.resource_path);
        assert_eq!(
            saved.metadata.public_protection,
            live.metadata.public_protection
        );
        assert_eq!(saved.blocks, live.blocks, "{}", live.activity_id);
    }
    // The same page again shows the same cards.
    let again = backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again, page);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn base_clients_get_history_without_cards() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("r1", "read", ["{\"path\":\"notes.txt\"}"]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("notes.txt"), "one\n").unwrap();
    let mut backend = env.spawn();
    backend.initialize(&BASE).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "Go").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert!(!seen.iter().any(|e| matches!(e, Event::ToolCard(_))));
    let params = HistoryPageParams {
        session_id: session,
        revision: finished.revision.unwrap(),
        cursor: None,
    };
    let page = backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    // Absent, not null: the field is not sent at all.
    assert!(
        page.entries.iter().all(|e| e.tool_card.is_absent()),
        "{page:?}"
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_run_at_the_activity_bound_keeps_every_card_budget_and_ends_with_content_limit() {
    let mock = MockServer::start().await;
    let calls = |prefix: &str, count: usize| {
        let mut reply = Reply::stream();
        for n in 0..count {
            reply = reply.tool_call(format!("{prefix}{n}"), "bash_log", ["{\"job\":\"job-0\"}"]);
        }
        reply
    };
    mock.enqueue(calls("a", magi_protocol::limits::RUN_ACTIVITIES));
    mock.enqueue(calls("b", 1));
    let env = env_for(&mock);
    // 4,096 calls pass the default context window: this test is about the activity
    // bound, not compaction.
    env.write_settings("[compaction]\ncontext_window_tokens = 100000000\n");
    let mut backend = env.spawn();
    let required = [&BASE[..], &["tool.cards"]].concat();
    backend.initialize(&required).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "Go").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Failed);
    assert_eq!(
        finished.error_code,
        Some(magi_protocol::ErrorCode::ContentLimit)
    );
    let mut identities = std::collections::HashSet::new();
    let mut snapshots = 0;
    let mut bytes = 0;
    let mut finals = 0;
    for event in &seen {
        if let Event::ToolCard(e) = event {
            identities.insert(e.activity_id.clone());
            snapshots += 1;
            bytes += serde_json::to_vec(&e.card).unwrap().len();
            finals += usize::from(e.card.state == CardState::Finished);
        }
    }
    assert_eq!(identities.len(), magi_protocol::cards::CARDS_PER_RUN);
    assert_eq!(finals, magi_protocol::cards::CARDS_PER_RUN);
    assert!(snapshots <= magi_protocol::cards::SNAPSHOTS_PER_RUN);
    assert!(bytes <= magi_protocol::cards::RUN_SNAPSHOT_BYTES);
    // The one call past the bound was neither shown nor recorded, and the run said why.
    assert!(
        seen.iter()
            .any(|e| matches!(e, Event::Diagnostic(d) if d.code == "activity_limit"))
    );
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(!log.contains("\"call_id\":\"b0\""));
    shutdown_clean(&mut backend).await;
}
