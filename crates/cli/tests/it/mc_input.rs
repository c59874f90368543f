//! Mission Control's input through the real binary in tmux, at 80 and 120 columns:
//! bursts of keys arriving whole at any length, lines typed without bracketed paste
//! as one paste, the prompt edited in `$EDITOR`, Ctrl-Z and back, the usual other
//! names of commands, and approvals answered by number with their countdown and bell.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{bash, calls};
use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use crate::exec::user_messages;
use magi_testkit::{MockServer, Reply};

/// The prompt the model was given in the `n`th request.
fn prompt_sent(mock: &MockServer, n: usize) -> String {
    let requests = mock.requests();
    user_messages(&requests[n].body).pop().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_characters_sent_as_keys_arrive_whole() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text(["Got it all."]));
        let env = TestEnv::new();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        // CJK and emoji among them: a character is not a byte.
        let text: String = (0..10_000)
            .map(|n| match n % 50 {
                0 => '日',
                25 => '🎉',
                _ => char::from(b'a' + (n % 26) as u8),
            })
            .collect();
        tmux.type_text(&text);
        // Far past what one read of the terminal holds: nothing waits for another key.
        tmux.wait_for("[pasted 10,000 chars]");
        tmux.key("Enter");
        tmux.wait_for("Got it all.");
        assert_eq!(prompt_sent(&mock, 0), text, "at {columns} columns");
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_typed_without_bracketed_paste_are_one_paste() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text(["Three lines read."]));
        let env = TestEnv::new();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        // A terminal without bracketed paste sends a carriage return per line break.
        tmux.type_text("first line\rsecond 日本語\rthird 🎉");
        tmux.wait_for("  third 🎉");
        let screen = tmux.wait_for("  second 日本語");
        assert!(screen.contains("› first line"), "{screen}");
        // Nothing was sent halfway, nothing queued.
        assert!(mock.requests().is_empty());
        assert!(!screen.contains("queued"), "{screen}");
        tmux.key("Enter");
        tmux.wait_for("Three lines read.");
        assert_eq!(prompt_sent(&mock, 0), "first line\nsecond 日本語\nthird 🎉");
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_g_edits_the_prompt_in_the_editor() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Edited."]));
    let env = TestEnv::new();
    let mut vars = vars(&mock);
    // An editor that edits without a screen: the file's text is changed in place.
    vars.push(("EDITOR", "sed -i s/draft/edited/".into()));
    vars.push(("VISUAL", String::new()));
    let tmux = Tmux::start_sized(&env, &vars, 80, 30);
    tmux.wait_for("idle ·");
    tmux.type_text("a draft 日本語");
    tmux.wait_for("› a draft 日本語");
    tmux.key("C-g");
    tmux.wait_for("› a edited 日本語");
    tmux.wait_for("prompt edited");
    tmux.key("Enter");
    tmux.wait_for("Edited.");
    assert_eq!(prompt_sent(&mock, 0), "a edited 日本語");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_gives_the_shell_its_terminal_and_fg_comes_back() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let tmux = Tmux::start_command(&env, &vars(&mock), &["bash", "--norc", "--noprofile"]);
    tmux.type_text(&format!("{} ", bin()));
    tmux.key("Enter");
    tmux.wait_for("idle ·");
    tmux.type_text("kept 🎉");
    tmux.wait_for("› kept 🎉");
    tmux.key("C-z");
    tmux.wait_for("Stopped");
    tmux.type_text("fg");
    tmux.key("Enter");
    // The screen is drawn whole again, the prompt as it was.
    tmux.wait_for("› kept 🎉");
    tmux.wait_for("idle ·");
    tmux.key("C-c");
    tmux.key("C-c");
    tmux.key("C-c");
    tmux.wait_for("Nothing was saved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_resume_and_exit_are_other_names_of_new_sessions_and_quit() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First."]));
    let env = TestEnv::new();
    let tmux = Tmux::start_command(&env, &vars(&mock), &["bash", "--norc", "--noprofile"]);
    tmux.type_text(&format!("{} ", bin()));
    tmux.key("Enter");
    tmux.wait_for("idle ·");
    tmux.type_text("hello");
    tmux.key("Enter");
    tmux.wait_for("First.");
    tmux.wait_for("idle ·");
    tmux.type_text("/clear");
    tmux.key("Enter");
    tmux.wait_for("new session");
    tmux.wait_gone("First.");
    tmux.type_text("/resume");
    tmux.key("Enter");
    tmux.wait_for("Sessions");
    tmux.key("Escape");
    // A key typed right after Esc would arrive with it as Alt and that key.
    tmux.wait_gone("Sessions of this directory");
    tmux.type_text("/exit");
    tmux.key("Enter");
    // Back at the shell: the new session never got a prompt.
    tmux.wait_for("Nothing was saved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_takes_numbers_and_enter_counts_down_and_rings() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
        mock.enqueue(calls("bash", &[bash("b2", "touch two.txt")]));
        mock.enqueue(Reply::stream().text(["Two asked."]));
        let env = TestEnv::new();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        let output = env.root().join("output.bin");
        tmux.record_output(&output);
        tmux.wait_for("idle ·");
        tmux.type_text("make 日本 files");
        tmux.key("Enter");
        tmux.wait_for("1 y allow once");
        tmux.wait_for("denied in 5");
        // The bell rang for it.
        let deadline = std::time::Instant::now() + WAIT;
        while !std::fs::read(&output).unwrap_or_default().contains(&0x07) {
            assert!(std::time::Instant::now() < deadline, "no bell");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // 3 is deny here (2 is "for this session").
        tmux.type_text("3");
        tmux.wait_for("denied: bash: touch one.txt");
        tmux.wait_for("? Allow bash: touch two.txt");
        // Right moves the highlight to the session answer; Enter takes it.
        tmux.key("Right");
        tmux.key("Enter");
        tmux.wait_for("Two asked.");
        assert!(!env.cwd().join("one.txt").exists());
        assert!(env.cwd().join("two.txt").exists());
        tmux.key("C-c");
    }
}
