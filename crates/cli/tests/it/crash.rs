//! Crashes placed exactly between two durable steps of the tool-call service: a debug
//! backend kills itself with `SIGKILL` right after the sync that made the chosen claim
//! or result durable (`MAGI_FAULT`), so no timing is guessed. A new backend then opens
//! the session and runs the next turn: every result that was synced is in the history,
//! no command runs twice, and the calls left unsettled settle `indeterminate`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::os::unix::process::ExitStatusExt;

use crate::common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::messages::{ActivityState, Event, RunOutcome};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const CAPABILITIES: [&str; 4] = ["session.create", "session.open", "turn.start", "shutdown"];

/// Three `bash` calls in one response; each appends its own line to `count.txt`.
const CALLS: [&str; 3] = ["c1", "c2", "c3"];

/// The session's log records, parsed: a torn line would fail here.
fn records(env: &TestEnv, session: &str) -> Vec<Value> {
    std::fs::read_to_string(log_path(env, session))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The call IDs of the records of `kind`, in log order.
fn calls_of(records: &[Value], kind: &str) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["kind"] == kind)
        .map(|r| r["call_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The lines the commands appended: one per command that ran.
fn ran(env: &TestEnv) -> String {
    std::fs::read_to_string(env.cwd().join("count.txt")).unwrap_or_default()
}

/// Runs the three calls in a backend armed to crash at `fault`, and returns the
/// environment (without the crash point), the session and the log the crash left.
async fn crash_at(mock: &MockServer, fault: &str) -> (TestEnv, String, Vec<Value>) {
    let mut reply = Reply::stream();
    for (n, call) in CALLS.iter().enumerate() {
        let command = format!("echo ran-{} >> count.txt; echo done-{}", n + 1, n + 1);
        let arguments = json!({ "command": command }).to_string();
        reply = reply.tool_call(*call, "bash", [arguments]);
    }
    mock.enqueue(reply);
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_FAULT", fault);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    let mut backend = env.spawn();
    backend.initialize(&CAPABILITIES).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "Run them").await;
    let told = until_killed(&mut backend).await;
    let crashed = records(&env, &session);
    // Nothing told is lost: every call whose end the client saw has a durable result.
    let durable = calls_of(&crashed, "tool_result");
    for (activity_id, call) in told {
        assert!(
            durable.contains(&call),
            "{activity_id} ({call}) was told ended without a durable result"
        );
    }
    (env.without("MAGI_FAULT"), session, crashed)
}

/// The ends of calls the backend told before it was killed, as (activity, call),
/// matched to calls by the order their activities started.
async fn until_killed(backend: &mut Backend) -> Vec<(String, String)> {
    let mut started = Vec::new();
    let mut ended = Vec::new();
    while let Some(incoming) = backend.next_incoming_within(WAIT).await {
        let Incoming::Event { event, .. } = incoming else {
            continue;
        };
        match event {
            Event::Activity(activity) if activity.state == ActivityState::Started => {
                started.push(activity.activity_id);
            }
            Event::Activity(activity) => ended.push(activity.activity_id),
            Event::RunFinished(finished) => panic!("the run finished: {finished:?}"),
            _ => {}
        }
    }
    let status = exit_status(backend).await;
    assert_eq!(
        status.signal(),
        Some(9),
        "killed at its crash point: {status:?}"
    );
    ended
        .into_iter()
        .map(|activity| {
            let n = started.iter().position(|a| *a == activity).unwrap();
            (activity, CALLS[n].to_owned())
        })
        .collect()
}

/// Opens the session in a new backend and runs the next turn; returns the log after it
/// and the tool outputs the model was given.
async fn recover(mock: &MockServer, env: &TestEnv, session: &str) -> (Vec<Value>, Vec<String>) {
    mock.enqueue(Reply::stream().text(["Noted."]));
    let mut backend = env.spawn();
    backend.initialize(&CAPABILITIES).await.unwrap().unwrap();
    open_session(&mut backend, session).await.unwrap();
    start_turn(&mut backend, session, "What happened?").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    let requests = mock.requests();
    let outputs = tool_outputs(&requests.last().unwrap().body);
    (records(env, session), outputs)
}

/// The outcome each call settled with, in call order.
fn outcomes(records: &[Value]) -> Vec<(String, String)> {
    let mut settled: Vec<(String, String)> = records
        .iter()
        .filter(|r| r["kind"] == "tool_result")
        .map(|r| {
            (
                r["call_id"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    settled.sort();
    settled
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(call, outcome)| ((*call).to_owned(), (*outcome).to_owned()))
        .collect()
}

#[tokio::test]
async fn a_crash_between_a_claim_and_its_result_runs_nothing_twice() {
    let mock = MockServer::start().await;
    // The second claim was synced together with the first result; the second command
    // never started.
    let (env, session, crashed) = crash_at(&mock, "after_claim:2").await;
    assert_eq!(calls_of(&crashed, "tool_call"), CALLS);
    assert_eq!(calls_of(&crashed, "tool_call_state"), ["c1", "c2"]);
    assert_eq!(calls_of(&crashed, "tool_result"), ["c1"]);
    assert_eq!(ran(&env), "ran-1\n");

    let (after, outputs) = recover(&mock, &env, &session).await;
    assert_eq!(ran(&env), "ran-1\n", "nothing ran again");
    assert_eq!(
        outcomes(&after),
        pairs(&[
            ("c1", "completed"),
            ("c2", "indeterminate"),
            ("c3", "indeterminate")
        ])
    );
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert!(outputs[0].starts_with("done-1\n"), "{outputs:?}");
    assert!(
        outputs[1..]
            .iter()
            .all(|o| o.contains("its outcome is unknown"))
    );
}

#[tokio::test]
async fn a_crash_between_two_results_keeps_both_and_runs_nothing_twice() {
    let mock = MockServer::start().await;
    // The second result was synced together with the third claim.
    let (env, session, crashed) = crash_at(&mock, "after_result:2").await;
    assert_eq!(calls_of(&crashed, "tool_call_state"), CALLS);
    assert_eq!(calls_of(&crashed, "tool_result"), ["c1", "c2"]);
    assert_eq!(ran(&env), "ran-1\nran-2\n");

    let (after, outputs) = recover(&mock, &env, &session).await;
    assert_eq!(ran(&env), "ran-1\nran-2\n", "nothing ran again");
    assert_eq!(
        outcomes(&after),
        pairs(&[
            ("c1", "completed"),
            ("c2", "completed"),
            ("c3", "indeterminate")
        ])
    );
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert!(outputs[0].starts_with("done-1\n"), "{outputs:?}");
    assert!(outputs[1].starts_with("done-2\n"), "{outputs:?}");
    assert!(outputs[2].contains("its outcome is unknown"), "{outputs:?}");
}
