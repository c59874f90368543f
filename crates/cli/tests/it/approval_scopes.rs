//! `approval.scopes`: answers for the rest of a session kept across a reopen in a new
//! child, a denial's message reaching the model, `unavailable` answers and their
//! label, the base protocol unchanged without the extension, and `exec` answering at
//! a terminal (under tmux) and without one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::*;
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::ApprovalChangeCountsDescriptor;
use magi_protocol::messages::{
    ActivityState, ApprovalAnswerParams, ApprovalScope, ApprovalScopesDescriptor, EmptyParams,
    Event, RunOutcome,
};
use magi_protocol::methods;
use magi_protocol::names::{APPROVAL_CHANGE_COUNTS, APPROVAL_SCOPES, base_capabilities};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const CAPABILITIES: [&str; 6] = [
    "session.create",
    "session.open",
    "turn.start",
    "approval.answer",
    "shutdown",
    APPROVAL_SCOPES,
];

async fn started(env: &TestEnv, capabilities: &[&str]) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(capabilities).await.unwrap().unwrap();
    backend
}

async fn reply(
    backend: &mut Backend,
    params: &ApprovalAnswerParams,
) -> Result<magi_protocol::messages::ApprovalAnswerResult, ErrorCode> {
    backend
        .call::<methods::ApprovalAnswer>(params)
        .await
        .unwrap()
}

/// The ends of the run's tool activities, in order.
fn ends(events: &[Event]) -> Vec<(ActivityState, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Activity(a) if a.state != ActivityState::Started => {
                Some((a.state, a.summary.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_session_answer_is_kept_when_the_session_is_reopened_in_a_new_child() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
    mock.enqueue(Reply::stream().text(["Made one."]));
    let env = env_for(&mock);
    let mut first = started(&env, &CAPABILITIES).await;
    let session = session_with_turn(&mut first, "Make one").await;
    let mut events = Vec::new();
    let request = until_approval(&mut first, &mut events).await;
    assert_eq!(request.subject, Some(Some("touch one.txt".into())));
    assert_eq!(request.suggested_rule, Some(Some("bash(touch*)".into())));
    assert_eq!(request.proposed_change, Some(None));
    let mut allow =
        ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, true);
    allow.scope = Some(ApprovalScope::Session);
    assert!(reply(&mut first, &allow).await.is_ok());
    assert_eq!(
        until_finished(&mut first, &mut events).await.outcome,
        RunOutcome::Completed
    );
    shutdown_clean(&mut first).await;
    let rules: Vec<Value> = records(&env, &session)
        .into_iter()
        .filter(|r| r["kind"] == "session_rule")
        .collect();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["effect"], "allow");
    assert_eq!(rules[0]["rule"], "bash(touch*)");

    // A new child reopens the session: the same command prefix runs without asking,
    // a command line that chains another command still asks.
    mock.enqueue(calls(
        "bash",
        &[
            bash("b2", "touch two.txt"),
            bash("b3", "touch three.txt; touch four.txt"),
        ],
    ));
    mock.enqueue(Reply::stream().text(["Made two."]));
    let mut second = started(&env, &CAPABILITIES).await;
    open_session(&mut second, &session).await.unwrap();
    let run = start_turn(&mut second, &session, "Make two and three").await;
    let mut events = Vec::new();
    let request = until_approval(&mut second, &mut events).await;
    assert_eq!(
        request.subject,
        Some(Some("touch three.txt; touch four.txt".into()))
    );
    assert_eq!(
        request.suggested_rule,
        Some(None),
        "no rule for a compound command"
    );
    let deny = ApprovalAnswerParams::once(&session, &run, &request.approval_id, false);
    assert!(reply(&mut second, &deny).await.is_ok());
    until_finished(&mut second, &mut events).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ApprovalRequested(_)))
            .count(),
        1
    );
    assert!(env.cwd().join("two.txt").exists(), "ran without asking");
    assert!(!env.cwd().join("three.txt").exists());
    assert_eq!(
        protections(&env, &session),
        ["allowed by user", "allowed by user", "denied by user"]
    );
    shutdown_clean(&mut second).await;
}

