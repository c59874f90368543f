//! `plan.todo` through the real binary against the mock model: the `todo` tool is
//! offered, with its line of guidance, only to a client that negotiated the extension;
//! its card is the checklist, live and saved (after a restart too), and reads back as
//! the plan; a malformed list is a failed call telling the model what to fix, and
//! leaves the plan as it was; a call made without the extension runs nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{env_for, records};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::cards::{
    Availability, Block, Card, CardOutcome, Changes, Origin, ProgressUnit, ToolKind,
};
use magi_protocol::messages::{Event, PlanTodoDescriptor, RunOutcome};
use magi_protocol::plan::{PlanItem, PlanStatus, plan_of};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

/// What a client of the plan negotiates.
const WITH_PLAN: [&str; 6] = [
    "session.create",
    "session.open",
    "turn.start",
    "history.page",
    "tool.cards",
    "plan.todo",
];

/// Words of the guidance line that comes with the tool (crates/core/src/prompt/tools.md).
const GUIDANCE: &str = "keep the plan where the person sees it with `todo`";

fn todo(id: &str, items: Value) -> Reply {
    Reply::stream().tool_call(id, "todo", [json!({ "items": items }).to_string()])
}

fn item(text: &str, status: PlanStatus) -> PlanItem {
    PlanItem {
        text: text.to_owned(),
        status,
    }
}

