//! Diffs on screen: a card's typed diff lines, or a unified diff's text (an edit's
//! proposed change): shaded by kind, the words a line changed marked, the code in its
//! language's colours, with the old and new line numbers from the hunk headers.

use magi_protocol::cards::{DiffLine, DiffLineKind};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown::code_lines;

/// Indent of a diff under its card or prompt.
const INDENT: &str = "    ";
/// The shading of an added line's text, and of the words a changed line added
/// (xterm's 256 colours: every colour terminal has them).
const ADDED: Color = Color::Indexed(22);
const ADDED_WORDS: Color = Color::Indexed(28);
/// The shading of a removed line's text, and of the words a changed line removed.
const REMOVED: Color = Color::Indexed(52);
const REMOVED_WORDS: Color = Color::Indexed(88);

/// Diff lines shaded (added on green, removed on red; in a line changed in place the
/// words that changed are marked brighter), the code in the colours of `language` (a
/// file extension such as `rs`, when known), each with its old and new line numbers
/// in a gutter (blank where the line has none: an added line has no old number).
pub(super) fn diff_lines<'a>(
    lines: impl Iterator<Item = &'a DiffLine>,
    language: Option<&str>,
) -> Vec<Line<'static>> {
    let lines: Vec<&DiffLine> = lines.collect();
    // Removed lines followed by as many added ones were changed in place: their words
    // are compared.
    let mut partner: Vec<Option<usize>> = vec![None; lines.len()];
    let mut at = 0;
    while at < lines.len() {
        let removed = lines[at..]
            .iter()
            .take_while(|l| l.kind == DiffLineKind::Removed)
            .count();
        let added = lines[at + removed..]
            .iter()
            .take_while(|l| l.kind == DiffLineKind::Added)
            .count();
        if removed > 0 && removed == added {
            for n in 0..removed {
                partner[at + n] = Some(at + removed + n);
                partner[at + removed + n] = Some(at + n);
            }
        }
        at += (removed + added).max(1);
    }
    lines
        .iter()
        .enumerate()
        .map(|(n, line)| {
            let other = partner[n].map(|p| lines[p].text.as_str());
            diff_line(line, other, language)
        })
        .collect()
}

/// One diff line; `other` is the line it was changed from or into.
fn diff_line(line: &DiffLine, other: Option<&str>, language: Option<&str>) -> Line<'static> {
    let number = |n: Option<u64>| n.map_or_else(|| "    ".to_owned(), |n| format!("{n:>4}"));
    let (sign, color, shade) = match line.kind {
        DiffLineKind::Added => ("+", Color::Green, Some(ADDED)),
        DiffLineKind::Removed => ("-", Color::Red, Some(REMOVED)),
        DiffLineKind::Context => (" ", Color::Gray, None),
        DiffLineKind::HunkHeader | DiffLineKind::FileHeader => ("", Color::Blue, None),
        DiffLineKind::NoNewline => ("\\ ", Color::DarkGray, None),
    };
    let style = Style::default().fg(color);
    if matches!(
        line.kind,
        DiffLineKind::HunkHeader | DiffLineKind::FileHeader
    ) {
        return Line::from(Span::styled(format!("{INDENT}{}", line.text), style));
    }
    let mut spans = vec![
        Span::styled(
            format!(
                "{INDENT}{} {} │",
                number(line.old_line),
                number(line.new_line)
            ),
            Style::default().fg(color),
        ),
        Span::styled(sign, style.add_modifier(Modifier::BOLD)),
    ];
    let text: Vec<Span<'static>> = match (shade, other) {
        (Some(shade), Some(other)) => changed_words(line, other, shade),
        _ => coloured(&line.text, language)
            .into_iter()
            .map(|span| match shade {
                Some(shade) => span.patch_style(Style::default().bg(shade)),
                None => span,
            })
            .collect(),
    };
    spans.extend(text);
    Line::from(spans)
}

/// A line's text in its language's colours (plain when unknown).
fn coloured(text: &str, language: Option<&str>) -> Vec<Span<'static>> {
    match language {
        Some(language) => code_lines(language, text)
            .into_iter()
            .next()
            .unwrap_or_default(),
        None => vec![Span::raw(text.to_owned())],
    }
}

/// A line changed in place, shaded, with the words it does not share with `other`
/// marked brighter and bold.
fn changed_words(line: &DiffLine, other: &str, shade: Color) -> Vec<Span<'static>> {
    let added = line.kind == DiffLineKind::Added;
    let (old, new) = if added {
        (other, line.text.as_str())
    } else {
        (line.text.as_str(), other)
    };
    let marked = if added { ADDED_WORDS } else { REMOVED_WORDS };
    let base = Style::default().bg(shade);
    let diff = similar::TextDiff::from_words(old, new);
    let mut spans: Vec<Span<'static>> = Vec::new();
    for change in diff.iter_all_changes() {
        let style = match (change.tag(), added) {
            (similar::ChangeTag::Equal, _) => base,
            (similar::ChangeTag::Insert, true) | (similar::ChangeTag::Delete, false) => {
                base.bg(marked).add_modifier(Modifier::BOLD)
            }
            // The other side's words are not on this line.
            _ => continue,
        };
        match spans.last_mut() {
            Some(last) if last.style == style => last.content.to_mut().push_str(change.value()),
            _ => spans.push(Span::styled(change.value().to_owned(), style)),
        }
    }
    spans
}

/// The language of a file, for colouring its diff: its extension.
pub(super) fn language_of(path: Option<&str>) -> Option<&str> {
    let name = path?.rsplit('/').next()?;
    name.rsplit_once('.').map(|(_, extension)| extension)
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
