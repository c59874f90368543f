//! Approvals: a tool that changes the workspace asks first; the client's one winning
//! answer, a deny, cancellation and settings rules decide.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{env_for, until_approval};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityState, ApprovalAnswerParams, ApprovalAnswerResult, EmptyParams, Event, RunOutcome,
    TurnCancelParams, TurnStartParams,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

fn write_call(mock: &MockServer) {
    mock.enqueue(Reply::stream().tool_call(
        "w1",
        "write",
        ["{\"path\":\"out.txt\",", "\"content\":\"hello\\n\"}"],
    ));
}

async fn turn(env: &TestEnv) -> (Backend, String, String) {
    let mut backend = env.spawn();
    backend
        .initialize(&[
            "session.create",
            "turn.start",
            "turn.cancel",
            "approval.answer",
            "shutdown",
        ])
        .await
        .unwrap()
        .unwrap();
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap();
    let params = TurnStartParams {
        session_id: session.session_id.clone(),
        prompt: "Write a file".into(),
        attachments: None,
    };
    let started = backend
        .call::<methods::TurnStart>(&params)
        .await
        .unwrap()
        .unwrap();
    (backend, session.session_id, started.run_id)
}

async fn answer(
    backend: &mut Backend,
    session: &str,
    run: &str,
    approval: &str,
    allow: bool,
) -> Result<ApprovalAnswerResult, ErrorCode> {
    let params = ApprovalAnswerParams {
        session_id: session.to_owned(),
        run_id: run.to_owned(),
        approval_id: approval.to_owned(),
        allow,
        scope: None,
        message: None,
        unavailable: None,
    };
    backend
        .call::<methods::ApprovalAnswer>(&params)
        .await
        .unwrap()
}

