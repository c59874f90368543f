//! The sandbox through the real binary on this kernel: what a command may write and
//! reach in each mode, what the model and the card are told, the call that asks to run
//! outside it, background jobs, a sandboxed MCP server, the file tools' roots, and the
//! degraded path. On a kernel without Landlock every test says so and returns, unless
//! `MAGI_SANDBOX_EXPECTED=1` (set by `.ci/run` when the kernel offers it) makes that a
//! failure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::approval::{env_for, until_approval};
use crate::common::*;
use crate::exec::exec_command;
use magi_protocol::cards::Block;
use magi_protocol::messages::{ApprovalAnswerParams, Event, RunOutcome};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

/// Whether this kernel offers the sandbox; when it does not, says so on stderr (the
/// test then returns), or fails when `MAGI_SANDBOX_EXPECTED=1` says it must.
pub(crate) fn available() -> bool {
    let output = std::process::Command::new(bin())
        .args(["__launch", "--probe"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&output.stdout).into_owned();
    let offered = line.starts_with("landlock ")
        && !line.starts_with("landlock none")
        && line.contains("seccomp yes");
    if !offered {
        assert!(
            std::env::var("MAGI_SANDBOX_EXPECTED").as_deref() != Ok("1"),
            "MAGI_SANDBOX_EXPECTED=1 but the kernel offers no sandbox: {line}"
        );
        eprintln!("skipped: this kernel offers no sandbox ({})", line.trim());
    }
    offered
}

/// A directory outside the temporary directories and the workspace, which no
/// sandboxed command may write.
pub(crate) use crate::common::outside_dir;

/// `magi-code exec --allow-all PROMPT` against `mock` with `vars` added.
pub(crate) async fn exec_all(env: &TestEnv, mock: &MockServer, vars: &[(&str, &str)]) -> Output {
    let mut command = exec_command(env, mock, &["--allow-all", "Go"]);
    command
        .envs(vars.iter().copied())
        .env("PATH", std::env::var("PATH").unwrap())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .unwrap()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    output
}

pub(crate) fn bash(id: &str, command: &str) -> Reply {
    Reply::stream().tool_call(
        id,
        "bash",
        [json!({ "command": command }).to_string().as_str()],
    )
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The tool results the model was given in the last request.
pub(crate) fn last_told(mock: &MockServer) -> Vec<String> {
    tool_outputs(&mock.requests().last().unwrap().body)
}

fn write_inside_and_outside(outside: &Path) -> String {
    format!(
        "echo in > inside.txt && echo out > {}/outside.txt",
        outside.display()
    )
}

#[tokio::test]
async fn writes_inside_the_workspace_succeed_outside_fail_and_the_model_is_told() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let outside = outside_dir();
    mock.enqueue(bash("c1", &write_inside_and_outside(outside.path())));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    assert!(env.cwd().join("inside.txt").exists());
    assert!(!outside.path().join("outside.txt").exists());
    let told = last_told(&mock);
    assert!(told[0].contains("Permission denied"), "{told:?}");
    assert!(
        told[0].contains("the sandbox (workspace-write; network none) may have refused this"),
        "{told:?}"
    );
    assert!(told[0].contains("\"sandbox\": \"off\""), "{told:?}");
    assert_eq!(sandbox_facts(&env), ["workspace-write; network none"]);
}

/// The sandbox recorded with each command result of the workspace's sessions.
pub(crate) fn sandbox_facts(env: &TestEnv) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(workspace_dir(env)).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(session) = name.strip_suffix(".jsonl") else {
            continue;
        };
        for record in crate::common::approval::records(env, session) {
            if let Some(sandbox) = record["facts"]["sandbox"].as_str() {
                found.push(sandbox.to_owned());
            }
        }
    }
    found
}

#[tokio::test]
async fn read_only_blocks_workspace_writes_and_off_allows_all() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::outside_temp();
    let outside = outside_dir();
    mock.enqueue(bash(
        "c1",
        "echo in > inside.txt; echo tmp > \"$(mktemp)\" && echo tmp-ok",
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[("MAGI_SANDBOX", "read-only")]).await;
    assert!(!env.cwd().join("inside.txt").exists());
    let told = last_told(&mock);
    assert!(
        told[0].contains("tmp-ok"),
        "temporary files stay writable: {told:?}"
    );
    assert!(
        told[0].contains("inside.txt: Permission denied"),
        "{told:?}"
    );
    assert_eq!(sandbox_facts(&env), ["read-only; network none"]);

    mock.enqueue(bash("c2", &write_inside_and_outside(outside.path())));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[("MAGI_SANDBOX", "off")]).await;
    assert!(env.cwd().join("inside.txt").exists());
    assert!(outside.path().join("outside.txt").exists());
}

