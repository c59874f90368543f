//! Getting the person's attention when Mission Control waits for them: the terminal's
//! bell, and a desktop notification (OSC 9) where the terminal shows one. Rung when an
//! approval or the model's questions wait, and when a turn ends while the terminal
//! does not have the focus.

use std::io::Write;

/// Longest notification text, in characters.
const NOTIFICATION_CHARS: usize = 120;

/// Terminals known to show an OSC 9 notification (by `TERM_PROGRAM`); others may
/// print the sequence or ignore it, so they get the bell alone.
const NOTIFYING_PROGRAMS: [&str; 4] = ["iTerm.app", "WezTerm", "ghostty", "WarpTerminal"];
/// The same, by `TERM`.
const NOTIFYING_TERMS: [&str; 2] = ["xterm-kitty", "xterm-ghostty"];

/// Whether this terminal shows OSC 9 notifications, read once from the environment.
pub(super) fn notifications() -> bool {
    let program = std::env::var("TERM_PROGRAM").unwrap_or_default();
    let term = std::env::var("TERM").unwrap_or_default();
    NOTIFYING_PROGRAMS.contains(&program.as_str())
        || NOTIFYING_TERMS.contains(&term.as_str())
        // Windows Terminal, through WSL.
        || std::env::var_os("WT_SESSION").is_some()
}

/// What a turn's end says, when it rings.
pub(super) fn turn_ended(outcome: magi_protocol::messages::RunOutcome) -> String {
    use magi_protocol::messages::RunOutcome;
    match outcome {
        RunOutcome::Completed => "the turn is done",
        RunOutcome::Cancelled => "the turn was stopped",
        RunOutcome::Failed => "the turn failed",
    }
    .to_owned()
}

/// The bytes that ring the bell and, with `notify`, show `text` as a notification.
pub(super) fn sequence(text: &str, notify: bool) -> String {
    let mut out = String::from("\x07");
    if notify {
        // The text goes inside a control sequence: nothing in it may end it early.
        let safe: String = text
            .chars()
            .filter(|c| !c.is_control())
            .take(NOTIFICATION_CHARS)
            .collect();
        out.push_str(&format!("\x1b]9;magi-code: {safe}\x07"));
    }
    out
}

/// Rings: writes [`sequence`] to the terminal.
pub(super) fn ring(out: &mut impl Write, text: &str, notify: bool) {
    let _ = out.write_all(sequence(text, notify).as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bell_always_and_a_notification_only_where_shown() {
        assert_eq!(sequence("approval needed", false), "\x07");
        assert_eq!(
            sequence("approval needed: bash ls\x07\x1b]0;x", true),
            "\x07\x1b]9;magi-code: approval needed: bash ls]0;x\x07"
        );
        let long = "x".repeat(500);
        assert_eq!(
            sequence(&long, true).len(),
            "\x07\x1b]9;magi-code: \x07".len() + NOTIFICATION_CHARS
        );
    }
}
