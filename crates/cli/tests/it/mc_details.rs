//! The small things a person notices in Mission Control, through the real binary in
//! tmux at 80 and 120 columns: no stale cell after an emoji with a variation selector
//! or a joined emoji, queued prompts each on lines of their own, the status line (the
//! title after `--continue`, the context figure after Esc, notices cut at a word), a
//! card's time without the wait for its approval, the denial message and the model's
//! question with its answer on their cards, and the empty screen's orientation.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::time::Duration;

use crate::common::approval::{bash, calls};
use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};
use unicode_width::UnicodeWidthStr;

/// The rows inside the transcript's frame, without its borders.
fn inside(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter_map(|l| l.strip_prefix('│'))
        .map(|l| l.trim_end_matches('│').trim_end().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emoji_with_selectors_and_joins_leave_no_stale_cell() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text(["❤️❤️❤️ love", " 👨‍👩‍👧 family 日本 end"]));
        let env = TestEnv::new();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 30);
        // The empty screen's text is where the reply will be drawn: a cell the
        // terminal was not told to redraw would still show it.
        let empty = tmux.wait_for("Type a prompt");
        assert!(empty.contains("model openai-chat/mock-model"), "{empty}");
        tmux.type_text("hi");
        tmux.key("Enter");
        let screen = tmux.wait_for("family 日本 end");
        let row = inside(&screen)
            .into_iter()
            .find(|r| r.contains("love"))
            .unwrap();
        assert_eq!(row, "❤❤❤ love 👨👩👧 family 日本 end", "{screen}");
        // The composer too: the text it held before is gone whole.
        tmux.type_text("abcdefgh");
        tmux.wait_for("› abcdefgh");
        tmux.key("C-u");
        tmux.type_text("❤️ zz");
        let screen = tmux.wait_for("› ❤ zz");
        assert!(!screen.contains("defgh"), "{screen}");
        for line in screen.lines() {
            assert!(line.width() <= usize::from(columns), "{line:?}");
        }
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_empty_screen_says_which_magi_code_where_on_which_branch_and_which_model() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        let env = TestEnv::new();
        // A repository's `HEAD`, read without running git; the branch has wide
        // characters in its name.
        let git = env.cwd().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/機能/色\n").unwrap();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 30);
        let screen = tmux.wait_for("Type a prompt");
        let rows = inside(&screen);
        assert!(
            rows.iter()
                .any(|r| r.trim() == format!("magi-code {}", env!("CARGO_PKG_VERSION"))),
            "{screen}"
        );
        let folder = env
            .cwd()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            rows.iter()
                .any(|r| r.contains(&folder) && r.trim_end().ends_with("· branch 機能/色")),
            "{screen}"
        );
        assert!(
            rows.iter()
                .any(|r| r.trim() == "model openai-chat/mock-model"),
            "{screen}"
        );
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_prompts_show_each_on_lines_of_their_own() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First reply."]).held());
    mock.enqueue(Reply::stream().text(["Both read."]));
    let env = TestEnv::new();
    let tmux = Tmux::start_sized(&env, &vars(&mock), 80, 30);
    tmux.wait_for("idle ·");
    tmux.type_text("first");
    tmux.key("Enter");
    tmux.wait_for("working");
    tmux.type_text("second 日本");
    tmux.key("Enter");
    tmux.wait_for("› second 日本");
    tmux.type_text("third 🎉");
    tmux.key("Enter");
    let screen = tmux.wait_for("  › third 🎉");
    assert!(screen.contains("  › second 日本"), "{screen}");
    assert!(!screen.contains("日本third"), "{screen}");
    mock.release();
    tmux.wait_for("Both read.");
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_keeps_title_and_context_and_cuts_notices_at_a_word() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Counted."]).usage(1_200, 34));
    mock.enqueue_title(Reply::stream().text(["Parser 日本 fixes"]));
    mock.enqueue(
        Reply::stream()
            .text(["slow"])
            .chunk_delay(Duration::from_millis(50))
            .held(),
    );
    let env = TestEnv::new();
    {
        let tmux = Tmux::start_sized(&env, &vars(&mock), 120, 30);
        tmux.wait_for("idle ·");
        tmux.type_text("count");
        tmux.key("Enter");
        tmux.wait_for("Counted.");
        tmux.wait_for("Parser 日本 fixes");
        tmux.wait_for("context 1.2k");
        // A request stopped before it reported tokens keeps the figure.
        tmux.type_text("again");
        tmux.key("Enter");
        tmux.wait_for("working");
        tmux.key("Escape");
        tmux.wait_for("idle ·");
        let screen = tmux.wait_for("context 1.2k");
        assert!(screen.contains("Parser 日本 fixes"), "{screen}");
        tmux.quit();
    }
    // Continued later: the title, not the ID.
    let mut vars = vars(&mock);
    vars.truncate(3);
    let tmux = Tmux::start_command(&env, &vars, &[bin(), "--continue"]);
    tmux.wait_for("Parser 日本 fixes");
    tmux.resize(80, 30);
    // At 80 columns a long notice is cut after a whole word.
    tmux.type_text("/stauts");
    tmux.key("Enter");
    let screen = tmux.wait_for("unknown command /stauts");
    let status = screen.lines().last().unwrap();
    assert!(status.width() <= 80, "{status}");
    let notice = status.split(" · ").nth(1).unwrap();
    assert!(
        notice.ends_with("them") || notice.ends_with('…'),
        "cut mid-word: {status}"
    );
    tmux.key("C-u");
    tmux.quit();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cards_time_leaves_out_the_wait_for_its_approval() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "echo 日本 quick")]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new();
    let tmux = Tmux::start_sized(&env, &vars(&mock), 80, 30);
    tmux.wait_for("idle ·");
    tmux.type_text("run");
    tmux.key("Enter");
    tmux.wait_for("1 y allow once");
    // Waiting shows no time, however long the person takes.
    let waiting = tmux.wait_for("waiting for your approval");
    let header = waiting
        .lines()
        .find(|l| l.contains("waiting for your approval"))
        .unwrap();
    assert!(
        header
            .trim_end_matches('│')
            .trim_end()
            .ends_with("approval"),
        "{header}"
    );
    // The person takes their time: at least as long as this, measured.
    let asked = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(2_200));
    tmux.type_text("y");
    let waited = asked.elapsed();
    let screen = tmux.wait_for("done · exit 0 ·");
    let header = screen
        .lines()
        .find(|l| l.contains("done · exit 0"))
        .unwrap();
    // Had the wait been counted, the time shown would be at least the wait.
    let took = header.split("exit 0 · ").nth(1).unwrap();
    let shown = shown_duration(took).unwrap_or_else(|| panic!("no time in {header}"));
    assert!(
        shown < waited,
        "{header}: {shown:?} shown after a wait of {waited:?}"
    );
    tmux.key("C-c");
}