/// A command that listens on its own loopback and connects to itself, then connects to
/// `port` on the machine's loopback and to an address beyond it.
fn own_server_then_outside(port: &str) -> String {
    format!(
        "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); \
         s.listen(); socket.create_connection(s.getsockname()); print('own server reached')\"; \
         (exec 3<>/dev/tcp/127.0.0.1/{port} && echo machine server reached); \
         (exec 3<>/dev/tcp/192.0.2.1/80 && echo outside reached)"
    )
}

#[tokio::test]
async fn a_loopback_connect_fails_unless_the_network_setting_allows_it() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let port = mock
        .base_url()
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    mock.enqueue(bash("c1", &connect));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    let told = last_told(&mock);
    assert!(!told[0].contains("connected"), "{told:?}");
    assert!(told[0].contains("Operation not permitted"), "{told:?}");
    assert!(told[0].contains("may have refused this"), "{told:?}");

    // Under `loopback` a command has a network of its own: its own servers, nothing else.
    env.write_settings("[sandbox]\nnetwork = \"loopback\"\n");
    mock.enqueue(bash("c2", &own_server_then_outside(&port)));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    let told = last_told(&mock);
    assert!(told[0].contains("own server reached"), "{told:?}");
    assert!(!told[0].contains("machine server reached"), "{told:?}");
    assert!(told[0].contains("Connection refused"), "{told:?}");
    assert!(!told[0].contains("outside reached"), "{told:?}");
    assert!(told[0].contains("Network is unreachable"), "{told:?}");
    assert!(told[0].contains("a network of its own"), "{told:?}");
    assert!(
        sandbox_facts(&env).contains(&"workspace-write; network loopback".to_owned()),
        "{:?}",
        sandbox_facts(&env)
    );

    // `all` reaches the machine's servers.
    env.write_settings("[sandbox]\nnetwork = \"all\"\n");
    mock.enqueue(bash("c3", &connect));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    assert!(last_told(&mock)[0].contains("connected"));

    // Without user namespaces `loopback` cannot have a network of its own, and the card
    // and a notice say so.
    env.write_settings("[sandbox]\nnetwork = \"loopback\"\n");
    mock.enqueue(bash("c4", &connect));
    mock.enqueue(Reply::stream().text(["Done."]));
    let output = exec_all(&env, &mock, &[("MAGI_SANDBOX_NO_USERNS", "1")]).await;
    let told = last_told(&mock);
    assert!(told[0].contains("connected"), "{told:?}");
    let limited = "workspace-write; network loopback; destinations not limited";
    assert!(
        sandbox_facts(&env).contains(&limited.to_owned()),
        "{:?}",
        sandbox_facts(&env)
    );
    assert!(
        stderr(&output).contains("they may open IP sockets to any destination"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn async_bash_is_confined() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let outside = outside_dir();
    let command = format!(
        "echo out > {}/outside.txt; echo $? > done.txt",
        outside.path().display()
    );
    mock.enqueue(Reply::stream().tool_call(
        "a1",
        "async_bash",
        [json!({ "command": command }).to_string().as_str()],
    ));
    // The job dies with the backend, so the turn waits (bounded) for its mark before it
    // ends: a foreground command polls for the file the job writes last.
    mock.enqueue(Reply::stream().tool_call(
        "b1",
        "bash",
        [json!({ "command": "for i in $(seq 400); do [ -s done.txt ] && exit 0; sleep 0.05; done; exit 1" })
            .to_string()
            .as_str()],
    ));
    mock.enqueue(Reply::stream().text(["Started."]));
    exec_all(&env, &mock, &[]).await;
    let done = env.cwd().join("done.txt");
    let deadline = std::time::Instant::now() + WAIT;
    while !std::fs::read_to_string(&done).is_ok_and(|text| text.ends_with('\n')) {
        assert!(std::time::Instant::now() < deadline, "the job never ended");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(std::fs::read_to_string(&done).unwrap(), "1\n");
    assert!(!outside.path().join("outside.txt").exists());
}

#[tokio::test]
async fn file_tools_refuse_paths_outside_the_roots_unless_a_rule_names_them() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::outside_temp();
    let outside = outside_dir();
    let target = outside.path().join("notes.txt");
    let write = |id: &str, path: &Path| {
        Reply::stream().tool_call(
            id,
            "write",
            [json!({ "path": path, "content": "x\n" })
                .to_string()
                .as_str()],
        )
    };
    mock.enqueue(write("w1", &target));
    mock.enqueue(Reply::stream().text(["Could not."]));
    exec_all(&env, &mock, &[]).await;
    assert!(!target.exists());
    let told = last_told(&mock);
    assert!(
        told[0].contains("outside the sandbox's writable roots"),
        "{told:?}"
    );

    // Read-only keeps the workspace from the file tools too.
    let inside = env.cwd().join("inside.txt");
    mock.enqueue(write("w2", &inside));
    mock.enqueue(Reply::stream().text(["Could not."]));
    exec_all(&env, &mock, &[("MAGI_SANDBOX", "read-only")]).await;
    assert!(!inside.exists());

    // An allow rule whose pattern names the path lets the file tools write there.
    env.write_settings(&format!(
        "[permissions]\nallow = [\"write({}/**)\"]\n",
        outside.path().display()
    ));
    mock.enqueue(write("w3", &target));
    mock.enqueue(Reply::stream().text(["Written."]));
    exec_all(&env, &mock, &[]).await;
    assert!(target.exists(), "{:?}", last_told(&mock));
}

#[tokio::test]
async fn running_outside_the_sandbox_asks_even_under_allow_all_and_runs_unconfined() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let outside = outside_dir();
    let command = format!("echo out > {}/outside.txt", outside.path().display());
    mock.enqueue(
        Reply::stream().tool_call(
            "b1",
            "bash",
            [json!({ "command": command, "sandbox": "off" })
                .to_string()
                .as_str()],
        ),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock).var("MAGI_ALLOW_ALL", "1");
    let mut backend = env.spawn();
    backend
        .initialize(&[
            "session.create",
            "turn.start",
            "approval.answer",
            "shutdown",
        ])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Go").await;
    let mut events = Vec::new();
    let request = until_approval(&mut backend, &mut events).await;
    assert!(
        request.summary.starts_with("run outside the sandbox: "),
        "{}",
        request.summary
    );
    assert!(!outside.path().join("outside.txt").exists());
    let answer = ApprovalAnswerParams {
        session_id: session.clone(),
        run_id: run,
        approval_id: request.approval_id,
        allow: true,
        scope: None,
        message: None,
        unavailable: None,
    };
    backend
        .call::<methods::ApprovalAnswer>(&answer)
        .await
        .unwrap()
        .unwrap();
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(outside.path().join("outside.txt").exists());
    shutdown_clean(&mut backend).await;
    assert_eq!(sandbox_facts(&env), ["off (asked by the call)"]);
}

