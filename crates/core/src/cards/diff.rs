//! A recorded applied preview read as typed diff lines.

use magi_protocol::cards::{
    DIFF_LINES_PER_BLOCK, DiffLine, DiffLineKind, MAX_SAFE_INTEGER, Reason, STRING_BYTES, Subject,
};
use serde_json::Value;

use super::text::{Notes, safe_count};

/// The diff text and truncation flag of a schema-1 preview payload.
pub(super) fn preview_payload(payload: &Value) -> Option<(&str, bool)> {
    let object = payload.as_object()?;
    if object.get("schema_version")?.as_u64()? != 1 {
        return None;
    }
    Some((
        object.get("diff")?.as_str()?,
        object.get("truncated")?.as_bool()?,
    ))
}

/// The position in the hunk being read.
#[derive(Debug, Clone, Copy)]
struct Hunk {
    /// The next old and new line numbers, when the header gave them.
    old: Option<u64>,
    new: Option<u64>,
    /// Old and new lines still to come, when the header gave them.
    old_left: Option<u64>,
    new_left: Option<u64>,
}

impl Hunk {
    /// Whether the hunk may still hold lines: unknown counts keep it open until the
    /// next header.
    fn open(&self) -> bool {
        match (self.old_left, self.new_left) {
            (Some(old), Some(new)) => old > 0 || new > 0,
            _ => true,
        }
    }
}

/// `-a,b` or `+c,d` (the count defaults to 1).
fn hunk_range(token: &str, sign: char) -> Option<(u64, u64)> {
    let range = token.strip_prefix(sign)?;
    let (start, count) = match range.split_once(',') {
        Some((start, count)) => (start.parse().ok()?, count.parse().ok()?),
        None => (range.parse().ok()?, 1),
    };
    Some((start, count))
}

fn parse_hunk(line: &str) -> Hunk {
    let mut tokens = line.split_whitespace().skip(1);
    let old = tokens.next().and_then(|t| hunk_range(t, '-'));
    let new = tokens.next().and_then(|t| hunk_range(t, '+'));
    match (old, new) {
        (Some((old, old_left)), Some((new, new_left))) => Hunk {
            old: Some(old),
            new: Some(new),
            old_left: Some(old_left),
            new_left: Some(new_left),
        },
        _ => Hunk {
            old: None,
            new: None,
            old_left: None,
            new_left: None,
        },
    }
}

/// A line number as a card may carry it: positive and safe, else unknown.
fn line_number(number: Option<u64>) -> Option<u64> {
    number.filter(|n| *n > 0 && *n <= MAX_SAFE_INTEGER)
}

fn step(counter: &mut Option<u64>) {
    if let Some(n) = counter {
        *n = n.saturating_add(1);
    }
}

fn consume(counter: &mut Option<u64>) {
    if let Some(n) = counter {
        *n = n.saturating_sub(1);
    }
}

/// The unified diff `diff` as typed diff lines: at most [`DIFF_LINES_PER_BLOCK`], the
/// rest counted as omitted, lines that are no diff line counted as unsupported, and a
/// truncated preview stated with an unknown count.
pub(super) fn diff_lines(diff: &str, truncated: bool, notes: &mut Notes) -> Vec<DiffLine> {
    let mut lines: Vec<DiffLine> = Vec::new();
    let mut hunk: Option<Hunk> = None;
    let mut unsupported = 0u64;
    let mut raw_lines = diff.split_terminator('\n');
    for raw in raw_lines.by_ref() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let in_hunk = hunk.as_ref().is_some_and(Hunk::open);
        let first = raw.chars().next();
        let text = |notes: &mut Notes, body: &str| notes.text(Subject::Text, body, STRING_BYTES);
        let line = if raw.starts_with("@@") {
            let parsed = parse_hunk(raw);
            hunk = Some(parsed);
            Some((DiffLineKind::HunkHeader, text(notes, raw), None, None))
        } else if first == Some('\\') {
            let body = raw[1..].strip_prefix(' ').unwrap_or(&raw[1..]);
            Some((DiffLineKind::NoNewline, text(notes, body), None, None))
        } else if !in_hunk && (raw.starts_with("---") || raw.starts_with("+++")) {
            hunk = None;
            Some((DiffLineKind::FileHeader, text(notes, raw), None, None))
        } else if let Some(h) = hunk.as_mut().filter(|_| in_hunk) {
            match first {
                Some(' ') | None => {
                    let numbers = (line_number(h.old), line_number(h.new));
                    step(&mut h.old);
                    step(&mut h.new);
                    consume(&mut h.old_left);
                    consume(&mut h.new_left);
                    let body = raw.get(1..).unwrap_or("");
                    Some((
                        DiffLineKind::Context,
                        text(notes, body),
                        numbers.0,
                        numbers.1,
                    ))
                }
                Some('-') => {
                    let number = line_number(h.old);
                    step(&mut h.old);
                    consume(&mut h.old_left);
                    Some((DiffLineKind::Removed, text(notes, &raw[1..]), number, None))
                }
                Some('+') => {
                    let number = line_number(h.new);
                    step(&mut h.new);
                    consume(&mut h.new_left);
                    Some((DiffLineKind::Added, text(notes, &raw[1..]), None, number))
                }
                Some(_) => None,
            }
        } else {
            None
        };
        match line {
            Some((kind, text, old_line, new_line)) => lines.push(DiffLine {
                kind,
                text,
                old_line,
                new_line,
            }),
            None => unsupported += 1,
        }
        if lines.len() == DIFF_LINES_PER_BLOCK {
            break;
        }
    }
    let rest = raw_lines.count() as u64;
    if rest > 0 {
        notes.add(Subject::DiffLines, Reason::SizeLimit, safe_count(rest));
    }
    if unsupported > 0 {
        notes.add(
            Subject::DiffLines,
            Reason::UnsupportedSource,
            safe_count(unsupported),
        );
    }
    if truncated {
        notes.add(Subject::DiffLines, Reason::SizeLimit, None);
    }
    lines
}
