//! Startup, shutdown, EOF and transport failure through the real binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::*;
use magi_client::Incoming;
use magi_protocol::messages::{
    EmptyParams, InitializeParams, Readiness, ReadinessPhase, RuntimeState,
};
use magi_protocol::methods;
use serde_json::json;
use tokio::io::AsyncWriteExt;

/// Makes the global settings file a FIFO: startup then blocks reading it until the
/// test opens it for writing, which lets a test observe and cancel a running startup.
fn blocking_settings(env: &TestEnv) -> PathBuf {
    std::fs::create_dir_all(env.mc_home()).unwrap();
    let fifo = env.mc_home().join("settings.toml");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    fifo
}

/// Unblocks startup by opening the FIFO for writing and writing `text`.
async fn release(fifo: &Path, text: &'static str) {
    let fifo = fifo.to_path_buf();
    tokio::task::spawn_blocking(move || std::fs::write(fifo, text))
        .await
        .unwrap()
        .unwrap();
}

/// Unblocks a startup that may have been cancelled before it opened the FIFO: opening
/// without blocking fails when no reader is there, and then nothing waits.
fn release_if_waiting(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

/// `initialize` params requiring these capabilities.
fn requiring(capabilities: &[&str]) -> InitializeParams {
    InitializeParams {
        required_capabilities: capabilities.iter().map(|&c| c.to_owned()).collect(),
        client_tools: None,
    }
}

/// Spawns a backend and admits an `initialize` whose startup blocks on the settings
/// FIFO; `status` confirms it is starting.
async fn start_blocked(
    env: &TestEnv,
) -> (
    magi_client::Backend,
    magi_client::PendingCall<methods::Initialize>,
) {
    let mut backend = env.spawn();
    let init = backend
        .send::<methods::Initialize>(&requiring(&[]))
        .await
        .unwrap();
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(status.state, RuntimeState::Starting);
    (backend, init)
}

#[tokio::test]
async fn status_answers_while_startup_runs_and_initialize_answers_later() {
    let env = TestEnv::new();
    let fifo = blocking_settings(&env);
    let mut backend = env.spawn();
    let init = backend
        .send::<methods::Initialize>(&requiring(&["status"]))
        .await
        .unwrap();
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(status.state, RuntimeState::Starting);
    assert_eq!(
        status.readiness,
        Readiness::Phase(ReadinessPhase::Initializing)
    );
    assert_eq!(
        (status.provider, status.model, status.context_id),
        (None, None, None)
    );
    let other = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap();
    assert_eq!(other, Err(magi_protocol::ErrorCode::NotInitialized));
    let again = backend.initialize(&[]).await.unwrap();
    assert_eq!(again, Err(magi_protocol::ErrorCode::AlreadyInitialized));
    release(&fifo, "").await;
    let result = init.result().await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(
        backend.status().await.unwrap().unwrap().state,
        RuntimeState::Idle
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn shutdown_during_startup_cancels_it_and_discards_later_input() {
    let env = TestEnv::new();
    let fifo = blocking_settings(&env);
    let (mut backend, init) = start_blocked(&env).await;
    let mut bytes = frame("stop", "shutdown", json!({}));
    bytes.extend_from_slice(&frame("late", "status", json!({})));
    bytes.extend_from_slice(b"garbage\n");
    backend.send_raw(&bytes).await.unwrap();
    let stopping = next_response(&mut backend).await;
    assert_eq!(stopping.id.as_deref(), Some("stop"));
    assert_eq!(stopping.outcome, Ok(json!({"state": "stopping"})));
    let cancelled = init.result().await.unwrap();
    assert_eq!(cancelled, Err(magi_protocol::ErrorCode::StartupCancelled));
    // Input after shutdown is read and discarded, never answered (the child may
    // already have exited, so the write itself may fail).
    let _ = backend.send_raw(&frame("later", "status", json!({}))).await;
    release_if_waiting(&fifo);
    expect_end_of_output(&mut backend).await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
    assert_eq!(stderr_text(&mut backend).await, "");
}

#[tokio::test]
async fn eof_during_startup_cancels_it() {
    let env = TestEnv::new();
    let fifo = blocking_settings(&env);
    let (mut backend, init) = start_blocked(&env).await;
    backend.close_stdin();
    let cancelled = init.result().await.unwrap();
    assert_eq!(cancelled, Err(magi_protocol::ErrorCode::StartupCancelled));
    release_if_waiting(&fifo);
    expect_end_of_output(&mut backend).await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
}

#[tokio::test]
async fn eof_mid_frame_is_incomplete_and_never_executed() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    let mut partial = frame("never", "shutdown", json!({}));
    partial.pop();
    backend.send_raw(&partial).await.unwrap();
    backend.close_stdin();
    expect_error(&mut backend, None, "incomplete_frame").await;
    expect_end_of_output(&mut backend).await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
    assert_eq!(stderr_text(&mut backend).await, "");
}

#[tokio::test]
async fn plain_eof_exits_zero_without_output() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    backend.close_stdin();
    expect_end_of_output(&mut backend).await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
}

#[tokio::test]
async fn shutdown_answers_once_and_ignores_the_rest_of_its_batch() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    let mut bytes = frame("bye", "shutdown", json!({}));
    bytes.extend_from_slice(&frame("after", "status", json!({})));
    bytes.extend_from_slice(&frame("bye2", "shutdown", json!({})));
    backend.send_raw(&bytes).await.unwrap();
    let response = next_response(&mut backend).await;
    assert_eq!(response.id.as_deref(), Some("bye"));
    expect_end_of_output(&mut backend).await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
}

