//! Mission Control through the real binary in a real terminal: tmux runs `magi-code`
//! with no arguments against the mock model; keys go in with `send-keys` and the screen
//! comes back with `capture-pane`.

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
    tmux.wait_for("idle ·");
    tmux.type_text("please write it");
    tmux.key("Enter");
    tmux.wait_for("y allow once");
    tmux.type_text("y");
    let screen = tmux.wait_for("Wrote the file.");
    assert!(screen.contains("› please write it"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("out.txt")).unwrap(),
        "hello\n"
    );
    // After the run, the transcript is the saved history with its card, which keeps
    // the time the call was seen to take.
    tmux.wait_for("idle ·");
    let screen = tmux.wait_for("✓ write out.txt  done");
    assert!(
        screen.contains("+hello"),
        "the applied diff is shown: {screen}"
    );
    let card = screen
        .lines()
        .find(|line| line.contains("✓ write out.txt  done"))
        .unwrap();
    // `done · changes applied · 32ms`: the time comes last.
    let time = card
        .trim_end_matches([' ', '│'])
        .rsplit(" · ")
        .next()
        .unwrap_or_default();
    assert!(
        time.ends_with('s') && time.starts_with(|c: char| c.is_ascii_digit()),
        "the saved card keeps its time: {card}"
    );
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_for_the_session_spares_the_next_question() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
    mock.enqueue(Reply::stream().text(["Made one."]));
    mock.enqueue(calls("bash", &[bash("b2", "touch two.txt")]));
    mock.enqueue(Reply::stream().text(["Made two."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("make one");
    tmux.key("Enter");
    // The question shows the command and offers the backend's rule for the session.
    // Each part is waited for: a capture may catch a frame half written.
    tmux.wait_for("s allow for this session (adds the rule bash(touch*))");
    tmux.wait_for("? Allow bash: touch one.txt");
    tmux.wait_for("approval pending: y/1 once · s/2 this session · n/3 deny");
    tmux.type_text("s");
    tmux.wait_for("Made one.");
    // The reply shows before the run has ended; a prompt is taken only once it has.
    tmux.wait_for("idle ·");
    // The same command prefix in the next turn runs without a question.
    tmux.type_text("make two");
    tmux.key("Enter");
    tmux.wait_for("Made two.");
    assert!(env.cwd().join("one.txt").exists());
    assert!(env.cwd().join("two.txt").exists());
    let session = only_session(&env);
    let records = records(&env, &session);
    let asked = records
        .iter()
        .filter(|r| r["kind"] == "tool_call_state" && r["state"] == "awaiting_approval")
        .count();
    assert_eq!(asked, 1, "only the first call was put to the person");
    let rules: Vec<_> = records
        .iter()
        .filter(|r| r["kind"] == "session_rule")
        .map(|r| (r["effect"].clone(), r["rule"].clone()))
        .collect();
    assert_eq!(rules, [("allow".into(), "bash(touch*)".into())]);
    assert_eq!(
        protections(&env, &session),
        ["allowed by user", "allowed by user"]
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
    tmux.wait_for("idle ·");
    tmux.type_text("write something");
    tmux.key("Enter");
    tmux.wait_for("y allow once");
    tmux.key("Escape");
    tmux.wait_for("The turn was cancelled.");
    // The status line goes back to idle once the run has ended.
    let screen = tmux.wait_for("idle ·");
    assert!(!screen.contains("stopping"), "{screen}");
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
        tmux.wait_for("idle ·");
        tmux.type_text("first question");
        tmux.key("Enter");
        tmux.wait_for("First answer.");
        tmux.wait_for("idle ·");
        tmux.quit();
    }
    // A new Mission Control starts a new session; the picker reopens the old one.
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    assert!(!tmux.screen().contains("First answer."));
    tmux.type_text("/sessions");
    tmux.key("Enter");
    tmux.wait_for("Sessions of this directory");
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
    tmux.wait_for("idle ·");
    tmux.type_text("one");
    tmux.key("Enter");
    tmux.wait_for("First answer.");
    // The reply shows before the run has ended; a prompt is taken only once it has.
    tmux.wait_for("idle ·");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_is_answered_from_the_picker() {
    let mock = MockServer::start().await;
    let arguments = serde_json::json!({"questions": [
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "Postgres", "description": "a server"}, {"label": "SQLite"}]},
        {"question": "Which extras?", "multi_select": true,
         "options": [{"label": "cache"}, {"label": "metrics"}, {"label": "tracing"}]},
        {"question": "Which port?", "options": [{"label": "80"}, {"label": "8080"}]}
    ]})
    .to_string();
    mock.enqueue(Reply::stream().tool_call("q1", "ask_user", [arguments.as_str()]));
    mock.enqueue(Reply::stream().text(["Set up as asked."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("set it up");
    tmux.key("Enter");
    let screen = tmux.wait_for("The model asks (1 of 3) · Database");
    assert!(screen.contains("Postgres — a server"), "{screen}");
    // Each arrow is drawn before the next is sent: arrows read together are the
    // mouse wheel, not keys.
    tmux.key("Down");
    tmux.wait_for("▶ SQLite");
    tmux.key("Enter");
    tmux.wait_for("The model asks (2 of 3)");
    tmux.key("Space");
    // Each arrow is seen before the next is sent: arrows read together are the wheel.
    tmux.key("Down");
    tmux.wait_for("▶ [ ] metrics");
    tmux.key("Down");
    tmux.wait_for("▶ [ ] tracing");
    tmux.key("Space");
    tmux.wait_for("[x] tracing");
    tmux.key("Enter");
    tmux.wait_for("The model asks (3 of 3)");
    tmux.type_text("whatever is free");
    tmux.key("Enter");
    tmux.wait_for("Set up as asked.");
    assert_eq!(
        tool_outputs(&mock.requests()[1].body),
        [
            "The user answered:\n- Which database?: SQLite\n- Which extras?: cache; tracing\n\
          - Which port?: (in their own words) whatever is free"
        ]
    );
    tmux.key("C-c");
}
