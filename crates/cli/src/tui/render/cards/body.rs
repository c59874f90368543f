//! A card's body under its header: collapsed, the transcript projection's few lines of
//! its result; expanded (Ctrl-O), every block it carries, omissions said in words.

use magi_core::cards::{
    ROW_ANSWER, ROW_FAILURE_EXPLANATION, ROW_LINES_SHOWN, ROW_MATCHES, ROW_OUTPUT_LINES,
    ROW_QUESTION,
};
use magi_protocol::cards::{
    Availability, Block, CARD_BYTES, Card, CardState, DIFF_LINES_PER_BLOCK, DiffLine, DiffLineKind,
    ToolKind,
};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::styled::text_lines;
use super::{INDENT, RESULT_LINES, note, row_value};
use crate::tui::render::diff::{diff_lines, language_of};
use crate::tui::render::words;

/// The card's body: collapsed, at most [`RESULT_LINES`] lines of its result and a
/// hint when more is there; expanded, everything it carries, omissions said in words.
pub(super) fn body(card: &Card, expanded: bool, summary: Option<&str>) -> Vec<Line<'static>> {
    if expanded {
        return full(card, false);
    }
    let (mut lines, more) = projected(card, summary);
    if more {
        lines.push(note("… more lines · Ctrl-O expands"));
    }
    lines
}

/// The result in at most [`RESULT_LINES`] lines, and whether the card holds more.
fn projected(card: &Card, summary: Option<&str>) -> (Vec<Line<'static>>, bool) {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut more = false;
    let text = card.blocks.iter().find_map(|b| match b {
        Block::Text(t) => Some(t),
        _ => None,
    });
    let diff = card.blocks.iter().find_map(|b| match b {
        Block::Diff(d) => Some(d),
        _ => None,
    });
    if let Some(diff) = diff {
        // What the change added comes first, then what it removed: a collapsed card
        // never hides every added line behind the removed ones.
        let of = |kind| {
            diff.lines
                .iter()
                .filter(move |l: &&DiffLine| l.kind == kind)
        };
        let changed = of(DiffLineKind::Added).count() + of(DiffLineKind::Removed).count();
        let shown: Vec<&DiffLine> = of(DiffLineKind::Added)
            .chain(of(DiffLineKind::Removed))
            .take(RESULT_LINES)
            .collect();
        more |= changed > shown.len() || diff.lines.iter().any(|l| l.kind == DiffLineKind::Context);
        let language = language_of(diff.new_path.as_deref().or(diff.old_path.as_deref()));
        lines.extend(diff_lines(shown.into_iter(), language));
    } else if let Some(text) = text {
        let all = text_lines(text);
        // The tool's rows say how much there was beyond the six lines it kept.
        more |= all.len() > RESULT_LINES || reported_lines(card).is_some_and(|n| n > all.len());
        // A running command's lines are its newest output: the last of them show.
        let skip = match card.state {
            CardState::Running => all.len().saturating_sub(RESULT_LINES),
            CardState::Finished => 0,
        };
        lines.extend(all.into_iter().skip(skip).take(RESULT_LINES).map(indented));
    } else if let Some(children) = card.blocks.iter().find_map(|b| match b {
        Block::Children(c) => Some(c),
        _ => None,
    }) {
        lines.push(children_summary(children));
    } else if let Some(asked) = questions(card) {
        lines.extend(asked);
    } else if let Some(failure) = row_value(card, ROW_FAILURE_EXPLANATION) {
        lines.push(Line::from(Span::styled(
            format!("{INDENT}{failure}"),
            Style::default().fg(Color::Red),
        )));
    }
    // A failed call with nothing else to show says why, in the tool's own summary
    // (unless that is the refusal its header says already).
    if lines.is_empty()
        && card.state == CardState::Finished
        && card.outcome != Some(magi_protocol::cards::CardOutcome::Success)
        && let Some(summary) = summary.map(str::trim).filter(|s| !s.is_empty())
        && card.metadata.public_protection.summary.as_deref() != Some(summary)
    {
        lines.push(Line::from(Span::styled(
            format!("{INDENT}{summary}"),
            Style::default().fg(Color::Red),
        )));
    }
    if lines.is_empty()
        && let Some(said) = words::availability(card.detail.availability)
        && card.blocks.is_empty()
    {
        let why = card.detail.reason.map(words::reason).unwrap_or("");
        lines.push(note(&format!("{said}: {why}")));
    }
    (lines, more)
}

