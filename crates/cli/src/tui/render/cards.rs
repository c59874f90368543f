//! Tool calls as compact cards: a header with the tool, what it acts on, its status
//! and time, then at most six lines of its result (spec 004's transcript projection);
//! Ctrl-O expands every card to all it carries. Diffs are coloured with old and new
//! line numbers; exits and signals are said in words.

use std::time::Duration;

use magi_client::fold::{ActivityDisplay, ActivityItem, CardView};
use magi_core::cards::{
    ROW_BACKGROUND_JOB, ROW_COMMAND_TIMEOUT, ROW_ENDED, ROW_HOOK, ROW_LINES_CHANGED, ROW_PATTERN,
};
use magi_protocol::cards::{Block, Card, CardState, ProtectionDecision, ResourceKind, ToolKind};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::words;
use body::body;

mod body;
mod styled;

/// Lines of a call's result shown under its header while cards are collapsed: the
/// transcript projection's bound (spec 004).
pub(super) const RESULT_LINES: usize = 6;
/// Indent of a card's body under its header.
const INDENT: &str = "    ";

/// How long a call has run, or took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::tui) enum Timing {
    /// Still running, for this long since Mission Control first saw it.
    Running(Duration),
    /// Settled after this long (as Mission Control saw it).
    Took(Duration),
    /// Not seen live (saved history).
    Unknown,
}

/// How the transcript shows cards, the same for every card of a frame.
#[derive(Debug, Clone, Copy)]
pub(super) struct Look {
    /// Every card shows all it carries (Ctrl-O), or its result's first lines.
    pub(super) expanded: bool,
    /// Whether an approval waits for the person: a card still saying "approval
    /// required" after its approval was answered is running.
    pub(super) approval_pending: bool,
}

/// A live activity: its header and, with a card, the card's body.
pub(super) fn activity_lines(
    activity: &ActivityItem,
    timing: Timing,
    look: Look,
) -> Vec<Line<'static>> {
    match &activity.card {
        CardView::Card(card) => {
            let mut lines = vec![header(card, Some(activity.state), timing, look)];
            lines.extend(body(card, look.expanded, Some(&activity.summary)));
            lines
        }
        CardView::Unknown | CardView::None => {
            let (mark, color) = mark(activity.state);
            let status = status_with_time(words::activity(activity.state).to_owned(), timing);
            let mut lines = vec![Line::from(vec![
                Span::styled(format!("{mark} "), Style::default().fg(color)),
                Span::styled(activity.summary.clone(), Style::default().fg(color)),
                Span::styled(format!("  {status}"), dim()),
            ])];
            if activity.card == CardView::Unknown {
                lines.push(note("card unknown: its updates arrived out of order"));
            }
            lines
        }
    }
}

/// A saved card of the history: its header, with the time it took when it was seen
/// live, and body; `summary` is the history entry's text.
pub(super) fn saved_lines(
    card: &Card,
    summary: &str,
    timing: Timing,
    look: Look,
) -> Vec<Line<'static>> {
    // The entry reads `<tool>: <outcome>. <summary>`; the header says the first two.
    let summary = summary
        .split_once(". ")
        .filter(|(head, _)| head.contains(": "))
        .map_or(summary, |(_, rest)| rest);
    let mut lines = vec![header(card, None, timing, look)];
    lines.extend(body(card, look.expanded, Some(summary)));
    lines
}

/// A card in full, for the full view: its header, then every block and row it carries
/// and what it left out.
pub(in crate::tui) fn full_view(card: &Card) -> Vec<Line<'static>> {
    let look = Look {
        expanded: true,
        approval_pending: false,
    };
    let mut lines = vec![header(card, None, Timing::Unknown, look)];
    lines.extend(body::complete(card));
    lines
}

/// The mark and colour of where a call is.
fn mark(state: ActivityDisplay) -> (&'static str, Color) {
    match state {
        ActivityDisplay::Started => ("…", Color::Yellow),
        ActivityDisplay::Completed => ("✓", Color::Green),
        ActivityDisplay::Failed => ("✗", Color::Red),
        ActivityDisplay::Unknown => ("?", Color::Magenta),
    }
}

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

fn note(text: &str) -> Line<'static> {
    Line::from(Span::styled(format!("{INDENT}{text}"), dim()))
}

/// The card's one-line header: mark, tool, main argument, then its status in words
/// and its time.
fn header(card: &Card, live: Option<ActivityDisplay>, timing: Timing, look: Look) -> Line<'static> {
    let display = live.unwrap_or(match (card.state, card.outcome) {
        (CardState::Running, _) => ActivityDisplay::Started,
        (_, Some(magi_protocol::cards::CardOutcome::Success)) => ActivityDisplay::Completed,
        (_, Some(_)) => ActivityDisplay::Failed,
        (_, None) => ActivityDisplay::Unknown,
    });
    let (mark, color) = mark(display);
    let tool = tool_name(card);
    let indent = if card.parent_activity_id.is_some() {
        "  ↳ "
    } else {
        ""
    };
    let mut spans = vec![
        Span::raw(indent),
        Span::styled(format!("{mark} "), Style::default().fg(color)),
        Span::styled(
            tool.clone(),
            Style::default().fg(color).add_modifier(Modifier::BOLD),
        ),
    ];
    if let Some(argument) = main_argument(card) {
        spans.push(Span::raw(format!(" {argument}")));
    }
    // A call waiting for the person is not running: no time is shown for it.
    let waiting = display == ActivityDisplay::Started
        && look.approval_pending
        && card.metadata.public_protection.decision == ProtectionDecision::ApprovalRequired;
    let timing = if waiting { Timing::Unknown } else { timing };
    let status = status_with_time(status(card, display, look.approval_pending), timing);
    spans.push(Span::styled(format!("  {status}"), dim()));
    Line::from(spans)
}

