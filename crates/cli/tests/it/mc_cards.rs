//! Mission Control's tool cards and approvals through the real binary in tmux: a
//! command's output in its card, approvals showing the command, answered for the
//! session (also after the session is reopened in a fresh backend), denied with a
//! message the model reads, and never answered by a key typed before they appeared.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{bash, calls, only_session, records};
use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};

/// How many calls of the session's log were put to the person.
fn asked(env: &TestEnv) -> usize {
    records(env, &only_session(env))
        .iter()
        .filter(|r| r["kind"] == "tool_call_state" && r["state"] == "awaiting_approval")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commands_output_shows_in_its_card_and_ctrl_o_expands_it() {
    let mock = MockServer::start().await;
    mock.enqueue(calls(
        "bash",
        &[bash("b1", "seq 1 7; printf '日本語 🎉\\n'; exit 3")],
    ));
    mock.enqueue(Reply::stream().text(["It failed."]));
    let env = TestEnv::new();
    // 80 columns, wide characters in the output: the card keeps them whole.
    let tmux = Tmux::start_sized(&env, &vars(&mock), 80, 40);
    tmux.wait_for("idle ·");
    tmux.type_text("run it");
    tmux.key("Enter");
    // Each part is waited for: a capture may catch a frame half written.
    tmux.wait_for("y allow once");
    // The prompt names the command.
    tmux.wait_for("? Allow bash: seq 1 7; printf '日本語 🎉\\n'; exit 3");
    tmux.type_text("y");
    tmux.wait_for("It failed.");
    // After the run the saved card shows the same: the command, its exit in words and
    // the lines it printed, never a wire name.
    tmux.wait_for("✗ bash seq 1 7; printf '日本語 🎉\\n'; exit 3  failed · exit 3");
    // The last six lines it printed, and a note that there is more.
    tmux.wait_for("│    日本語 🎉 ");
    tmux.wait_for("│    3 ");
    let screen = tmux.wait_for("… more lines · Ctrl-O expands");
    assert!(!screen.contains("│    2 "), "{screen}");
    assert!(!screen.contains("not_recorded"), "{screen}");
    // Ctrl-O shows all the card carries, and collapses it again.
    tmux.key("C-o");
    tmux.wait_for("Output lines: 8 lines");
    tmux.wait_for("$ seq 1 7; printf '日本語 🎉\\n'; exit 3");
    tmux.key("C-o");
    tmux.wait_for("Ctrl-O expands");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_for_the_session_the_same_command_runs_unasked_after_a_reopen() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "touch one.txt")]));
    mock.enqueue(Reply::stream().text(["Made one."]));
    mock.enqueue(calls("bash", &[bash("b2", "touch two.txt")]));
    mock.enqueue(Reply::stream().text(["Made two."]));
    let env = TestEnv::new();
    // A reserve just under what is left after the first turn: the second turn starts
    // in a fresh backend that reopened the session, with the rule read back from it.
    let mut vars = vars(&mock);
    vars.push(("MAGI_TUI_ID_RESERVE", "4092".into()));
    let tmux = Tmux::start(&env, &vars);
    tmux.wait_for("idle ·");
    tmux.type_text("make one");
    tmux.key("Enter");
    tmux.wait_for("adds the rule bash(touch*)");
    tmux.wait_for("? Allow bash: touch one.txt");
    tmux.wait_for("1 y allow once · 2 s allow for this session (adds the rule bash(touch*))");
    tmux.type_text("s");
    tmux.wait_for("Made one.");
    tmux.wait_for("idle ·");
    tmux.type_text("make two");
    tmux.key("Enter");
    tmux.wait_for("Made two.");
    tmux.wait_for("backend renewed");
    assert!(env.cwd().join("two.txt").exists());
    assert_eq!(asked(&env), 1, "only the first call was put to the person");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_with_a_message_reaches_the_model() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "rm -rf build")]));
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("clean up");
    tmux.key("Enter");
    tmux.wait_for("d deny with a message");
    tmux.type_text("d");
    tmux.wait_for("Enter deny with it");
    // The answer keys are text now.
    tmux.type_text("keep build; try cargo clean");
    tmux.wait_for("✎ keep build; try cargo clean");
    tmux.key("Enter");
    tmux.wait_for("Understood.");
    let requests = mock.requests();
    let told = requests[1].body.to_string();
    assert!(told.contains("keep build; try cargo clean"), "{told}");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_typed_before_an_approval_appears_never_answers_it() {
    let mock = MockServer::start().await;
    // The reply streams its text, then holds before its end: the call's approval
    // comes only once the test releases it.
    mock.enqueue(
        Reply::stream()
            .text(["Let me look."])
            .tool_call("b1", "bash", [bash("b1", "touch made.txt").1.as_str()])
            .held(),
    );
    mock.enqueue(Reply::stream().text(["Made it."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("make it");
    tmux.key("Enter");
    tmux.wait_for("Let me look.");
    // `y` while the reply still streams: a key for the composer, not an answer.
    tmux.type_text("y");
    tmux.wait_for("› y");
    mock.release();
    tmux.wait_for("? Allow bash: touch made.txt");
    tmux.wait_for("approval pending");
    assert!(!env.cwd().join("made.txt").exists());
    // The call waits for its answer; one typed now answers it.
    tmux.type_text("y");
    tmux.wait_for("Made it.");
    assert!(env.cwd().join("made.txt").exists());
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_command_is_listed_as_running_now() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("async_bash", &[bash("j1", "sleep 30")]));
    mock.enqueue(Reply::stream().text(["Started it."]));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle ·");
    tmux.type_text("start it");
    tmux.key("Enter");
    tmux.wait_for("? Allow async_bash: sleep 30");
    tmux.type_text("y");
    tmux.wait_for("Started it.");
    tmux.wait_for("idle ·");
    // The job outlives the turn: the activity area lists it with its time.
    tmux.wait_for("running now");
    tmux.wait_for("⏵ background job-1 sleep 30 · started");
    tmux.wait_for("✓ async_bash sleep 30  done · running in the background as job-1");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_shows_a_background_commands_newest_output_and_stops_it() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        let command = "for i in $(seq 1 30); do echo \"out $i 日本 🎉\"; done; sleep 30";
        mock.enqueue(calls("async_bash", &[bash("j1", command)]));
        mock.enqueue(Reply::stream().text(["Started it."]));
        let env = TestEnv::new();
        env.write_settings("[permissions]\nallow = [\"async_bash\"]\n");
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        tmux.type_text("start it");
        tmux.key("Enter");
        tmux.wait_for("Started it.");
        tmux.wait_for("idle ·");
        // `/jobs` opened and closed until its panel shows `wanted` (the job prints and
        // ends on its own clock), at most 50 times; the last panel seen.
        let jobs_until = |wanted: &str| {
            let mut screen = String::new();
            for _ in 0..50 {
                tmux.type_text("/jobs");
                tmux.key("Enter");
                screen = tmux.wait_for("Background commands");
                tmux.key("Escape");
                tmux.wait_gone("Background commands");
                if screen.contains(wanted) {
                    break;
                }
            }
            screen
        };
        // The job's newest lines, read from the backend while it runs.
        let screen = jobs_until("out 30 日本 🎉");
        assert!(screen.contains("job-1 · running"), "{screen}");
        assert!(screen.contains("out 30 日本 🎉"), "{screen}");
        assert!(screen.contains("… 10 earlier lines"), "{screen}");
        assert!(!screen.contains("out 10 日本"), "{screen}");
        tmux.type_text("/jobs stop 1");
        tmux.key("Enter");
        tmux.wait_for("job-1: stopping");
        // Stopped: a later look says so.
        let screen = jobs_until("job-1 · killed");
        assert!(screen.contains("job-1 · killed"), "{screen}");
        tmux.type_text("/jobs stop 7");
        tmux.key("Enter");
        tmux.wait_for("no background command job-7 in this backend");
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_commands_output_shows_in_its_card_as_it_comes() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(calls(
            "bash",
            &[bash(
                "b1",
                "for i in $(seq 1 40); do echo \"line $i 日本 🎉\"; sleep 0.1; done",
            )],
        ));
        mock.enqueue(Reply::stream().text(["All printed."]));
        let env = TestEnv::new();
        env.write_settings("[permissions]\nallow = [\"bash\"]\n");
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        tmux.type_text("count");
        tmux.key("Enter");
        // While it runs, its card shows its newest lines, in place.
        let running = tmux.wait_for("line 5 日本 🎉");
        assert!(running.contains("running"), "{running}");
        assert!(!running.contains("All printed."), "{running}");
        tmux.wait_for("line 12 日本 🎉");
        // Its end replaces them with what it printed last.
        tmux.wait_for("All printed.");
        tmux.wait_for("line 40 日本 🎉");
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_say_their_size_show_added_lines_first_and_an_approval_says_where_the_rest_is() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        // A 360-line write (past the 128 lines an approval carries), then an edit that
        // replaces eight lines with eight others.
        let content: String = (1..=360).map(|n| format!("line {n} 日本 🎉\n")).collect();
        mock.enqueue(Reply::stream().tool_call(
            "w1",
            "write",
            [serde_json::json!({"path": "big.txt", "content": content}).to_string()],
        ));
        let old: String = (1..=8).map(|n| format!("let old_{n} = {n};\n")).collect();
        let new: String = (1..=8).map(|n| format!("let new_{n} = {n};\n")).collect();
        mock.enqueue(
            Reply::stream().tool_call(
                "e1",
                "edit",
                [
                    serde_json::json!({"path": "code.rs", "old_text": old, "new_text": new})
                        .to_string(),
                ],
            ),
        );
        mock.enqueue(Reply::stream().text(["Both done."]));
        let env = TestEnv::new();
        std::fs::write(env.cwd().join("code.rs"), format!("fn main() {{}}\n{old}")).unwrap();
        env.write_settings("[permissions]\nallow = [\"edit\"]\n");
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 50);
        tmux.wait_for("idle ·");
        tmux.type_text("write and edit");
        tmux.key("Enter");
        // The approval counts the whole change, past the 128 lines it carries.
        tmux.wait_for("? Allow write: big.txt (+360 −0)");
        // The approval says what it shows and that the change goes on past it.
        tmux.wait_for("more lines here (v shows them)");
        tmux.wait_for("approval carries");
        tmux.type_text("v");
        tmux.wait_for("┌ Approval");
        // Everything the approval carries, to its end.
        tmux.key("End");
        tmux.wait_for("line 120 日本 🎉");
        tmux.key("Escape");
        tmux.wait_gone("┌ Approval");
        tmux.type_text("y");
        tmux.wait_for("Both done.");
        // Counted over the whole change, not the preview.
        tmux.wait_for("+360 −0");
        let screen = tmux.wait_for("+8 −8");
        // The edit's collapsed card leads with what it added.
        assert!(screen.contains("+let new_1 = 1;"), "{screen}");
        assert!(!screen.contains("-let old_1 = 1;"), "{screen}");
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cards_shows_every_card_in_full_with_every_row_and_where_the_rest_is() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(calls("bash", &[bash("b1", "printf '日本語 🎉\\n'")]));
        // A write longer than a card carries.
        let content: String = (1..=360).map(|n| format!("line {n} 日本 🎉\n")).collect();
        mock.enqueue(Reply::stream().tool_call(
            "w1",
            "write",
            [serde_json::json!({"path": "big.txt", "content": content}).to_string()],
        ));
        mock.enqueue(Reply::stream().text(["Both done."]));
        let env = TestEnv::new();
        env.write_settings("[permissions]\nallow = [\"bash\", \"write\"]\n");
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        tmux.type_text("print and write");
        tmux.key("Enter");
        tmux.wait_for("Both done.");
        // Expanded, a card leaves out the rows that say nothing happened.
        tmux.key("C-o");
        tmux.key("Home");
        let expanded = tmux.wait_for("$ printf '日本語 🎉\\n'");
        assert!(!expanded.contains("Command timeout:"), "{expanded}");
        tmux.key("End");
        tmux.key("C-o");
        tmux.type_text("/cards");
        tmux.key("Enter");
        tmux.wait_for("┌ Cards");
        // Opened at the newest card; at its end it says it was cut and where the whole
        // is.
        tmux.wait_for("✓ write big.txt");
        tmux.key("End");
        tmux.wait_for("no more of it");
        tmux.wait_for("whole change is in");
        // The first card, every row with its label.
        tmux.key("Home");
        tmux.wait_for("✓ bash printf");
        tmux.wait_for("Command timeout: not timed out");
        tmux.wait_for("日本語 🎉");
        tmux.key("Escape");
        tmux.wait_gone("┌ Cards");
        tmux.key("C-c");
    }
}
