//! `magi-code exec`: one turn from the command line, through the same backend.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::Output;

use crate::common::*;
use magi_testkit::{MockServer, Reply};

async fn exec(env: &TestEnv, mock: &MockServer, args: &[&str]) -> Output {
    let output = tokio::process::Command::new(bin())
        .arg("exec")
        .args(args)
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "mock-model")
        .env("OPENAI_BASE_URL", mock.base_url())
        .current_dir(env.cwd())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(WAIT, output).await.unwrap().unwrap()
}

#[tokio::test]
async fn exec_streams_the_reply_and_one_line_per_activity() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "read", ["{\"path\":\"a.txt\"}"]));
    mock.enqueue(Reply::stream().text(["The file ", "says hello."]));
    let env = TestEnv::new();
    std::fs::write(env.cwd().join("a.txt"), "hello\n").unwrap();
    let output = exec(&env, &mock, &["What does a.txt say?"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stdout,
        "· read: read a.txt\n✓ read: 1 line\nThe file says hello.\n"
    );
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[tokio::test]
async fn exec_json_prints_event_frames_and_the_exit_status_follows_the_run() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Half"]).disconnect_after(2));
    let env = TestEnv::new();
    let output = exec(&env, &mock, &["--json", "Go"]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let frames: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        frames
            .iter()
            .all(|f| f["type"] == "event" && f["protocol"] == "magi-code.local-agent")
    );
    assert_eq!(frames[0]["event"], "input.persisted");
    let last = frames.last().unwrap();
    assert_eq!(last["event"], "run.finished");
    assert_eq!(last["data"]["outcome"], "failed");
    let seqs: Vec<u64> = frames.iter().map(|f| f["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

#[tokio::test]
async fn exec_without_a_reachable_provider_fails_clearly() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let output = tokio::process::Command::new(bin())
        .args(["exec", "hi"])
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .current_dir(env.cwd())
        .output();
    let output = tokio::time::timeout(WAIT, output).await.unwrap().unwrap();
    drop(mock);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("provider_unavailable"), "{stderr}");
}

#[tokio::test]
async fn exec_denies_without_a_terminal_and_allow_all_runs_without_asking() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let bash_call =
        || Reply::stream().tool_call("c1", "bash", ["{\"command\":\"echo made > made.txt\"}"]);
    mock.enqueue(bash_call());
    mock.enqueue(Reply::stream().text(["Could not."]));
    // Stdin is not a terminal here, as in a script or CI: nobody can be asked.
    let denied = exec(&env, &mock, &["Make it"]).await;
    assert!(denied.status.success());
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(stderr.contains("no terminal to ask"), "{stderr}");
    assert!(!env.cwd().join("made.txt").exists());

    mock.enqueue(bash_call());
    mock.enqueue(Reply::stream().text(["Made."]));
    let allowed = exec(&env, &mock, &["--allow-all", "Make it"]).await;
    assert!(allowed.status.success(), "{allowed:?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("made.txt")).unwrap(),
        "made\n"
    );
}
