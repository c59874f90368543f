//! Mission Control through the real binary in a real terminal: tmux runs `magi-code`
//! with no arguments against the mock model; keys go in with `send-keys` and the screen
//! comes back with `capture-pane`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::tmux::Tmux;
use crate::common::*;
use magi_testkit::{MockServer, Reply};

fn vars(mock: &MockServer) -> Vec<(&'static str, String)> {
    vec![
        ("MAGI_PROVIDER", "openai-chat".into()),
        ("MAGI_MODEL", "mock-model".into()),
        ("OPENAI_BASE_URL", mock.base_url()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_with_an_approval_answered_by_a_key() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "w1",
        "write",
        ["{\"path\":\"out.txt\",\"content\":\"hello\\n\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Wrote ", "the file."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle");
    tmux.type_text("please write it");
    tmux.key("Enter");
    tmux.wait_for("press y to allow");
    tmux.type_text("y");
    let screen = tmux.wait_for("Wrote the file.");
    assert!(screen.contains("› please write it"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("out.txt")).unwrap(),
        "hello\n"
    );
    // After the run, the transcript is the saved history with its card.
    let screen = tmux.wait_for("write: completed");
    assert!(
        screen.contains("+hello"),
        "the applied diff is shown: {screen}"
    );
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_stops_the_running_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "w1",
        "write",
        ["{\"path\":\"out.txt\",\"content\":\"x\"}"],
    ));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle");
    tmux.type_text("write something");
    tmux.key("Enter");
    tmux.wait_for("press y to allow");
    tmux.key("Escape");
    tmux.wait_for("The turn was cancelled.");
    assert!(!env.cwd().join("out.txt").exists());
    // The composer works again after the stop.
    tmux.type_text("next prompt");
    tmux.wait_for("› next prompt");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_reopened_from_the_picker() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First answer."]));
    let env = TestEnv::new();
    {
        let tmux = Tmux::start(&env, &vars(&mock));
        tmux.wait_for("idle");
        tmux.type_text("first question");
        tmux.key("Enter");
        tmux.wait_for("First answer.");
        tmux.key("C-c");
    }
    // A new Mission Control starts a new session; the picker reopens the old one.
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle");
    assert!(!tmux.screen().contains("First answer."));
    tmux.key("C-o");
    tmux.wait_for("Sessions of this directory:");
    tmux.key("Enter");
    let screen = tmux.wait_for("First answer.");
    assert!(screen.contains("› first question"), "{screen}");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_backend_takes_over_before_request_ids_run_out() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First answer."]));
    mock.enqueue(Reply::stream().text(["Second answer."]));
    let env = TestEnv::new();
    // A reserve just under what is left after the first turn: the second turn starts
    // in a fresh backend that reopened the same session.
    let mut vars = vars(&mock);
    vars.push(("MAGI_TUI_ID_RESERVE", "4092".into()));
    let tmux = Tmux::start(&env, &vars);
    tmux.wait_for("idle");
    tmux.type_text("one");
    tmux.key("Enter");
    tmux.wait_for("First answer.");
    tmux.type_text("two");
    tmux.key("Enter");
    let screen = tmux.wait_for("Second answer.");
    assert!(screen.contains("backend renewed"), "{screen}");
    assert!(
        screen.contains("First answer."),
        "the session was reopened: {screen}"
    );
    // The session kept both turns.
    let logs: Vec<_> = std::fs::read_dir(workspace_dir(&env)).unwrap().collect();
    assert_eq!(logs.len(), 1);
    tmux.key("C-c");
}
