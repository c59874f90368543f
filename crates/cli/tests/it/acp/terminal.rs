//! `bash` in the editor's terminal: with `[acp] client_terminals = true` and a client
//! offering `terminal`, a command runs through `terminal/create`, `wait_for_exit`,
//! `output` and `release`, in that order, and its output reaches the model; a cancel
//! mid-command sends `terminal/kill`. Without the setting our own `bash` runs.

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    CancelNotification, ClientCapabilities, InitializeRequest, SessionUpdate, StopReason,
    ToolCallContent,
};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

use super::{new_session, prompt, stop};
use crate::common::acp::Acp;
use crate::common::approval::{bash, calls, env_for};
use crate::common::*;

/// Initializes the agent as a client that offers terminals.
async fn initialize_with_terminal(acp: &mut Acp) {
    let request = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(ClientCapabilities::new().terminal(true));
    acp.call("initialize", request).await.unwrap();
}

/// A scripted terminal: every `terminal/*` request is noted, and answered as a command
/// that printed `printed` and exited 0 would be; a permission request is allowed once.
fn terminal(seen: &mut Vec<String>, printed: &str) -> impl FnMut(&str, &Value) -> Option<Value> {
    move |method, params| {
        seen.push(method.to_owned());
        match method {
            "session/request_permission" => {
                Some(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}))
            }
            "terminal/create" => {
                assert_eq!(params["args"][0], "-c", "{params}");
                assert_eq!(params["args"][1], "echo from-terminal", "{params}");
                assert_eq!(params["outputByteLimit"], 32_768, "{params}");
                assert!(params["cwd"].as_str().unwrap().starts_with('/'), "{params}");
                Some(json!({"terminalId": "term-1"}))
            }
            "terminal/wait_for_exit" => Some(json!({"exitCode": 0})),
            "terminal/output" => Some(json!({
                "output": printed, "truncated": false, "exitStatus": {"exitCode": 0}
            })),
            "terminal/release" | "terminal/kill" => Some(json!({})),
            other => panic!("unexpected request {other}"),
        }
    }
}