#[tokio::test]
async fn the_degraded_path_gives_its_notice_once_and_obeys_required() {
    // Runs on every kernel: the test setting makes the sandbox unavailable.
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let outside = outside_dir();
    mock.enqueue(
        bash("c1", "echo one > one.txt").tool_call(
            "c2",
            "bash",
            [json!({ "command": "echo two > two.txt" })
                .to_string()
                .as_str()],
        ),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let unavailable = [("MAGI_SANDBOX_UNAVAILABLE", "1")];
    let output = exec_all(&env, &mock, &unavailable).await;
    let stderr = stderr(&output);
    assert_eq!(
        stderr
            .matches("notice: The sandbox (workspace-write) is not in force")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("(MAGI_SANDBOX_UNAVAILABLE is set)"),
        "{stderr}"
    );
    assert!(env.cwd().join("one.txt").exists() && env.cwd().join("two.txt").exists());

    env.write_settings("[sandbox]\nrequired = true\n");
    mock.enqueue(bash("c3", &write_inside_and_outside(outside.path())));
    mock.enqueue(Reply::stream().text(["Refused."]));
    exec_all(&env, &mock, &unavailable).await;
    assert!(!env.cwd().join("inside.txt").exists());
    let told = last_told(&mock);
    assert!(told[0].contains("The sandbox is required"), "{told:?}");
}

#[tokio::test]
async fn a_sandboxed_mcp_server_is_confined() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let outside = outside_dir();
    let env = crate::mcp::env_for(&mock).var("MAGI_PROVIDER", "openai-chat");
    let server = |sandbox: bool, mark: &str| {
        format!(
            "[mcp.servers.mock]\ncommand = \"bash\"\nargs = [\"-c\", \"echo x > {}/{mark}; exec {}\"]\n\
             sandbox = {sandbox}\n",
            outside.path().display(),
            crate::mcp::mock_binary().display()
        )
    };
    for (sandbox, mark) in [(true, "confined"), (false, "free")] {
        env.write_settings(&server(sandbox, mark));
        crate::mcp::mcp_command(&env, &["approve", "mock"]);
        mock.enqueue(Reply::stream().text(["Hello."]));
        exec_all(&env, &mock, &[]).await;
    }
    assert!(!outside.path().join("confined").exists());
    assert!(outside.path().join("free").exists());
}