/// Runs one turn to its end; returns its events and revision.
async fn turn(backend: &mut Backend, session: &str, prompt: &str) -> (Vec<Event>, String) {
    start_turn(backend, session, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    (seen, finished.revision.unwrap())
}

/// The final live cards of a run, in order.
fn final_cards(seen: &[Event]) -> Vec<Card> {
    seen.iter()
        .filter_map(|e| match e {
            Event::ToolCard(e) if e.card.outcome.is_some() => Some(e.card.clone()),
            _ => None,
        })
        .collect()
}

/// The system prompt of a Chat Completions request body.
fn instructions(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn the_todo_card_is_the_checklist_live_and_saved() {
    let mock = MockServer::start().await;
    mock.enqueue(todo(
        "t1",
        json!([
            {"text": "Read the parser", "status": "done"},
            {"text": "Fix the off-by-one in 行数", "status": "in_progress"},
            {"text": "Run the tests", "status": "pending"},
        ]),
    ));
    mock.enqueue(todo(
        "t2",
        json!([
            {"text": "Read the parser", "status": "done"},
            {"text": "Fix the off-by-one in 行数", "status": "done"},
            {"text": "Run the tests", "status": "in_progress"},
        ]),
    ));
    mock.enqueue(Reply::stream().text(["Working through it."]));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let admitted = backend.initialize(&WITH_PLAN).await.unwrap().unwrap();
    assert_eq!(
        admitted.capabilities.last().map(String::as_str),
        Some("plan.todo")
    );
    assert_eq!(
        admitted
            .extensions
            .as_ref()
            .and_then(|e| e.plan_todo.clone()),
        Some(PlanTodoDescriptor::schema_1())
    );
    let session = new_session(&mut backend).await;
    let (seen, revision) = turn(&mut backend, &session, "Fix the parser.").await;

    // The model was offered the tool and told when a plan helps.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(offered_tool_names(&requests[0].body).contains(&"todo".to_owned()));
    assert!(instructions(&requests[0].body).contains(GUIDANCE));
    let told = tool_outputs(&requests[1].body);
    assert_eq!(
        told.last().map(String::as_str),
        Some("The plan is updated: 1 of 3 done; in progress: Fix the off-by-one in 行数.")
    );

    // Each call's card is the whole checklist; the later one is the plan.
    let live = final_cards(&seen);
    assert_eq!(live.len(), 2);
    let card = &live[1];
    assert_eq!(
        (
            card.tool_kind,
            card.outcome,
            card.changes,
            card.detail.availability
        ),
        (
            ToolKind::Other,
            Some(CardOutcome::Success),
            Changes::NotApplicable,
            Availability::Complete
        )
    );
    assert_eq!(card.title, "todo 2 of 3 done");
    assert_eq!(card.metadata.tool_name.as_deref(), Some("todo"));
    match card.blocks.first() {
        Some(Block::Progress(progress)) => {
            assert_eq!(progress.label, "Items done");
            assert_eq!((progress.completed, progress.total), (Some(2), Some(3)));
            assert_eq!(progress.unit, ProgressUnit::Items);
        }
        other => panic!("a progress block first: {other:?}"),
    }
    let now = vec![
        item("Read the parser", PlanStatus::Done),
        item("Fix the off-by-one in 行数", PlanStatus::Done),
        item("Run the tests", PlanStatus::InProgress),
    ];
    assert_eq!(plan_of(card), Some(now.clone()));
    assert_eq!(
        plan_of(&live[0]).map(|p| p[1].status),
        Some(PlanStatus::InProgress)
    );
    // The running card has no detail yet, and is no plan.
    let running: Vec<&Card> = seen
        .iter()
        .filter_map(|e| match e {
            Event::ToolCard(e) if e.card.outcome.is_none() => Some(&e.card),
            _ => None,
        })
        .collect();
    assert!(!running.is_empty());
    assert!(running.iter().all(|c| plan_of(c).is_none()));

    // Saved, the same cards; and after a restart, from the records alone.
    let saved = saved_cards(&mut backend, &session, &revision).await;
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[1].origin, Origin::Saved);
    assert_eq!(saved[1].blocks, card.blocks);
    assert_eq!(plan_of(&saved[1]), Some(now.clone()));
    shutdown_clean(&mut backend).await;
    let result = records(&env, &session)
        .into_iter()
        .find(|r| r["kind"] == "tool_result")
        .unwrap();
    assert_eq!(result["facts"]["tool"], "plan");
    assert_eq!(result["facts"]["items"][1]["status"], "in_progress");

    let mut again = env.spawn();
    again.initialize(&WITH_PLAN).await.unwrap().unwrap();
    let opened = open_session(&mut again, &session).await.unwrap();
    let reopened = saved_cards(&mut again, &session, &opened.revision).await;
    assert_eq!(reopened.last().and_then(plan_of), Some(now));
    shutdown_clean(&mut again).await;
}

#[tokio::test]
async fn a_malformed_list_is_a_tool_error_and_the_plan_stays() {
    let mock = MockServer::start().await;
    mock.enqueue(todo(
        "t1",
        json!([
            {"text": "Write the test", "status": "in_progress"},
            {"text": "Fix the bug", "status": "in_progress"},
        ]),
    ));
    mock.enqueue(todo(
        "t2",
        json!([{"text": "Two\nlines", "status": "pending"}]),
    ));
    mock.enqueue(Reply::stream().text(["Let me fix the list."]));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    backend.initialize(&WITH_PLAN).await.unwrap().unwrap();
    let session = new_session(&mut backend).await;
    let (seen, revision) = turn(&mut backend, &session, "Plan it.").await;

    let told = tool_outputs(&mock.requests()[2].body);
    assert_eq!(
        told,
        [
            "The plan was not changed: 2 items are in_progress; at most one is: mark the \
             others pending or done.",
            "The plan was not changed: item 1's text is not one line (it holds a line break \
             or another control character).",
        ]
    );
    let live = final_cards(&seen);
    assert_eq!(live.len(), 2);
    for card in &live {
        assert_eq!(card.outcome, Some(CardOutcome::Failure));
        assert_eq!(card.detail.availability, Availability::Unavailable);
        assert!(card.blocks.is_empty(), "{card:?}");
        assert_eq!(plan_of(card), None);
    }
    let saved = saved_cards(&mut backend, &session, &revision).await;
    assert!(saved.iter().all(|c| plan_of(c).is_none()));
    shutdown_clean(&mut backend).await;
    // Nothing of a refused list is recorded.
    assert!(
        records(&env, &session)
            .iter()
            .filter(|r| r["kind"] == "tool_result")
            .all(|r| r["facts"].is_null()),
    );
}

#[tokio::test]
async fn without_plan_todo_the_tool_is_neither_offered_nor_run() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello."]));
    // A model that calls it anyway, as if it had been offered.
    mock.enqueue(todo("t1", json!([{"text": "Sneak", "status": "pending"}])));
    mock.enqueue(Reply::stream().text(["I see."]));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let without = &WITH_PLAN[..5];
    let admitted = backend.initialize(without).await.unwrap().unwrap();
    assert!(!admitted.capabilities.iter().any(|c| c == "plan.todo"));
    assert!(
        admitted
            .extensions
            .as_ref()
            .is_some_and(|e| e.plan_todo.is_none())
    );
    let session = new_session(&mut backend).await;
    turn(&mut backend, &session, "Hi.").await;
    let (seen, _) = turn(&mut backend, &session, "Plan it.").await;

    let requests = mock.requests();
    for request in &requests {
        assert!(!offered_tool_names(&request.body).contains(&"todo".to_owned()));
        assert!(!instructions(&request.body).contains("`todo`"));
    }
    assert_eq!(
        tool_outputs(&requests[2].body).last().map(String::as_str),
        Some("The call was not run: todo is not offered to this agent.")
    );
    let live = final_cards(&seen);
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].outcome, Some(CardOutcome::Failure));
    assert_eq!(plan_of(&live[0]), None);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn exec_offers_the_plan_and_names_its_step_in_progress() {
    let mock = MockServer::start().await;
    mock.enqueue(todo(
        "t1",
        json!([
            {"text": "Read the parser", "status": "done"},
            {"text": "Fix the off-by-one", "status": "in_progress"},
        ]),
    ));
    mock.enqueue(Reply::stream().text(["Fixed."]));
    let env = TestEnv::new();
    let output = crate::exec::exec(&env, &mock, &["fix the parser"]).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Fixed.\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("✓ todo 1 of 2 done \"Fix the off-by-one\": plan: 1 of 2 done ("),
        "{stderr}"
    );
    let requests = mock.requests();
    assert!(offered_tool_names(&requests[0].body).contains(&"todo".to_owned()));
    assert!(instructions(&requests[0].body).contains(GUIDANCE));
}