#[tokio::test]
async fn acp_terminal_runs_bash_in_the_client_terminal_only_when_the_setting_opts_in() {
    let mock = MockServer::start().await;
    for _ in 0..2 {
        mock.enqueue(calls("bash", &[bash("b1", "echo from-terminal")]));
        mock.enqueue(Reply::stream().text(["Ran."]));
    }
    let env = env_for(&mock);

    // Offered, but not opted in: our own bash runs, no terminal is asked for.
    let mut acp = Acp::spawn(&env);
    initialize_with_terminal(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let mut seen = Vec::new();
    let result = acp
        .call_with(
            "session/prompt",
            prompt(&session, "Run it"),
            terminal(&mut seen, "unused"),
        )
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(seen, ["session/request_permission"]);
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(
        told[0].contains("from-terminal") && told[0].contains("[exit code 0]"),
        "{told:?}"
    );
    assert!(acp.finish().await.success());

    // Opted in: the client's terminal runs it, from create to release.
    env.write_settings("[acp]\nclient_terminals = true\n");
    let mut acp = Acp::spawn(&env);
    initialize_with_terminal(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let mut seen = Vec::new();
    let result = acp
        .call_with(
            "session/prompt",
            prompt(&session, "Run it"),
            terminal(&mut seen, "printed by the editor\n"),
        )
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(
        seen,
        [
            "session/request_permission",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let told = tool_outputs(&mock.requests()[3].body);
    assert!(
        told[0].starts_with("printed by the editor\n[exit code 0; ran in the client's terminal]"),
        "{told:?}"
    );
    // The terminal is embedded in the tool call, and stays through later snapshots.
    let embedded = |content: &Option<Vec<ToolCallContent>>| {
        content.as_ref().is_some_and(|c| {
            matches!(c.first(), Some(ToolCallContent::Terminal(t)) if &*t.terminal_id.0 == "term-1")
        })
    };
    let last = acp
        .updates
        .iter()
        .rev()
        .find_map(|n| match &n.update {
            SessionUpdate::ToolCallUpdate(update) => Some(update.clone()),
            _ => None,
        })
        .unwrap();
    assert!(embedded(&last.fields.content), "{last:?}");
    // The card says where it ran.
    let said = serde_json::to_string(&last.fields.content).unwrap();
    assert!(said.contains("client's terminal"), "{said}");
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_terminal_cancel_mid_command_kills_it_and_the_turn_ends_cancelled() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "echo from-terminal")]));
    let env = env_for(&mock);
    env.write_settings("[acp]\nclient_terminals = true\n[permissions]\nallow = [\"bash\"]\n");
    let mut acp = Acp::spawn(&env);
    initialize_with_terminal(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let prompt_id = acp.send("session/prompt", prompt(&session, "Run it")).await;
    let mut seen = Vec::new();
    let mut waiting = None;
    let stop_reason = loop {
        let message = acp.next().await;
        let method = message["method"].as_str().map(str::to_owned);
        let id = message.get("id").cloned();
        match (method.as_deref(), id) {
            (Some("session/update"), _) => {}
            (Some(method), Some(id)) => {
                seen.push(method.to_owned());
                let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
                match method {
                    "terminal/create" => {
                        acp.send_line(&reply(json!({"terminalId": "t"})).to_string())
                            .await;
                    }
                    // The command runs on until the kill.
                    "terminal/wait_for_exit" => {
                        waiting = Some(id);
                        acp.notify(
                            "session/cancel",
                            CancelNotification::new(session.session_id.clone()),
                        )
                        .await;
                    }
                    "terminal/kill" => {
                        acp.send_line(&reply(json!({})).to_string()).await;
                        let exited = json!({"jsonrpc": "2.0", "id": waiting.take().unwrap(),
                            "result": {"exitCode": null, "signal": "SIGKILL"}});
                        acp.send_line(&exited.to_string()).await;
                    }
                    "terminal/release" => {
                        acp.send_line(&reply(json!({})).to_string()).await;
                    }
                    other => panic!("unexpected request {other}"),
                }
            }
            (None, Some(id)) if id == json!(prompt_id) => {
                break stop(match message.get("error") {
                    Some(e) => Err(e.clone()),
                    None => Ok(message["result"].clone()),
                });
            }
            _ => {}
        }
    };
    assert_eq!(stop_reason, StopReason::Cancelled);
    // The kill may follow the prompt's answer: read on until the terminal is released.
    while !seen.iter().any(|m| m == "terminal/release") {
        let message = acp.next().await;
        if let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) {
            seen.push(method.to_owned());
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": {}});
            acp.send_line(&reply.to_string()).await;
            if method == "terminal/kill" {
                let exited = json!({"jsonrpc": "2.0", "id": waiting.take().unwrap(),
                    "result": {"exitCode": null, "signal": "SIGKILL"}});
                acp.send_line(&exited.to_string()).await;
            }
        }
    }
    assert_eq!(
        seen,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release"
        ]
    );
    // Nothing more of the turn runs: the model was asked once.
    assert_eq!(mock.requests().len(), 1);
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_terminal_a_command_past_its_timeout_is_killed_and_the_model_told() {
    let mock = MockServer::start().await;
    let slow = json!({"command": "sleep 100", "timeout_ms": 50}).to_string();
    mock.enqueue(calls("bash", &[("b1".to_owned(), slow)]));
    mock.enqueue(Reply::stream().text(["Too slow."]));
    let env = env_for(&mock);
    env.write_settings("[acp]\nclient_terminals = true\n[permissions]\nallow = [\"bash\"]\n");
    let mut acp = Acp::spawn(&env);
    initialize_with_terminal(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let mut seen = Vec::new();
    let result = acp
        .call_with("session/prompt", prompt(&session, "Wait"), |method, _| {
            seen.push(method.to_owned());
            match method {
                "terminal/create" => Some(json!({"terminalId": "t"})),
                // It never exits by itself.
                "terminal/wait_for_exit" => None,
                "terminal/output" => Some(json!({
                    "output": "partial\n", "truncated": false,
                    "exitStatus": {"exitCode": null, "signal": "SIGTERM"}
                })),
                "terminal/kill" | "terminal/release" => Some(json!({})),
                other => panic!("unexpected request {other}"),
            }
        })
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(
        seen,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/output",
            "terminal/release"
        ]
    );
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(
        told[0].starts_with("partial\n[timed out after 50 ms; the client killed the command"),
        "{told:?}"
    );
    assert!(acp.finish().await.success());
}
