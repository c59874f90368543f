//! Subagents through the real binary against the mock model: a `task` call delegates
//! to a subagent profile, whose loop runs with its own model, tools and path ceiling,
//! streams its calls as child activities and cards, keeps its own history and report,
//! and answers the delegating model; a looping subagent stops at its request limit.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_protocol::ErrorCode;
use magi_protocol::cards::{Block, Card, CardState, ChildrenBlock, ParentState, ToolKind};
use magi_protocol::limits::TASK_MODEL_REQUESTS;
use magi_protocol::messages::{ActivityKind, Event, RunOutcome};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const METHODS: [&str; 5] = [
    "session.create",
    "turn.start",
    "shutdown",
    "status",
    "tool.cards",
];

fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
}

const REVIEWER: &str = r#"
[profiles.reviewer]
subagent = true
description = "Reads code and reports what it finds."
instructions = "REVIEWER-RULE: report facts only."
tools = ["read", "list"]
paths = ["src/**"]
model = "sub-model"
"#;

async fn run_turn(env: &TestEnv, prompt: &str) -> (magi_client::Backend, String, Vec<Event>) {
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    (backend, session, seen)
}

/// A card's children block, if it has one.
fn children_block(card: &Card) -> Option<&ChildrenBlock> {
    card.blocks.iter().find_map(|b| match b {
        Block::Children(block) => Some(block),
        _ => None,
    })
}

/// The last card of each activity, in order of first appearance.
fn final_cards(seen: &[Event]) -> Vec<Card> {
    let mut cards: Vec<Card> = Vec::new();
    for event in seen {
        if let Event::ToolCard(e) = event {
            match cards
                .iter_mut()
                .find(|c| c.activity_id == e.card.activity_id)
            {
                Some(card) => *card = e.card.clone(),
                None => cards.push(e.card.clone()),
            }
        }
    }
    cards
}

