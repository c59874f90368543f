//! The composer's keys, each as a person presses it.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::*;

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const ALT: KeyModifiers = KeyModifiers::ALT;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;

fn composer() -> Composer {
    Composer::with_history(PathBuf::from("/nonexistent"), History::default())
}

fn with_history(entries: &[&str]) -> Composer {
    let mut history = History::default();
    for entry in entries {
        history.push(entry);
    }
    Composer::with_history(PathBuf::from("/nonexistent"), history)
}

fn press(composer: &mut Composer, code: KeyCode, modifiers: KeyModifiers) -> Edit {
    composer.key(KeyEvent::new(code, modifiers))
}

fn typed(composer: &mut Composer, text: &str) {
    for c in text.chars() {
        assert_eq!(press(composer, KeyCode::Char(c), NONE), Edit::Done);
    }
}

/// The text with `|` at the cursor.
fn shown(composer: &Composer) -> String {
    let mut text = composer.text().to_owned();
    text.insert(composer.cursor(), '|');
    text
}

/// `keys` pressed on a composer holding `before` (cursor at its end).
fn check(before: &str, keys: &[(KeyCode, KeyModifiers)], after: &str) {
    let mut composer = composer();
    composer.set_text(before.to_owned());
    for &(code, modifiers) in keys {
        press(&mut composer, code, modifiers);
    }
    assert_eq!(shown(&composer), after, "{keys:?} on {before:?}");
}

#[test]
fn enter_sends_and_alt_enter_shift_enter_and_ctrl_j_start_a_line() {
    let mut composer = composer();
    typed(&mut composer, "one");
    assert_eq!(press(&mut composer, KeyCode::Enter, ALT), Edit::Done);
    typed(&mut composer, "two");
    assert_eq!(press(&mut composer, KeyCode::Enter, SHIFT), Edit::Done);
    typed(&mut composer, "three");
    // In raw mode Ctrl-J arrives as `j` with Control.
    assert_eq!(press(&mut composer, KeyCode::Char('j'), CTRL), Edit::Done);
    typed(&mut composer, "four");
    assert_eq!(composer.text(), "one\ntwo\nthree\nfour");
    assert_eq!(press(&mut composer, KeyCode::Enter, NONE), Edit::Submit);
    assert_eq!(composer.submit(), Ok("one\ntwo\nthree\nfour".to_owned()));
    assert!(composer.is_empty());
}

#[test]
fn cursor_keys_move_by_character_word_and_line() {
    use KeyCode::{End, Home, Left, Right};
    check("ab", &[(Left, NONE)], "a|b");
    check("ab", &[(Left, NONE), (Left, NONE), (Right, NONE)], "a|b");
    check("foo bar", &[(Left, ALT)], "foo |bar");
    check("foo bar", &[(Left, CTRL), (Left, CTRL)], "|foo bar");
    check("foo bar", &[(Home, NONE), (Right, CTRL)], "foo| bar");
    check("foo bar", &[(KeyCode::Char('b'), ALT)], "foo |bar");
    check(
        "foo bar",
        &[(KeyCode::Char('a'), CTRL), (KeyCode::Char('f'), ALT)],
        "foo| bar",
    );
    check("one\ntwo", &[(Home, NONE)], "one\n|two");
    check("one\ntwo", &[(KeyCode::Char('a'), CTRL)], "one\n|two");
    check("one\ntwo", &[(Home, NONE), (End, NONE)], "one\ntwo|");
    check(
        "one\ntwo",
        &[(Home, NONE), (KeyCode::Char('e'), CTRL)],
        "one\ntwo|",
    );
    check("one\ntwo", &[(KeyCode::Up, NONE)], "one|\ntwo");
    check(
        "one\ntwo",
        &[(KeyCode::Up, NONE), (KeyCode::Down, NONE)],
        "one\ntwo|",
    );
}

#[test]
fn home_and_end_on_an_empty_composer_belong_to_the_transcript() {
    let mut composer = composer();
    assert_eq!(press(&mut composer, KeyCode::Home, NONE), Edit::NotMine);
    assert_eq!(press(&mut composer, KeyCode::End, NONE), Edit::NotMine);
    typed(&mut composer, "x");
    assert_eq!(press(&mut composer, KeyCode::Home, NONE), Edit::Done);
    assert_eq!(shown(&composer), "|x");
}

#[test]
fn deletions_and_kills_with_ctrl_y_putting_the_last_kill_back() {
    use KeyCode::{Backspace, Char, Delete, Home, Left};
    check("abc", &[(Backspace, NONE)], "ab|");
    check("abc", &[(Home, NONE), (Delete, NONE)], "|bc");
    check("one two", &[(Char('u'), CTRL)], "|");
    check("one two", &[(Left, NONE), (Char('k'), CTRL)], "one tw|");
    check("one two", &[(Char('w'), CTRL)], "one |");
    check("one two", &[(Backspace, ALT)], "one |");
    check(
        "one two",
        &[(Char('w'), CTRL), (Char('y'), CTRL)],
        "one two|",
    );
    check(
        "one two",
        &[(Char('u'), CTRL), (Char('y'), CTRL), (Char('y'), CTRL)],
        "one twoone two|",
    );
    check("abc", &[(Char('h'), CTRL)], "ab|");
    // Control keys with no meaning here type nothing.
    check("x", &[(Char('z'), CTRL), (Char('q'), ALT)], "x|");
}