/// The model's questions and the person's answers (`ask_user`), one line each:
/// `? question` then `→ answer`; `None` for a card without them.
fn questions(card: &Card) -> Option<Vec<Line<'static>>> {
    let rows = card.blocks.iter().find_map(|b| match b {
        Block::Results(r) if r.rows.iter().any(|row| row.label == ROW_ANSWER) => Some(&r.rows),
        _ => None,
    })?;
    let mut lines = Vec::new();
    for row in rows {
        let value = row.value.as_deref().unwrap_or("not reported");
        if row.label == ROW_QUESTION {
            lines.push(Line::from(format!("{INDENT}? {value}")));
        } else if row.label == ROW_ANSWER {
            lines.push(Line::from(Span::styled(
                format!("{INDENT}→ {value}"),
                Style::default().fg(Color::Cyan),
            )));
        }
    }
    Some(lines)
}

/// Whether a row says only that nothing happened (`Binary: no`, `Command timeout: not
/// timed out`, a value not reported). A row that carries a decision, a timeout or a
/// truncation that happened is never one of them.
fn uneventful(row: &magi_protocol::cards::ResultRow) -> bool {
    match row.value.as_deref() {
        None => true,
        Some(value) => matches!(
            value,
            "no" | "none"
                | "not timed out"
                | "no limit"
                | "stdout not truncated, stderr not truncated"
        ),
    }
}

/// How many lines of result the card's rows report: a command's output lines, a read's
/// lines shown, a search's matches; `None` when no row says.
fn reported_lines(card: &Card) -> Option<usize> {
    let leading = |value: String| -> Option<usize> {
        value
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    match card.tool_kind {
        ToolKind::Command => row_value(card, ROW_OUTPUT_LINES).and_then(leading),
        ToolKind::Search => row_value(card, ROW_MATCHES).and_then(leading),
        ToolKind::Read => row_value(card, ROW_LINES_SHOWN).and_then(|range| {
            let (first, last) = range.split_once('-').unwrap_or((&range, &range));
            let (first, last): (usize, usize) = (first.parse().ok()?, last.parse().ok()?);
            Some(last.checked_sub(first)? + 1)
        }),
        _ => None,
    }
}

/// `subagent calls: 3 (1 running)`.
fn children_summary(children: &magi_protocol::cards::ChildrenBlock) -> Line<'static> {
    let running = children
        .children
        .iter()
        .filter(|c| c.state == CardState::Running)
        .count();
    let total = children
        .total
        .map_or_else(|| "an unknown number of".to_owned(), |t| t.to_string());
    note(&format!("subagent calls: {total} ({running} running)"))
}

/// Everything the card carries, every row included (a value not reported said so), then
/// what it left out: for the full view of a card.
pub(super) fn complete(card: &Card) -> Vec<Line<'static>> {
    let mut lines = full(card, true);
    if let Some(rest) = where_the_rest_is(card) {
        lines.push(note(&rest));
    }
    lines
}

/// What a card cut at its bounds says of the rest: no client can fetch more of a card
/// (`tool.cards` schema 1), so a change's whole is in its file.
fn where_the_rest_is(card: &Card) -> Option<String> {
    if card.omissions.is_empty() && card.detail.availability != Availability::Truncated {
        return None;
    }
    let changed = card.blocks.iter().find_map(|block| match block {
        Block::Diff(d) => d.new_path.as_deref().or(d.old_path.as_deref()),
        _ => None,
    });
    let bounds = format!(
        "a card carries at most {DIFF_LINES_PER_BLOCK} diff lines and {} KiB, and no more of it can be fetched",
        CARD_BYTES / 1_024
    );
    Some(match changed {
        Some(path) => format!("{bounds}: the whole change is in {path} (git diff shows it)"),
        None => bounds,
    })
}