/// Spawns the binary with piped stdio outside the client library, for clients that
/// misbehave in ways the library never would.
fn spawn_raw(env: &TestEnv) -> tokio::process::Child {
    tokio::process::Command::new(bin())
        .args(["serve", "--stdio"])
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "m")
        .current_dir(env.cwd())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn exit_and_stderr(mut child: tokio::process::Child) -> (Option<i32>, String) {
    let output = tokio::time::timeout(WAIT, async {
        let status = child.wait().await.unwrap();
        let mut stderr = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
            .await
            .unwrap();
        (status.code(), stderr)
    })
    .await;
    output.expect("the backend exited within the wait instead of hanging")
}

/// `status` requests (before initialization) whose answers fill a 64 KiB pipe and
/// leave about `queued` frames waiting: below the output queue bound.
fn overfilling_status_requests(queued: usize) -> Vec<u8> {
    let mut requests = Vec::new();
    let mut answers = 0;
    let mut seq = 1;
    while answers < 65_536 + queued * answer_len("r00000", seq) {
        let id = format!("r{seq:05}");
        answers += answer_len(&id, seq);
        requests.extend_from_slice(&frame(&id, "status", json!({})));
        seq += 1;
    }
    requests
}

/// The length of the `not_initialized` answer to `status` request `id` at `seq`.
fn answer_len(id: &str, seq: u64) -> usize {
    let instance = "00000000-0000-0000-0000-000000000000";
    format!(
        r#"{{"protocol":"magi-code.local-agent","version":1,"type":"response","instance_id":"{instance}","seq":{seq},"id":"{id}","error":{{"code":"not_initialized"}}}}"#
    )
    .len()
        + 1
}

#[tokio::test]
async fn a_client_that_stops_reading_gets_exit_1_at_the_deadline() {
    let env = TestEnv::new();
    let mut child = spawn_raw(&env);
    let _unread_stdout = child.stdout.take();
    // Enough answers to fill the pipe and leave about ten frames queued: below the
    // queue bound, so only the deadline can end the child.
    let requests = overfilling_status_requests(10);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&requests).await.unwrap();
    let (code, stderr) = exit_and_stderr(child).await;
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "");
    drop(stdin);
}

#[tokio::test]
async fn a_flood_past_the_output_queue_exits_1() {
    let env = TestEnv::new();
    let mut child = spawn_raw(&env);
    let _unread_stdout = child.stdout.take();
    let mut stdin = child.stdin.take().unwrap();
    let requests: Vec<u8> = (0..2_000)
        .flat_map(|n| frame(&format!("f{n}"), "status", json!({})))
        .collect();
    // The child may exit before taking all of it.
    let _ = stdin.write_all(&requests).await;
    let (code, stderr) = exit_and_stderr(child).await;
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "");
}

#[tokio::test]
async fn broken_output_exits_1() {
    let env = TestEnv::new();
    let mut child = spawn_raw(&env);
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(&frame("x", "status", json!({}))).await;
    let (code, stderr) = exit_and_stderr(child).await;
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "");
}

#[tokio::test]
async fn reading_continues_while_output_is_consumed_slowly() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    let mut pending = Vec::new();
    for _ in 0..24 {
        pending.push(
            backend
                .send::<methods::Status>(&EmptyParams {})
                .await
                .unwrap(),
        );
    }
    for request in pending {
        assert!(request.result().await.unwrap().is_ok());
    }
    assert!(matches!(
        backend
            .next_incoming_within(std::time::Duration::ZERO)
            .await,
        None | Some(Incoming::Event { .. })
    ));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn eof_with_output_that_cannot_drain_exits_1() {
    let env = TestEnv::new();
    let mut child = spawn_raw(&env);
    let _unread_stdout = child.stdout.take();
    let mut stdin = child.stdin.take().unwrap();
    // More answers than the pipe holds, well under the queue bound, then EOF.
    let requests = overfilling_status_requests(5);
    stdin.write_all(&requests).await.unwrap();
    drop(stdin);
    let (code, stderr) = exit_and_stderr(child).await;
    assert_eq!(code, Some(1));
    assert_eq!(stderr, "");
}

#[tokio::test]
async fn a_startup_stuck_in_the_filesystem_is_left_behind_after_the_cleanup_wait() {
    let env = TestEnv::new();
    let _fifo = blocking_settings(&env);
    let (mut backend, init) = start_blocked(&env).await;
    // Nobody ever writes the settings FIFO: the worker may stay blocked for good.
    backend.shutdown().await.unwrap().unwrap();
    let cancelled = init.result().await.unwrap();
    assert_eq!(cancelled, Err(magi_protocol::ErrorCode::StartupCancelled));
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
}