#[tokio::test]
async fn a_task_runs_its_subagent_within_its_scope_and_reports_back() {
    let mock = MockServer::start().await;
    let task = json!({"subagent": "reviewer", "task": "Read src/lib.rs and report the answer."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    mock.enqueue(
        Reply::stream()
            .tool_call("r1", "read", ["{\"path\":\"src/lib.rs\"}"])
            .tool_call("r2", "read", ["{\"path\":\"secret.txt\"}"]),
    );
    mock.enqueue(Reply::stream().text(["The answer is 42."]));
    mock.enqueue(Reply::stream().text(["The reviewer says 42."]));
    let env = env_for(&mock);
    env.write_settings(REVIEWER);
    std::fs::create_dir_all(env.cwd().join("src")).unwrap();
    std::fs::write(env.cwd().join("src/lib.rs"), "fn answer() -> u32 { 42 }\n").unwrap();
    std::fs::write(env.cwd().join("secret.txt"), "TOP-SECRET\n").unwrap();
    let (mut backend, session, seen) = run_turn(&env, "ask the reviewer").await;

    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    // The delegating model is offered `task` naming the subagent.
    let first = &requests[0].body;
    assert!(offered_tool_names(first).contains(&"task".to_owned()));
    assert!(
        first
            .to_string()
            .contains("Reads code and reports what it finds.")
    );
    // The subagent: its own model, instructions, tools and conversation.
    let sub = &requests[1].body;
    assert_eq!(sub["model"], "sub-model");
    assert_eq!(offered_tool_names(sub), ["read", "list"]);
    let system = sub["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("REVIEWER-RULE"), "{system}");
    assert_eq!(
        sub["messages"][1]["content"],
        "Read src/lib.rs and report the answer."
    );
    assert!(!sub.to_string().contains("ask the reviewer"));
    // Inside its paths it reads; outside them nothing runs.
    let outputs = tool_outputs(&requests[2].body);
    assert!(outputs[0].contains("42"), "{outputs:?}");
    assert!(
        outputs[1].contains("outside the task's scope"),
        "{outputs:?}"
    );
    assert!(!outputs[1].contains("TOP-SECRET"));
    // The delegating model gets the final response.
    let parent = tool_outputs(&requests[3].body);
    assert!(
        parent[0].contains("The subagent reviewer finished"),
        "{parent:?}"
    );
    assert!(parent[0].contains("The answer is 42."), "{parent:?}");

    // Activities: the task is a `subagent` activity; the subagent's calls are tools.
    let activities: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Activity(a) => Some(a),
            _ => None,
        })
        .collect();
    assert!(
        activities
            .iter()
            .any(|a| a.kind == ActivityKind::Subagent && a.name == "task")
    );
    assert_eq!(
        activities
            .iter()
            .filter(|a| a.kind == ActivityKind::Tool && a.name == "read")
            .count(),
        4,
        "two reads, each started and ended"
    );
    // The subagent's text is its report, not the run's reply.
    for event in &seen {
        if let Event::MessageDelta(d) = event {
            assert!(!d.text.contains("answer is"), "{d:?}");
        }
    }

    // Cards: the children name the task call as their parent and the task.
    let cards = final_cards(&seen);
    let task_card = cards
        .iter()
        .find(|c| c.tool_kind == ToolKind::Subagent)
        .unwrap();
    assert_eq!(task_card.task_id.as_deref(), Some("task-1"));
    assert_eq!(task_card.parent_state, ParentState::Root);
    let children: Vec<&Card> = cards
        .iter()
        .filter(|c| c.parent_activity_id.as_deref() == Some(&task_card.activity_id))
        .collect();
    assert_eq!(children.len(), 2);
    for child in &children {
        assert_eq!(child.parent_state, ParentState::Available);
        assert_eq!(child.task_id.as_deref(), Some("task-1"));
        assert_eq!(child.state, CardState::Finished);
    }
    let block = children_block(task_card).expect("a children block");
    assert_eq!(block.total, Some(2));
    let ids: Vec<&str> = block
        .children
        .iter()
        .map(|c| c.activity_id.as_str())
        .collect();
    let expected: Vec<&str> = children.iter().map(|c| c.activity_id.as_str()).collect();
    assert_eq!(ids, expected);
    assert!(
        serde_json::to_string(task_card)
            .unwrap()
            .contains("Model requests")
    );
    // While the subagent worked, the task's card showed its calls as each ended: both
    // were known (started) by then, one and then two finished.
    let progress: Vec<(Option<u64>, usize)> = seen
        .iter()
        .filter_map(|e| match e {
            Event::ToolCard(c) if c.card.activity_id == task_card.activity_id => Some(&c.card),
            _ => None,
        })
        .filter(|c| c.state == CardState::Running)
        .map(|c| match children_block(c) {
            Some(block) => (
                block.total,
                block
                    .children
                    .iter()
                    .filter(|child| child.state == CardState::Finished)
                    .count(),
            ),
            None => (None, 0),
        })
        .collect();
    assert_eq!(progress, [(None, 0), (Some(2), 1), (Some(2), 2)]);

    // The subagent's own history, linked to the parent call, and its report.
    let folder = env
        .mc_home()
        .join("data/conversations")
        .join(&session)
        .join("tool-calls/t1");
    let history = std::fs::read_to_string(folder.join("task.jsonl")).unwrap();
    let first_record: Value = serde_json::from_str(history.lines().next().unwrap()).unwrap();
    assert_eq!(first_record["kind"], "task_link");
    assert_eq!(first_record["parent_session_id"], session.as_str());
    assert_eq!(first_record["parent_call_id"], "t1");
    assert!(history.contains("\"call_id\":\"r1\""));
    assert_eq!(
        std::fs::read_to_string(folder.join("report.md")).unwrap(),
        "The answer is 42."
    );
    // The session's own history holds the task call, not the subagent's calls.
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("\"call_id\":\"t1\""));
    assert!(!log.contains("\"call_id\":\"r1\""));
    assert!(log.contains("\"tool\":\"task\""), "{log}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_looping_subagent_stops_at_its_request_limit_and_the_turn_goes_on() {
    let mock = MockServer::start().await;
    let task = json!({"subagent": "reviewer", "task": "List src forever."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    for n in 0..TASK_MODEL_REQUESTS {
        mock.enqueue(Reply::stream().tool_call(format!("l{n}"), "list", ["{\"path\":\"src\"}"]));
    }
    mock.enqueue(Reply::stream().text(["It never finished."]));
    let env = env_for(&mock);
    env.write_settings(REVIEWER);
    std::fs::create_dir_all(env.cwd().join("src")).unwrap();
    let (mut backend, _, seen) = run_turn(&env, "loop").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), TASK_MODEL_REQUESTS + 2);
    let parent = tool_outputs(&requests[TASK_MODEL_REQUESTS + 1].body);
    assert!(
        parent[0].contains(&format!(
            "stopped after {TASK_MODEL_REQUESTS} model requests"
        )),
        "{parent:?}"
    );
    let task_card = final_cards(&seen)
        .into_iter()
        .find(|c| c.tool_kind == ToolKind::Subagent)
        .unwrap();
    let block = children_block(&task_card).unwrap();
    // Every call is counted; the block keeps the first 32.
    assert_eq!(block.total, Some(TASK_MODEL_REQUESTS as u64));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn disabled_subagents_are_not_offered_and_bad_ones_fail_startup() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Alone."]));
    let env = env_for(&mock);
    env.write_settings(&format!(
        "[agent]\ndisabled_subagents = [\"reviewer\"]\n{REVIEWER}"
    ));
    let (mut backend, _, _) = run_turn(&env, "hi").await;
    assert!(!offered_tool_names(&mock.requests()[0].body).contains(&"task".to_owned()));
    shutdown_clean(&mut backend).await;

    // A path-scoped subagent that could run commands is refused.
    env.write_settings(&REVIEWER.replace("[\"read\", \"list\"]", "[\"read\", \"bash\"]"));
    let mut backend = env.spawn();
    let answer = backend.initialize(&METHODS).await.unwrap();
    assert_eq!(answer.unwrap_err(), ErrorCode::ProfileInvalid);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_subagent_is_never_offered_the_clients_own_tools() {
    let mock = MockServer::start().await;
    let task = json!({"subagent": "helper", "task": "Say hi."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    // The subagent tries the client's tool anyway: nothing is sent to the client.
    mock.enqueue(Reply::stream().tool_call("n1", "notify", ["{\"text\":\"hi\"}"]));
    mock.enqueue(Reply::stream().text(["Could not notify."]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings(
        "[profiles.helper]\nsubagent = true\ndescription = \"Helps.\"\n\n[permissions]\nallow = [\"notify\"]\n",
    );
    let mut backend = env.spawn();
    let notify = magi_protocol::messages::ClientToolDefinition {
        name: "notify".into(),
        description: "Shows a notification.".into(),
        parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        timeout_ms: None,
    };
    backend
        .initialize_with_tools(
            &["session.create", "turn.start", "shutdown", "client.tools"],
            Some(&[notify]),
        )
        .await
        .unwrap()
        .unwrap();
    session_with_turn(&mut backend, "delegate").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(!seen.iter().any(|e| matches!(e, Event::ClientToolCall(_))));
    let requests = mock.requests();
    assert!(offered_tool_names(&requests[0].body).contains(&"notify".to_owned()));
    let sub = offered_tool_names(&requests[1].body);
    assert!(!sub.contains(&"notify".to_owned()) && !sub.contains(&"task".to_owned()));
    assert!(tool_outputs(&requests[2].body)[0].contains("not offered"));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_subagent_that_ends_without_words_finishes_without_a_response() {
    let mock = MockServer::start().await;
    let task = json!({"subagent": "reviewer", "task": "Think quietly."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    mock.enqueue(Reply::stream());
    mock.enqueue(Reply::stream().text(["Nothing to report."]));
    let env = env_for(&mock);
    env.write_settings(REVIEWER);
    let (mut backend, session, _) = run_turn(&env, "delegate").await;
    let parent = tool_outputs(&mock.requests()[2].body);
    assert_eq!(
        parent,
        ["The subagent reviewer finished without a final response."]
    );
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("\"ended\":\"completed\""), "{log}");
    assert!(log.contains("\"report_bytes\":null"), "{log}");
    shutdown_clean(&mut backend).await;
}
