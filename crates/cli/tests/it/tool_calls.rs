//! The tool-call lifecycle through the real binary: recovery after a killed backend,
//! replay-safe re-runs, pending approvals denied at recovery, paths outside the
//! workspace, and commands moved to the background with their completion notices.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::messages::{
    ActivityKind, ActivityState, ApprovalAnswerParams, EmptyParams, Event, HistoryPageParams,
    HistoryPageResult, RunOutcome,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
}

const CAPABILITIES: [&str; 7] = [
    "session.create",
    "session.open",
    "turn.start",
    "turn.cancel",
    "approval.answer",
    "history.page",
    "shutdown",
];

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(&CAPABILITIES).await.unwrap().unwrap();
    backend
}

async fn create(backend: &mut Backend) -> String {
    backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id
}

/// The session's log records, parsed.
fn records(env: &TestEnv, session: &str) -> Vec<Value> {
    std::fs::read_to_string(log_path(env, session))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn results(records: &[Value]) -> Vec<&Value> {
    records
        .iter()
        .filter(|r| r["kind"] == "tool_result")
        .collect()
}

async fn history(backend: &mut Backend, session: &str, revision: &str) -> HistoryPageResult {
    let params = HistoryPageParams {
        session_id: session.to_owned(),
        revision: revision.to_owned(),
        cursor: None,
    };
    backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap()
}

pub(crate) async fn wait_for_file(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + WAIT;
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Waits (bounded) until process `pid` has ended (gone, or a zombie waiting for its
/// parent), failing with `what` otherwise. The process is not the test's child, so it
/// is watched through a pidfd, which becomes readable when it ends.
pub(crate) async fn wait_until_gone(pid: &str, what: &str) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let pid = Pid::from_raw(pid.parse().unwrap()).unwrap();
    let what = what.to_owned();
    let ended = tokio::task::spawn_blocking(move || {
        let pidfd = match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(pidfd) => pidfd,
            // Gone (and reaped) already.
            Err(rustix::io::Errno::SRCH) => return true,
            Err(e) => panic!("cannot watch process {pid:?}: {e}"),
        };
        let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
        let timeout = Timespec::try_from(WAIT).unwrap();
        loop {
            match poll(&mut fds, Some(&timeout)) {
                Ok(ready) => return ready > 0,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => panic!("cannot wait for process {pid:?}: {e}"),
            }
        }
    })
    .await
    .unwrap();
    assert!(ended, "{what}");
}

#[tokio::test]
async fn what_a_finished_command_left_running_dies_while_the_backend_lives() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "c1",
        "bash",
        ["{\"command\":\"sleep 30 & echo $! > left.pid; echo done\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    let mut backend = ready(&env).await;
    session_with_turn(&mut backend, "Go").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    let pid = std::fs::read_to_string(env.cwd().join("left.pid")).unwrap();
    // The backend still runs: the command's spawn server killed what its leader left
    // in its group when it reaped the leader.
    wait_until_gone(pid.trim(), "the command's background sleep outlived it").await;
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_command_running_when_the_backend_dies_settles_unknown_and_never_runs_again() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "c1",
        "bash",
        ["{\"command\":\"echo ran >> count.txt; touch started; sleep 5\"}"],
    ));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    let mut backend = ready(&env).await;
    let session = create(&mut backend).await;
    start_turn(&mut backend, &session, "Run it").await;
    wait_for_file(&env.cwd().join("started")).await;
    backend.kill().await;

    // The claim was durable before the command started; nothing settled it.
    let crashed = records(&env, &session);
    assert!(crashed.iter().any(|r| r["kind"] == "tool_call_state"
        && r["call_id"] == "c1"
        && r["state"] == "running"
        && r["protection"] == "allowed automatically"));
    assert!(results(&crashed).is_empty());

    mock.enqueue(Reply::stream().text(["Noted."]));
    let mut backend = ready(&env).await;
    open_session(&mut backend, &session).await.unwrap();
    assert_eq!(records(&env, &session), crashed, "opening appends nothing");
    start_turn(&mut backend, &session, "What happened?").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);

    let after = records(&env, &session);
    let settled = results(&after);
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0]["call_id"], "c1");
    assert_eq!(settled[0]["outcome"], "indeterminate");
    // Never run again: the command's one effect happened once.
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("count.txt")).unwrap(),
        "ran\n"
    );
    let body = mock.requests()[1].body.to_string();
    assert!(body.contains("its outcome is unknown"), "{body}");
    let page = history(
        &mut backend,
        &session,
        finished.revision.as_deref().unwrap(),
    )
    .await;
    assert!(
        page.entries
            .iter()
            .any(|e| e.text == "bash: outcome unknown. interrupted; outcome unknown"),
        "{:?}",
        page.entries
    );
    shutdown_clean(&mut backend).await;
}