#[test]
fn up_and_down_recall_the_history_and_give_back_the_draft() {
    use KeyCode::{Down, Up};
    let mut composer = with_history(&["first", "second\nprompt"]);
    typed(&mut composer, "draft");
    press(&mut composer, Up, NONE);
    assert_eq!(composer.text(), "second\nprompt");
    // While going through the history Up goes on to older prompts, even from a
    // prompt of several lines.
    press(&mut composer, Up, NONE);
    assert_eq!(composer.text(), "first");
    press(&mut composer, Up, NONE);
    assert_eq!(composer.text(), "first", "the oldest stays");
    press(&mut composer, Down, NONE);
    assert_eq!(composer.text(), "second\nprompt");
    press(&mut composer, Down, NONE);
    assert_eq!(shown(&composer), "draft|");
    // Once a recalled prompt is edited, Up and Down move between its lines.
    press(&mut composer, Up, NONE);
    typed(&mut composer, "!");
    press(&mut composer, Up, NONE);
    assert_eq!(shown(&composer), "second|\nprompt!");
    press(&mut composer, Up, NONE);
    assert_eq!(
        composer.text(),
        "second\nprompt",
        "from the first line Up recalls, from the newest"
    );
    press(&mut composer, Down, NONE);
    assert_eq!(
        composer.text(),
        "second\nprompt!",
        "the edited draft is back"
    );
}

#[test]
fn ctrl_r_searches_the_history() {
    use KeyCode::{Backspace, Char, Enter, Esc};
    let mut composer = with_history(&["fix the build", "write tests", "fix the docs"]);
    typed(&mut composer, "draft");
    press(&mut composer, Char('r'), CTRL);
    assert_eq!(composer.search(), Some(("", Some("fix the docs"))));
    // Keys go to the search, not the composer or an approval.
    assert!(composer.captures(&KeyEvent::new(Char('y'), NONE)));
    assert!(composer.captures(&KeyEvent::new(Esc, NONE)));
    assert!(!composer.captures(&KeyEvent::new(Char('c'), CTRL)));
    typed(&mut composer, "wr");
    assert_eq!(composer.search(), Some(("wr", Some("write tests"))));
    press(&mut composer, Backspace, NONE);
    press(&mut composer, Backspace, NONE);
    typed(&mut composer, "fix");
    assert_eq!(composer.search(), Some(("fix", Some("fix the docs"))));
    press(&mut composer, Char('r'), CTRL);
    assert_eq!(composer.search(), Some(("fix", Some("fix the build"))));
    assert_eq!(composer.text(), "draft", "nothing taken yet");
    press(&mut composer, Enter, NONE);
    assert_eq!(composer.search(), None);
    assert_eq!(shown(&composer), "fix the build|");
    // Esc leaves the composer as it was; a paste adds to the query.
    press(&mut composer, Char('r'), CTRL);
    composer.paste("wri\nte");
    assert_eq!(composer.search(), Some(("wri te", None)));
    press(&mut composer, Backspace, NONE);
    press(&mut composer, Backspace, NONE);
    press(&mut composer, Backspace, NONE);
    assert_eq!(composer.search(), Some(("wri", Some("write tests"))));
    press(&mut composer, Esc, NONE);
    assert_eq!(composer.search(), None);
    assert_eq!(composer.text(), "fix the build");
}

#[test]
fn a_paste_keeps_its_lines_and_a_large_one_is_one_placeholder() {
    let mut composer = composer();
    composer.paste("one\r\ntwo\rthree");
    assert_eq!(composer.text(), "one\ntwo\nthree");
    composer.set_text(String::new());
    typed(&mut composer, "look: ");
    let big: String = (1..=42).map(|n| format!("line {n}\n")).collect();
    composer.paste(&big);
    typed(&mut composer, " ok");
    let marker = composer.text().chars().nth(6).unwrap();
    assert_eq!(composer.label(marker).as_deref(), Some("[pasted 42 lines]"));
    assert_eq!(composer.label('x'), None);
    assert_eq!(
        composer.text().chars().count(),
        "look: ".len() + 1 + " ok".len()
    );
    // Sent, it is expanded.
    let mut sent = Composer::with_history(PathBuf::new(), History::default());
    sent.paste(&big);
    assert_eq!(sent.submit(), Ok(big.clone()));
    // One Backspace removes it whole; Left steps over it.
    for _ in 0.." ok".len() {
        press(&mut composer, KeyCode::Backspace, NONE);
    }
    press(&mut composer, KeyCode::Left, NONE);
    assert_eq!(composer.text()[..composer.cursor()].to_owned(), "look: ");
    press(&mut composer, KeyCode::Right, NONE);
    press(&mut composer, KeyCode::Backspace, NONE);
    assert_eq!(composer.text(), "look: ");
    // A kill and Ctrl-Y carry the placeholder and its text.
    composer.paste(&big);
    press(&mut composer, KeyCode::Char('u'), CTRL);
    assert!(composer.is_empty());
    press(&mut composer, KeyCode::Char('y'), CTRL);
    assert_eq!(composer.submit(), Ok(format!("look: {big}")));
}