/// Everything the card carries, then what it left out: the command and what it printed
/// first, then the changes, the files and the rows, each kind in the card's order.
/// Without `all_rows`, rows that say only that nothing happened are left out.
fn full(card: &Card, all_rows: bool) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let rank = |block: &Block| match block {
        Block::Command(_) => 0,
        Block::Text(_) => 1,
        Block::Diff(_) => 2,
        Block::Children(_) => 3,
        Block::Progress(_) => 4,
        Block::Resources(_) => 5,
        Block::Results(_) => 6,
    };
    let mut blocks: Vec<&Block> = card.blocks.iter().collect();
    // Stable: blocks of one kind keep their order.
    blocks.sort_by_key(|b| rank(b));
    for block in blocks {
        match block {
            Block::Command(c) => {
                let command = c.command.as_deref().unwrap_or("(command not shown)");
                for (n, line) in command.lines().enumerate() {
                    let prompt = if n == 0 { "$ " } else { "  " };
                    lines.push(Line::from(Span::styled(
                        format!("{INDENT}{prompt}{line}"),
                        Style::default().fg(Color::Cyan),
                    )));
                }
                if let Some(wd) = &c.working_directory {
                    lines.push(note(&format!("in {wd}")));
                }
            }
            Block::Results(r) => {
                // Rows that say nothing happened are left out of an expanded card;
                // the full view has them all.
                for row in r.rows.iter().filter(|row| all_rows || !uneventful(row)) {
                    let value = row.value.as_deref().unwrap_or("not reported");
                    lines.push(note(&format!("{}: {value}", row.label)));
                }
            }
            Block::Resources(r) => {
                for row in &r.rows {
                    let location = row
                        .location
                        .as_deref()
                        .filter(|l| *l != row.label)
                        .map(|l| format!(" ({l})"))
                        .unwrap_or_default();
                    let availability = words::resource(row.availability)
                        .map(|a| format!(" · {a}"))
                        .unwrap_or_default();
                    lines.push(note(&format!("• {}{location}{availability}", row.label)));
                }
            }
            Block::Text(t) => lines.extend(text_lines(t).into_iter().map(indented)),
            Block::Diff(d) => {
                let path = d
                    .new_path
                    .as_deref()
                    .or(d.old_path.as_deref())
                    .unwrap_or("");
                lines.push(note(&format!(
                    "diff {path} ({})",
                    words::application(d.application)
                )));
                lines.extend(diff_lines(
                    d.lines
                        .iter()
                        .filter(|l| l.kind != DiffLineKind::FileHeader),
                    language_of(Some(path)),
                ));
            }
            Block::Children(c) => {
                lines.push(children_summary(c));
                for child in &c.children {
                    let state = match (child.state, child.outcome) {
                        (CardState::Running, _) => "running".to_owned(),
                        (_, Some(outcome)) => words::outcome(outcome).to_owned(),
                        (state, None) => words::card_state(state).to_owned(),
                    };
                    lines.push(note(&format!("  ↳ {} · {state}", child.title)));
                }
            }
            Block::Progress(p) => {
                let done = p.completed.map_or("?".to_owned(), |n| n.to_string());
                let total = p.total.map_or(String::new(), |n| format!(" of {n}"));
                lines.push(note(&format!(
                    "{}: {done}{total} {}",
                    p.label,
                    words::unit(p.unit)
                )));
            }
        }
    }
    if let Some(summary) = &card.metadata.public_protection.summary {
        lines.push(note(&format!("protection: {summary}")));
    }
    if let Some(said) = words::availability(card.detail.availability) {
        let why = card
            .detail
            .reason
            .map(|r| format!(": {}", words::reason(r)))
            .unwrap_or_default();
        lines.push(note(&format!("{said}{why}")));
    }
    for omission in &card.omissions {
        lines.push(note(&format!("({})", words::omission(omission))));
    }
    lines
}

/// A line of a card's text under its header.
fn indented(pieces: Vec<Span<'static>>) -> Line<'static> {
    let mut line = vec![Span::raw(INDENT)];
    line.extend(pieces);
    Line::from(line)
}
