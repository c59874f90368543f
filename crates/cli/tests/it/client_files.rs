//! `client.files` through the real binary: negotiation, a read answered in parts, a
//! write handed over in parts and failed by the client, a part out of order, a read
//! withdrawn with its run, and refusals without the extension.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::limits::{CLIENT_FILE_PART_ENCODED_BYTES, READ_TOOL_BYTES};
use magi_protocol::messages::{
    ClientFileCancelReason, ClientFileRead, ClientFileResultParams, ClientFileResultResult,
    ClientFileWrite, ClientFilesDescriptor, Event, RunOutcome, TurnCancelParams,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const REQUIRED: [&str; 6] = [
    "session.create",
    "turn.start",
    "turn.cancel",
    "approval.answer",
    "shutdown",
    "client.files",
];

fn env_for(mock: &MockServer) -> TestEnv {
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    env.write_settings("[permissions]\nallow = [\"write\", \"edit\"]\n");
    std::fs::write(env.cwd().join("a.txt"), "on the disk\n").unwrap();
    env
}

/// A backend with `client.files`, in a session with a turn started: the backend, the
/// session and the run.
async fn turn(env: &TestEnv) -> (Backend, String, String) {
    let mut backend = env.spawn();
    let result = backend.initialize(&REQUIRED).await.unwrap().unwrap();
    assert_eq!(result.capabilities.len(), 17);
    assert_eq!(result.capabilities[16], "client.files");
    let extensions = result.extensions.unwrap();
    assert_eq!(
        extensions.client_files,
        Some(ClientFilesDescriptor::schema_1())
    );
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Go").await;
    (backend, session, run)
}

/// The events until `pick` takes one, each kept in `seen`.
async fn until<T>(
    backend: &mut Backend,
    seen: &mut Vec<Event>,
    mut pick: impl FnMut(&Event) -> Option<T>,
) -> T {
    loop {
        if let magi_client::Incoming::Event { event, .. } = next(backend).await {
            seen.push(event.clone());
            if let Some(found) = pick(&event) {
                return found;
            }
            if let Event::RunFinished(f) = event {
                panic!("the run ended first: {f:?}");
            }
        }
    }
}

fn read_of(event: &Event) -> Option<ClientFileRead> {
    match event {
        Event::ClientFileRead(read) => Some((**read).clone()),
        _ => None,
    }
}

async fn part(
    backend: &mut Backend,
    (session, run, file): (&str, &str, &str),
    part: u64,
    last_part: bool,
    content: &str,
    error: Option<&str>,
) -> Result<ClientFileResultResult, ErrorCode> {
    let params = ClientFileResultParams {
        session_id: session.to_owned(),
        run_id: run.to_owned(),
        file_id: file.to_owned(),
        part,
        last_part,
        content: content.to_owned(),
        truncated: false,
        error: error.map(str::to_owned),
    };
    backend
        .call::<methods::ClientFileResult>(&params)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_read_is_answered_in_parts_and_the_model_sees_the_clients_text() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("r1", "read", ["{\"path\":\"a.txt\"}"]));
    mock.enqueue(Reply::stream().text(["Read."]));
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut seen = Vec::new();
    let read = until(&mut backend, &mut seen, read_of).await;
    assert_eq!(read.call_id, "r1");
    let expected = env.cwd().canonicalize().unwrap().join("a.txt");
    assert_eq!(read.path, expected.display().to_string());
    assert_eq!(read.max_bytes, READ_TOOL_BYTES as u64);
    assert_eq!(read.timeout_ms, 30_000);
    let ids = (session.as_str(), run.as_str(), read.file_id.as_str());
    let recorded = Ok(ClientFileResultResult { recorded: true });
    assert_eq!(
        part(&mut backend, ids, 0, false, "in the ", None).await,
        recorded
    );
    assert_eq!(
        part(&mut backend, ids, 1, true, "buffer\n", None).await,
        recorded
    );
    // One answer per read.
    assert_eq!(
        part(&mut backend, ids, 2, true, "", None).await,
        Err(ErrorCode::StaleRun)
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let given = mock.requests()[1].body.to_string();
    assert!(given.contains("in the buffer"), "{given}");
    assert!(!given.contains("on the disk"), "{given}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_write_comes_in_parts_and_the_clients_failure_fails_the_call() {
    let mock = MockServer::start().await;
    let content: String = (0..4_000).map(|i| format!("line \"{i}\"\n")).collect();
    let write = json!({"path": "b.txt", "content": content}).to_string();
    mock.enqueue(Reply::stream().tool_call("w1", "write", [write.as_str()]));
    mock.enqueue(Reply::stream().text(["Could not."]));
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut seen = Vec::new();
    let mut parts: Vec<ClientFileWrite> = Vec::new();
    loop {
        let part = until(&mut backend, &mut seen, |e| match e {
            Event::ClientFileWrite(w) => Some((**w).clone()),
            _ => None,
        })
        .await;
        let last = part.last_part;
        parts.push(part);
        if last {
            break;
        }
    }
    assert!(parts.len() > 1, "{} parts", parts.len());
    for (n, part) in parts.iter().enumerate() {
        assert_eq!(part.part, n as u64);
        assert!(
            serde_json::to_string(&part.content).unwrap().len() <= CLIENT_FILE_PART_ENCODED_BYTES
        );
    }
    let sent: String = parts.iter().map(|p| p.content.as_str()).collect();
    assert_eq!(sent, content);
    let ids = (session.as_str(), run.as_str(), parts[0].file_id.as_str());
    let answer = part(
        &mut backend,
        ids,
        0,
        true,
        "",
        Some("the buffer is read-only"),
    )
    .await;
    assert_eq!(answer, Ok(ClientFileResultResult { recorded: true }));
    until_finished(&mut backend, &mut seen).await;
    let given = mock.requests()[1].body.to_string();
    assert!(
        given.contains("The editor could not write b.txt: the buffer is read-only."),
        "{given}"
    );
    assert!(!env.cwd().join("b.txt").exists());
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_part_out_of_order_fails_the_read_and_cancelling_withdraws_one() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("r1", "read", ["{\"path\":\"a.txt\"}"]));
    mock.enqueue(Reply::stream().tool_call("r2", "read", ["{\"path\":\"a.txt\"}"]));
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut seen = Vec::new();
    let read = until(&mut backend, &mut seen, read_of).await;
    let ids = (session.as_str(), run.as_str(), read.file_id.as_str());
    assert_eq!(
        part(&mut backend, ids, 1, true, "x", None).await,
        Err(ErrorCode::InvalidParams)
    );
    // The next round trip asks again; this time the run is cancelled while it waits.
    let again = until(&mut backend, &mut seen, read_of).await;
    assert_eq!(again.call_id, "r2");
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
    assert!(seen.iter().any(|e| matches!(e, Event::ClientFileCancel(c)
        if c.file_id == again.file_id && c.reason == ClientFileCancelReason::Cancelled)));
    let given = mock.requests()[1].body.to_string();
    assert!(given.contains("broke the client.files contract"), "{given}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_the_extension_the_disk_is_used_and_answers_are_refused() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("r1", "read", ["{\"path\":\"a.txt\"}"]));
    mock.enqueue(Reply::stream().text(["Read."]));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let required = &REQUIRED[..5];
    let result = backend.initialize(required).await.unwrap().unwrap();
    assert!(result.extensions.is_none());
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Go").await;
    let mut seen = Vec::new();
    until_finished(&mut backend, &mut seen).await;
    assert!(!seen.iter().any(|e| matches!(e, Event::ClientFileRead(_))));
    assert!(mock.requests()[1].body.to_string().contains("on the disk"));
    let ids = (session.as_str(), run.as_str(), "file-1");
    assert_eq!(
        part(&mut backend, ids, 0, true, "", None).await,
        Err(ErrorCode::UnsupportedCapability)
    );
    shutdown_clean(&mut backend).await;
}
