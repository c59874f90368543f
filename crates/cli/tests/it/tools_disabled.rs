//! `[tools] disabled` through the real binary: a disabled tool is offered to neither the
//! primary agent nor a subagent, a call the model makes to it anyway is refused and
//! settled failed without running, and a name no tool has fails startup.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{ClientToolDefinition, RunOutcome};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const METHODS: [&str; 3] = ["session.create", "turn.start", "shutdown"];

/// A backend that runs every call without asking, so that only the setting stands
/// between a `bash` call and its command.
fn env_for(mock: &MockServer) -> TestEnv {
    TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_ALLOW_ALL", "1")
}

/// Writes the project settings file of the workspace.
fn write_project_settings(env: &TestEnv, text: &str) {
    std::fs::create_dir_all(env.cwd().join(".magi")).unwrap();
    std::fs::write(env.cwd().join(".magi/settings.toml"), text).unwrap();
}

/// The settled `tool_result` records of a session's log.
fn results(env: &TestEnv, session: &str) -> Vec<Value> {
    std::fs::read_to_string(log_path(env, session))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["kind"] == "tool_result")
        .collect()
}

#[tokio::test]
async fn a_disabled_tool_is_offered_to_no_agent_and_a_call_to_it_never_runs() {
    let mock = MockServer::start().await;
    let touch = json!({"command": "touch made-by-bash"}).to_string();
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [touch]));
    let task = json!({"subagent": "helper", "task": "List the workspace."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    mock.enqueue(Reply::stream().text(["Nothing to list."]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings(
        r#"
[profiles.helper]
subagent = true
description = "Lists things."
tools = ["list", "bash"]
"#,
    );
    write_project_settings(&env, "[tools]\ndisabled = [\"bash\"]\n");

    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "make a file").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    // Neither the primary agent nor the subagent is offered `bash`; the rest stays.
    let primary = offered_tool_names(&requests[0].body);
    assert!(!primary.contains(&"bash".to_owned()), "{primary:?}");
    assert!(primary.contains(&"async_bash".to_owned()), "{primary:?}");
    assert!(primary.contains(&"task".to_owned()), "{primary:?}");
    assert_eq!(offered_tool_names(&requests[2].body), ["list"]);
    // The call the model made anyway ran nothing, and the model was told why.
    assert!(!env.cwd().join("made-by-bash").exists());
    let told = tool_outputs(&requests[1].body);
    assert_eq!(told.len(), 1);
    assert!(
        told[0].contains("bash") && told[0].contains("disabled"),
        "{told:?}"
    );
    let settled = results(&env, &session);
    let bash = settled.iter().find(|r| r["call_id"] == "c1").unwrap();
    assert_eq!(bash["outcome"], "failed");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_disabled_client_tool_is_not_offered() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello."]));
    let env = env_for(&mock);
    write_project_settings(&env, "[tools]\ndisabled = [\"notify\"]\n");
    let notify = ClientToolDefinition {
        name: "notify".into(),
        description: "Shows a notification in the editor.".into(),
        parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        timeout_ms: None,
    };
    let mut backend = env.spawn();
    let methods = [METHODS.as_slice(), &["client.tools"]].concat();
    backend
        .initialize_with_tools(&methods, Some(&[notify]))
        .await
        .unwrap()
        .unwrap();
    session_with_turn(&mut backend, "hi").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let offered = offered_tool_names(&mock.requests()[0].body);
    assert!(!offered.contains(&"notify".to_owned()), "{offered:?}");
    assert!(offered.contains(&"bash".to_owned()), "{offered:?}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_disabled_mcp_tool_is_not_offered_and_an_unlisted_one_stops_its_server() {
    use crate::mcp::{assert_no_processes_in, mcp_command, mock_settings, wait_for_processes_in};

    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello."]));
    let env = crate::mcp::env_for(&mock);
    env.write_settings(&mock_settings(""));
    mcp_command(&env, &["approve", "mock"]);
    write_project_settings(&env, "[tools]\ndisabled = [\"mcp__mock__echo\"]\n");
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "hi").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let offered = offered_tool_names(&mock.requests()[0].body);
    assert!(
        !offered.contains(&"mcp__mock__echo".to_owned()),
        "{offered:?}"
    );
    assert!(
        offered.contains(&"mcp__mock__add".to_owned()),
        "{offered:?}"
    );
    shutdown_clean(&mut backend).await;

    // A tool the started server does not list: startup fails, and the server it
    // started to find out is stopped.
    write_project_settings(&env, "[tools]\ndisabled = [\"mcp__mock__no-such-tool\"]\n");
    let mut backend = env.spawn();
    assert_eq!(
        backend.initialize(&METHODS).await.unwrap(),
        Err(ErrorCode::ConfigurationInvalid)
    );
    // Only the backend itself still works in the workspace.
    let backend_only = vec![backend.pid().unwrap()];
    wait_for_processes_in(&env.cwd(), "the server was left running", |seen| {
        seen == backend_only
    })
    .await;
    shutdown_clean(&mut backend).await;
    assert_no_processes_in(&env.cwd()).await;
}

#[tokio::test]
async fn a_name_no_tool_has_fails_startup_as_invalid_configuration() {
    for (global, project) in [
        ("", "[tools]\ndisabled = [\"bahs\"]\n"),
        ("[tools]\ndisabled = [\"mcp__nowhere__x\"]\n", ""),
        // A client tool's name, but this client registered none.
        ("", "[tools]\ndisabled = [\"notify\"]\n"),
    ] {
        let env = TestEnv::new();
        env.write_settings(global);
        write_project_settings(&env, project);
        let mut backend = env.spawn();
        assert_eq!(
            backend.initialize(&METHODS).await.unwrap(),
            Err(ErrorCode::ConfigurationInvalid),
            "{global}{project}"
        );
        shutdown_clean(&mut backend).await;
    }
}
