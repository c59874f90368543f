//! The spawn server through the real binary: the commands of a run share one
//! long-lived launcher (the first one started before its policy was known), and one
//! that is killed is replaced for the next command.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use std::process::Stdio;

use crate::exec::exec_command;
use magi_testkit::{MockServer, Reply};

fn bash(mock: &MockServer, id: &str, command: &str) {
    let arguments = serde_json::json!({ "command": command }).to_string();
    mock.enqueue(Reply::stream().tool_call(id, "bash", [arguments]));
}

#[tokio::test]
async fn commands_share_a_spawn_server_and_a_killed_one_is_replaced() {
    let mock = MockServer::start().await;
    // The parent of each command is the spawn server that started it.
    bash(
        &mock,
        "c1",
        "echo $PPID > p1; tr '\\0' ' ' < /proc/$PPID/cmdline > server1",
    );
    bash(&mock, "c2", "echo $PPID > p2.new; mv p2.new p2; sleep 30");
    bash(&mock, "c3", "echo $PPID > p3; echo ok > done");
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    let mut command = exec_command(&env, &mock, &["--allow-all", "Run them"]);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let read = |name: &str| std::fs::read_to_string(env.cwd().join(name)).unwrap();
    // Kill the server while its second command runs: the command was reported
    // started long before it wrote its file.
    crate::tool_calls::wait_for_file(&env.cwd().join("p2")).await;
    let killed = std::process::Command::new("kill")
        .args(["-KILL", read("p2").trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let server = read("server1");
    assert!(server.contains("__launch --serve"), "{server}");
    // The first server started beside the kernel probe and was sent its policy after.
    assert!(server.contains("--await-policy"), "{server}");
    assert_eq!(read("p1"), read("p2"), "one server for both commands");
    // The command whose server was killed was ended with it (its `sleep` did not hold
    // the run), and the next command ran under a new server.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("killed by signal 9"), "{stderr}");
    assert_ne!(read("p2"), read("p3"));
    assert_eq!(read("done"), "ok\n");
}