#[tokio::test]
async fn a_denial_message_reaches_the_model_and_unavailable_is_labelled() {
    let mock = MockServer::start().await;
    let write = |id: &str, path: &str| {
        (
            id.to_owned(),
            json!({"path": path, "content": "new\n"}).to_string(),
        )
    };
    mock.enqueue(calls(
        "write",
        &[write("w1", "a.txt"), write("w2", "src/b.txt")],
    ));
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("a.txt"), "old\n").unwrap();
    let mut backend = started(&env, &CAPABILITIES).await;
    let session = session_with_turn(&mut backend, "Write them").await;
    let mut events = Vec::new();

    let first = until_approval(&mut backend, &mut events).await;
    assert_eq!(first.subject, Some(Some("a.txt".into())));
    assert_eq!(first.suggested_rule, Some(Some("write(a.txt)".into())));
    let change = first.proposed_change.clone().flatten().unwrap();
    assert!(change.diff.contains("-old\n+new\n"), "{}", change.diff);
    assert!(!change.truncated);
    // The counts come only with `approval.change_counts`.
    assert_eq!((change.added, change.removed), (None, None));
    let mut deny = ApprovalAnswerParams::once(&session, &first.run_id, &first.approval_id, false);
    deny.message = Some("use notes.txt instead".into());
    assert!(reply(&mut backend, &deny).await.is_ok());

    let second = until_approval(&mut backend, &mut events).await;
    assert_eq!(second.suggested_rule, Some(Some("write(src/*)".into())));
    let mut unavailable =
        ApprovalAnswerParams::once(&session, &second.run_id, &second.approval_id, false);
    // `unavailable` goes with a plain denial only.
    for bad in [
        ApprovalAnswerParams {
            allow: true,
            unavailable: Some(true),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            unavailable: Some(false),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            unavailable: Some(true),
            scope: Some(ApprovalScope::Session),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            message: Some("x".repeat(1025)),
            ..unavailable.clone()
        },
        ApprovalAnswerParams {
            allow: true,
            message: Some("fine".into()),
            ..unavailable.clone()
        },
    ] {
        assert_eq!(
            reply(&mut backend, &bad).await,
            Err(ErrorCode::InvalidParams),
            "{bad:?}"
        );
    }
    unavailable.unavailable = Some(true);
    assert!(reply(&mut backend, &unavailable).await.is_ok());
    assert_eq!(
        until_finished(&mut backend, &mut events).await.outcome,
        RunOutcome::Completed
    );
    assert_eq!(
        ends(&events),
        [
            (ActivityState::Failed, "denied by user".into()),
            (ActivityState::Failed, "denied; approval unavailable".into()),
        ]
    );
    let outputs = tool_outputs(&mock.requests()[1].body);
    assert_eq!(
        outputs,
        [
            "The call was not run: denied by user.\nThe user said: use notes.txt instead",
            "The call was not run: denied; approval unavailable.",
        ]
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(
        protections(&env, &session),
        ["denied by user", "denied; approval unavailable"]
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_extension_is_advertised_in_its_place_and_bounds_the_names() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let result = backend
        .initialize(&["shutdown", "tool.cards", APPROVAL_SCOPES])
        .await
        .unwrap()
        .unwrap();
    let mut expected = base_capabilities();
    expected.extend(["tool.cards".to_owned(), APPROVAL_SCOPES.to_owned()]);
    assert_eq!(result.capabilities, expected);
    let extensions = result.extensions.unwrap();
    assert_eq!(
        extensions.approval_scopes,
        Some(ApprovalScopesDescriptor::schema_1())
    );
    let raw = serde_json::to_value(&extensions).unwrap();
    assert_eq!(
        raw["approval.scopes"],
        json!({"schema_version": 1, "scopes": ["once", "session"], "message_bytes": 1024})
    );
    shutdown_clean(&mut backend).await;

    // The sixteen base names and the extension's are 17, the bound with it; one more
    // is too many.
    let mut names = base_capabilities();
    names.push(APPROVAL_SCOPES.to_owned());
    let mut backend = env.spawn();
    let accepted = backend
        .request_raw("initialize", json!({ "required_capabilities": names }))
        .await
        .unwrap();
    assert!(accepted.outcome.is_ok(), "{accepted:?}");
    shutdown_clean(&mut backend).await;
    names.push("status".to_owned());
    let mut backend = env.spawn();
    let refused = backend
        .request_raw("initialize", json!({ "required_capabilities": names }))
        .await
        .unwrap();
    assert_eq!(refused.outcome, Err(ErrorCode::InvalidParams));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_the_extension_the_base_frames_are_unchanged() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    let mut backend = started(&env, &CAPABILITIES[..5]).await;
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id;
    let run = start_turn(&mut backend, &session, "Make one").await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    // The client library refuses any of the extension's fields without it; absent
    // they decode as `None`.
    assert_eq!(
        (
            &request.subject,
            &request.suggested_rule,
            &request.proposed_change
        ),
        (&None, &None, &None)
    );
    let base = json!({"session_id": session, "run_id": run, "approval_id": request.approval_id});
    for extra in [
        json!({"scope": "once"}),
        json!({"scope": "session"}),
        json!({"message": "no"}),
        json!({"unavailable": true}),
        json!({"scope": 1}),
    ] {
        let mut params = base.clone();
        params["allow"] = json!(false);
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let answered = backend
            .request_raw("approval.answer", params.clone())
            .await
            .unwrap();
        assert_eq!(answered.outcome, Err(ErrorCode::InvalidParams), "{params}");
    }
    let mut params = base.clone();
    params["allow"] = json!(true);
    let answered = backend
        .request_raw("approval.answer", params)
        .await
        .unwrap();
    assert_eq!(answered.outcome, Ok(json!({"recorded": true})));
    until_finished(&mut backend, &mut events).await;
    assert!(env.cwd().join("one.txt").exists());
    assert!(
        !records(&env, &session)
            .iter()
            .any(|r| r["kind"] == "session_rule")
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_subagents_session_answer_is_the_sessions_rule() {
    let mock = MockServer::start().await;
    let task = json!({"subagent": "maker", "task": "Make sub.txt."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    mock.enqueue(calls("bash", &[bash("s1", "touch sub.txt")]));
    mock.enqueue(Reply::stream().text(["Made sub.txt."]));
    mock.enqueue(calls("bash", &[bash("b1", "touch main.txt")]));
    mock.enqueue(Reply::stream().text(["Both made."]));
    let env = env_for(&mock);
    env.write_settings(
        "[profiles.maker]\nsubagent = true\ndescription = \"Makes files.\"\n\
         instructions = \"Make what is asked.\"\ntools = [\"bash\"]\n",
    );
    let mut backend = started(&env, &CAPABILITIES).await;
    let session = session_with_turn(&mut backend, "Delegate it").await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    assert_eq!(request.suggested_rule, Some(Some("bash(touch*)".into())));
    let mut allow =
        ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, true);
    allow.scope = Some(ApprovalScope::Session);
    assert!(reply(&mut backend, &allow).await.is_ok());
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    // The session's own call after the task ran under the subagent's answer.
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ApprovalRequested(_)))
            .count(),
        1
    );
    assert!(env.cwd().join("sub.txt").exists() && env.cwd().join("main.txt").exists());
    let rules: Vec<Value> = records(&env, &session)
        .into_iter()
        .filter(|r| r["kind"] == "session_rule")
        .collect();
    assert_eq!(
        rules.len(),
        1,
        "the session's log keeps the subagent's answer"
    );
    assert_eq!(rules[0]["call_id"], "s1");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_change_counts_are_the_whole_changes_when_negotiated() {
    let mock = MockServer::start().await;
    // 400 lines where there was one: the diff an approval carries stops at 128 lines,
    // the counts do not.
    let content: String = (1..=400).map(|n| format!("line {n}\n")).collect();
    mock.enqueue(Reply::stream().tool_call(
        "w1",
        "write",
        [json!({"path": "a.txt", "content": content}).to_string()],
    ));
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("a.txt"), "old\n").unwrap();
    let capabilities = [&CAPABILITIES[..], &[APPROVAL_CHANGE_COUNTS]].concat();
    let mut backend = env.spawn();
    let result = backend.initialize(&capabilities).await.unwrap().unwrap();
    assert_eq!(
        result.capabilities.last().map(String::as_str),
        Some(APPROVAL_CHANGE_COUNTS)
    );
    let descriptor = result.extensions.and_then(|e| e.approval_change_counts);
    assert_eq!(descriptor, Some(ApprovalChangeCountsDescriptor::schema_1()));
    let session = session_with_turn(&mut backend, "Write it").await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    let change = request.proposed_change.clone().flatten().unwrap();
    assert!(change.truncated, "{}", change.diff);
    assert_eq!((change.added, change.removed), (Some(400), Some(1)));
    assert_eq!(change.counts_words().as_deref(), Some("+400 \u{2212}1"));
    let deny = ApprovalAnswerParams::once(&session, &request.run_id, &request.approval_id, false);
    assert!(reply(&mut backend, &deny).await.is_ok());
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "old\n"
    );
    shutdown_clean(&mut backend).await;
}
