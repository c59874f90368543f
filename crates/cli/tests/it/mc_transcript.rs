//! Mission Control's transcript through the real binary in tmux: scrolling back
//! through a long reply (keys and the wheel), the view staying put while output
//! arrives below, wide characters wrapped by width, and replies as markdown.

use std::time::{Duration, Instant};

use unicode_width::UnicodeWidthStr;

use crate::common::tmux::{Tmux, mock_vars as vars};
use crate::common::*;
use magi_testkit::{MockServer, Reply};

/// A reply of `count` numbered lines, one delta each.
fn numbered(count: usize) -> Vec<String> {
    (1..=count)
        .map(|n| format!("reply line {n:03}\n"))
        .collect()
}

/// The transcript's rows as shown: the lines between the transcript's borders, the
/// borders taken off.
fn body(screen: &str) -> Vec<String> {
    screen
        .lines()
        .skip(1)
        .take_while(|line| !line.starts_with('└'))
        .map(|line| {
            let line = line.strip_prefix('│').unwrap_or(line);
            line.strip_suffix('│').unwrap_or(line).trim_end().to_owned()
        })
        .collect()
}

/// The composer's first row: the one under the last top border.
fn composer(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines.iter().rposition(|l| l.starts_with('┌')).unwrap_or(0);
    lines.get(top + 1).copied().unwrap_or_default().to_owned()
}

/// Sends a prompt and waits until its run has ended and the screen shows `last`.
fn ask(tmux: &Tmux, prompt: &str, last: &str) -> String {
    tmux.type_text(prompt);
    tmux.key("Enter");
    tmux.wait_for(last);
    tmux.wait_for(" idle ·")
}

