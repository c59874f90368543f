//! Mission Control's pinned plan (`plan.todo`) through the real binary in tmux: the
//! model's `todo` list pinned above the composer at 80 columns with wide characters
//! (collapsed to the step in progress, Ctrl-O listing every step), kept when a later
//! list is refused, and shown again from the history when the session is reopened.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::only_session;
use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

fn todo(id: &str, items: Value) -> Reply {
    Reply::stream().tool_call(id, "todo", [json!({ "items": items }).to_string()])
}

/// The step in progress: longer than a row at 80 columns, wide characters in it.
const LONG_STEP: &str = "Rewrite the 字句解析器 so every token keeps its 位置情報 through the \
                         whole pipeline, then cover it with tests";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_is_pinned_above_the_composer_and_comes_back_with_the_session() {
    let mock = MockServer::start().await;
    mock.enqueue(todo(
        "t1",
        json!([
            {"text": "Read the parser 構文解析", "status": "done"},
            {"text": LONG_STEP, "status": "in_progress"},
            {"text": "Run the tests 🧪", "status": "pending"},
            {"text": "Update the docs", "status": "pending"},
            {"text": "Say what changed", "status": "pending"},
        ]),
    ));
    mock.enqueue(Reply::stream().text(["On it."]));
    // A later list that is refused leaves the plan as it was.
    mock.enqueue(todo(
        "t2",
        json!([{"text": "a", "status": "in_progress"}, {"text": "b", "status": "in_progress"}]),
    ));
    mock.enqueue(Reply::stream().text(["Fixed the list."]));
    let env = TestEnv::new();
    {
        let tmux = Tmux::start_sized(&env, &vars(&mock), 80, 30);
        tmux.wait_for("idle ·");
        tmux.type_text("fix the parser");
        tmux.key("Enter");
        tmux.wait_for("On it.");
        tmux.wait_for(" plan · 1 of 5 done · Ctrl-O all ");
        // Collapsed: the step in progress alone, cut to the row with an ellipsis.
        let screen = tmux.wait_for("[>] Rewrite the 字句解析器");
        let row = screen
            .lines()
            .find(|l| l.contains("[>] Rewrite"))
            .unwrap()
            .trim_end();
        assert!(row.ends_with('…'), "{row}");
        assert!(!screen.contains("[ ] Run the tests"), "{screen}");
        // The plan sits above the composer: its row comes after the transcript's.
        let lines: Vec<&str> = screen.lines().collect();
        let plan_at = lines
            .iter()
            .position(|l| l.contains("[>] Rewrite"))
            .unwrap();
        let reply_at = lines.iter().position(|l| l.contains("On it.")).unwrap();
        assert!(plan_at > reply_at, "{screen}");
        // Ctrl-O lists every step.
        tmux.key("C-o");
        tmux.wait_for(" plan · 1 of 5 done ─");
        tmux.wait_for("[x] Read the parser 構文解析");
        tmux.wait_for("[ ] Run the tests 🧪");
        tmux.wait_for("[ ] Say what changed");
        tmux.key("C-o");
        tmux.wait_for(" plan · 1 of 5 done · Ctrl-O all ");
        tmux.wait_gone("[ ] Say what changed");

        tmux.type_text("tidy the list");
        tmux.key("Enter");
        tmux.wait_for("Fixed the list.");
        let screen = tmux.wait_for("idle ·");
        assert!(screen.contains(" plan · 1 of 5 done"), "{screen}");
        assert!(screen.contains("[>] Rewrite the 字句解析器"), "{screen}");
        tmux.quit();
    }
    // Reopened, the plan comes back from the saved cards.
    let id = only_session(&env);
    let script = format!("\"$0\" --resume {id}; echo \"exit status $?\"; exec sleep 600");
    let tmux = Tmux::launch_sized(&env, &vars(&mock), &["sh", "-c", &script, bin()], 120, 30);
    tmux.wait_for("Fixed the list.");
    tmux.wait_for(" plan · 1 of 5 done · Ctrl-O all ");
    let screen = tmux.wait_for("[>] Rewrite the 字句解析器");
    // At 120 columns the whole step fits.
    assert!(screen.contains("cover it with tests"), "{screen}");
    tmux.wait_for("idle ·");
    tmux.key("C-c");
    tmux.key("C-c");
    tmux.wait_for("exit status 0");
}
