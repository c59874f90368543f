//! Diffs on screen: a card's typed diff lines, or a unified diff's text (an edit's
//! proposed change), coloured with the old and new line numbers from the hunk headers.

use magi_protocol::cards::{DiffLine, DiffLineKind};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

/// Indent of a diff under its card or prompt.
const INDENT: &str = "    ";

/// Diff lines coloured, each with its old and new line numbers in a gutter (blank
/// where the line has none: an added line has no old number).
pub(super) fn diff_lines<'a>(lines: impl Iterator<Item = &'a DiffLine>) -> Vec<Line<'static>> {
    lines
        .map(|line| {
            let number =
                |n: Option<u64>| n.map_or_else(|| "    ".to_owned(), |n| format!("{n:>4}"));
            let (sign, color) = match line.kind {
                DiffLineKind::Added => ("+", Color::Green),
                DiffLineKind::Removed => ("-", Color::Red),
                DiffLineKind::Context => (" ", Color::Gray),
                DiffLineKind::HunkHeader | DiffLineKind::FileHeader => ("", Color::Blue),
                DiffLineKind::NoNewline => ("\\ ", Color::DarkGray),
            };
            let style = Style::default().fg(color);
            match line.kind {
                DiffLineKind::HunkHeader | DiffLineKind::FileHeader => {
                    Line::from(Span::styled(format!("{INDENT}{}", line.text), style))
                }
                _ => Line::from(vec![
                    Span::styled(
                        format!(
                            "{INDENT}{} {} │",
                            number(line.old_line),
                            number(line.new_line)
                        ),
                        style,
                    ),
                    Span::styled(format!("{sign}{}", line.text), style),
                ]),
            }
        })
        .collect()
}

/// A unified diff's text as typed lines, numbered from its hunk headers the way the
/// card selector numbers a card's diff: the counts of `@@ -a,b +c,d @@` decide where a
/// hunk ends, so a removed line reading `--- x` stays a removed line.
pub(super) fn parse_unified(diff: &str) -> Vec<DiffLine> {
    let mut out = Vec::new();
    // Lines left in the current hunk, old and new side, and the next numbers.
    let (mut old_left, mut new_left) = (0u64, 0u64);
    let (mut old, mut new) = (None::<u64>, None::<u64>);
    let line = |kind, text: &str, old_line, new_line| DiffLine {
        kind,
        text: text.to_owned(),
        old_line,
        new_line,
    };
    for raw in diff.lines() {
        if old_left > 0 || new_left > 0 {
            let (kind, text) = match raw.chars().next() {
                Some('+') => (DiffLineKind::Added, &raw[1..]),
                Some('-') => (DiffLineKind::Removed, &raw[1..]),
                Some('\\') => (DiffLineKind::NoNewline, raw[1..].trim_start()),
                Some(' ') => (DiffLineKind::Context, &raw[1..]),
                None => (DiffLineKind::Context, ""),
                Some(_) => {
                    old_left = 0;
                    new_left = 0;
                    (DiffLineKind::FileHeader, raw)
                }
            };
            match kind {
                DiffLineKind::Added => {
                    out.push(line(kind, text, None, new));
                    new = new.map(|n| n + 1);
                    new_left = new_left.saturating_sub(1);
                }
                DiffLineKind::Removed => {
                    out.push(line(kind, text, old, None));
                    old = old.map(|n| n + 1);
                    old_left = old_left.saturating_sub(1);
                }
                DiffLineKind::Context => {
                    out.push(line(kind, text, old, new));
                    old = old.map(|n| n + 1);
                    new = new.map(|n| n + 1);
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                }
                _ => out.push(line(kind, text, None, None)),
            }
            continue;
        }
        if raw.starts_with("@@") {
            let (o, n) = hunk_header(raw);
            old = o.map(|(start, _)| start).filter(|s| *s > 0);
            new = n.map(|(start, _)| start).filter(|s| *s > 0);
            old_left = o.map_or(0, |(_, count)| count);
            new_left = n.map_or(0, |(_, count)| count);
            out.push(line(DiffLineKind::HunkHeader, raw, None, None));
        } else if let Some(rest) = raw.strip_prefix('\\') {
            out.push(line(DiffLineKind::NoNewline, rest.trim_start(), None, None));
        } else {
            out.push(line(DiffLineKind::FileHeader, raw, None, None));
        }
    }
    out
}

/// One side of a hunk header: its first line and its count of lines.
type HunkSide = Option<(u64, u64)>;

/// The old and new side of a hunk header; `None` for a side that cannot be read.
fn hunk_header(header: &str) -> (HunkSide, HunkSide) {
    let mut parts = header.split_whitespace().skip(1);
    let side = |part: Option<&str>, sign: char| {
        let range = part?.strip_prefix(sign)?;
        let (start, count) = match range.split_once(',') {
            Some((start, count)) => (start.parse().ok()?, count.parse().ok()?),
            None => (range.parse().ok()?, 1),
        };
        Some((start, count))
    };
    let old = side(parts.next(), '-');
    let new = side(parts.next(), '+');
    (old, new)
}
