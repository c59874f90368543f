//! `jobs.control` through the real binary: a client reads a background command's newest
//! output while it runs (bounded, redacted) and stops it; the extension is advertised
//! in its place, and without it, or before `initialize`, its methods change nothing.

use std::time::Duration;

use crate::common::approval::{bash, calls, env_for};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::limits::JOB_OUTPUT_LINES;
use magi_protocol::messages::{JobOutputResult, JobParams, JobsControlDescriptor, RunOutcome};
use magi_protocol::methods;
use magi_protocol::names::JOBS_CONTROL;
use magi_protocol::text::REDACTED;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

/// A credential the backend holds that does not look like one: only its value says it
/// is one.
const KEY: &str = "plainvalue-48151623";

/// What `job.output` says of `job`, until `done` holds of it (bounded).
async fn output_until(
    backend: &mut Backend,
    job: &str,
    what: &str,
    done: impl Fn(&JobOutputResult) -> bool,
) -> JobOutputResult {
    let params = JobParams {
        job_id: job.to_owned(),
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        // A registry held by an ending job answers `busy`: asked again.
        if let Ok(output) = backend.call::<methods::JobOutput>(&params).await.unwrap()
            && done(&output)
        {
            return output;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what} never came");
        // The job writes on its own clock: nothing tells when it has.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_client_reads_a_running_jobs_newest_output_and_stops_it() {
    let mock = MockServer::start().await;
    let command =
        format!("for i in $(seq 1 300); do echo \"line $i\"; done; echo \"key {KEY}\"; sleep 30");
    mock.enqueue(calls("async_bash", &[bash("j1", &command)]));
    mock.enqueue(Reply::stream().text(["Started it."]));
    let env = env_for(&mock).var("OPENAI_API_KEY", KEY);
    env.write_settings("[permissions]\nallow = [\"async_bash\"]\n");
    let mut backend = env.spawn();
    let result = backend
        .initialize(&["session.create", "turn.start", "shutdown", JOBS_CONTROL])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        result.capabilities.last().map(String::as_str),
        Some(JOBS_CONTROL)
    );
    let descriptor = result.extensions.and_then(|e| e.jobs_control);
    assert_eq!(descriptor, Some(JobsControlDescriptor::schema_1()));
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "start it").await;
    let mut events = Vec::new();
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");

    // The turn is over; the job runs on. Its newest lines, the credential redacted.
    let output = output_until(&mut backend, "job-1", "the job's last line", |o| {
        o.total_lines == 301
    })
    .await;
    assert_eq!(output.state, "running");
    assert_eq!(output.first_line, 301 - JOB_OUTPUT_LINES as u64);
    assert_eq!(output.output.lines().count(), JOB_OUTPUT_LINES);
    assert!(output.output.starts_with("line 102\n"), "{}", output.output);
    assert!(!output.output.contains(KEY), "{}", output.output);
    assert!(
        output.output.ends_with(&format!("key {REDACTED}")),
        "{}",
        output.output
    );

    let params = JobParams {
        job_id: "job-1".to_owned(),
    };
    let stopped = backend.call::<methods::JobStop>(&params).await.unwrap();
    assert_eq!(stopped.map(|s| s.state).as_deref(), Ok("stopping"));
    let output = output_until(&mut backend, "job-1", "the job's end", |o| {
        o.state == "killed"
    })
    .await;
    assert_eq!(output.total_lines, 301);
    // Stopping an ended job says how it ended.
    let again = backend.call::<methods::JobStop>(&params).await.unwrap();
    assert_eq!(again.map(|s| s.state).as_deref(), Ok("killed"));

    // No job of this backend, and params off the contract.
    let unknown = JobParams {
        job_id: "job-99".to_owned(),
    };
    let answer = backend.call::<methods::JobOutput>(&unknown).await.unwrap();
    assert_eq!(answer.err(), Some(ErrorCode::InvalidParams));
    for params in [
        json!({}),
        json!({"job_id": 1}),
        json!({"job_id": "job-1", "lines": 5}),
        json!({"job_id": "job 1"}),
    ] {
        for method in ["job.output", "job.stop"] {
            let answer = backend.request_raw(method, params.clone()).await.unwrap();
            assert_eq!(
                answer.outcome,
                Err(ErrorCode::InvalidParams),
                "{method} {params}"
            );
        }
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_the_extension_the_methods_are_refused_and_change_nothing() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("async_bash", &[bash("j1", "sleep 30")]));
    mock.enqueue(Reply::stream().text(["Started it."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"async_bash\"]\n");
    let mut backend = env.spawn();
    let params = json!({"job_id": "job-1"});
    // Before initialization.
    let answer = backend
        .request_raw("job.stop", params.clone())
        .await
        .unwrap();
    assert_eq!(answer.outcome, Err(ErrorCode::NotInitialized));
    let result = backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    assert!(!result.capabilities.iter().any(|c| c == JOBS_CONTROL));
    assert!(result.extensions.is_none());
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "start it").await;
    let mut events = Vec::new();
    until_finished(&mut backend, &mut events).await;
    for method in ["job.output", "job.stop"] {
        let answer = backend.request_raw(method, params.clone()).await.unwrap();
        assert_eq!(answer.outcome, Err(ErrorCode::UnsupportedCapability));
    }
    // The job the refused stop named runs on: only the backend's end stops it.
    let sleeping = crate::mcp::processes_in(&env.cwd());
    assert!(!sleeping.is_empty(), "the job was stopped");
    shutdown_clean(&mut backend).await;
}
