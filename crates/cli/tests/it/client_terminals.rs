//! `client.terminals` through the real binary: its descriptor, a `bash` call handed to
//! the client when the settings opt in (and run here when they do not), the client's
//! one answer, a call withdrawn with its run, and the refusals of
//! `client.terminal.result`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{bash, calls};
use crate::common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityKind, ActivityState, ClientTerminalOutcome, ClientTerminalResultParams,
    ClientTerminalRun, ClientToolCancelReason, ClientToolResultResult, Event, RunOutcome,
    TurnCancelParams,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};

const REQUIRED: [&str; 5] = [
    "session.create",
    "turn.start",
    "turn.cancel",
    "shutdown",
    "client.terminals",
];

fn env_for(mock: &MockServer, opted_in: bool) -> TestEnv {
    let env = crate::common::approval::env_for(mock);
    env.write_settings(&format!(
        "[permissions]\nallow = [\"bash\"]\n[acp]\nclient_terminals = {opted_in}\n"
    ));
    env
}

/// A backend that required `required`, with a turn started; its session and run.
async fn turn(env: &TestEnv, required: &[&str]) -> (Backend, String, String) {
    let mut backend = env.spawn();
    backend.initialize(required).await.unwrap().unwrap();
    let session_id = new_session(&mut backend).await;
    let run_id = start_turn(&mut backend, &session_id, "Run it").await;
    (backend, session_id, run_id)
}

async fn until_run(backend: &mut Backend, seen: &mut Vec<Event>) -> ClientTerminalRun {
    loop {
        if let Incoming::Event { event, .. } = next(backend).await {
            seen.push(event.clone());
            match event {
                Event::ClientTerminalRun(run) => return *run,
                Event::RunFinished(f) => panic!("no terminal call: {f:?}"),
                _ => {}
            }
        }
    }
}

fn exited(session: &str, run: &str, call: &str, output: &str) -> ClientTerminalResultParams {
    ClientTerminalResultParams {
        session_id: session.to_owned(),
        run_id: run.to_owned(),
        call_id: call.to_owned(),
        outcome: ClientTerminalOutcome::Exited,
        exit_code: Some(3),
        signal: None,
        output: output.to_owned(),
        truncated: true,
    }
}