/// Presses `key` until the screen shows `text`, at most `presses` times.
fn press_until(tmux: &Tmux, key: &str, text: &str, presses: usize) -> String {
    for _ in 0..presses {
        let screen = tmux.screen();
        if screen.contains(text) {
            return screen;
        }
        let before = screen;
        tmux.key(key);
        // Each press is drawn before the next, so none is lost to key repeat.
        let deadline = Instant::now() + WAIT;
        while tmux.screen() == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    tmux.wait_for(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_up_and_home_reach_the_first_line_of_a_long_reply() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(numbered(120)));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle");
    let bottom = ask(&tmux, "count to 120", "reply line 120");
    assert!(!bottom.contains("reply line 001"), "{bottom}");
    // PageUp, screen by screen, to the first line of the reply and the prompt.
    let top = press_until(&tmux, "PageUp", "reply line 001", 10);
    assert!(top.contains("› count to 120"), "{top}");
    assert!(!top.contains("reply line 120"), "{top}");
    // PageDown back down follows the bottom again.
    let again = press_until(&tmux, "PageDown", "reply line 120", 10);
    assert_eq!(body(&again), body(&bottom));
    // Home (the composer is empty) and End.
    tmux.key("Home");
    let home = tmux.wait_for("reply line 001");
    assert!(home.contains("› count to 120"), "{home}");
    tmux.key("End");
    let end = tmux.wait_for("reply line 120");
    assert_eq!(body(&end), body(&bottom));
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wheel_scrolls_back_and_forth() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(numbered(120)));
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle");
    let bottom = ask(&tmux, "count to 120", "reply line 120");
    // The wheel in alternate-scroll mode sends arrow keys, several at once: tmux
    // writes the keys of one send-keys call together, as a wheel step does.
    let wheel_up: Vec<&str> = ["Up"; 5].to_vec();
    let mut screen = String::new();
    for _ in 0..40 {
        tmux.keys(&wheel_up);
        screen = tmux.screen();
        if screen.contains("reply line 001") {
            break;
        }
    }
    let screen = if screen.contains("reply line 001") {
        screen
    } else {
        tmux.wait_for("reply line 001")
    };
    // The arrows scrolled the transcript; they did not recall the prompt.
    assert!(!composer(&screen).contains("count"), "{screen}");
    let wheel_down: Vec<&str> = ["Down"; 5].to_vec();
    for _ in 0..40 {
        tmux.keys(&wheel_down);
        if tmux.screen().contains("reply line 120") {
            break;
        }
    }
    let end = tmux.wait_for("reply line 120");
    assert_eq!(body(&end), body(&bottom));
    tmux.key("C-c");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_below_never_moves_the_view_and_is_announced() {
    let mock = MockServer::start().await;
    // A slow stream held open before its end, so the run is still going whatever the
    // machine's speed.
    mock.enqueue(
        Reply::stream()
            .text(numbered(80))
            .chunk_delay(Duration::from_millis(40))
            .held(),
    );
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle");
    tmux.type_text("count slowly");
    tmux.key("Enter");
    tmux.wait_for("reply line 045");
    tmux.key("PageUp");
    let reading = tmux.wait_for("new output below");
    assert!(reading.contains("End to follow"), "{reading}");
    // The rows read stay as they are while the reply goes on below them.
    let rows = body(&reading);
    for _ in 0..30 {
        let screen = tmux.screen();
        assert_eq!(body(&screen), rows, "the view moved:\n{screen}");
    }
    // End follows the newest output again; the indicator goes.
    tmux.key("End");
    let following = tmux.wait_for("reply line 080");
    assert!(!following.contains("new output below"), "{following}");
    mock.release();
    tmux.wait_for(" idle ·");
    tmux.key("C-c");
}

/// Every row fits the window, and the rows hold every character of `text` in order.
fn assert_wrapped_whole(screen: &str, columns: usize, text: &str) {
    for line in screen.lines() {
        assert!(
            line.width() <= columns,
            "a row is wider than {columns}: {line:?}\n{screen}"
        );
    }
    let shown: String = body(screen)
        .concat()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let wanted: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    assert!(
        shown.contains(&wanted),
        "characters were cut or lost at {columns} columns:\n{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cjk_and_emoji_wrap_by_width_without_cut_characters() {
    let cjk = "日本語の文章を端末の幅で折り返します。全角文字は二つのセルを使うので、途中で切れてはいけません。中文字符也一样，每个字占两个格。한국어 문장도 마찬가지입니다.";
    // No skin-tone modifier here: tmux 3.3 draws one as a cell of its own, unlike the
    // terminals that combine it (the wrapper's unit tests cover it).
    let emoji = "Emoji too: 🎉 party, 🦀 crab, 👨‍👩‍👧 family, 🇯🇵 flag, 🚀 rocket — all kept whole at every width, even when the line wraps. THE-END";
    for columns in [40u16, 120] {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text([cjk.repeat(2), "\n\n".into(), emoji.into()]));
        let env = TestEnv::new();
        let tmux = Tmux::start_sized(&env, &vars(&mock), columns, 40);
        // The status line is cut at 40 columns; the composer's title is not.
        tmux.wait_for("Enter send");
        tmux.type_text("wide text please");
        tmux.key("Enter");
        let screen = tmux.wait_for("THE-END");
        assert_wrapped_whole(&screen, usize::from(columns), &cjk.repeat(2));
        // The family is drawn as its three people: terminals count a joined emoji's
        // width differently, and a miscount leaves a stale cell.
        assert_wrapped_whole(
            &screen,
            usize::from(columns),
            &emoji.replace('\u{200D}', ""),
        );
        // The text wraps where it must, and only at 40 columns.
        let rows = body(&screen);
        let cjk_rows = rows
            .iter()
            .filter(|r| r.contains('の') || r.contains('字'))
            .count();
        if columns == 40 {
            assert!(cjk_rows > 4, "{screen}");
        }
        tmux.key("C-c");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_is_rendered_as_markdown_the_same_live_and_after_its_run() {
    let mock = MockServer::start().await;
    let reply = "## The plan\n\nFirst **read** the `Cargo.toml`, then:\n\n\
                 1. build it\n2. test it\n   - quietly\n\n\
                 ```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n\
                 > quoted words\n\nSee [the docs](https://example.com/d).";
    mock.enqueue(Reply::stream().text([reply]).held());
    let env = TestEnv::new();
    let tmux = Tmux::start(&env, &vars(&mock));
    tmux.wait_for("idle");
    tmux.type_text("plan it");
    tmux.key("Enter");
    let live = tmux.wait_for("See the docs (https://example.com/d).");
    mock.release();
    tmux.wait_for(" idle ·");
    let saved = tmux.screen();
    let rows = body(&saved);
    let expected = [
        "The plan",
        "",
        "First read the Cargo.toml, then:",
        "",
        "1. build it",
        "2. test it",
        "   ◦ quietly",
        "",
        "  fn main() {",
        "      println!(\"hi\");",
        "  }",
        "",
        "│ quoted words",
        "",
        "See the docs (https://example.com/d).",
    ];
    let start = rows
        .iter()
        .position(|r| r == "The plan")
        .unwrap_or_else(|| panic!("no heading:\n{saved}"));
    assert_eq!(rows[start..start + expected.len()], expected, "{saved}");
    assert!(!saved.contains("```") && !saved.contains("## "), "{saved}");
    // The finished reply did not move or re-indent when the saved history replaced it.
    let reply_rows = |screen: &str| -> Vec<String> {
        body(screen)
            .into_iter()
            .skip_while(|r| r != "The plan")
            .take(expected.len())
            .collect()
    };
    assert_eq!(reply_rows(&live), reply_rows(&saved));
    tmux.key("C-c");
}