#[test]
fn clearing_the_composer_is_a_kill_that_ctrl_y_undoes() {
    let mut composer = composer();
    typed(&mut composer, "long prompt ");
    composer.paste(&"p".repeat(2_000));
    press(&mut composer, KeyCode::Char('r'), CTRL);
    composer.clear();
    assert!(composer.is_empty());
    assert_eq!(composer.search(), None);
    press(&mut composer, KeyCode::Char('y'), CTRL);
    assert_eq!(
        composer.submit(),
        Ok(format!("long prompt {}", "p".repeat(2_000)))
    );
}

#[test]
fn a_prompt_the_backend_would_refuse_stays_in_the_composer() {
    let mut composer = composer();
    composer.paste(&"x".repeat(magi_protocol::limits::PROMPT_BYTES + 1));
    let problem = composer.submit().unwrap_err();
    assert!(
        problem.contains("over the limit of 16,384 bytes"),
        "{problem}"
    );
    assert!(!composer.is_empty());
}

#[test]
fn slash_commands_complete_with_tab_and_run_with_enter() {
    use KeyCode::{Down, Enter, Esc, Tab};
    let mut composer = composer();
    typed(&mut composer, "/s");
    let completion = composer.completion().unwrap();
    assert_eq!(completion.kind, CompletionKind::Command);
    assert!(composer.captures(&KeyEvent::new(Tab, NONE)));
    press(&mut composer, Down, NONE);
    press(&mut composer, Tab, NONE);
    assert_eq!(shown(&composer), "/status |");
    assert!(composer.completion().is_none());
    composer.set_text(String::new());
    typed(&mut composer, "/he");
    assert_eq!(press(&mut composer, Enter, NONE), Edit::Submit);
    assert_eq!(composer.text(), "/help ");
    // Esc dismisses the list for this word; a slash later in the text is no command.
    composer.set_text(String::new());
    typed(&mut composer, "/");
    press(&mut composer, Esc, NONE);
    assert!(composer.completion().is_none());
    typed(&mut composer, "m");
    assert!(composer.completion().is_none(), "dismissed for this word");
    composer.set_text(String::new());
    typed(&mut composer, "a /he");
    assert!(composer.completion().is_none());
}

#[tokio::test]
async fn an_at_mention_completes_a_workspace_path() {
    use KeyCode::{Down, Enter, Esc, Tab};
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
    std::fs::write(dir.path().join("src/menu.rs"), "").unwrap();
    std::fs::write(dir.path().join("README.md"), "").unwrap();
    let mut composer = Composer::with_history(dir.path().to_owned(), History::default());
    typed(&mut composer, "read @");
    assert!(composer.walking(), "the walk starts at the first @");
    let walked = composer.walk_finished().await;
    composer.walked(walked);
    typed(&mut composer, "m");
    let labels: Vec<_> = composer
        .completion()
        .unwrap()
        .candidates
        .iter()
        .map(|c| c.label.clone())
        .collect();
    assert_eq!(labels, ["@src/main.rs", "@src/menu.rs", "@README.md"]);
    press(&mut composer, Down, NONE);
    press(&mut composer, Tab, NONE);
    assert_eq!(shown(&composer), "read @src/menu.rs |");
    typed(&mut composer, "and @READ");
    assert_eq!(
        press(&mut composer, Enter, NONE),
        Edit::Done,
        "Enter takes it"
    );
    assert_eq!(composer.text(), "read @src/menu.rs and @README.md ");
    // Esc dismisses; an address is no mention.
    typed(&mut composer, "@m");
    press(&mut composer, Esc, NONE);
    assert!(composer.completion().is_none());
    composer.set_text("mail me@m".into());
    assert!(composer.completion().is_none());
    assert!(!composer.walking(), "walked once per session");
}

#[test]
fn the_question_picker_edits_the_text_as_a_plain_string() {
    let mut composer = composer();
    let big = "z".repeat(2_000);
    composer.paste(&big);
    let taken = composer.edit_plain(std::mem::take);
    assert_eq!(taken, big, "placeholders are expanded first");
    assert!(composer.is_empty());
    composer.edit_plain(|text| text.push_str("/he"));
    assert_eq!(shown(&composer), "/he|");
    assert!(composer.completion().is_none(), "the picker has the keys");
}