/// The duration a card's header writes at the start of `text` (`34ms`, `0.4s`, `12s`).
fn shown_duration(text: &str) -> Option<Duration> {
    let word = text.split_whitespace().next()?.trim_end_matches('│');
    if let Some(ms) = word.strip_suffix("ms") {
        return ms.parse().ok().map(Duration::from_millis);
    }
    word.strip_suffix('s')?
        .parse::<f64>()
        .ok()
        .map(Duration::from_secs_f64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_denial_message_and_the_answer_are_on_their_cards() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(calls("bash", &[bash("b1", "rm -rf build")]));
        mock.enqueue(
            Reply::stream().tool_call(
                "q1",
                "ask_user",
                [
                    serde_json::json!({"questions": [{"question": "Which one?", "header": "Pick",
                "options": [{"label": "日本"}, {"label": "🎉 party"}]}]})
                    .to_string(),
                ],
            ),
        );
        mock.enqueue(Reply::stream().text(["Understood."]));
        let env = TestEnv::new();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        tmux.wait_for("idle ·");
        tmux.type_text("clean up");
        tmux.key("Enter");
        tmux.wait_for("1 y allow once");
        tmux.type_text("d");
        tmux.wait_for("message to the model");
        tmux.type_text("keep the 日本 build");
        tmux.key("Enter");
        tmux.wait_for("Which one?");
        tmux.key("Down");
        tmux.key("Enter");
        tmux.wait_for("Understood.");
        // After the run, the saved cards say it too.
        tmux.wait_for("idle ·");
        let screen = tmux.wait_for("The user said: keep the 日本 build");
        assert!(screen.contains("→ 🎉 party"), "{screen}");
        assert!(screen.contains("? Pick: Which one?"), "{screen}");
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coloured_output_shows_in_its_colour() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        let command = r"printf '\033[1;31merror\033[0m: 日本 \033[38;5;208mamber\033[0m 🎉 \033[48;2;1;2;3mrgb\033[0m \033[4mend\033[24m\n'";
        mock.enqueue(calls("bash", &[bash("b1", command)]));
        mock.enqueue(Reply::stream().text(["Coloured."]));
        let env = TestEnv::new();
        env.write_settings("[permissions]\nallow = [\"bash(printf*)\"]\n");
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 30);
        tmux.wait_for("idle ·");
        tmux.type_text("colour");
        tmux.key("Enter");
        tmux.wait_for("Coloured.");
        let screen = tmux.wait_for("error: 日本 amber 🎉 rgb end");
        let styled = tmux.styled_screen();
        let output = styled
            .lines()
            // The output's line, not the command's (which shows the escapes as text).
            .find(|l| l.contains("error") && l.contains("rgb") && !l.contains("printf"))
            .unwrap_or_else(|| panic!("{screen}"));
        // Each word in its own colour, the text between them plain; tmux writes the
        // attributes and colours as it keeps them.
        for (word, sgr) in [
            ("error", "\u{1b}[1m\u{1b}[38;5;1m"),
            ("amber", "\u{1b}[38;5;208m"),
            ("rgb", "\u{1b}[48;2;1;2;3m"),
            ("end", "\u{1b}[4m"),
        ] {
            let at = output.find(word).unwrap();
            assert!(
                output[..at].ends_with(sgr),
                "{word} is not preceded by {sgr:?}: {output:?}"
            );
        }
        assert!(
            output.contains(": 日本 ") && output.contains(" 🎉 "),
            "{output:?}"
        );
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_output_shows_its_text_and_moves_nothing() {
    for columns in [80, 120] {
        let mock = MockServer::start().await;
        // Colour, a title, a screen clear and a cursor move, a hyperlink, a device
        // control string: every sequence goes whole, its text stays.
        let command = r"printf '\033[31mred\033[0m \033]0;owned\007\033[2J\033[Htext 日本 \033]8;;http://x\033\\link\033]8;;\033\\ \033P+q\033\\🎉 end\n'";
        mock.enqueue(calls("bash", &[bash("b1", command)]));
        mock.enqueue(Reply::stream().text(["Printed."]));
        let env = TestEnv::new();
        env.write_settings("[permissions]\nallow = [\"bash(printf*)\"]\n");
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 30);
        tmux.wait_for("idle ·");
        tmux.type_text("print");
        tmux.key("Enter");
        tmux.wait_for("Printed.");
        let screen = tmux.wait_for("red text 日本 link 🎉 end");
        // The output's line holds its text alone (the command above it shows the
        // sequences as the model wrote them, escaped).
        let output = inside(&screen)
            .into_iter()
            .find(|r| r.contains("red text"))
            .unwrap();
        assert_eq!(output.trim(), "red text 日本 link 🎉 end", "{screen}");
        assert!(
            screen.contains("magi-code"),
            "the screen was cleared: {screen}"
        );
        tmux.key("C-c");
    }
}