/// A backend whose turn runs the allowed call `c1`: `touch started; sleep 30; touch
/// finished`, once it has touched `started`.
async fn slow_command_running(mock: &MockServer) -> (TestEnv, Backend, String) {
    mock.enqueue(Reply::stream().tool_call(
        "c1",
        "bash",
        ["{\"command\":\"touch started; sleep 30; touch finished\"}"],
    ));
    let env = env_for(mock);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    let mut backend = ready(&env).await;
    let session = create(&mut backend).await;
    start_turn(&mut backend, &session, "Run it").await;
    wait_for_file(&env.cwd().join("started")).await;
    (env, backend, session)
}

#[tokio::test]
async fn a_command_dies_with_a_backend_killed_by_sigkill() {
    let mock = MockServer::start().await;
    let (env, mut backend, _session) = slow_command_running(&mock).await;
    assert!(
        !crate::mcp::processes_in(&env.cwd()).is_empty(),
        "the command runs in the workspace"
    );
    backend.kill().await;

    // The launcher saw the backend go and ended the command's whole group: with no
    // process of it left, `finished` can never be written.
    crate::mcp::assert_no_processes_in(&env.cwd()).await;
    assert!(!env.cwd().join("finished").exists());
}

#[tokio::test]
async fn sigterm_to_the_backend_cancels_the_run_and_ends_its_command() {
    let mock = MockServer::start().await;
    let (env, mut backend, session) = slow_command_running(&mock).await;
    let pid = backend.pid().unwrap().to_string();
    // Reaped only once the backend read who it was (a zombie's name still reads).
    let mut kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .spawn()
        .unwrap();

    // As after a cancel and a shutdown: the run ends cancelled, its terminal event
    // delivered, the call settled, and the backend exits on its own.
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    let status = backend.wait_within(WAIT).await.expect("the backend exits");
    assert!(status.success(), "{status:?}");
    // Its last words name the signal and who sent it.
    assert_eq!(
        stderr_text(&mut backend).await,
        format!(
            "magi-code: ended on SIGTERM from process {} (kill)\n",
            kill.id()
        )
    );
    assert!(kill.wait().unwrap().success());
    let settled = records(&env, &session);
    assert!(
        results(&settled)
            .iter()
            .any(|r| r["call_id"] == "c1" && r["outcome"] == "cancelled"),
        "{settled:?}"
    );
    crate::mcp::assert_no_processes_in(&env.cwd()).await;
    assert!(!env.cwd().join("finished").exists());
}

#[tokio::test]
async fn a_backend_a_stop_signal_ended_is_named_by_the_client_that_finds_it_gone() {
    // An idle backend someone else sends SIGHUP: the client learns of it only when
    // its next request cannot be written, and can then say who ended it.
    let env = TestEnv::new();
    let mut backend = env.spawn();
    backend.initialize(&["shutdown"]).await.unwrap().unwrap();
    let pid = backend.pid().unwrap().to_string();
    let mut kill = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .spawn()
        .unwrap();
    let ended = backend.end_within(WAIT).await;
    assert!(kill.wait().unwrap().success());
    assert!(
        backend.request_raw("shutdown", json!({})).await.is_err(),
        "a request to a backend that ended"
    );
    assert_eq!(
        ended.describe(),
        format!(
            "the backend exited with status 0: magi-code: ended on SIGHUP from process {} (kill)",
            kill.id()
        )
    );
}

