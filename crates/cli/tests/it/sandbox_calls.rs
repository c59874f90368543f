//! The sandbox as calls meet it beyond a plain command, through the real binary on this
//! kernel: a `bash` call moved to the background keeps its sandbox (the job's end is
//! recorded with it and told the refusal), and a Code Mode script's file-tool calls are
//! let outside the roots by `[permissions.code_mode]`'s allow rules, not `[permissions]`'s.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use crate::sandbox::{available, exec_all, last_told, outside_dir, sandbox_facts};
use magi_testkit::{MockServer, Reply};
use serde_json::json;

#[tokio::test]
async fn a_bash_call_moved_to_the_background_keeps_its_sandbox() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let outside = outside_dir();
    let gate = env.cwd().join("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .unwrap();
    assert!(made.success());
    // The job fails to write outside, then waits at the gate; the second call opens
    // the gate only once the job holds it, so the refusal is on its stderr by then.
    let job = format!(
        "echo out > {}/outside.txt; read line < gate; exit 1",
        outside.path().display()
    );
    mock.enqueue(
        Reply::stream().tool_call(
            "c1",
            "bash",
            [json!({ "command": job, "background_after_ms": 1 })
                .to_string()
                .as_str()],
        ),
    );
    mock.enqueue(Reply::stream().tool_call(
        "c2",
        "bash",
        [json!({ "command": "echo go > gate" }).to_string().as_str()],
    ));
    // Ended or not, the job is concluded when this call returns.
    mock.enqueue(Reply::stream().tool_call(
        "c3",
        "bash_kill",
        [json!({ "job": "job-1" }).to_string().as_str()],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    assert!(!outside.path().join("outside.txt").exists());
    let told: Vec<String> = mock
        .requests()
        .iter()
        .map(|request| request.body.to_string())
        .collect();
    let ended = told
        .iter()
        .find(|body| body.contains("[background job job-1 ended"))
        .unwrap_or_else(|| panic!("the job's end was never told: {told:?}"));
    assert!(
        ended.contains("the sandbox (workspace-write; network none) may have refused this"),
        "{ended}"
    );
    // The two calls and the job's end, each with the sandbox it ran in.
    assert_eq!(
        sandbox_facts(&env),
        ["workspace-write; network none"; 3],
        "{told:?}"
    );
}

#[tokio::test]
async fn a_code_mode_scripts_file_tools_follow_the_code_mode_allow_rules() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::outside_temp();
    let outside = outside_dir();
    let target = outside.path().join("notes.txt");
    let script = format!(
        "try {{ return await tools.write({{path: {}, content: \"x\\n\"}}); }} \
         catch (e) {{ return String(e); }}",
        json!(target)
    );
    let call = || {
        Reply::stream().tool_call(
            "s1",
            "code_mode",
            [json!({ "code": script }).to_string().as_str()],
        )
    };
    let rule = format!("allow = [\"write({}/**)\"]\n", outside.path().display());

    // A rule of [permissions] decides direct calls, not a script's.
    env.write_settings(&format!("[permissions]\n{rule}"));
    mock.enqueue(call());
    mock.enqueue(Reply::stream().text(["Could not."]));
    exec_all(&env, &mock, &[]).await;
    assert!(!target.exists());
    let told = last_told(&mock);
    assert!(
        told[0].contains("outside the sandbox's writable roots"),
        "{told:?}"
    );

    env.write_settings(&format!("[permissions.code_mode]\n{rule}"));
    mock.enqueue(call());
    mock.enqueue(Reply::stream().text(["Written."]));
    exec_all(&env, &mock, &[]).await;
    assert!(target.exists(), "{:?}", last_told(&mock));
}
