//! Panics contained, through the real binary: a debug backend panics exactly where
//! `MAGI_FAULT` says (on the run's thread, on the session worker, on the protocol loop).
//! A panic in a run ends that run `failed` with an `internal_error` diagnostic, its
//! unfinished cards `unknown`, and the same backend serves the next turn; a panic in
//! session work answers `execution_failed`; a panic on the protocol loop ends the
//! backend in order (the crash report, one line on stderr, exit status 101). Each
//! leaves a crash report in `$MC_HOME/logs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::tmux::{Tmux, mock_vars};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::cards::{CardOutcome, CardState};
use magi_protocol::messages::{
    EmptyParams, Event, HistoryPageParams, Persistence, RunOutcome, SessionListParams,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const CAPABILITIES: [&str; 6] = [
    "session.create",
    "session.list",
    "turn.start",
    "history.page",
    "shutdown",
    "tool.cards",
];

/// An environment whose backend talks to `mock` and panics at `fault`.
fn armed(mock: &MockServer, fault: &str) -> TestEnv {
    let env = env_for_wire(Wire::Chat, mock).var("MAGI_FAULT", fault);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    env
}

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(&CAPABILITIES).await.unwrap().unwrap();
    backend
}

#[tokio::test]
async fn a_panic_on_the_runs_thread_fails_the_run_and_the_backend_serves_the_next_turn() {
    let mock = MockServer::start().await;
    let command = json!({ "command": "echo ran >> ran.txt" }).to_string();
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [command]));
    mock.enqueue(Reply::stream().text(["Recovered."]));
    let env = armed(&mock, "panic_after_claim:1");
    let mut backend = ready(&env).await;
    let session = session_with_turn(&mut backend, "Run it").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Failed, "{seen:?}");
    assert_eq!(finished.error_code, Some(ErrorCode::ExecutionFailed));
    assert_eq!(finished.persistence, Persistence::Durable);
    // The diagnostic names the place and the report, nothing of the panic's message.
    let summary = seen
        .iter()
        .find_map(|e| match e {
            Event::Diagnostic(d) if d.code == "internal_error" => Some(d.summary.clone()),
            _ => None,
        })
        .expect("an internal_error diagnostic");
    assert!(
        summary.starts_with("internal error at crates/core/src/fault.rs:"),
        "{summary}"
    );
    assert!(summary.contains("the crash report is "), "{summary}");
    assert!(!summary.contains("crash point"), "{summary}");
    // The call's card, started and never settled, ends unknown before run.finished.
    let cards: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            Event::ToolCard(e) => Some(e.card.clone()),
            _ => None,
        })
        .collect();
    let last = cards.last().expect("the call's card");
    assert_eq!(last.state, CardState::Finished);
    assert_eq!(last.outcome, Some(CardOutcome::Unknown));
    assert!(cards.windows(2).all(|w| w[0].revision < w[1].revision));
    // The crash report says where, on which thread.
    let reports = env.crash_report_texts();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(reports[0].contains("program: serve\n"), "{}", reports[0]);
    assert!(reports[0].contains("thread: magi-run\n"), "{}", reports[0]);
    assert!(reports[0].contains("location: crates/core/src/fault.rs:"));

    // The same backend takes the next turn; the call the panic left unsettled is
    // settled by recovery and never ran.
    start_turn(&mut backend, &session, "Go on").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    assert!(!env.cwd().join("ran.txt").exists());
    let page = backend
        .call::<methods::HistoryPage>(&HistoryPageParams {
            session_id: session.clone(),
            revision: finished.revision.unwrap(),
            cursor: None,
        })
        .await
        .unwrap()
        .unwrap();
    assert!(page.complete);
    let told = tool_outputs(&mock.requests()[1].body);
    assert_eq!(told.len(), 1, "{told:?}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_panic_in_session_work_answers_execution_failed_and_the_backend_goes_on() {
    let mock = MockServer::start().await;
    let env = armed(&mock, "panic_session_work:1");
    let mut backend = ready(&env).await;
    let params = SessionListParams {
        revision: None,
        cursor: None,
        limit: None,
    };
    let first = backend.call::<methods::SessionList>(&params).await.unwrap();
    assert_eq!(first.err(), Some(ErrorCode::ExecutionFailed));
    let second = backend.call::<methods::SessionList>(&params).await.unwrap();
    assert!(second.is_ok(), "{second:?}");
    backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(env.crash_report_texts().len(), 1);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_panic_on_the_protocol_loop_ends_the_backend_in_order() {
    let mock = MockServer::start().await;
    let env = armed(&mock, "panic_loop:1");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let _ = backend
        .send::<methods::TurnStart>(&magi_protocol::messages::TurnStartParams {
            session_id: session,
            prompt: "hello".into(),
            attachments: None,
        })
        .await;
    let end = backend.end_within(WAIT).await;
    assert_eq!(end.status.and_then(|s| s.code()), Some(101), "{end:?}");
    let said = end.describe();
    assert!(
        said.starts_with(
            "the backend crashed: crash point reached (1) at crates/core/src/fault.rs:"
        ),
        "{said}"
    );
    let reports = env.crash_report_texts();
    assert_eq!(reports.len(), 1);
    let report_path = said
        .rsplit_once("(report: ")
        .unwrap()
        .1
        .trim_end_matches(')');
    assert!(std::path::Path::new(report_path).exists(), "{said}");
    assert!(reports[0].contains("message: crash point reached (1)\n"));
    // Doctor lists the report: what crashed, where, and the file to send.
    let output = env.without("MAGI_FAULT").run_cli(&["doctor"]).await;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(text.contains("crashes: serve crashed at "), "{text}");
    assert!(
        text.contains(": crash point reached (1) at crates/core/src/fault.rs:"),
        "{text}"
    );
    assert!(
        text.contains(&format!("fix: the report is {report_path}")),
        "{text}"
    );
}

#[tokio::test]
async fn exec_tells_a_backend_crash_with_its_cause_and_exits_1() {
    let mock = MockServer::start().await;
    let env = armed(&mock, "panic_loop:1");
    let output = env.run_cli(&["exec", "hello"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "magi-code exec: the backend crashed: crash point reached (1) at crates/core/src/fault.rs:"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("(report: "), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[tokio::test]
async fn exec_tells_a_run_ended_by_a_contained_panic() {
    let mock = MockServer::start().await;
    let command = json!({ "command": "echo ran" }).to_string();
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [command]));
    let env = armed(&mock, "panic_after_claim:1");
    let output = env.run_cli(&["exec", "run it"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("magi-code: internal_error: internal error at crates/core/src/fault.rs:"),
        "{stderr}"
    );
    assert!(stderr.contains("the crash report is "), "{stderr}");
}

/// Mission Control against `mock` with the crash point `fault` in every backend it
/// starts, `bash` allowed.
fn mission_control(mock: &MockServer, fault: &str, columns: u16) -> (TestEnv, Tmux) {
    let env = TestEnv::new().expect_crashes();
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    let mut vars = mock_vars(mock);
    vars.push(("MAGI_FAULT", fault.to_owned()));
    let tmux = Tmux::start_sized(&env, &vars, columns, 30);
    (env, tmux)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mission_control_tells_a_backend_crash_and_r_starts_a_fresh_backend() {
    let mock = MockServer::start().await;
    for columns in [80, 120] {
        let (_env, tmux) = mission_control(&mock, "panic_loop:1", columns);
        tmux.wait_for("idle ·");
        tmux.type_text("hello 世界");
        tmux.key("Enter");
        let screen = tmux.wait_for("[backend_ended]");
        let flat = screen
            .replace('│', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            flat.contains("Press r to start a fresh backend"),
            "{screen}"
        );
        assert!(
            flat.contains("the backend crashed: crash point reached (1) at"),
            "{screen}"
        );
        assert!(flat.contains("(report:"), "{screen}");
        assert!(screen.contains("r starts a fresh backend"), "{screen}");
        // The prompt comes back to the composer, never lost.
        assert!(screen.contains("› hello 世界"), "{screen}");
        // With text in the composer `r` is typed; on an empty one it renews.
        tmux.key("C-c");
        tmux.wait_gone("› hello 世界");
        tmux.type_text("r");
        tmux.wait_for("a fresh backend reopened the session");
        tmux.quit();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mission_control_goes_on_after_a_killed_backend_on_the_same_session() {
    let mock = MockServer::start().await;
    let command = json!({ "command": "echo ran >> ran.txt" }).to_string();
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [command]));
    mock.enqueue(Reply::stream().text(["Recovered after the crash."]));
    // Every backend is killed at its first claim: the fresh one's turn claims nothing.
    let (env, tmux) = mission_control(&mock, "after_claim:1", 120);
    tmux.wait_for("idle ·");
    tmux.type_text("run it");
    tmux.key("Enter");
    let screen = tmux.wait_for("[backend_ended]");
    assert!(
        screen.contains("the backend was killed by signal 9 (KILL)"),
        "{screen}"
    );
    // A prompt sent starts a fresh backend on the same session, which settles the
    // call the dead one left open and answers.
    tmux.type_text("go on");
    tmux.key("Enter");
    let screen = tmux.wait_for("Recovered after the crash.");
    assert!(screen.contains("run it"), "{screen}");
    assert!(!env.cwd().join("ran.txt").exists());
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_outputs(&requests[1].body).len(), 1);
    // One session: the fresh backend reopened the one the prompt began.
    assert_eq!(
        std::fs::read_dir(workspace_dir(&env)).unwrap().count(),
        1,
        "one session log"
    );
    tmux.quit();
}
