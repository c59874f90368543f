//! The model's plan over ACP: each `todo` call that gives a whole plan is followed by a
//! `plan` update with every entry (its text, `medium`, and its status in ACP's words),
//! a refused list sends none, and `session/load` replays the plan after its call.

use agent_client_protocol_schema::v1::{
    LoadSessionRequest, Plan, PlanEntryPriority, PlanEntryStatus, SessionUpdate, StopReason,
};
use magi_testkit::{MockServer, Reply};
use serde_json::json;

use super::{initialize, new_session, prompt, stop};
use crate::common::acp::Acp;
use crate::common::approval::env_for;

fn plans(acp: &Acp) -> Vec<Plan> {
    acp.updates
        .iter()
        .filter_map(|n| match &n.update {
            SessionUpdate::Plan(plan) => Some(plan.clone()),
            _ => None,
        })
        .collect()
}

/// A plan's entries as (content, status), every priority checked `medium`.
fn entries(plan: &Plan) -> Vec<(String, PlanEntryStatus)> {
    plan.entries
        .iter()
        .map(|e| {
            assert_eq!(e.priority, PlanEntryPriority::Medium);
            (e.content.clone(), e.status.clone())
        })
        .collect()
}

#[tokio::test]
async fn acp_the_plan_is_sent_whole_with_each_todo_call_and_replayed_on_load() {
    let mock = MockServer::start().await;
    let todo = |id: &str, items: serde_json::Value| {
        Reply::stream().tool_call(id, "todo", [json!({ "items": items }).to_string()])
    };
    mock.enqueue(todo(
        "t1",
        json!([
            {"text": "Read the parser", "status": "in_progress"},
            {"text": "Fix 行数", "status": "pending"},
        ]),
    ));
    // Refused: two steps in progress. No plan is sent for it.
    mock.enqueue(todo(
        "t2",
        json!([
            {"text": "Read the parser", "status": "in_progress"},
            {"text": "Fix 行数", "status": "in_progress"},
        ]),
    ));
    mock.enqueue(todo(
        "t3",
        json!([
            {"text": "Read the parser", "status": "done"},
            {"text": "Fix 行数", "status": "in_progress"},
        ]),
    ));
    mock.enqueue(Reply::stream().text(["Planned."]));
    let env = env_for(&mock);
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let result = acp.call("session/prompt", prompt(&session, "Fix it")).await;
    assert_eq!(stop(result), StopReason::EndTurn);

    let first = vec![
        ("Read the parser".to_owned(), PlanEntryStatus::InProgress),
        ("Fix 行数".to_owned(), PlanEntryStatus::Pending),
    ];
    let last = vec![
        ("Read the parser".to_owned(), PlanEntryStatus::Completed),
        ("Fix 行数".to_owned(), PlanEntryStatus::InProgress),
    ];
    let live: Vec<_> = plans(&acp).iter().map(entries).collect();
    assert_eq!(live, [first, last.clone()]);
    // Each plan follows its call's final update.
    let at = acp
        .updates
        .iter()
        .position(|n| matches!(n.update, SessionUpdate::Plan(_)))
        .unwrap();
    assert!(matches!(
        acp.updates[at - 1].update,
        SessionUpdate::ToolCallUpdate(_)
    ));

    // Loaded in a fresh connection, the history replays the plans in order.
    let session_id = session.session_id.clone();
    assert!(acp.finish().await.success());
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    acp.call(
        "session/load",
        LoadSessionRequest::new(session_id, env.cwd()),
    )
    .await
    .unwrap();
    let replayed: Vec<_> = plans(&acp).iter().map(entries).collect();
    assert_eq!(replayed.len(), 2);
    assert_eq!(replayed.last(), Some(&last));
    assert!(acp.finish().await.success());
}