async fn answer(
    backend: &mut Backend,
    params: &ClientTerminalResultParams,
) -> Result<ClientToolResultResult, ErrorCode> {
    backend
        .call::<methods::ClientTerminalResult>(params)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_bash_call_goes_to_the_client_terminal_and_its_answer_to_the_model() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "make test")]));
    mock.enqueue(Reply::stream().text(["It failed."]));
    let env = env_for(&mock, true);
    let mut backend = env.spawn();
    let result = backend.initialize(&REQUIRED).await.unwrap().unwrap();
    assert_eq!(result.capabilities.last().unwrap(), "client.terminals");
    let descriptor = result.extensions.unwrap().client_terminals.unwrap();
    assert_eq!(
        (descriptor.schema_version, descriptor.output_bytes),
        (1, 32_768)
    );
    shutdown_clean(&mut backend).await;

    let (mut backend, session, run) = turn(&env, &REQUIRED).await;
    let mut seen = Vec::new();
    let order = until_run(&mut backend, &mut seen).await;
    assert_eq!(order.command, "make test");
    assert_eq!(order.call_id, "b1");
    assert_eq!(order.timeout_ms, 120_000);
    assert_eq!(order.output_bytes, 32_768);
    assert_eq!(std::path::Path::new(&order.cwd), env.cwd());
    // Refusals first: another call, output over the bound, a signal off the grammar.
    let other = exited(&session, &run, "b2", "x");
    assert_eq!(answer(&mut backend, &other).await, Err(ErrorCode::StaleRun));
    let long = exited(&session, &run, "b1", &"x".repeat(32_769));
    assert_eq!(
        answer(&mut backend, &long).await,
        Err(ErrorCode::InvalidParams)
    );
    let mut odd = exited(&session, &run, "b1", "x");
    odd.signal = Some("KILL ME".into());
    assert_eq!(
        answer(&mut backend, &odd).await,
        Err(ErrorCode::InvalidParams)
    );
    let done = exited(&session, &run, "b1", "2 tests failed\n");
    assert_eq!(
        answer(&mut backend, &done).await,
        Ok(ClientToolResultResult { recorded: true })
    );
    assert_eq!(answer(&mut backend, &done).await, Err(ErrorCode::StaleRun));
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(
        told[0].starts_with("2 tests failed\n[exit code 3; ran in the client's terminal]"),
        "{told:?}"
    );
    assert!(told[0].contains("earlier output was dropped"), "{told:?}");
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("none (the client's terminal)"), "{log}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_reading_command_in_the_client_terminal_waits_for_the_reads_before_it() {
    // `ls` only reads, but a command in the client's terminal runs outside the call
    // threads: it starts once the read before it has ended and been told so.
    let mock = MockServer::start().await;
    let read = serde_json::json!({"path": "notes.txt"}).to_string();
    let ls = serde_json::json!({"command": "ls"}).to_string();
    mock.enqueue(
        Reply::stream()
            .tool_call("r1", "read", [read.as_str()])
            .tool_call("b1", "bash", [ls.as_str()]),
    );
    mock.enqueue(Reply::stream().text(["Listed."]));
    let env = env_for(&mock, true);
    std::fs::write(env.cwd().join("notes.txt"), "a note\n").unwrap();
    let (mut backend, session, run) = turn(&env, &REQUIRED).await;
    let mut seen = Vec::new();
    until_run(&mut backend, &mut seen).await;
    // Where the activity labelled `label` started, and where it ended if it did.
    let span = |label: &str| {
        let started = seen.iter().position(|e| {
            matches!(e, Event::Activity(a)
                if a.kind == ActivityKind::Tool && a.state == ActivityState::Started
                    && a.summary == label)
        });
        let id = started.and_then(|at| match &seen[at] {
            Event::Activity(a) => Some(a.activity_id.clone()),
            _ => None,
        });
        let ended = seen.iter().position(|e| {
            matches!(e, Event::Activity(a)
                if Some(&a.activity_id) == id.as_ref() && a.state != ActivityState::Started)
        });
        (started, ended)
    };
    let (read_started, read_ended) = span("read notes.txt");
    let (command_started, _) = span("bash ls");
    assert!(
        read_started.is_some() && command_started.is_some(),
        "{seen:?}"
    );
    assert!(
        read_ended.is_some_and(|ended| Some(ended) < command_started),
        "{seen:?}"
    );
    let done = exited(&session, &run, "b1", "notes.txt\n");
    assert!(answer(&mut backend, &done).await.is_ok());
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_the_setting_or_the_extension_bash_runs_here() {
    let mock = MockServer::start().await;
    for _ in 0..2 {
        mock.enqueue(calls("bash", &[bash("b1", "echo here")]));
        mock.enqueue(Reply::stream().text(["Ran."]));
    }
    // Negotiated, not opted in.
    let env = env_for(&mock, false);
    let (mut backend, _, _) = turn(&env, &REQUIRED).await;
    let mut seen = Vec::new();
    assert_eq!(
        until_finished(&mut backend, &mut seen).await.outcome,
        RunOutcome::Completed
    );
    assert!(
        !seen
            .iter()
            .any(|e| matches!(e, Event::ClientTerminalRun(_)))
    );
    shutdown_clean(&mut backend).await;
    // Opted in, not negotiated: and its result method is not there.
    let env = env_for(&mock, true);
    let (mut backend, session, run) = turn(&env, &REQUIRED[..4]).await;
    let mut seen = Vec::new();
    assert_eq!(
        until_finished(&mut backend, &mut seen).await.outcome,
        RunOutcome::Completed
    );
    let stray = exited(&session, &run, "b1", "x");
    assert_eq!(
        answer(&mut backend, &stray).await,
        Err(ErrorCode::UnsupportedCapability)
    );
    for request in &mock.requests()[1..] {
        let told = tool_outputs(&request.body);
        assert!(
            told.iter().all(|t| t.starts_with("here\n[exit code 0]")),
            "{told:?}"
        );
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn cancelling_the_run_withdraws_the_terminal_call() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "sleep 100")]));
    let env = env_for(&mock, true);
    let (mut backend, session, run) = turn(&env, &REQUIRED).await;
    let mut seen = Vec::new();
    until_run(&mut backend, &mut seen).await;
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id: run.clone(),
    };
    backend
        .call::<methods::TurnCancel>(&cancel)
        .await
        .unwrap()
        .unwrap();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    assert!(
        seen.iter()
            .any(|e| matches!(e, Event::ClientTerminalCancel(c)
        if c.call_id == "b1" && c.reason == ClientToolCancelReason::Cancelled))
    );
    let late = exited(&session, &run, "b1", "x");
    assert_eq!(answer(&mut backend, &late).await, Err(ErrorCode::StaleRun));
    shutdown_clean(&mut backend).await;
}