#[tokio::test]
async fn the_card_shows_the_sandbox_applied_in_a_block_of_its_own() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    mock.enqueue(bash("c1", "echo hi"));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock).var("MAGI_ALLOW_ALL", "1");
    let mut backend = env.spawn();
    backend
        .initialize(&[
            "session.create",
            "turn.start",
            "history.page",
            "shutdown",
            "tool.cards",
        ])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Go").await;
    let mut events = Vec::new();
    let finished = until_finished(&mut backend, &mut events).await;
    let live = events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::ToolCard(card) => Some(card.card.clone()),
            _ => None,
        })
        .unwrap();
    let saved = saved_cards(&mut backend, &session, &finished.revision.unwrap()).await;
    shutdown_clean(&mut backend).await;
    for card in [live, saved[0].clone()] {
        let results: Vec<Vec<(String, Option<String>)>> = card
            .blocks
            .iter()
            .filter_map(|block| match block {
                Block::Results(results) => Some(
                    results
                        .rows
                        .iter()
                        .map(|row| (row.label.clone(), row.value.clone()))
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        // The specification's fixed rows first, as always; the sandbox last, alone.
        assert_eq!(results[0].len(), 4, "{results:?}");
        assert_eq!(results[1].len(), 5, "{results:?}");
        assert_eq!(
            results.last().unwrap(),
            &[(
                "Sandbox".to_owned(),
                Some("workspace-write; network none".to_owned())
            )],
            "{results:?}"
        );
    }
}

#[tokio::test]
async fn doctor_says_what_commands_reach_under_loopback_and_warns_when_it_is_anything() {
    if !available() {
        return;
    }
    let env = TestEnv::new();
    env.write_settings("[sandbox]\nnetwork = \"loopback\"\n");
    let loopback = env.run_cli(&["doctor"]).await;
    let text = String::from_utf8_lossy(&loopback.stdout);
    assert!(
        text.contains("ok       sandbox: commands run in workspace-write; network loopback (")
            && text.contains("commands have a network of their own"),
        "{text}"
    );
    let env = env.var("MAGI_SANDBOX_NO_USERNS", "1");
    let unlimited = env.run_cli(&["doctor"]).await;
    let text = String::from_utf8_lossy(&unlimited.stdout);
    assert!(
        text.contains(
            "warning  sandbox: workspace-write; network loopback; destinations not limited"
        ) && text.contains("network = \"all\" for commands that may reach any host"),
        "{text}"
    );
}

#[tokio::test]
async fn doctor_reports_the_mode_in_force_the_landlock_abi_and_seccomp() {
    if !available() {
        return;
    }
    let env = TestEnv::new();
    let output = env.run_cli(&["doctor", "--json"]).await;
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let sandbox = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|check| check["name"] == "sandbox")
        .unwrap()
        .clone();
    assert_eq!(sandbox["status"], "ok", "{sandbox}");
    let message = sandbox["message"].as_str().unwrap();
    assert!(
        message.starts_with("commands run in workspace-write; network none (Landlock ABI "),
        "{message}"
    );
    assert!(message.contains("seccomp available"), "{message}");
    assert!(
        message.contains("commands may open Unix sockets only"),
        "{message}"
    );
    assert!(message.contains("commands only when it is also in [sandbox] writable_roots"));

    let env = env.var("MAGI_SANDBOX_UNAVAILABLE", "1");
    let degraded = env.run_cli(&["doctor"]).await;
    let text = String::from_utf8_lossy(&degraded.stdout);
    assert!(
        text.contains(
            "warning  sandbox: off (unavailable): The sandbox (workspace-write) is not in force"
        ),
        "{text}"
    );

    env.write_settings("[sandbox]\nmode = \"strict\"\n");
    let bad = env.run_cli(&["doctor"]).await;
    let text = String::from_utf8_lossy(&bad.stdout);
    assert!(
        text.contains(":2:8: key `sandbox.mode`: unknown variant `strict`"),
        "{text}"
    );
}

/// A command a Code Mode script runs (`tools.bash`) is confined like a direct one.
#[tokio::test]
async fn a_code_mode_scripts_commands_are_confined() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let outside = outside_dir();
    let command = write_inside_and_outside(outside.path());
    let script = format!(
        "try {{ return await tools.bash({{command: {}}}); }} catch (e) {{ return String(e); }}",
        json!(command)
    );
    mock.enqueue(Reply::stream().tool_call(
        "s1",
        "code_mode",
        [json!({ "code": script }).to_string().as_str()],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    assert!(env.cwd().join("inside.txt").exists());
    assert!(!outside.path().join("outside.txt").exists());
    let told = last_told(&mock);
    assert!(told[0].contains("Permission denied"), "{told:?}");
    assert_eq!(sandbox_facts(&env), ["workspace-write; network none"]);
}
