//! MCP servers through the real binary, against the in-repo mock server
//! (`magi-mock-mcp`): approval, initialization, tools reaching the model, calls
//! through a turn over stdio and streamable HTTP, and the failures a server can cause
//! (failing, hanging or babbling at startup, too many tools, dying mid-call, an
//! oversized result), each ending cleanly with no server process left behind. One
//! ignored test runs the reference server from the npm registry; `.ci/run` runs it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;
use magi_client::Incoming;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityState, ApprovalAnswerParams, ApprovalAnswerResult, Event, Readiness, RunOutcome,
    TurnCancelParams,
};
use magi_protocol::methods;
use magi_testkit::{McpMock, MockServer, Reply, everything_server, mock_mcp_server};
use serde_json::json;

/// The mock MCP server's binary, built if it is not up to date.
pub(crate) fn mock_binary() -> PathBuf {
    mock_mcp_server().unwrap_or_else(|why| panic!("the mock MCP server: {why}"))
}

/// A settings table defining the stdio server `name` as the mock run with `args`.
pub(crate) fn mock_server(name: &str, args: &[&str]) -> String {
    format!(
        "[mcp.servers.{name}]\ncommand = {:?}\nargs = {args:?}\n",
        mock_binary().display().to_string()
    )
}

/// Global settings with the mock as the server `mock`, plus `extra`.
pub(crate) fn mock_settings(extra: &str) -> String {
    format!("{}{extra}", mock_server("mock", &[]))
}

/// Global settings with the mock plus `extra`, and the mock approved.
fn approve_mock(env: &TestEnv, extra: &str) {
    env.write_settings(&mock_settings(extra));
    mcp_command(env, &["approve", "mock"]);
}

pub(crate) fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("PATH", &std::env::var("PATH").unwrap())
}

/// Runs `magi-code mcp <args>` in the environment; returns its stdout.
pub(crate) fn mcp_command(env: &TestEnv, args: &[&str]) -> String {
    let output = std::process::Command::new(bin())
        .arg("mcp")
        .args(args)
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env("PATH", std::env::var("PATH").unwrap())
        .current_dir(env.cwd())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mcp {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The processes whose working directory is `dir` (the servers a backend started there).
pub(crate) fn processes_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == dir) {
            found.push(pid);
        }
    }
    found
}

