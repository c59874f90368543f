//! `magi-code exec`: one turn from the command line, through the same backend — the
//! reply alone on stdout, progress on stderr, the prompt's sources and bounds, the
//! selection for one run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::{Output, Stdio};

use tokio::io::AsyncWriteExt;

use crate::common::*;
use magi_testkit::{MockServer, Reply};

/// `magi-code exec ARGS` in `env`'s workspace against `mock`, as a script runs it.
pub(crate) fn exec_command(
    env: &TestEnv,
    mock: &MockServer,
    args: &[&str],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(bin());
    command
        .arg("exec")
        .args(args)
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "mock-model")
        .env("OPENAI_BASE_URL", mock.base_url())
        // The suite's approval mode, when the test's environment has one.
        .envs(env.vars().filter(|(key, _)| *key == MODE_ENV))
        .current_dir(env.cwd())
        .kill_on_drop(true);
    command
}

/// Runs `magi-code exec ARGS` with `stdin` (nothing: `/dev/null`) and waits for it.
pub(crate) async fn exec_with(
    env: &TestEnv,
    mock: &MockServer,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> Output {
    let mut command = exec_command(env, mock, args);
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        // The prompt may be refused before all of it is read: a broken pipe is fine.
        let _ = pipe.write_all(bytes).await;
        drop(pipe);
    }
    tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap()
}

/// Runs `magi-code exec ARGS` with stdin on `/dev/null`.
pub(crate) async fn exec(env: &TestEnv, mock: &MockServer, args: &[&str]) -> Output {
    exec_with(env, mock, args, None).await
}

/// The session ID of the `session ID` line on stderr.
pub(crate) fn session_of(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("session "))
        .unwrap_or_else(|| panic!("no session line: {stderr}"))
        .to_owned()
}

/// The user messages of a Chat Completions request body, in order, without the turns'
/// context notes.
pub(crate) fn user_messages(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .filter(|text| !is_turn_context(text))
        .collect()
}

#[tokio::test]
async fn stdout_is_the_reply_alone_and_progress_goes_to_stderr() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Let me look."]).tool_call(
        "c1",
        "read",
        ["{\"path\":\"a.txt\"}"],
    ));
    let two_lines = "{\"command\":\"echo one\\necho two\"}";
    mock.enqueue(Reply::stream().tool_call("c2", "bash", [two_lines]));
    mock.enqueue(Reply::stream().text(["The file ", "says hello."]));
    let env = TestEnv::new();
    std::fs::write(env.cwd().join("a.txt"), "hello\n").unwrap();
    let output = exec(&env, &mock, &["--allow-all", "What does a.txt say?"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // The command's output and the cards stay off stdout: the reply alone.
    assert_eq!(
        String::from_utf8(output.stdout.clone()).unwrap(),
        "The file says hello.\n"
    );
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{stderr}");
    let session = session_of(&output);
    assert!(
        log_path(&env, &session).exists(),
        "the session line names the log"
    );
    assert_eq!(lines[1], "Let me look.");
    // One line per tool call: the tool and its main argument (a file tool's path, a
    // command's first line from its card), the outcome, the time taken.
    let timed = |rest: &str| rest.ends_with(" ms)") || rest.ends_with(" s)");
    let read = lines[2].strip_prefix("✓ read a.txt: 1 line (").unwrap();
    assert!(timed(read), "{stderr}");
    let bash = lines[3]
        .strip_prefix("✓ bash \"echo one…\": exit 0 (")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(timed(bash), "{stderr}");

    // Quiet: the same reply, nothing on stderr.
    mock.enqueue(Reply::stream().text(["Quietly."]));
    let quiet = exec(&env, &mock, &["-q", "Again"]).await;
    assert_eq!(quiet.status.code(), Some(0), "{quiet:?}");
    assert_eq!(String::from_utf8(quiet.stdout).unwrap(), "Quietly.\n");
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "");

    // `--json` negotiates no cards: its frames are the base protocol's events.
    mock.enqueue(Reply::stream().tool_call("c3", "bash", [two_lines]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let json = exec(&env, &mock, &["--json", "--allow-all", "Once more"]).await;
    assert_eq!(json.status.code(), Some(0), "{json:?}");
    let events: Vec<String> = String::from_utf8(json.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["event"].to_string())
        .collect();
    assert!(events.iter().any(|e| e == "\"activity\""), "{events:?}");
    assert!(
        !events.iter().any(|e| e.contains("tool.card")),
        "{events:?}"
    );
    let stderr = String::from_utf8(json.stderr).unwrap();
    // Without cards the label names the command, quoted as a card's would be.
    assert!(
        stderr.contains("✓ bash \"echo one…\": exit 0 ("),
        "{stderr}"
    );
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
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("the run failed"), "{stderr}");
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
    assert!(
        stderr.contains("✗ bash \"echo made > made.txt\": denied"),
        "{stderr}"
    );
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

#[tokio::test]
async fn the_prompt_comes_from_stdin_when_it_is_dash_or_piped() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    mock.enqueue(Reply::stream().text(["One."]));
    let dash = exec_with(&env, &mock, &["-"], Some(b"From a file\n")).await;
    assert_eq!(dash.status.code(), Some(0), "{dash:?}");
    mock.enqueue(Reply::stream().text(["Two."]));
    let piped = exec_with(&env, &mock, &[], Some("Piped in, ünïcode".as_bytes())).await;
    assert_eq!(piped.status.code(), Some(0), "{piped:?}");
    assert_eq!(String::from_utf8(piped.stdout).unwrap(), "Two.\n");
    let prompts: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| user_messages(&r.body).last().unwrap().clone())
        .collect();
    assert_eq!(prompts, ["From a file\n", "Piped in, ünïcode"]);
}

