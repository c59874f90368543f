//! A session's backend that dies over ACP: the prompt in flight answers an error that
//! says how (its crash with the report, or the signal), and the next prompt starts a
//! fresh backend for the same session, which settles what the dead one left open.

use agent_client_protocol_schema::v1::StopReason;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

use super::{initialize, new_session, prompt, stop};
use crate::common::acp::Acp;
use crate::common::*;

/// An environment whose backends talk to `mock`, may run `bash`, and crash at `fault`.
fn armed(mock: &MockServer, fault: &str) -> TestEnv {
    let env = env_for_wire(Wire::Chat, mock).var("MAGI_FAULT", fault);
    env.write_settings("[permissions]\nallow = [\"bash\"]\n");
    env
}

fn error_text(result: Result<serde_json::Value, serde_json::Value>) -> String {
    let error = result.expect_err("the prompt fails");
    error["data"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn acp_a_backend_crash_fails_the_prompt_saying_why() {
    let mock = MockServer::start().await;
    let env = armed(&mock, "panic_loop:1");
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let said = error_text(acp.call("session/prompt", prompt(&session, "hello")).await);
    assert!(
        said.starts_with(
            "the backend crashed: crash point reached (1) at crates/core/src/fault.rs:"
        ),
        "{said}"
    );
    assert!(said.contains("(report: "), "{said}");
    assert!(
        said.ends_with("the next prompt starts a fresh backend for this session"),
        "{said}"
    );
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_the_next_prompt_after_a_killed_backend_runs_on_a_fresh_one() {
    let mock = MockServer::start().await;
    let command = json!({ "command": "echo ran >> ran.txt" }).to_string();
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [command]));
    mock.enqueue(Reply::stream().text(["Recovered."]));
    // Every backend is killed at its first claim: the fresh one's turn claims nothing.
    let env = armed(&mock, "after_claim:1");
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let said = error_text(acp.call("session/prompt", prompt(&session, "run it")).await);
    assert!(
        said.starts_with("the backend was killed by signal 9 (KILL)"),
        "{said}"
    );
    let result = acp.call("session/prompt", prompt(&session, "go on")).await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert!(
        acp.agent_text().ends_with("Recovered."),
        "{}",
        acp.agent_text()
    );
    assert!(!env.cwd().join("ran.txt").exists());
    // The fresh backend reopened the same session: the model saw the first prompt and
    // the call the dead backend left, settled.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(tool_outputs(&requests[1].body).len(), 1);
    assert!(requests[1].body.to_string().contains("run it"));
    assert!(acp.finish().await.success());
}