/// Waits (bounded) until the processes working in `dir` are as `settled` wants them,
/// failing with `what` and the processes seen otherwise. Polls `/proc`: a process the
/// backend started is not the test's child, so no signal tells the test it ended.
pub(crate) async fn wait_for_processes_in(
    dir: &Path,
    what: &str,
    settled: impl Fn(&[u32]) -> bool,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        let seen = processes_in(dir);
        if settled(&seen) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {seen:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (bounded) until no process works in `dir`.
pub(crate) async fn assert_no_processes_in(dir: &Path) {
    wait_for_processes_in(dir, "processes left behind", <[u32]>::is_empty).await;
}

const METHODS: [&str; 5] = [
    "session.create",
    "turn.start",
    "shutdown",
    "status",
    "tool.cards",
];

/// The tool results the model was given in request `request`, joined.
fn tool_output(mock: &MockServer, request: usize) -> String {
    tool_outputs(&mock.requests()[request].body).join("\n")
}

fn offered_tools(mock: &MockServer) -> Vec<String> {
    offered_tool_names(&mock.requests()[0].body)
}

#[tokio::test]
async fn an_approved_server_offers_its_tools_and_answers_a_call_through_a_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "e1",
        "mcp__mock__echo",
        ["{\"message\":\"hello from the model\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Echoed."]));
    let env = env_for(&mock);
    env.write_settings(&mock_settings(
        "\n[permissions]\nallow = [\"mcp__mock__echo\"]\n",
    ));
    assert!(mcp_command(&env, &["list"]).contains("needs approval"));
    let approved = mcp_command(&env, &["approve", "mock"]);
    assert!(
        approved.starts_with("approved: mock\tapproved\tglobal"),
        "{approved}"
    );

    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    // The server runs in the workspace (beside the backend, under its launcher) for the
    // child's lifetime.
    // (The sandbox's probe, started beside the backend's first requests, may still be
    // there a moment.)
    wait_for_processes_in(&env.cwd(), "the backend, a launcher, a server", |seen| {
        seen.len() == 3
    })
    .await;
    let session = session_with_turn(&mut backend, "echo something").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);

    // initialize and tools/list: the model was offered the server's tools.
    let offered = offered_tools(&mock);
    for tool in ["mcp__mock__echo", "mcp__mock__add"] {
        assert!(offered.iter().any(|t| t == tool), "{offered:?}");
    }
    // tools/call: the server's answer reached the model.
    assert!(
        tool_output(&mock, 1).contains("Echo: hello from the model"),
        "{}",
        tool_output(&mock, 1)
    );
    assert!(seen.iter().any(|e| matches!(e, Event::Activity(a)
        if a.state == ActivityState::Completed && a.name == "mcp__mock__echo")));
    // Its card: tool kind `mcp`, with what the call reached.
    let card = seen
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::ToolCard(c) => Some(&c.card),
            _ => None,
        })
        .unwrap();
    assert_eq!(card.tool_kind, magi_protocol::cards::ToolKind::Mcp);
    let shown = serde_json::to_string(&card.blocks).unwrap();
    for value in ["mock", "echo", "Answered", "26 bytes"] {
        assert!(shown.contains(value), "{value}: {shown}");
    }
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("\"outcome\":\"completed\""), "{log}");
    shutdown_clean(&mut backend).await;
    // Shutdown closed the server.
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn mcp_calls_ask_like_any_tool_that_may_change_something() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("e1", "mcp__mock__echo", ["{\"message\":\"allowed\"}"])
            .tool_call("e2", "mcp__mock__add", ["{\"a\":1,\"b\":2}"]),
    );
    mock.enqueue(Reply::stream().text(["One ran."]));
    let env = env_for(&mock);
    // No allow rule: the server's read-only hints are not evidence.
    approve_mock(&env, "");
    let mut backend = env.spawn();
    backend
        .initialize(&[&METHODS[..], &["approval.answer"]].concat())
        .await
        .unwrap()
        .unwrap();
    let session = session_with_turn(&mut backend, "use the server").await;
    let mut seen = Vec::new();
    let mut answers = [true, false].into_iter();
    let finished = loop {
        let Incoming::Event { event, .. } = next(&mut backend).await else {
            continue;
        };
        seen.push(event.clone());
        match event {
            Event::ApprovalRequested(asked) => {
                let allow = answers.next().expect("two approvals at most");
                let run = seen
                    .iter()
                    .find_map(|e| match e {
                        Event::InputPersisted(p) => Some(p.run_id.clone()),
                        _ => None,
                    })
                    .unwrap();
                let params = ApprovalAnswerParams {
                    session_id: session.clone(),
                    run_id: run.clone(),
                    approval_id: asked.approval_id,
                    allow,
                    scope: None,
                    message: None,
                    unavailable: None,
                };
                let answered = backend
                    .call::<methods::ApprovalAnswer>(&params)
                    .await
                    .unwrap();
                assert_eq!(answered, Ok(ApprovalAnswerResult { recorded: true }));
            }
            Event::RunFinished(finished) => break finished,
            _ => {}
        }
    };
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(answers.next().is_none(), "both calls asked");
    let outputs = tool_outputs(&mock.requests()[1].body);
    assert!(outputs[0].contains("Echo: allowed"), "{outputs:?}");
    assert!(outputs[1].contains("was not run"), "{outputs:?}");
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("\"outcome\":\"denied\""), "{log}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn unapproved_definitions_never_run_and_a_changed_definition_needs_new_approval() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["No tools."]));
    mock.enqueue(Reply::stream().text(["Tools."]));
    let env = env_for(&mock);
    // A project file defines and enables the server: that approves nothing.
    let project = env.cwd().join(".magi");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("settings.toml"),
        mock_settings("enabled = true\n"),
    )
    .unwrap();
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    wait_for_processes_in(&env.cwd(), "only the backend runs", |seen| seen.len() == 1).await;
    session_with_turn(&mut backend, "hi").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    assert!(offered_tools(&mock).iter().all(|t| !t.starts_with("mcp__")));
    shutdown_clean(&mut backend).await;

    // Approved by the user, it runs.
    assert!(mcp_command(&env, &["approve", "mock"]).contains("\tproject\t"));
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "hi").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let second = &mock.requests()[1].body["tools"];
    assert!(second.to_string().contains("mcp__mock__echo"));
    shutdown_clean(&mut backend).await;

    // The project changes the definition: the approval does not follow it.
    std::fs::write(
        project.join("settings.toml"),
        mock_settings("env = { EXTRA = \"1\" }\n"),
    )
    .unwrap();
    assert!(mcp_command(&env, &["list"]).contains("needs approval"));
    mcp_command(&env, &["approve", "mock"]);
    mcp_command(&env, &["revoke", "mock"]);
    assert!(mcp_command(&env, &["list"]).contains("needs approval"));
}

