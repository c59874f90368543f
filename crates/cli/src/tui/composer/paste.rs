//! Bracketed pastes: their line breaks made `\n`, and a large paste held aside and
//! shown as a placeholder (`[pasted 42 lines]`) until the prompt is sent.
//!
//! A held paste stands in the text as one Unicode noncharacter (U+FDD0 to U+FDEF,
//! which Unicode reserves for a program's internal use and never for interchange).
//! Being one grapheme, the placeholder is atomic for free: the cursor steps over it and
//! one Backspace removes it, and a kill and Ctrl-Y carry it. Noncharacters are removed
//! from whatever is typed or pasted, so a marker is always one of ours.

use magi_protocol::limits::{PASTE_PLACEHOLDER_CHARS, PASTE_PLACEHOLDER_LINES};
use magi_protocol::text::{grouped, strip_controls};

/// The first marker; the markers are the 32 noncharacters of the Arabic Presentation
/// Forms-A block.
const FIRST_MARKER: u32 = 0xFDD0;
/// How many markers there are: pastes held at once, at most (more go in as text).
const MARKERS: u32 = 32;

/// Whether `c` is a paste marker.
pub(crate) fn is_marker(c: char) -> bool {
    (FIRST_MARKER..FIRST_MARKER + MARKERS).contains(&u32::from(c))
}

/// A pasted text as the composer takes it: `\r\n` and lone `\r` (what many terminals
/// send for a line break) made `\n`, and control characters other than newline and tab
/// removed, since drawn they would be commands to the terminal.
pub(crate) fn normalise(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    strip_controls(&text)
        .chars()
        .filter(|&c| !is_marker(c))
        .collect()
}

/// Whether a paste is large enough to be shown as a placeholder.
fn is_large(text: &str) -> bool {
    text.lines().count() > PASTE_PLACEHOLDER_LINES || text.chars().count() > PASTE_PLACEHOLDER_CHARS
}

/// The pastes held aside, by marker.
#[derive(Debug, Default)]
pub(crate) struct Pastes {
    held: Vec<Option<String>>,
}

impl Pastes {
    /// What to insert for a normalised paste: the text itself when it is small, else a
    /// marker standing for it. `in_use` says whether a marker still appears where it
    /// could come back from (the text or the last kill), so its slot is not reused.
    pub(crate) fn hold(&mut self, text: String, in_use: impl Fn(char) -> bool) -> String {
        if !is_large(&text) {
            return text;
        }
        let free = (0..MARKERS).find_map(|n| {
            let marker = char::from_u32(FIRST_MARKER + n)?;
            let slot = usize::try_from(n).ok()?;
            let taken = self.held.get(slot).is_some_and(Option::is_some) && in_use(marker);
            (!taken).then_some((slot, marker))
        });
        // With every marker taken the paste goes in as text: long, but whole.
        let Some((slot, marker)) = free else {
            return text;
        };
        if self.held.len() <= slot {
            self.held.resize(slot + 1, None);
        }
        self.held[slot] = Some(text);
        marker.to_string()
    }

    fn get(&self, marker: char) -> Option<&str> {
        let slot = usize::try_from(u32::from(marker).checked_sub(FIRST_MARKER)?).ok()?;
        self.held.get(slot)?.as_deref()
    }

    /// The placeholder a marker is drawn as.
    pub(crate) fn label(&self, marker: char) -> String {
        match self.get(marker) {
            Some(text) => {
                let lines = text.lines().count();
                if lines > 1 {
                    format!("[pasted {} lines]", grouped(lines))
                } else {
                    format!("[pasted {} chars]", grouped(text.chars().count()))
                }
            }
            None => "[pasted text lost]".to_owned(),
        }
    }

    /// `text` with every marker replaced by its paste.
    pub(crate) fn expand(&self, text: &str) -> String {
        let mut expanded = String::with_capacity(text.len());
        for c in text.chars() {
            if is_marker(c) {
                expanded.push_str(self.get(c).unwrap_or_default());
            } else {
                expanded.push(c);
            }
        }
        expanded
    }

    /// Forgets every paste (the prompt was sent or replaced).
    pub(crate) fn clear(&mut self) {
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_are_normalised_and_controls_removed() {
        assert_eq!(normalise("a\r\nb\rc\nd"), "a\nb\nc\nd");
        assert_eq!(normalise("\x1b[31mred\x1b[0m\ttab"), "red\ttab");
        assert_eq!(normalise("x\u{FDD0}y\u{FDEF}z"), "xyz");
        assert_eq!(normalise("漢字 👍🏽"), "漢字 👍🏽");
    }

    #[test]
    fn a_small_paste_goes_in_as_text() {
        let mut pastes = Pastes::default();
        let five = "1\n2\n3\n4\n5";
        assert_eq!(pastes.hold(five.into(), |_| false), five);
        let long_line = "x".repeat(PASTE_PLACEHOLDER_CHARS);
        assert_eq!(pastes.hold(long_line.clone(), |_| false), long_line);
    }

    #[test]
    fn a_large_paste_is_a_placeholder_that_expands() {
        let mut pastes = Pastes::default();
        let six = "1\n2\n3\n4\n5\n6\n".to_owned();
        let marker = pastes.hold(six.clone(), |_| false);
        assert_eq!(marker.chars().count(), 1);
        let m = marker.chars().next().unwrap();
        assert!(is_marker(m));
        assert_eq!(pastes.label(m), "[pasted 6 lines]");
        let wide = "y".repeat(1_234);
        let other = pastes.hold(wide.clone(), |c| c == m);
        assert_ne!(other, marker, "a marker in use is not reused");
        let o = other.chars().next().unwrap();
        assert_eq!(pastes.label(o), "[pasted 1,234 chars]");
        assert_eq!(
            pastes.expand(&format!("see {marker} and {other}!")),
            format!("see {six} and {wide}!")
        );
        // Once its marker is gone from the text (and the kill), a slot is reused.
        let again = pastes.hold(six.clone(), |c| c == o);
        assert_eq!(again, marker);
        pastes.clear();
        assert_eq!(pastes.label(m), "[pasted text lost]");
        assert_eq!(pastes.expand(&marker), "");
    }

    #[test]
    fn with_every_marker_taken_a_paste_goes_in_as_text() {
        let mut pastes = Pastes::default();
        let big = "z".repeat(2_000);
        for _ in 0..MARKERS {
            assert_eq!(pastes.hold(big.clone(), |_| true).chars().count(), 1);
        }
        assert_eq!(pastes.hold(big.clone(), |_| true), big);
    }
}
