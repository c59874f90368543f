//! The `tool.cards` extension through the real binary: negotiation, live cards in order
//! with increasing revisions, and base clients that see nothing of it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::cards::{CardOutcome, CardState, Changes, ProtectionDecision, ToolKind};
use magi_protocol::messages::{ActivityState, Event, RunFinished, RunOutcome};
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

async fn until_finished(backend: &mut Backend, seen: &mut Vec<Event>) -> RunFinished {
    loop {
        if let Incoming::Event { event, .. } = next(backend).await {
            seen.push(event.clone());
            if let Event::RunFinished(finished) = event {
                return finished;
            }
        }
    }
}

#[tokio::test]
async fn tool_cards_are_advertised_only_when_required() {
    let env = TestEnv::new();
    let mut rich = env.spawn();
    let required = [&BASE[..], &["tool.cards"]].concat();
    let response = rich
        .request("initialize", json!({ "required_capabilities": required }))
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
        .request("initialize", json!({ "required_capabilities": BASE }))
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
    let session = backend
        .request("session.create", json!({}))
        .await
        .unwrap()
        .outcome
        .unwrap();
    backend
        .request(
            "turn.start",
            json!({"session_id": session["session_id"], "prompt": "Go"}),
        )
        .await
        .unwrap()
        .outcome
        .unwrap();
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
    shutdown_clean(&mut backend).await;
}
