//! The MCP server's part of the soak: in a share of the sessions the backend starts the
//! mock MCP server (approved as a person would, with `magi-code mcp approve`), and the
//! model now and then calls its tools, right and wrong: answers, tool errors, arguments
//! of the wrong types, a tool the server does not have, a call that never answers (its
//! timeout or a cancel ends it) and a call that ends the server's process in its middle.
//! The server carries the session's tag, so one left running fails the session.

use std::time::Duration;

use serde_json::json;

use super::random::Random;
use crate::common::TestEnv;

/// Mixed into a session's seed for the draws of the MCP server's part.
pub const STREAM: u64 = 0x6d63_705f_7365_7276;

/// The share of sessions with the server.
pub const SESSIONS_WITH_SERVER: f64 = 0.25;

/// The share of a session's calls that go to the server.
pub const CALLS_TO_SERVER: f64 = 0.2;

/// The server's name in the settings, and so the middle of its tools' names.
const SERVER: &str = "mock";

/// The settings table of the server: the mock, given the session's tag, with a call
/// timeout short enough that a call that never answers ends within the turn.
pub fn settings() -> String {
    format!(
        "\n[mcp.servers.{SERVER}]\ncommand = {:?}\nenv_vars = [{:?}]\ncall_timeout_ms = 2000\n",
        crate::mcp::mock_binary().display().to_string(),
        super::TAG,
    )
}

/// Approves the server in `env` through `magi-code mcp approve`.
pub async fn approve(env: &TestEnv) -> Result<(), String> {
    let approving = tokio::process::Command::new(crate::common::bin())
        .args(["mcp", "approve", SERVER])
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(env.cwd())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), approving)
        .await
        .map_err(|_| "mcp approve did not end within 60 s".to_owned())?
        .map_err(|e| format!("mcp approve did not start: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "mcp approve failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// One call of the server's tools: its name and arguments.
pub fn call(r: &mut Random) -> (String, String) {
    let (tool, arguments) = match r.weighted(&[35, 15, 10, 10, 8, 7, 5, 10]) {
        0 => ("echo", json!({ "message": r.text(60) })),
        1 => (
            "add",
            json!({ "a": r.between(0, 1_000), "b": r.between(0, 1_000) }),
        ),
        2 => ("add", json!({ "a": "one", "b": [2] })),
        3 => ("fail", json!({})),
        // The server's process ends while the call is in flight; later calls find it
        // gone.
        4 => ("exit", json!({})),
        // Never answers: the call timeout, or a cancel, ends it.
        5 => ("wait", json!({})),
        6 => ("nope", json!({})),
        _ => ("echo", json!({})),
    };
    (format!("mcp__{SERVER}__{tool}"), arguments.to_string())
}
