//! Mission Control's `/undo` and `/rewind` through the real binary in a real terminal
//! (tmux) against the mock model: each previews what it would put back, and only
//! `confirm` does it; `/rewind` continues in a forked session and keeps the original.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

/// Types a command and presses Enter.
fn command(tmux: &Tmux, text: &str) {
    tmux.type_text(text);
    tmux.key("Enter");
}

/// A reply writing `content` to `path`, then one saying `said`.
fn enqueue_write(mock: &MockServer, id: &str, path: &str, content: &str, said: &str) {
    let arguments = json!({ "path": path, "content": content }).to_string();
    mock.enqueue(Reply::stream().tool_call(id, "write", [arguments.as_str()]));
    mock.enqueue(Reply::stream().text([said]));
}

/// An environment whose calls run without asking, with `notes.txt` in its workspace.
fn env_with_notes() -> TestEnv {
    let env = TestEnv::new().without(MODE_ENV);
    env.write_settings("[permissions]\nmode = \"allow-all\"\n");
    std::fs::write(env.cwd().join("notes.txt"), "original\n").unwrap();
    env
}

fn notes(env: &TestEnv) -> String {
    std::fs::read_to_string(env.cwd().join("notes.txt")).unwrap()
}

/// The session logs of the test's working directory.
fn session_logs(env: &TestEnv) -> Vec<String> {
    let mut logs: Vec<String> = std::fs::read_dir(workspace_dir(env))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|name| name.strip_suffix(".jsonl").map(str::to_owned))
        .collect();
    logs.sort();
    logs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_previews_then_puts_the_last_turns_files_back() {
    let mock = MockServer::start().await;
    enqueue_write(&mock, "w1", "notes.txt", "edited\n", "Edited the notes.");
    let env = env_with_notes();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "/undo");
    tmux.wait_for("nothing to undo: this session has no turns");
    command(&tmux, "edit the notes");
    tmux.wait_for("Edited the notes.");
    tmux.wait_for("idle ·");
    assert_eq!(notes(&env), "edited\n");

    // Confirming before a preview does nothing.
    command(&tmux, "/undo confirm");
    tmux.wait_for("/undo first shows what it would put back");
    assert_eq!(notes(&env), "edited\n");

    command(&tmux, "/undo");
    let screen = tmux.wait_for("Undo turn 1");
    assert!(screen.contains("«edit the notes»"), "{screen}");
    assert!(screen.contains("restore  notes.txt"), "{screen}");
    assert!(
        screen.contains("Enter (or /undo confirm) puts these files back; Esc leaves them as"),
        "{screen}"
    );
    // The preview changed nothing.
    assert_eq!(notes(&env), "edited\n");
    tmux.key("Enter");
    tmux.wait_for("put back 1 file: the workspace is as it was before turn 1");
    assert_eq!(notes(&env), "original\n");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_goes_back_to_an_earlier_turn_in_a_forked_session() {
    let mock = MockServer::start().await;
    enqueue_write(&mock, "w1", "notes.txt", "first edit\n", "First done.");
    enqueue_write(&mock, "w2", "notes.txt", "second edit\n", "Second done.");
    mock.enqueue(Reply::stream().text(["Third done."]));
    let env = env_with_notes();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "first change");
    tmux.wait_for("First done.");
    tmux.wait_for("idle ·");
    command(&tmux, "second change");
    tmux.wait_for("Second done.");
    tmux.wait_for("idle ·");
    let original = session_logs(&env);
    assert_eq!(original.len(), 1);
    let original_log = std::fs::read(log_path(&env, &original[0])).unwrap();

    command(&tmux, "/rewind");
    let screen = tmux.wait_for("Turns of this session");
    assert!(screen.contains("1  first change"), "{screen}");
    assert!(screen.contains("2  second change"), "{screen}");
    tmux.key("Escape");
    tmux.wait_for("Enter send");
    command(&tmux, "/rewind 2");
    let screen = tmux.wait_for("Rewind to before turn 2");
    assert!(screen.contains("restore  notes.txt"), "{screen}");
    assert_eq!(notes(&env), "second edit\n");
    // Esc leaves the preview; the typed command does what Enter would.
    tmux.key("Escape");
    tmux.wait_for("Enter send");
    command(&tmux, "/rewind confirm");
    tmux.wait_for("rewound to before turn 2: 1 file put back");
    assert_eq!(notes(&env), "first edit\n");

    // A new session holds the first turn; the original is as it was.
    let logs = session_logs(&env);
    assert_eq!(logs.len(), 2, "{logs:?}");
    // Its records stay as they were; the restore's note is appended after them, so
    // reopened, its model is told the files were put back.
    let after = std::fs::read(log_path(&env, &original[0])).unwrap();
    assert!(
        after.starts_with(&original_log),
        "the original was rewritten"
    );
    let added = String::from_utf8_lossy(&after[original_log.len()..]).into_owned();
    assert_eq!(added.lines().count(), 1, "{added}");
    assert!(
        added.contains("\"kind\":\"checkpoint_restored\""),
        "{added}"
    );
    let forked = logs.iter().find(|l| **l != original[0]).unwrap();
    command(&tmux, "third change");
    tmux.wait_for("Third done.");
    tmux.wait_for("idle ·");
    let log = std::fs::read_to_string(log_path(&env, forked)).unwrap();
    assert!(log.contains("\"kind\":\"session_forked\""), "{log}");
    assert!(
        log.contains("first change") && log.contains("third change"),
        "{log}"
    );
    assert!(!log.contains("second change"), "{log}");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_checkpoints_off_undo_and_rewind_say_so() {
    let mock = MockServer::start().await;
    enqueue_write(&mock, "w1", "notes.txt", "edited\n", "Edited the notes.");
    let env = env_with_notes();
    env.write_settings("[permissions]\nmode = \"allow-all\"\n[checkpoints]\nenabled = false\n");
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    command(&tmux, "edit the notes");
    tmux.wait_for("Edited the notes.");
    tmux.wait_for("idle ·");
    command(&tmux, "/undo");
    tmux.wait_for("/undo: checkpoints are off in the settings, so nothing was recorded");
    assert_eq!(notes(&env), "edited\n");
    command(&tmux, "/rewind");
    tmux.wait_for("checkpoints are off in the settings ([checkpoints] enabled = false)");
    assert!(!env.mc_home().join("checkpoints").exists());
}
