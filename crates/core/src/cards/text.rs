//! Strings and counts as a card carries them, and the omissions that state every cut
//! and redaction.

use magi_protocol::cards::{MAX_SAFE_INTEGER, Omission, Reason, Subject};
use magi_protocol::text::{redact_secrets, strip_controls};

pub(super) fn omission(subject: Subject, reason: Reason, omitted_count: Option<u64>) -> Omission {
    Omission {
        subject,
        reason,
        omitted_count,
    }
}

/// A count as a card may carry it: unknown past the safe-integer range.
pub(super) fn safe_count(count: u64) -> Option<u64> {
    (count <= MAX_SAFE_INTEGER).then_some(count)
}

pub(super) fn char_count(text: &str) -> u64 {
    text.chars().count() as u64
}

/// `text` cut to at most `max` bytes on a character boundary, and the number of
/// characters left out.
pub(super) fn cut(text: &str, max: usize) -> (String, u64) {
    if text.len() <= max {
        return (text.to_owned(), 0);
    }
    let end = text.floor_char_boundary(max);
    (text[..end].to_owned(), char_count(&text[end..]))
}

/// `count` followed by its unit, singular for exactly one.
pub(super) fn counted(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

pub(super) fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_owned()
}

/// A 1-based inclusive line range: `A-B`, or `A` for a single line.
pub(super) fn line_range(first: u64, last: u64) -> Option<String> {
    match first.cmp(&last) {
        std::cmp::Ordering::Less => Some(format!("{first}-{last}")),
        std::cmp::Ordering::Equal => Some(first.to_string()),
        std::cmp::Ordering::Greater => None,
    }
}

/// Milliseconds as seconds: `120s`, `1.5s`, `0.2s`.
pub(super) fn seconds(ms: u64) -> String {
    let whole = ms / 1000;
    let fraction = ms % 1000;
    if fraction == 0 {
        format!("{whole}s")
    } else {
        let digits = format!("{fraction:03}");
        format!("{whole}.{}s", digits.trim_end_matches('0'))
    }
}

/// Omissions gathered while selecting strings.
#[derive(Debug, Default, Clone)]
pub(super) struct Notes(pub(super) Vec<Omission>);

impl Notes {
    pub(super) fn add(&mut self, subject: Subject, reason: Reason, count: Option<u64>) {
        self.0.push(omission(subject, reason, count));
    }

    /// `raw` made safe and cut to `max` bytes; a redaction and a cut are each recorded
    /// under `subject`.
    pub(super) fn text(&mut self, subject: Subject, raw: &str, max: usize) -> String {
        let safe = self.safe(subject, raw);
        self.bound(subject, &safe, max)
    }

    /// `raw` made safe: controls stripped and secrets redacted, the redaction recorded.
    pub(super) fn safe(&mut self, subject: Subject, raw: &str) -> String {
        let stripped = strip_controls(raw);
        let safe = redact_secrets(&stripped);
        if safe != stripped {
            self.add(subject, Reason::Redacted, None);
        }
        safe
    }

    /// Safe text cut to `max` bytes, the cut recorded.
    pub(super) fn bound(&mut self, subject: Subject, safe: &str, max: usize) -> String {
        let (kept, omitted) = cut(safe, max);
        if omitted > 0 {
            self.add(subject, Reason::SizeLimit, safe_count(omitted));
        }
        kept
    }

    /// The first nonempty line of `raw`, made safe and bounded; the lines after it are
    /// recorded as omitted text.
    pub(super) fn first_line(&mut self, raw: &str, max: usize) -> Option<String> {
        let safe = self.safe(Subject::Text, raw);
        let mut start = 0;
        let line = loop {
            let end = safe[start..].find('\n').map_or(safe.len(), |i| start + i);
            let line = &safe[start..end];
            if !line.trim().is_empty() {
                break &safe[start..end];
            }
            if end == safe.len() {
                return None;
            }
            start = end + 1;
        };
        let rest = &safe[start + line.len()..];
        if !rest.trim().is_empty() {
            self.add(
                Subject::Text,
                Reason::SizeLimit,
                safe_count(char_count(rest)),
            );
        }
        Some(self.bound(Subject::Text, line.trim_end(), max))
    }
}
