//! The official TypeScript SDK's client (`@agentclientprotocol/sdk`, from npm) driving
//! `magi-code acp` through a whole scenario (`sdk_client.mjs`, MCP server passed by the
//! client included), its schema checking every message: ignored by default, run by
//! `.ci/run` with the other npm test.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;

use magi_testkit::{MockServer, Reply, npm_package};
use serde_json::{Value, json};

use crate::common::approval::{bash, calls, env_for};
use crate::common::*;

/// The SDK's package and the version the script is written for.
const SDK_PACKAGE: &str = "@agentclientprotocol/sdk";
const SDK_VERSION: &str = "2.4.0";
/// The scripted client.
const SCRIPT: &str = include_str!("sdk_client.mjs");

/// The updates of `report` from index `from`, of one kind.
fn updates<'a>(report: &'a Value, from: u64, kind: &str) -> Vec<&'a Value> {
    report["updates"].as_array().unwrap()[from as usize..]
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Node.js, npm and the npm registry; .ci/run runs it after the main suite"]
async fn acp_the_typescript_sdk_client_drives_a_whole_scenario() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello from ", "magi-code."]));
    mock.enqueue(calls(
        "bash",
        &[bash("b1", "echo made > made.txt && echo done")],
    ));
    mock.enqueue(Reply::stream().text(["Made."]));
    mock.enqueue(calls("bash", &[bash("b2", "touch refused.txt")]));
    mock.enqueue(Reply::stream().text(["Refused."]));
    mock.enqueue(calls(
        "bash",
        &[bash("b3", "touch one.txt"), bash("b4", "touch two.txt")],
    ));
    mock.enqueue(Reply::stream().text(["Both."]));
    let write = json!({"path": "notes.txt", "content": "remember\n"}).to_string();
    mock.enqueue(Reply::stream().tool_call("w1", "write", [write.as_str()]));
    mock.enqueue(Reply::stream().text(["Written."]));
    // The model's plan, which the SDK's schema checks as a `plan` update.
    let plan = json!({"items": [
        {"text": "Read the notes", "status": "done"},
        {"text": "Plan the 変更", "status": "in_progress"},
        {"text": "Say what changed", "status": "pending"},
    ]});
    mock.enqueue(Reply::stream().tool_call("p1", "todo", [plan.to_string().as_str()]));
    mock.enqueue(Reply::stream().text(["Planned."]));
    mock.enqueue(Reply::stream().text(["Thinking", " long"]).held());
    mock.enqueue(Reply::stream().text(["Same."]));
    mock.enqueue(Reply::stream().text(["Same."]));
    mock.enqueue(Reply::stream().tool_call(
        "e1",
        "mcp__editor-tools__echo",
        ["{\"message\":\"hello from the model\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Echoed."]));
    // The client offering its file system: a read and an edit of its buffer.
    let read = json!({"path": "buffer.txt"}).to_string();
    mock.enqueue(Reply::stream().tool_call("f1", "read", [read.as_str()]));
    mock.enqueue(Reply::stream().text(["Read."]));
    let edit = json!({"path": "buffer.txt", "old_text": "editor", "new_text": "edited"});
    let edit = edit.to_string();
    mock.enqueue(Reply::stream().tool_call("f2", "edit", [edit.as_str()]));
    mock.enqueue(Reply::stream().text(["Edited."]));
    let env = env_for(&mock);
    std::fs::write(env.cwd().join("buffer.txt"), "from the disk\n").unwrap();
    mock.enqueue(calls("bash", &[bash("t1", "echo in the editor terminal")]));
    mock.enqueue(Reply::stream().text(["Ran in the terminal."]));
    // Only the fourth connection offers a terminal, so only it runs `bash` there.
    env.write_settings("[acp]\nclient_terminals = true\n");
    let other = env.root().join("other");
    std::fs::create_dir(&other).unwrap();

    let root = npm_package(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        SDK_PACKAGE,
        SDK_VERSION,
    )
    .unwrap_or_else(|why| panic!("the ACP SDK could not be installed: {why}"));
    let client = env.root().join("sdk-client");
    std::fs::create_dir(&client).unwrap();
    std::os::unix::fs::symlink(root.join("node_modules"), client.join("node_modules")).unwrap();
    std::fs::write(client.join("client.mjs"), SCRIPT).unwrap();
    let run = tokio::process::Command::new("node")
        .arg(client.join("client.mjs"))
        .arg(bin())
        .arg(env.cwd())
        .arg(&other)
        .arg(magi_testkit::mock_mcp_server().unwrap())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MC_HOME", env.mc_home())
        .envs(env.vars())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT * 6, run).await.unwrap().unwrap();
    mock.release();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let steps = &report["steps"];

    assert_eq!(steps["initialize"]["protocolVersion"], 1);
    assert_eq!(
        steps["initialize"]["agentCapabilities"]["loadSession"],
        true
    );
    assert_eq!(steps["hello"]["stopReason"], "end_turn");
    assert_eq!(steps["hello"]["text"], "Hello from magi-code.");

    let from = steps["allowed"]["from"].as_u64().unwrap();
    assert_eq!(steps["allowed"]["stopReason"], "end_turn");
    assert!(env.cwd().join("made.txt").exists());
    let call = updates(&report, from, "tool_call")[0];
    assert_eq!(call["kind"], "execute", "{call}");
    let done = updates(&report, from, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == "completed")
        .expect("the call completed");
    assert!(done["content"].to_string().contains("done"), "{done}");

    assert!(!env.cwd().join("refused.txt").exists());
    assert!(env.cwd().join("one.txt").exists() && env.cwd().join("two.txt").exists());
    let asked: Vec<&str> = report["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    // The "always" turn asked once for its two calls; then the MCP call, the edit of
    // the editor's buffer and the terminal's command.
    assert_eq!(
        asked,
        [
            "allow_once",
            "reject_once",
            "allow_always",
            "allow_once",
            "allow_once",
            "allow_once",
            "allow_once"
        ]
    );

    let from = steps["write"]["from"].as_u64().unwrap();
    let diff = updates(&report, from, "tool_call_update")
        .into_iter()
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == "diff")
        .expect("the write shows a diff");
    assert_eq!(diff["newText"], "remember\n");
    assert_eq!(diff["path"], json!(env.cwd().join("notes.txt")));

    assert_eq!(steps["plan"]["stopReason"], "end_turn");
    // The turn's own plan updates, up to the next turn measured (the load replays
    // the plan again later).
    let from = steps["plan"]["from"].as_u64().unwrap() as usize;
    let until = steps["mcp"]["from"].as_u64().unwrap() as usize;
    let live: Vec<&Value> = report["updates"].as_array().unwrap()[from..until]
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(
        live[0]["entries"],
        json!([
            {"content": "Read the notes", "priority": "medium", "status": "completed"},
            {"content": "Plan the 変更", "priority": "medium", "status": "in_progress"},
            {"content": "Say what changed", "priority": "medium", "status": "pending"},
        ])
    );

    assert_eq!(steps["cancel"]["stopReason"], "cancelled");
    assert!(steps["setModel"]["configOptions"].is_array());
    let mode = steps["setMode"]["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == "mode")
        .expect("the mode option");
    assert_eq!(mode["category"], "mode", "{mode}");
    assert_eq!(mode["currentValue"], "ask", "{mode}");
    let id = &steps["new"]["sessionId"];
    let listed = steps["list"]["sessions"].as_array().unwrap();
    assert!(listed.iter().any(|s| s["sessionId"] == *id), "{listed:?}");
    assert_eq!(steps["parallel"]["stops"], json!(["end_turn", "end_turn"]));
    assert_eq!(steps["mcp"]["stopReason"], "end_turn");
    assert_eq!(steps["mcp"]["text"], "Echoed.");
    let from = steps["mcp"]["from"].as_u64().unwrap();
    let echo = updates(&report, from, "tool_call_update")
        .into_iter()
        .find(|u| u["status"] == "completed")
        .expect("the MCP tool call completed");
    assert!(
        echo["content"].to_string().contains("Server: editor-tools"),
        "{echo}"
    );
    let requests = mock.requests();
    let output = tool_outputs(&requests[requests.len() - 7].body).join("\n");
    assert!(output.contains("hello from the model"), "{output}");

    // The SDK's file handlers served the read and the edit; the disk is untouched.
    assert_eq!(steps["fsRead"]["stopReason"], "end_turn");
    assert_eq!(steps["fsEdit"]["stopReason"], "end_turn");
    let buffer = env.cwd().canonicalize().unwrap().join("buffer.txt");
    let buffer = buffer.display().to_string();
    assert_eq!(report["fs"]["reads"], json!([buffer, buffer]));
    assert_eq!(
        report["fs"]["writes"],
        json!([{"path": buffer, "content": "from the edited buffer\n"}])
    );
    let output = tool_outputs(&requests[requests.len() - 5].body).join("\n");
    assert!(output.contains("from the editor buffer"), "{output}");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("buffer.txt")).unwrap(),
        "from the disk\n"
    );

    // The fourth connection's `bash` ran in the client's terminal, from create to
    // release, and the model was given what it printed.
    assert_eq!(steps["terminal"]["stopReason"], "end_turn");
    let terminal: Vec<&str> = report["terminal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        terminal,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    assert_eq!(
        report["terminal"][0]["args"][1],
        "echo in the editor terminal"
    );
    let output = tool_outputs(&requests[requests.len() - 1].body).join("\n");
    assert!(
        output.contains("in the editor terminal\n[exit code 0; ran in the client's terminal]"),
        "{output}"
    );
    let from = steps["terminal"]["from"].as_u64().unwrap();
    let embedded = updates(&report, from, "tool_call_update")
        .into_iter()
        .any(|u| u["content"][0]["type"] == "terminal");
    assert!(embedded, "the terminal is embedded in the tool call");
    let kinds = steps["load"]["kinds"].as_array().unwrap();
    for kind in [
        "user_message_chunk",
        "agent_message_chunk",
        "tool_call",
        "plan",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
}