#[tokio::test]
async fn a_server_that_fails_at_startup_fails_initialization_and_cleans_up_the_others() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    approve_mock(&env, &mock_server("broken", &["--exit-at-startup", "3"]));
    mcp_command(&env, &["approve", "broken"]);
    let mut backend = env.spawn();
    let answer = backend.initialize(&METHODS).await.unwrap();
    assert_eq!(answer.unwrap_err(), ErrorCode::McpUnavailable);
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(
        status.readiness,
        Readiness::Failed(magi_protocol::StartupError::McpUnavailable)
    );
    // The mock, connected or connecting when the other failed, is shut down: told to
    // stop, it may still be exiting when `initialize` is answered.
    wait_for_processes_in(&env.cwd(), "only the backend is left", |p| p.len() == 1).await;
    shutdown_clean(&mut backend).await;
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn invalid_configuration_starts_no_server_and_garbage_fails_startup() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    // Approved, but another part of the configuration is invalid: nothing starts.
    approve_mock(&env, "\n[instructions]\nfiles = [\"missing.md\"]\n");
    let mut backend = env.spawn();
    let answer = backend.initialize(&METHODS).await.unwrap();
    assert_eq!(answer.unwrap_err(), ErrorCode::ConfigurationInvalid);
    wait_for_processes_in(&env.cwd(), "only the backend runs", |seen| seen.len() == 1).await;
    shutdown_clean(&mut backend).await;

    // A server that answers with something other than MCP never initializes.
    env.write_settings(&format!(
        "{}startup_timeout_ms = 1000\n",
        mock_server("noise", &["--noise"])
    ));
    mcp_command(&env, &["approve", "noise"]);
    let mut backend = env.spawn();
    let answer = backend.initialize(&METHODS).await.unwrap();
    assert_eq!(answer.unwrap_err(), ErrorCode::McpUnavailable);
    shutdown_clean(&mut backend).await;
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn a_server_that_hangs_at_startup_times_out_or_is_cancelled() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let hang = mock_server("silent", &["--silent"]);
    env.write_settings(&format!("{hang}startup_timeout_ms = 300\n"));
    mcp_command(&env, &["approve", "silent"]);
    let started = Instant::now();
    let mut backend = env.spawn();
    let answer = backend.initialize(&METHODS).await.unwrap();
    assert_eq!(answer.unwrap_err(), ErrorCode::McpUnavailable);
    assert!(started.elapsed() < WAIT);
    // The killed server may take a moment to be reaped on a busy machine.
    wait_for_processes_in(&env.cwd(), "only the backend is left", |p| p.len() == 1).await;
    shutdown_clean(&mut backend).await;

    // Without a short timeout, shutdown cancels the waiting startup.
    env.write_settings(&hang);
    mcp_command(&env, &["approve", "silent"]);
    let mut backend = env.spawn();
    backend
        .send_raw(&frame(
            "init",
            "initialize",
            json!({"required_capabilities": METHODS}),
        ))
        .await
        .unwrap();
    // The server was started before shutdown is sent.
    wait_for_processes_in(&env.cwd(), "the server never started", |seen| {
        seen.len() >= 2
    })
    .await;
    backend
        .send_raw(&frame("bye", "shutdown", json!({})))
        .await
        .unwrap();
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let response = next_response(&mut backend).await;
        answers.push((response.id.clone(), response.outcome.err()));
    }
    assert!(answers.contains(&(Some("init".into()), Some(ErrorCode::StartupCancelled))));
    assert!(exit_status(&mut backend).await.success());
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn a_slow_call_times_out_or_is_cancelled_and_the_server_stays_usable() {
    let mock = MockServer::start().await;
    // `wait` never answers: the first call ends at its timeout, the second when the
    // turn is cancelled.
    let slow = "{}";
    mock.enqueue(Reply::stream().tool_call("slow", "mcp__mock__wait", [slow]));
    mock.enqueue(Reply::stream().tool_call(
        "echo",
        "mcp__mock__echo",
        ["{\"message\":\"still here\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Timed out, then echoed."]));
    mock.enqueue(Reply::stream().tool_call("slow2", "mcp__mock__wait", [slow]));
    let env = env_for(&mock).without(MODE_ENV);
    approve_mock(
        &env,
        // Long enough that the echo after the timeout answers well within it.
        "call_timeout_ms = 3000\n\n[permissions]\nmode = \"allow-all\"\n",
    );
    let mut backend = env.spawn();
    backend
        .initialize(&[&METHODS[..], &["turn.cancel"]].concat())
        .await
        .unwrap()
        .unwrap();
    let session = session_with_turn(&mut backend, "slow, then echo").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let timed_out = tool_output(&mock, 1);
    assert!(
        timed_out.contains("did not answer within 3000 ms"),
        "{timed_out}"
    );
    assert!(tool_output(&mock, 2).contains("Echo: still here"));

    // A cancelled turn cancels the call in flight.
    let run = start_turn(&mut backend, &session, "slow again").await;
    let mut seen = Vec::new();
    loop {
        if let Incoming::Event { event, .. } = next(&mut backend).await {
            let started = matches!(&event, Event::Activity(a)
                if a.state == ActivityState::Started && a.name == "mcp__mock__wait");
            seen.push(event);
            if started {
                break;
            }
        }
    }
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id: run,
    };
    backend
        .call::<methods::TurnCancel>(&cancel)
        .await
        .unwrap()
        .unwrap();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    let result = log
        .lines()
        .find(|l| l.contains("\"kind\":\"tool_result\"") && l.contains("\"call_id\":\"slow2\""))
        .unwrap();
    assert!(result.contains("\"outcome\":\"cancelled\""), "{result}");
    shutdown_clean(&mut backend).await;
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_the_call_truthfully_and_the_turn_goes_on() {
    let mock = MockServer::start().await;
    // `exit` ends the server once it has read the call, before it answers.
    mock.enqueue(Reply::stream().tool_call("dying", "mcp__mock__exit", ["{}"]));
    mock.enqueue(Reply::stream().tool_call(
        "after",
        "mcp__mock__echo",
        ["{\"message\":\"anyone there\"}"],
    ));
    mock.enqueue(Reply::stream().text(["The server is gone."]));
    let env = env_for(&mock).without(MODE_ENV);
    approve_mock(&env, "\n[permissions]\nmode = \"allow-all\"\n");
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "end the server").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let first = tool_output(&mock, 1);
    assert!(first.contains("did not complete the call"), "{first}");
    assert!(
        first.contains("whether it had effects is unknown"),
        "{first}"
    );
    let second = tool_output(&mock, 2);
    assert!(second.contains("no longer connected"), "{second}");
    assert!(seen.iter().any(|e| matches!(e, Event::Activity(a)
        if a.state == ActivityState::Failed && a.name == "mcp__mock__exit")));
    shutdown_clean(&mut backend).await;
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn an_oversized_result_fails_the_call_without_reaching_the_model() {
    let mock = MockServer::start().await;
    let message = "x".repeat(magi_protocol::limits::MCP_RESULT_BYTES);
    let arguments = json!({ "message": message }).to_string();
    mock.enqueue(Reply::stream().tool_call("big", "mcp__mock__echo", [arguments]));
    mock.enqueue(Reply::stream().text(["Too big."]));
    let env = env_for(&mock);
    // The 256 KiB of arguments pass the default context window: this test is about
    // the result bound, not compaction.
    approve_mock(
        &env,
        "\n[permissions]\nallow = [\"mcp__mock__echo\"]\n\
         [compaction]\ncontext_window_tokens = 100000000\n",
    );
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "echo a lot").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let output = tool_output(&mock, 1);
    assert!(output.contains("over the 262144-byte bound"), "{output}");
    assert!(output.len() < 1_000);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_streamable_http_server_answers_a_call_through_a_turn() {
    let mut server = tokio::process::Command::new(mock_binary())
        .arg("--http")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // It prints its URL once it listens.
    let stdout = server.stdout.take().unwrap();
    let url = tokio::time::timeout(WAIT, async {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        lines
            .next_line()
            .await
            .unwrap()
            .expect("the HTTP server ended")
    })
    .await
    .expect("the HTTP server listens");

    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("sum", "mcp__remote__add", ["{\"a\":20,\"b\":22}"]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings(&format!(
        "[mcp.servers.remote]\nurl = \"{url}\"\n\n[permissions]\nallow = [\"mcp__remote__add\"]\n"
    ));
    mcp_command(&env, &["approve", "remote"]);
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "add").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let output = tool_output(&mock, 1);
    assert!(output.contains("The sum of 20 and 22 is 42."), "{output}");
    shutdown_clean(&mut backend).await;
    let _ = server.kill().await;
}