fn tool_end(events: &[Event]) -> (ActivityState, String) {
    events
        .iter()
        .find_map(|e| match e {
            Event::Activity(a) if a.state != ActivityState::Started => {
                Some((a.state, a.summary.clone()))
            }
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn an_allowed_write_runs_once_and_later_answers_are_stale() {
    let mock = MockServer::start().await;
    write_call(&mock);
    mock.enqueue(Reply::stream().text(["Written."]));
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    assert_eq!(request.summary, "write out.txt");
    assert_eq!(request.expires_in_ms, 60_000);
    assert!(
        !env.cwd().join("out.txt").exists(),
        "nothing runs before the answer"
    );
    assert_eq!(
        answer(&mut backend, &session, &run, "not-the-approval", true).await,
        Err(ErrorCode::StaleApproval)
    );
    assert_eq!(
        answer(&mut backend, &session, &run, &request.approval_id, true).await,
        Ok(ApprovalAnswerResult { recorded: true })
    );
    assert_eq!(
        answer(&mut backend, &session, &run, &request.approval_id, false).await,
        Err(ErrorCode::StaleApproval),
        "exactly one reply wins"
    );
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        tool_end(&events),
        (ActivityState::Completed, "wrote 1 line".into())
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("out.txt")).unwrap(),
        "hello\n"
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_denied_write_does_not_run_and_the_model_is_told() {
    let mock = MockServer::start().await;
    write_call(&mock);
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    assert!(
        answer(&mut backend, &session, &run, &request.approval_id, false)
            .await
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        tool_end(&events),
        (ActivityState::Failed, "denied by user".into())
    );
    assert!(!env.cwd().join("out.txt").exists());
    assert!(
        mock.requests()[1]
            .body
            .to_string()
            .contains("denied by user")
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn cancelling_a_run_with_a_pending_approval_denies_it() {
    let mock = MockServer::start().await;
    write_call(&mock);
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id: run.clone(),
    };
    let cancelled = backend.call::<methods::TurnCancel>(&cancel).await.unwrap();
    assert!(cancelled.is_ok());
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    assert_eq!(
        tool_end(&events),
        (ActivityState::Failed, "denied; approval unavailable".into())
    );
    assert!(!env.cwd().join("out.txt").exists());
    assert_eq!(
        answer(&mut backend, &session, &run, &request.approval_id, true).await,
        Err(ErrorCode::StaleApproval)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn settings_rules_decide_without_asking() {
    for (rules, expected) in [
        (
            "[permissions]\nallow = [\"write\"]\n",
            (ActivityState::Completed, "wrote 1 line"),
        ),
        (
            "[permissions]\nmode = \"allow-all\"\n",
            (ActivityState::Completed, "wrote 1 line"),
        ),
        (
            "[permissions]\nmode = \"allow-all\"\ndeny = [\"write\"]\n",
            (ActivityState::Failed, "denied by user"),
        ),
    ] {
        let mock = MockServer::start().await;
        write_call(&mock);
        mock.enqueue(Reply::stream().text(["Done."]));
        let env = env_for(&mock).without(MODE_ENV);
        env.write_settings(rules);
        let (mut backend, _, _) = turn(&env).await;
        let mut events = Vec::new();
        let finished = until_finished(&mut backend, &mut events).await;
        assert_eq!(finished.outcome, RunOutcome::Completed, "{rules}");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::ApprovalRequested(_))),
            "{rules}"
        );
        assert_eq!(
            tool_end(&events),
            (expected.0, expected.1.to_owned()),
            "{rules}"
        );
        assert_eq!(
            env.cwd().join("out.txt").exists(),
            expected.0 == ActivityState::Completed
        );
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn invalid_permission_settings_fail_startup() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    env.write_settings("[permissions]\nmode = \"yolo\"\n");
    let mut backend = env.spawn();
    let got = backend.initialize(&[]).await.unwrap();
    assert_eq!(got, Err(ErrorCode::ConfigurationInvalid));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn edit_asks_too_and_replaces_exactly_one_occurrence() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "e1",
        "edit",
        ["{\"path\":\"lib.rs\",\"old_text\":\"fn a() {}\",\"new_text\":\"fn a() { b() }\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Edited."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    let (mut backend, session, run) = turn(&env).await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    assert_eq!(request.summary, "edit lib.rs");
    assert!(
        answer(&mut backend, &session, &run, &request.approval_id, true)
            .await
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        tool_end(&events),
        (ActivityState::Completed, "-1 +1 lines".into())
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("lib.rs")).unwrap(),
        "fn a() { b() }\nfn b() {}\n"
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn bash_asks_captures_its_output_and_never_sees_the_credential() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "b1",
        "bash",
        ["{\"command\":\"echo out; echo err >&2; echo \\\"key=[$OPENAI_API_KEY]\\\"; exit 3\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Ran it."]));
    let env = env_for(&mock).var("OPENAI_API_KEY", "sk-secret-value-123");
    let (mut backend, session, run) = turn(&env).await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    // The label names the command, as the card and the activity do.
    assert_eq!(
        request.summary,
        "bash echo out; echo err >&2; echo \"key=[$OPENAI_API_KEY]\"; exit 3"
    );
    assert!(
        answer(&mut backend, &session, &run, &request.approval_id, true)
            .await
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(tool_end(&events), (ActivityState::Failed, "exit 3".into()));
    // The model got the output and the exit code, and no credential.
    let body = mock.requests()[1].body.to_string();
    assert!(
        body.contains("out") && body.contains("err") && body.contains("exit code 3"),
        "{body}"
    );
    assert!(body.contains("key=[]"), "{body}");
    assert!(!body.contains("sk-secret-value-123"));
    // The captures are kept with the session's tool-call assets.
    let assets = env
        .mc_home()
        .join("data/conversations")
        .join(&session)
        .join("tool-calls/b1");
    let output = std::fs::read_to_string(assets.join("output.txt")).unwrap();
    assert!(output.contains("out") && output.contains("err"));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn hash_edit_applies_matching_anchors_and_refuses_stale_ones() {
    use sha2::{Digest, Sha256};
    let hash = |line: &str| -> String {
        Sha256::digest(line.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()[..6]
            .to_owned()
    };
    let mock = MockServer::start().await;
    let operations = json!([
        {"op": "replace", "line": 2, "hash": hash("fn b() {}"), "text": "fn b() { a() }"},
        {"op": "delete", "line": 1, "hash": hash("stale view")}
    ]);
    let arguments = json!({"path": "lib.rs", "operations": operations}).to_string();
    mock.enqueue(Reply::stream().tool_call("h1", "hash_edit", [arguments]));
    mock.enqueue(Reply::stream().text(["Edited."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    env.write_settings("[permissions]\nallow = [\"hash_edit\"]\n");
    let (mut backend, _, _) = turn(&env).await;
    let mut events = Vec::new();
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        tool_end(&events),
        (ActivityState::Completed, "applied 1 of 2 operations".into())
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("lib.rs")).unwrap(),
        "fn a() {}\nfn b() { a() }\n"
    );
    assert!(mock.requests()[1].body.to_string().contains("Refused"));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn background_jobs_are_read_and_end_with_the_backend() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "j1",
        "async_bash",
        ["{\"command\":\"echo $$ > job.pid; echo started; sleep 60\"}"],
    ));
    mock.enqueue(Reply::stream().text(["It runs."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"async_bash\"]\n");
    let (mut backend, _, _) = turn(&env).await;
    let mut events = Vec::new();
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        tool_end(&events),
        (ActivityState::Completed, "started job-1".into())
    );
    let pid_file = env.cwd().join("job.pid");
    let deadline = std::time::Instant::now() + WAIT;
    while std::fs::read_to_string(&pid_file).map_or(true, |t| t.trim().is_empty()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never started"
        );
        tokio::task::yield_now().await;
    }
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the job runs after its turn"
    );
    shutdown_clean(&mut backend).await;
    // The backend has exited: its job's process group was killed with it.
    crate::tool_calls::wait_until_gone(&pid, "the job outlived the backend").await;
}

#[tokio::test]
async fn an_earlier_call_has_ended_and_been_told_before_the_next_one_is_asked_about() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("b1", "bash", ["{\"command\":\"echo first\"}"])
            .tool_call("b2", "bash", ["{\"command\":\"touch second.txt\"}"]),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"bash(echo first)\"]\n");
    let (mut backend, session, run) = turn(&env).await;
    let mut seen = Vec::new();
    let request = until_approval(&mut backend, &mut seen).await;
    // The person is asked about the second call knowing how the first one ended.
    let ended: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Activity(a) if a.state != ActivityState::Started => Some(a.summary.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ended, ["exit 0"], "{seen:?}");
    answer(&mut backend, &session, &run, &request.approval_id, true)
        .await
        .unwrap();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(env.cwd().join("second.txt").exists());
}
