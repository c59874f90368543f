//! Mission Control's approval modes under tmux: Shift+Tab cycles the mode the status
//! line shows, at 120 and 80 columns, and the new mode decides the next call;
//! `/permissions` lists the rules in force and removes a session rule, after which its
//! calls ask again.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{bash, calls, only_session, protections, records};
use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_tab_cycles_the_mode_the_status_line_shows_and_the_next_call_follows_it() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "w1",
        "write",
        ["{\"path\":\"out.txt\",\"content\":\"hello\\n\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Wrote the file."]));
    // The suite's `ask` is the backend's default here.
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle · ask mode ·");
    tmux.key("BTab");
    tmux.wait_for("auto: edits in this directory and sandboxed commands run without asking");
    tmux.wait_for("· auto mode ·");
    tmux.type_text("please write it");
    tmux.key("Enter");
    tmux.wait_for("Wrote the file.");
    tmux.wait_for("idle ·");
    assert!(!tmux.screen().contains("allow once"), "{}", tmux.screen());
    assert!(env.cwd().join("out.txt").exists());
    let session = only_session(&env);
    assert_eq!(protections(&env, &session), ["allowed automatically"]);
    // The switch made before the first turn is in the log, before that turn.
    let records = records(&env, &session);
    let change = records
        .iter()
        .position(|r| r["kind"] == "permission_mode")
        .unwrap();
    assert_eq!(records[change]["previous"], "ask");
    assert_eq!(records[change]["mode"], "auto");
    let turn = records
        .iter()
        .position(|r| r["kind"] == "turn_started")
        .unwrap();
    assert!(change < turn);
    // At 80 columns the notice names the mode whole, and the cycle goes round.
    tmux.resize(80, 30);
    for words in [
        "allow-all: everything runs without asking",
        "plan: no file changes, commands confined read-only",
        "ask: every change, command and web call asks first",
    ] {
        tmux.key("BTab");
        tmux.wait_for(words);
    }
    tmux.quit();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissions_lists_the_rules_and_removes_a_session_rule() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
    mock.enqueue(Reply::stream().text(["Made one."]));
    mock.enqueue(calls("bash", &[bash("b2", "touch two.txt")]));
    mock.enqueue(Reply::stream().text(["Made two."]));
    let env = TestEnv::new();
    env.write_settings("[permissions]\ndeny = [\"bash(rm *)\"]\n");
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("make one");
    tmux.key("Enter");
    tmux.wait_for("s allow for this session (adds the rule bash(touch*))");
    tmux.type_text("s");
    tmux.wait_for("Made one.");
    tmux.wait_for("idle ·");
    tmux.type_text("/permissions");
    tmux.key("Enter");
    tmux.wait_for("1. allow bash(touch*)");
    let screen = tmux.wait_for("deny  bash(rm *)");
    assert!(screen.contains("ask: every change"), "{screen}");
    tmux.key("Escape");
    tmux.wait_gone("1. allow bash(touch*)");
    tmux.type_text("/permissions remove 1");
    tmux.key("Enter");
    tmux.wait_for("removed bash(touch*): such calls ask again");
    // The same command prefix asks again.
    tmux.type_text("make two");
    tmux.key("Enter");
    tmux.wait_for("? Allow bash: touch two.txt");
    tmux.type_text("y");
    tmux.wait_for("Made two.");
    let session = only_session(&env);
    let kinds: Vec<String> = records(&env, &session)
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    let revoked = kinds
        .iter()
        .position(|k| k == "session_rule_revoked")
        .unwrap();
    let second = kinds.iter().rposition(|k| k == "turn_started").unwrap();
    assert!(revoked < second, "{kinds:?}");
    assert_eq!(
        protections(&env, &session),
        ["allowed by user", "allowed by user"]
    );
    tmux.quit();
}