#[tokio::test]
async fn recovery_reruns_reads_and_denies_pending_approvals() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Continuing."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let id = "recovering-session";
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    let call = |call_id: &str, name: &str, arguments: Value| {
        record(
            id,
            "tool_call",
            json!({"turn_id": "t1", "call_id": call_id, "name": name, "summary": name,
                   "arguments": arguments.to_string()}),
        )
    };
    let crashed = [
        record(id, "session_meta", json!({"cwd": cwd})),
        record(id, "turn_started", json!({"turn_id": "t1"})),
        record(
            id,
            "user_input",
            json!({"turn_id": "t1", "message_id": "u1", "text": "Look"}),
        ),
        call("r1", "read", json!({"path": "notes.txt"})),
        call("w1", "write", json!({"path": "x.txt", "content": "x"})),
        record(
            id,
            "tool_call_state",
            json!({"turn_id": "t1", "call_id": "r1", "state": "running"}),
        ),
        record(
            id,
            "tool_call_state",
            json!({"turn_id": "t1", "call_id": "w1", "state": "awaiting_approval"}),
        ),
    ]
    .concat();
    write_log(&env, id, &crashed);
    let mut backend = ready(&env).await;
    open_session(&mut backend, id).await.unwrap();
    start_turn(&mut backend, id, "Go on").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let after = records(&env, id);
    let settled = results(&after);
    assert_eq!(settled.len(), 2);
    // The read was run again and answered for real.
    assert_eq!(settled[0]["call_id"], "r1");
    assert_eq!(settled[0]["outcome"], "completed");
    assert!(settled[0]["content"].as_str().unwrap().contains("beta"));
    assert_eq!(settled[0]["facts"]["tool"], "read");
    // The write that awaited an answer was denied, and never ran.
    assert_eq!(settled[1]["call_id"], "w1");
    assert_eq!(settled[1]["outcome"], "denied");
    assert_eq!(settled[1]["protection"], "denied; approval unavailable");
    assert!(!env.cwd().join("x.txt").exists());
    let body = mock.requests()[0].body.to_string();
    assert!(body.contains("alpha"), "{body}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_asked_about_even_for_reads() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let outside = env.root().join("outside.txt");
    std::fs::write(&outside, "secret plans\n").unwrap();
    std::os::unix::fs::symlink(env.root(), env.cwd().join("up")).unwrap();
    mock.enqueue(Reply::stream().tool_call(
        "r1",
        "read",
        [json!({"path": outside.display().to_string()}).to_string()],
    ));
    mock.enqueue(Reply::stream().tool_call(
        "r2",
        "read",
        [json!({"path": "up/outside.txt"}).to_string()],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let mut backend = ready(&env).await;
    let session = create(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Read it").await;
    let mut seen = Vec::new();
    // Both reads ask: an absolute path elsewhere, and a link that points out.
    for allow in [false, true] {
        let request = loop {
            match next(&mut backend).await {
                Incoming::Event {
                    event: Event::ApprovalRequested(request),
                    ..
                } => break request,
                Incoming::Event {
                    event: Event::RunFinished(f),
                    ..
                } => panic!("no approval was asked: {f:?}"),
                Incoming::Event { event, .. } => seen.push(event),
                _ => {}
            }
        };
        let params = ApprovalAnswerParams {
            session_id: session.clone(),
            run_id: run.clone(),
            approval_id: request.approval_id,
            allow,
            scope: None,
            message: None,
            unavailable: None,
        };
        backend
            .call::<methods::ApprovalAnswer>(&params)
            .await
            .unwrap()
            .unwrap();
    }
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let settled = records(&env, &session);
    let settled = results(&settled);
    assert_eq!(settled[0]["outcome"], "denied");
    assert_eq!(settled[0]["protection"], "denied by user");
    assert_eq!(settled[1]["outcome"], "completed");
    assert_eq!(settled[1]["protection"], "allowed by user");
    let second = mock.requests()[1].body.to_string();
    assert!(!second.contains("secret plans"), "{second}");
    let third = mock.requests()[2].body.to_string();
    assert!(third.contains("secret plans"), "{third}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_long_command_moves_to_the_background_and_its_end_is_told_once() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "b1",
        "bash",
        ["{\"command\":\"echo begun; sleep 30\",\"background_after_ms\":300}"],
    ));
    mock.enqueue(Reply::stream().tool_call("k1", "bash_kill", ["{\"job\":\"job-1\"}"]));
    mock.enqueue(Reply::stream().text(["Stopped it."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    let mut backend = ready(&env).await;
    let session = create(&mut backend).await;
    start_turn(&mut backend, &session, "Run it").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let ends: Vec<(ActivityState, String)> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Activity(a) if a.state != ActivityState::Started => {
                Some((a.state, a.summary.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        vec![
            (
                ActivityState::Completed,
                "moved to the background as job-1".into()
            ),
            (ActivityState::Completed, "job-1 killed".into()),
        ]
    );
    let requests = mock.requests();
    let promoted = requests[1].body.to_string();
    assert!(promoted.contains("begun"), "{promoted}");
    assert!(
        promoted.contains("moved to the background as job-1"),
        "{promoted}"
    );
    // The job's end reaches the model once, as a notice before the next request.
    let noticed = requests[2].body.to_string();
    assert_eq!(
        noticed
            .matches("[background job job-1 ended: killed]")
            .count(),
        1,
        "{noticed}"
    );
    let log = records(&env, &session);
    let notice = log
        .iter()
        .find(|r| r["kind"] == "async_bash_event")
        .unwrap();
    assert_eq!(notice["job_id"], "job-1");
    assert_eq!(notice["state"], "killed");
    let promoted_result = results(&log)[0];
    assert_eq!(promoted_result["facts"]["job_id"], "job-1");
    assert_eq!(promoted_result["facts"]["timeout_ms"], Value::Null);
    shutdown_clean(&mut backend).await;
}

/// Where in `seen` each tool activity started and ended, in the order they started,
/// with the label it started with.
fn activity_spans(seen: &[Event]) -> Vec<(String, usize, usize)> {
    let mut spans: Vec<(String, String, usize, usize)> = Vec::new();
    for (at, event) in seen.iter().enumerate() {
        let Event::Activity(a) = event else { continue };
        if a.kind != ActivityKind::Tool {
            continue;
        }
        if a.state == ActivityState::Started {
            spans.push((a.activity_id.clone(), a.summary.clone(), at, usize::MAX));
        } else if let Some(span) = spans.iter_mut().find(|s| s.0 == a.activity_id) {
            span.3 = at;
        }
    }
    spans
        .into_iter()
        .map(|(_, label, started, ended)| (label, started, ended))
        .collect()
}

#[tokio::test]
async fn a_call_that_waits_for_an_earlier_one_starts_only_once_that_one_ended() {
    let mock = MockServer::start().await;
    // Two reads (side by side), then two commands that write: each may change
    // something, so it waits for every call before it.
    let read = json!({"path": "notes.txt"}).to_string();
    let command = |line: &str| json!({ "command": line }).to_string();
    mock.enqueue(
        Reply::stream()
            .tool_call("r1", "read", [read.as_str()])
            .tool_call("r2", "read", [read.as_str()])
            .tool_call("c1", "bash", [command("echo one > one.txt").as_str()])
            .tool_call("c2", "bash", [command("echo two > two.txt").as_str()]),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    std::fs::write(env.cwd().join("notes.txt"), "a note\n").unwrap();
    let mut backend = ready(&env).await;
    session_with_turn(&mut backend, "Go").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    let spans = activity_spans(&seen);
    let labels: Vec<&str> = spans.iter().map(|(label, ..)| label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "read notes.txt",
            "read notes.txt",
            "bash echo one > one.txt",
            "bash echo two > two.txt"
        ]
    );
    let [first_read, second_read, command, last] = [0, 1, 2, 3].map(|n| (spans[n].1, spans[n].2));
    // Reads run side by side: the second starts before the first is told ended.
    assert!(second_read.0 < first_read.1, "{spans:?}");
    // A command is not shown started while any call before it still runs.
    assert!(first_read.1.max(second_read.1) < command.0, "{spans:?}");
    assert!(command.1 < last.0, "{spans:?}");
    assert!(last.1 < usize::MAX, "{spans:?}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn commands_that_only_read_run_beside_the_reads_and_a_write_still_waits() {
    let mock = MockServer::start().await;
    // A read, two commands known to only read, a command that writes, then a command
    // that reads what it wrote.
    let command = |line: &str| json!({ "command": line }).to_string();
    let read = json!({"path": "notes.txt"}).to_string();
    mock.enqueue(
        Reply::stream()
            .tool_call("r1", "read", [read.as_str()])
            .tool_call("c1", "bash", [command("cat notes.txt | wc -l").as_str()])
            .tool_call("c2", "bash", [command("ls").as_str()])
            .tool_call("c3", "bash", [command("printf made > made.txt").as_str()])
            .tool_call("c4", "bash", [command("cat made.txt").as_str()]),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    std::fs::write(env.cwd().join("notes.txt"), "a note\n").unwrap();
    let mut backend = ready(&env).await;
    let session = session_with_turn(&mut backend, "Go").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    let spans = activity_spans(&seen);
    let [read, count, list, write, reread] = [0, 1, 2, 3, 4].map(|n| (spans[n].1, spans[n].2));
    // The two reading commands start beside the read, before it is told ended.
    assert!(count.0 < read.1 && list.0 < read.1, "{spans:?}");
    // The write starts only once every call before it ended, and the call after it
    // only once it ended: it reads what was written.
    assert!(read.1.max(count.1).max(list.1) < write.0, "{spans:?}");
    assert!(write.1 < reread.0, "{spans:?}");
    let log = records(&env, &session);
    let reread = results(&log)
        .into_iter()
        .find(|r| r["call_id"] == "c4")
        .unwrap();
    assert_eq!(reread["outcome"], "completed", "{reread}");
    assert!(
        reread["content"].as_str().unwrap().contains("made"),
        "{reread}"
    );
    shutdown_clean(&mut backend).await;
}