/// The tool's name as the card gives it, else its kind.
fn tool_name(card: &Card) -> String {
    card.metadata
        .tool_name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| {
            card.title
                .split_whitespace()
                .next()
                .unwrap_or("tool")
                .to_owned()
        })
}

/// What a call acts on, from the card: the command of a command, the path of a file
/// tool, the pattern of a search, the URL of a fetch, the task of a subagent; failing
/// those (a running call has no facts yet), its title after the tool's name.
pub(super) fn main_argument(card: &Card) -> Option<String> {
    let from_card = match card.tool_kind {
        ToolKind::Command => card.blocks.iter().find_map(|b| match b {
            Block::Command(c) => c.command.as_deref().map(first_line),
            _ => None,
        }),
        ToolKind::Read | ToolKind::Write | ToolKind::Edit => card.metadata.resource_path.clone(),
        ToolKind::Search => {
            row_value(card, ROW_PATTERN).map(|pattern| match &card.metadata.resource_path {
                Some(path) => format!("{pattern} in {path}"),
                None => pattern,
            })
        }
        ToolKind::Web => card.blocks.iter().find_map(|b| match b {
            Block::Resources(r) => r
                .rows
                .iter()
                .find(|row| row.kind == ResourceKind::Url)
                .map(|row| row.label.clone()),
            _ => None,
        }),
        ToolKind::Subagent | ToolKind::Mcp | ToolKind::CodeMode | ToolKind::Other => None,
    };
    from_card.or_else(|| {
        let tool = tool_name(card);
        card.title
            .strip_prefix(tool.as_str())
            .map(str::trim)
            .filter(|rest| !rest.is_empty())
            .map(str::to_owned)
    })
}

/// A command's first nonblank line, with `…` when more lines follow.
fn first_line(command: &str) -> String {
    let mut lines = command.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or_default().to_owned();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

/// The value of the first results row labelled `label`.
fn row_value(card: &Card, label: &str) -> Option<String> {
    card.blocks.iter().find_map(|b| match b {
        Block::Results(r) => r
            .rows
            .iter()
            .find(|row| row.label == label)
            .and_then(|row| row.value.clone()),
        _ => None,
    })
}

/// The card's status in words: running or waiting for an approval; once finished, how
/// it ended (a command's exit or signal), what it changed and whether it was denied.
fn status(card: &Card, display: ActivityDisplay, approval_pending: bool) -> String {
    let decision = card.metadata.public_protection.decision;
    if display == ActivityDisplay::Started {
        return match decision {
            ProtectionDecision::ApprovalRequired if approval_pending => {
                "waiting for your approval".to_owned()
            }
            _ => "running".to_owned(),
        };
    }
    let mut parts: Vec<String> = Vec::new();
    let refused = matches!(
        decision,
        ProtectionDecision::Denied | ProtectionDecision::Blocked
    );
    match display {
        ActivityDisplay::Unknown => parts.push(words::activity(display).to_owned()),
        // A refused call did not fail at its work: the refusal is what happened, in
        // the backend's own words when it gave them (`denied by user`), or the hook's
        // that blocked it.
        _ if refused => parts.push(
            card.metadata
                .public_protection
                .summary
                .clone()
                .or_else(|| row_value(card, ROW_HOOK))
                .or_else(|| words::decision(decision).map(str::to_owned))
                .unwrap_or_default(),
        ),
        _ => match card.outcome {
            Some(outcome) => parts.push(words::outcome(outcome).to_owned()),
            None => parts.push(words::card_state(card.state).to_owned()),
        },
    }
    if let Some(exit) = exit_words(card) {
        parts.push(exit);
    }
    if let Some(job) = row_value(card, ROW_BACKGROUND_JOB) {
        parts.push(format!("running in the background as {job}"));
    }
    if let Some(ended) = row_value(card, ROW_ENDED) {
        parts.push(format!("subagent {ended}"));
    }
    // A hook that gave the call other arguments (a block is the refusal above).
    if let Some(hook) = row_value(card, ROW_HOOK).filter(|_| !refused) {
        parts.push(hook);
    }
    if card.tool_kind != ToolKind::Command
        && let Some(changes) = words::changes(card.changes)
    {
        parts.push(changes.to_owned());
    }
    // How big the change was, over all of it.
    if let Some(counted) = row_value(card, ROW_LINES_CHANGED) {
        parts.push(counted);
    }
    parts.dedup();
    parts.join(" · ")
}

/// A command's end in words, from its command block and its timeout notice.
fn exit_words(card: &Card) -> Option<String> {
    let command = card.blocks.iter().find_map(|b| match b {
        Block::Command(c) => Some(c),
        _ => None,
    })?;
    let timed_out =
        row_value(card, ROW_COMMAND_TIMEOUT).is_some_and(|v| v.starts_with("timed out"));
    words::exit(command.exit_code, command.signal.as_deref(), timed_out)
}

/// A status followed by the time: `running 3s`, `done · 1.2s`.
fn status_with_time(status: String, timing: Timing) -> String {
    match timing {
        Timing::Running(d) => format!("{status} {}", elapsed(d)),
        Timing::Took(d) => format!("{status} · {}", elapsed(d)),
        Timing::Unknown => status,
    }
}

/// A duration as a person reads it: `0.4s`, `12s`, `3m 05s`, `1h 02m`.
pub(in crate::tui) fn elapsed(d: Duration) -> String {
    let secs = d.as_secs();
    if d < Duration::from_millis(100) {
        format!("{}ms", d.as_millis())
    } else if secs < 10 {
        format!("{:.1}s", d.as_secs_f64())
    } else if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

#[cfg(test)]
mod tests;