#[tokio::test]
async fn an_empty_or_oversize_prompt_is_refused_before_anything_is_sent() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let over = "x".repeat(20_480);
    // The arguments, stdin, and what stderr must say.
    type Case<'a> = (&'a [&'a str], Option<&'a [u8]>, &'a str);
    let cases: [Case<'_>; 5] = [
        (&["   "], None, "the prompt is empty"),
        (&["-"], Some(b"\n\n"), "the prompt is empty"),
        (&[], Some(b""), "the prompt is empty"),
        (
            &[over.as_str()],
            None,
            "the prompt is 20,480 bytes, over the limit of 16,384 bytes by 4,096; put long \
             text in a file in this directory and ask the model to read it",
        ),
        (
            &["-"],
            Some(over.as_bytes()),
            "the prompt is 20,480 bytes, over the limit of 16,384 bytes by 4,096",
        ),
    ];
    for (args, stdin, message) in cases {
        let output = exec_with(&env, &mock, args, stdin).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty());
    }
    // Nothing was sent: no backend started (MC_HOME untouched), no model request.
    assert!(!env.mc_home().exists());
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn model_and_provider_choose_the_selection_for_one_run() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    mock.enqueue(Reply::stream().text(["Hi."]));
    let output = exec(&env, &mock, &["--model", "other-model", "Hello"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(mock.requests()[0].body["model"], "other-model");

    // A provider that is not defined is named, and nothing is sent.
    let unknown = exec(&env, &mock, &["--provider", "no-such-provider", "Hello"]).await;
    assert_eq!(unknown.status.code(), Some(1), "{unknown:?}");
    assert_eq!(mock.requests().len(), 1);

    // The Responses API instead of Chat Completions, for this run only.
    mock.enqueue(Reply::stream().text(["Hi."]));
    let mut command = exec_command(
        &env,
        &mock,
        &["--provider", "openai", "--model", "gpt-x", "Hello"],
    );
    command
        .env("OPENAI_API_KEY", "sk-test")
        .stdin(Stdio::null());
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let request = &mock.requests()[1];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.body["model"], "gpt-x");
}