#[tokio::test]
async fn a_server_may_list_tools_up_to_the_bound_and_one_more_fails_startup() {
    let bound = magi_protocol::limits::MCP_TOOLS_PER_SERVER;
    let own = McpMock::default().tools().len();
    for (fillers, fails) in [(bound - own, false), (bound - own + 1, true)] {
        let mock = MockServer::start().await;
        let env = env_for(&mock);
        env.write_settings(&mock_server(
            "many",
            &["--filler-tools", &fillers.to_string()],
        ));
        mcp_command(&env, &["approve", "many"]);
        let mut backend = env.spawn();
        let answer = backend.initialize(&METHODS).await.unwrap();
        assert_eq!(
            answer.err(),
            fails.then_some(ErrorCode::McpUnavailable),
            "{} tools",
            own + fillers
        );
        shutdown_clean(&mut backend).await;
        assert_no_processes_in(&env.cwd()).await;
    }
}

#[tokio::test]
async fn a_tool_error_reaches_the_model_as_the_servers_message() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("f", "mcp__mock__fail", ["{}"]));
    mock.enqueue(Reply::stream().text(["It failed."]));
    let env = env_for(&mock).without(MODE_ENV);
    approve_mock(&env, "\n[permissions]\nmode = \"allow-all\"\n");
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "fail").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let output = tool_output(&mock, 1);
    assert!(output.contains("the mock failed on purpose"), "{output}");
    assert!(seen.iter().any(|e| matches!(e, Event::Activity(a)
        if a.state == ActivityState::Failed && a.name == "mcp__mock__fail")));
    shutdown_clean(&mut backend).await;
}

