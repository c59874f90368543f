//! `magi-code exec` answering approvals: at a terminal (under tmux) it offers allow
//! once, allow for this session, deny and deny with a message; without one it answers
//! `unavailable` and says how to allow such calls.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::*;
use crate::common::tmux::Tmux;
use crate::common::*;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

#[tokio::test]
async fn exec_without_a_terminal_answers_unavailable() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch made.txt")]));
    mock.enqueue(Reply::stream().text(["Could not."]));
    let env = env_for(&mock);
    // Stdin is not a terminal here, as in a script or CI: nobody can be asked.
    let output = tokio::process::Command::new(bin())
        .args(["exec", "Make it"])
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env(MODE_ENV, "ask")
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "mock-model")
        .env("OPENAI_BASE_URL", mock.base_url())
        .current_dir(env.cwd())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT, output).await.unwrap().unwrap();
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "bash touch made.txt: denied: no terminal to ask (use --allow-all or a \
             permission rule)"
        ),
        "{stderr}"
    );
    assert!(!env.cwd().join("made.txt").exists());
    let session = only_session(&env);
    assert_eq!(
        protections(&env, &session),
        ["denied; approval unavailable"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_at_a_terminal_offers_once_session_and_a_message() {
    let mock = MockServer::start().await;
    let write = json!({"path": "notes.txt", "content": "remember\n"}).to_string();
    mock.enqueue(
        calls(
            "bash",
            &[bash("b1", "touch made.txt"), bash("b2", "touch again.txt")],
        )
        .tool_call("w1", "write", [write.as_str()]),
    );
    mock.enqueue(Reply::stream().text(["All asked."]));
    let env = env_for(&mock);
    let vars = [
        ("MAGI_PROVIDER", "openai-chat".to_owned()),
        ("MAGI_MODEL", "mock-model".to_owned()),
        ("OPENAI_BASE_URL", mock.base_url()),
    ];
    // The shell keeps the window open after exec, to read its exit status.
    let script = format!(
        "'{}' exec 'Make them'; echo \"exec exited $?\"; sleep 60",
        bin()
    );
    let tmux = Tmux::start_command(&env, &vars, &["sh", "-c", &script]);
    let screen = tmux.wait_for("[s] allow for this session (bash(touch*))");
    assert!(
        screen.contains("asks to run bash touch made.txt"),
        "{screen}"
    );
    tmux.type_text("s");
    tmux.key("Enter");
    // The second command runs under the session rule; the write asks, with its diff.
    // The prompt is written whole: its last choice on the screen means all of it is.
    let screen = tmux.wait_for("[s] allow for this session (write(notes.txt))");
    assert!(screen.contains("asks to run write notes.txt"), "{screen}");
    assert!(screen.contains("+remember"), "{screen}");
    assert!(screen.contains("the change: +1 −0 lines"), "{screen}");
    tmux.type_text("m");
    tmux.key("Enter");
    tmux.wait_for("Message:");
    tmux.type_text("not in this repository");
    tmux.key("Enter");
    tmux.wait_for("exec exited 0");
    assert!(env.cwd().join("made.txt").exists());
    assert!(env.cwd().join("again.txt").exists());
    assert!(!env.cwd().join("notes.txt").exists());
    let outputs = tool_outputs(&mock.requests()[1].body);
    assert_eq!(
        outputs[2],
        "The call was not run: denied by user.\nThe user said: not in this repository"
    );
    let session = only_session(&env);
    assert_eq!(
        protections(&env, &session),
        ["allowed by user", "allowed by user", "denied by user"]
    );
}
