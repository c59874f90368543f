//! Hooks through `magi-code exec` against the mock model (`docs/hooks.md`): a
//! `pre_tool_use` hook blocking one command and letting another run, a `post_tool_use`
//! hook logging every call, `user_prompt_submit` adding context or refusing the turn,
//! `updated_arguments`, a timeout, project hooks held until approved (and again once
//! edited), redaction, a subagent's hooks, `pre_compact` and `approval_requested`. The
//! tests over the protocol itself are in `hooks_protocol`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

use super::exec::{exec, session_of, user_messages};
use crate::common::*;

/// A workspace script, made executable; hooks run it as `./name`.
pub(crate) fn script(env: &TestEnv, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = env.cwd().join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The records of kind `kind` in a session's log.
pub(crate) fn records(env: &TestEnv, session: &str, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(log_path(env, session))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["kind"] == kind)
        .collect()
}

pub(crate) fn bash(command: &str) -> String {
    json!({ "command": command }).to_string()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn a_pre_tool_use_hook_blocks_one_command_and_lets_another_run_and_post_logs_both() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("c1", "bash", [bash("touch blocked && rm -rf nothing")])
            .tool_call("c2", "bash", [bash("touch allowed")]),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    script(
        &env,
        "policy",
        "input=$(cat)\ncase \"$input\" in *'rm -rf'*) echo 'rm -rf is not allowed here' >&2; exit 2;; esac\n",
    );
    script(&env, "log", "cat >> calls.log\necho >> calls.log\n");
    env.write_settings(
        "[[hooks.pre_tool_use]]\nmatcher = \"ba*\"\ncommand = \"./policy\"\n\
         [[hooks.post_tool_use]]\ncommand = \"./log\"\n",
    );
    let output = exec(&env, &mock, &["--allow-all", "clean up"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");

    // The blocked command never ran; the other did.
    assert!(!env.cwd().join("blocked").exists());
    assert!(env.cwd().join("allowed").exists());
    // The model was told why, in the hook's words.
    let requests = mock.requests();
    let told = tool_outputs(&requests[1].body);
    assert!(
        told[0].contains("denied by hook: rm -rf is not allowed here"),
        "{told:?}"
    );
    // The log records the refusal as a denial with no permission decision.
    let session = session_of(&output);
    let results = records(&env, &session, "tool_result");
    assert_eq!(results[0]["outcome"], "denied");
    assert_eq!(
        results[0]["summary"],
        "denied by hook: rm -rf is not allowed here"
    );
    assert_eq!(results[0]["protection"], Value::Null);
    assert_eq!(results[1]["outcome"], "completed");
    // The post hook saw every call, with what a hook's input carries.
    let log = std::fs::read_to_string(env.cwd().join("calls.log")).unwrap();
    let calls: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(calls.len(), 2, "{log}");
    assert_eq!(calls[0]["event"], "post_tool_use");
    assert_eq!(calls[0]["invocation"], "exec");
    assert_eq!(calls[0]["session_id"], session.as_str());
    assert_eq!(calls[0]["tool_name"], "bash");
    assert_eq!(calls[0]["outcome"], "denied");
    assert_eq!(calls[1]["outcome"], "completed");
    assert_eq!(calls[1]["tool_input"]["command"], "touch allowed");
    assert!(calls[1]["run_id"].as_str().is_some_and(|r| !r.is_empty()));
}

#[tokio::test]
async fn a_prompt_hook_adds_context_the_request_carries_or_refuses_the_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Noted."]));
    let env = TestEnv::new();
    script(
        &env,
        "context",
        "case \"$(cat)\" in *forbidden*) echo 'that topic is off limits' >&2; exit 2;; esac\n\
         echo 'the branch is main'\n",
    );
    env.write_settings("[[hooks.user_prompt_submit]]\ncommand = \"./context\"\n");

    let output = exec(&env, &mock, &["say hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let sent = user_messages(&mock.requests()[0].body);
    assert_eq!(sent[0], "say hi");
    assert_eq!(
        sent[1],
        "<hook_note event=\"user_prompt_submit\">\nthe branch is main\n</hook_note>"
    );
    // The note is recorded, so later turns replay it.
    let session = session_of(&output);
    let notes = records(&env, &session, "hook_note");
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0]["event"], "user_prompt_submit");

    let output = exec(&env, &mock, &["the forbidden topic"]).await;
    assert_ne!(output.status.code(), Some(0), "{output:?}");
    assert!(
        stderr(&output).contains("that topic is off limits"),
        "{}",
        stderr(&output)
    );
    // Refused before anything reached the model.
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn updated_arguments_replace_the_models_when_the_schema_takes_them() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [bash("touch original")]));
    mock.enqueue(Reply::stream().tool_call("c2", "bash", [bash("touch second")]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    script(
        &env,
        "rewrite",
        "case \"$(cat)\" in\n\
         *original*) echo '{\"updated_arguments\": {\"command\": \"touch rewritten\"}}';;\n\
         *) echo '{\"updated_arguments\": {\"cmd\": \"touch wrong\"}}';;\n\
         esac\n",
    );
    env.write_settings("[[hooks.pre_tool_use]]\ncommand = \"./rewrite\"\n");
    let output = exec(&env, &mock, &["--allow-all", "make files"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(env.cwd().join("rewritten").exists());
    assert!(!env.cwd().join("original").exists());
    // Arguments the tool's schema does not take are refused, and the model's run.
    assert!(env.cwd().join("second").exists());
    assert!(!env.cwd().join("wrong").exists());
    let err = stderr(&output);
    assert!(err.contains("the model's arguments are used"), "{err}");
    // What ran is what the person is shown: the call's card names the hook's command.
    assert!(err.contains("\"touch rewritten\": exit 0"), "{err}");
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_and_reported_and_the_work_goes_on() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [bash("touch ran")]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    env.write_settings(
        "[[hooks.pre_tool_use]]\ncommand = \"sleep 30; touch hook-finished\"\ntimeout_secs = 1\n",
    );
    let output = exec(&env, &mock, &["--allow-all", "go"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(env.cwd().join("ran").exists());
    assert!(!env.cwd().join("hook-finished").exists());
    let err = stderr(&output);
    assert!(
        err.contains("did not finish within 1s and was killed"),
        "{err}"
    );
}

#[tokio::test]
async fn a_project_hook_runs_only_once_approved_and_not_after_an_edit() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    std::fs::create_dir_all(env.cwd().join(".magi")).unwrap();
    let settings = env.cwd().join(".magi/settings.toml");
    std::fs::write(
        &settings,
        "[[hooks.user_prompt_submit]]\ncommand = \"touch hook-ran\"\n",
    )
    .unwrap();

    mock.enqueue(Reply::stream().text(["One."]));
    let output = exec(&env, &mock, &["first"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!env.cwd().join("hook-ran").exists());
    let err = stderr(&output);
    assert!(
        err.contains("project hook 1 (user_prompt_submit at ") && err.contains("not approved"),
        "{err}"
    );

    let listed = env.run_cli(&["hooks", "list"]).await;
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.starts_with("1\tneeds approval"), "{listed}");
    let approved = env.run_cli(&["hooks", "approve", "1"]).await;
    assert!(approved.status.success(), "{approved:?}");

    mock.enqueue(Reply::stream().text(["Two."]));
    let output = exec(&env, &mock, &["second"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(env.cwd().join("hook-ran").exists());
    assert!(!stderr(&output).contains("not approved"));

    // An edited hook is another definition: held again.
    std::fs::write(
        &settings,
        "[[hooks.user_prompt_submit]]\ncommand = \"touch edited-hook-ran\"\n",
    )
    .unwrap();
    mock.enqueue(Reply::stream().text(["Three."]));
    let output = exec(&env, &mock, &["third"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!env.cwd().join("edited-hook-ran").exists());
    assert!(stderr(&output).contains("not approved"));

    let doctor = env.run_cli(&["doctor"]).await;
    let said = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert!(said.contains("project hook 1"), "{said}");
    assert!(said.contains("magi-code hooks approve 1"), "{said}");
}

#[tokio::test]
async fn what_hooks_print_is_redacted_before_the_model_or_the_person_sees_it() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Fine."]));
    let env = TestEnv::new();
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    script(
        &env,
        "leaky",
        &format!("echo 'token {token}'\necho 'oops {token}' >&2\n"),
    );
    env.write_settings(
        "[[hooks.user_prompt_submit]]\ncommand = \"./leaky\"\n\
         [[hooks.turn_end]]\ncommand = \"./leaky; exit 1\"\n",
    );
    let output = exec(&env, &mock, &["hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let body = mock.requests()[0].body.to_string();
    assert!(!body.contains(token), "{body}");
    assert!(body.contains("hook_note"), "{body}");
    let err = stderr(&output);
    assert!(!err.contains(token), "{err}");
    // The failed turn_end hook is still reported, its secret withheld.
    assert!(err.contains("turn_end hook"), "{err}");
    let log = std::fs::read_to_string(log_path(&env, &session_of(&output))).unwrap();
    assert!(!log.contains(token));
}

#[tokio::test]
async fn a_subagents_calls_and_its_end_run_hooks_as_the_subagents() {
    let mock = MockServer::start().await;
    let task = json!({"subagent": "helper", "task": "List the workspace."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    mock.enqueue(Reply::stream().tool_call("l1", "list", ["{\"path\":\".\"}"]));
    mock.enqueue(Reply::stream().text(["Listed."]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    script(&env, "log", "cat >> hooks.log\necho >> hooks.log\n");
    env.write_settings(
        "[profiles.helper]\nsubagent = true\ndescription = \"Lists things.\"\ntools = [\"list\"]\n\
         [[hooks.pre_tool_use]]\nmatcher = \"list\"\ncommand = \"./log\"\n\
         [[hooks.subagent_stop]]\nmatcher = \"help*\"\ncommand = \"./log\"\n",
    );
    let output = exec(&env, &mock, &["--allow-all", "delegate"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let log = std::fs::read_to_string(env.cwd().join("hooks.log")).unwrap();
    let logged: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 2, "{log}");
    assert_eq!(logged[0]["event"], "pre_tool_use");
    assert_eq!(logged[0]["tool_name"], "list");
    assert_eq!(logged[0]["invocation"], "subagent");
    assert_eq!(logged[1]["event"], "subagent_stop");
    assert_eq!(logged[1]["profile"], "helper");
    assert_eq!(logged[1]["outcome"], "completed");
    assert_eq!(logged[1]["invocation"], "subagent");
}

#[tokio::test]
async fn a_pre_compact_hook_runs_before_a_requested_compaction() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["EARLIER-ANSWER"]));
    let compact = json!({"operation": "compact"}).to_string();
    mock.enqueue(Reply::stream().tool_call("c1", "magi_control", [compact]));
    mock.enqueue(Reply::stream().text(["SUMMARY-TEXT: the user asked twice."]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    script(&env, "log", "cat >> hooks.log\necho >> hooks.log\n");
    env.write_settings("[[hooks.pre_compact]]\ncommand = \"./log\"\n");
    let output = exec(&env, &mock, &["first question"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!env.cwd().join("hooks.log").exists());
    let output = exec(&env, &mock, &["--continue", "make room"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(mock.requests()[3].body.to_string().contains("SUMMARY-TEXT"));
    let log = std::fs::read_to_string(env.cwd().join("hooks.log")).unwrap();
    let logged: Value = serde_json::from_str(log.trim()).unwrap();
    assert_eq!(logged["event"], "pre_compact");
    assert_eq!(logged["trigger"], "requested");
}

#[tokio::test]
async fn an_approval_requested_hook_runs_when_the_person_is_asked() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [bash("touch asked")]));
    mock.enqueue(Reply::stream().text(["Fine."]));
    let env = TestEnv::new();
    script(&env, "log", "cat >> hooks.log\necho >> hooks.log\n");
    env.write_settings("[[hooks.approval_requested]]\nmatcher = \"bash\"\ncommand = \"./log\"\n");
    // No terminal to ask on: exec denies the approval, after the hook ran.
    let output = exec(&env, &mock, &["make a file"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(!env.cwd().join("asked").exists());
    let log = std::fs::read_to_string(env.cwd().join("hooks.log")).unwrap();
    let logged: Value = serde_json::from_str(log.trim()).unwrap();
    assert_eq!(logged["event"], "approval_requested");
    assert_eq!(logged["tool_name"], "bash");
    assert!(
        logged["summary"].as_str().unwrap().contains("touch asked"),
        "{logged}"
    );
}