/// The installed reference server's entry script.
fn reference_server_script() -> PathBuf {
    everything_server(Path::new(env!("CARGO_TARGET_TMPDIR")))
        .unwrap_or_else(|why| panic!("the reference MCP server could not be installed: {why}"))
}

#[tokio::test]
#[ignore = "needs Node.js, npm and the npm registry; .ci/run runs it after the main suite"]
async fn the_reference_server_from_npm_initializes_lists_and_answers_through_a_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "e1",
        "mcp__everything__echo",
        ["{\"message\":\"hello from the model\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Echoed."]));
    let env = env_for(&mock);
    env.write_settings(&format!(
        "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\n[permissions]\nallow = [\"mcp__everything__echo\"]\n",
        reference_server_script().display().to_string()
    ));
    mcp_command(&env, &["approve", "everything"]);
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "echo something").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let offered = offered_tools(&mock);
    for tool in ["mcp__everything__echo", "mcp__everything__get-sum"] {
        assert!(offered.iter().any(|t| t == tool), "{offered:?}");
    }
    let output = tool_output(&mock, 1);
    assert!(output.contains("Echo: hello from the model"), "{output}");
    shutdown_clean(&mut backend).await;
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn an_mcp_server_that_is_not_installed_is_named_with_its_program() {
    let mock = MockServer::start().await;
    let env = env_for(&mock).var("MAGI_PROVIDER", "openai-chat");
    env.write_settings("[mcp.servers.ghost]\ncommand = \"magi-no-such-mcp-server\"\n");
    mcp_command(&env, &["approve", "ghost"]);
    let output = env.run_cli(&["exec", "hi"]).await;
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8(output.stderr).unwrap();
    assert!(
        said.contains(
            "the MCP server `ghost` cannot start: magi-no-such-mcp-server: no executable file \
             of that name on PATH"
        ),
        "{said}"
    );
    assert!(said.contains("[mcp_unavailable]"), "{said}");
    assert!(mock.requests().is_empty());
}
