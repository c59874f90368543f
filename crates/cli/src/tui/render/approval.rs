//! The approval prompt: what the call would do (the command, redacted as its card is,
//! or the path and a preview of the change), the rule "for this session" would add,
//! and the keys; and an approval's line in the transcript once answered.

use std::time::Duration;

use magi_client::fold::{Approval, ApprovalState};
use magi_protocol::messages::ProposedChange;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::diff::{diff_lines, language_of, parse_unified};
use super::words;
use crate::tui::choice::Choice;

/// Lines of a proposed change shown in the prompt at most.
const PREVIEW_LINES: usize = 12;

/// What the call is and what it acts on: the tool's name and the subject (the
/// approval's summary is the call's label, `bash cargo test`).
fn tool_and_subject(approval: &Approval) -> (String, String) {
    let (tool, rest) = approval
        .summary
        .split_once(' ')
        .unwrap_or((approval.summary.as_str(), ""));
    let subject = approval
        .subject
        .clone()
        .unwrap_or_else(|| rest.trim().to_owned());
    (tool.to_owned(), subject)
}

/// How the prompt stands: the denial message being typed (shown in the composer),
/// the highlighted choice and the time left to answer.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Asking<'a> {
    pub(super) message: Option<&'a str>,
    pub(super) highlighted: usize,
    pub(super) time_left: Option<Duration>,
}

/// The pending approval's prompt: the call, a preview of its change, and the choices,
/// numbered, with the highlighted one marked and the time left to answer.
pub(super) fn panel(approval: &Approval, asking: Asking<'_>) -> Vec<Line<'static>> {
    let message = asking.message;
    let (tool, subject) = tool_and_subject(approval);
    let ask = Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD);
    let mut first = vec![
        Span::styled(format!("? Allow {tool}"), ask),
        Span::styled(if subject.is_empty() { "?" } else { ": " }, ask),
        Span::raw(subject.clone()),
    ];
    if let Some(counts) = approval
        .proposed_change
        .as_ref()
        .and_then(ProposedChange::counts_words)
    {
        // Counted by the backend from the whole change, not from the lines shown.
        first.push(Span::styled(
            format!(" ({counts})"),
            Style::default().fg(Color::DarkGray),
        ));
    }
    let mut lines = vec![Line::from(first)];
    if let Some(change) = &approval.proposed_change {
        let parsed = parse_unified(&change.diff);
        let shown: Vec<_> = parsed
            .iter()
            .filter(|l| l.kind != magi_protocol::cards::DiffLineKind::FileHeader)
            .collect();
        lines.extend(diff_lines(
            shown.iter().copied().take(PREVIEW_LINES),
            language_of(approval.subject.as_deref()),
        ));
        let hidden = shown.len().saturating_sub(PREVIEW_LINES);
        // What the approval carries is itself bounded: say so rather than count only
        // what it carries as if it were the whole change.
        let more = match (hidden, change.truncated) {
            (0, false) => None,
            (0, true) => {
                Some("    … the change is longer than the 128 lines an approval carries".to_owned())
            }
            (n, false) => Some(format!("    … {n} more lines of the change: v shows them")),
            (n, true) => Some(format!(
                "    … {n} more lines here (v shows them), and the change is longer than the \
                 128 lines an approval carries"
            )),
        };
        if let Some(more) = more {
            lines.push(Line::from(Span::styled(
                more,
                Style::default().fg(Color::DarkGray),
            )));
        }
    }
    let yellow = Style::default().fg(Color::Yellow);
    if message.is_some() {
        lines.push(Line::from(Span::styled(
            "  type the message to the model · Enter deny with it · Esc back",
            yellow,
        )));
        return lines;
    }
    let mut keys = vec![Span::raw("  ")];
    let offered = Choice::offered(approval.suggested_rule.is_some());
    for (n, choice) in offered.iter().enumerate() {
        if n > 0 {
            keys.push(Span::styled(" · ", yellow));
        }
        let words = match choice {
            Choice::AllowOnce => "allow once".to_owned(),
            Choice::AllowForSession => match &approval.suggested_rule {
                Some(rule) => format!("allow for this session (adds the rule {rule})"),
                None => "allow for this session".to_owned(),
            },
            Choice::Deny => "deny".to_owned(),
            Choice::DenyWithMessage => "deny with a message".to_owned(),
        };
        let style = if n == asking.highlighted {
            yellow.add_modifier(Modifier::REVERSED)
        } else {
            yellow
        };
        keys.push(Span::styled(
            format!("{} {} {words}", n + 1, choice.letter()),
            style,
        ));
    }
    lines.push(Line::from(keys));
    let mut end = vec![Span::styled(
        "  Enter takes the highlighted one (Left/Right move it)",
        Style::default().fg(Color::DarkGray),
    )];
    if let Some(left) = asking.time_left {
        // The backend denies an unanswered approval when its time is up.
        let urgent = left < URGENT;
        end.push(Span::styled(
            format!(" · denied in {}s unless answered", left.as_secs()),
            Style::default().fg(if urgent { Color::Red } else { Color::DarkGray }),
        ));
    }
    lines.push(Line::from(end));
    lines
}

/// Time left under which the countdown is drawn in red.
const URGENT: Duration = Duration::from_secs(10);

/// Everything an approval shows, for its full view: the call, every line of the change
/// it carries, and whether the change is longer than that.
pub(in crate::tui) fn full_view(approval: &Approval) -> Vec<Line<'static>> {
    let (tool, subject) = tool_and_subject(approval);
    let counts = approval
        .proposed_change
        .as_ref()
        .and_then(ProposedChange::counts_words)
        .map(|counts| format!(" ({counts})"))
        .unwrap_or_default();
    let mut lines = vec![Line::from(format!("{tool}: {subject}{counts}"))];
    if let Some(rule) = &approval.suggested_rule {
        lines.push(Line::from(format!(
            "an answer for the session adds the rule {rule}"
        )));
    }
    match &approval.proposed_change {
        Some(change) => {
            let parsed = parse_unified(&change.diff);
            lines.extend(diff_lines(
                parsed.iter(),
                language_of(approval.subject.as_deref()),
            ));
            if change.truncated {
                lines.push(Line::from(Span::styled(
                    "… the change is longer than the 128 lines an approval carries",
                    Style::default().fg(Color::DarkGray),
                )));
            }
        }
        None => lines.push(Line::from("no change to show")),
    }
    lines
}

/// The composer's title while an approval waits.
pub(super) fn hint(approval: &Approval, message: Option<&str>) -> &'static str {
    match (message, approval.suggested_rule.is_some()) {
        (Some(_), _) => " message to the model: Enter deny with it · Esc back ",
        (None, true) => {
            " approval pending: y/1 once · s/2 this session · n/3 deny · d/4 deny with a message "
        }
        (None, false) => " approval pending: y/1 once · n/2 deny · d/3 deny with a message ",
    }
}

/// An approval's line in the transcript: what it is about and where it stands.
pub(super) fn approval_line(approval: &Approval) -> Line<'static> {
    let (tool, subject) = tool_and_subject(approval);
    let what = if subject.is_empty() {
        tool
    } else {
        format!("{tool}: {subject}")
    };
    let color = match approval.state {
        ApprovalState::Pending => Color::Yellow,
        ApprovalState::Answered { allow: true } => Color::Green,
        ApprovalState::Answered { allow: false } | ApprovalState::Lapsed => Color::Red,
        ApprovalState::Unknown => Color::Magenta,
    };
    Line::from(Span::styled(
        format!("    ↳ {}: {what}", words::approval(approval.state)),
        Style::default().fg(color),
    ))
}

#[cfg(test)]
mod tests {
    use magi_protocol::messages::ProposedChange;

    use super::*;

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn approval(rule: Option<&str>, change: Option<&str>) -> Approval {
        Approval {
            run_id: "r".into(),
            approval_id: "a".into(),
            summary: "bash cargo test -q".into(),
            subject: Some("cargo test -q".into()),
            suggested_rule: rule.map(str::to_owned),
            proposed_change: change.map(|diff| ProposedChange {
                diff: diff.to_owned(),
                truncated: false,
                added: None,
                removed: None,
            }),
            expires_in_ms: 60_000,
            state: ApprovalState::Pending,
        }
    }

    #[test]
    fn the_prompt_shows_the_command_the_rule_and_the_keys() {
        let asking = Asking {
            time_left: Some(Duration::from_millis(42_500)),
            ..Asking::default()
        };
        assert_eq!(
            text(&panel(&approval(Some("bash(cargo test*)"), None), asking)),
            [
                "? Allow bash: cargo test -q",
                "  1 y allow once · 2 s allow for this session (adds the rule bash(cargo test*)) \
                 · 3 n deny · 4 d deny with a message",
                "  Enter takes the highlighted one (Left/Right move it) · denied in 42s unless \
                 answered"
            ]
        );
        let typing = Asking {
            message: Some("no"),
            ..Asking::default()
        };
        assert_eq!(
            text(&panel(&approval(None, None), typing))[1],
            "  type the message to the model · Enter deny with it · Esc back"
        );
        // The highlighted choice is marked.
        let second = Asking {
            highlighted: 1,
            ..Asking::default()
        };
        let lines = panel(&approval(None, None), second);
        let marked: Vec<&str> = lines[1]
            .spans
            .iter()
            .filter(|s| s.style.add_modifier.contains(Modifier::REVERSED))
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(marked, ["2 n deny"]);
    }

    #[test]
    fn an_edit_shows_its_change_with_line_numbers() {
        let mut edit = approval(
            None,
            Some("--- a.rs\n+++ a.rs\n@@ -3,2 +3,2 @@\n keep\n-old\n+new\n"),
        );
        edit.summary = "edit a.rs".into();
        edit.subject = Some("a.rs".into());
        if let Some(change) = edit.proposed_change.as_mut() {
            (change.added, change.removed) = (Some(1), Some(1));
        }
        assert_eq!(
            text(&panel(&edit, Asking::default()))[..5],
            [
                "? Allow edit: a.rs (+1 \u{2212}1)",
                "    @@ -3,2 +3,2 @@",
                "       3    3 │ keep",
                "       4      │-old",
                "            4 │+new",
            ]
        );
    }

    #[test]
    fn an_answered_approval_says_how_in_words() {
        let mut a = approval(None, None);
        a.state = ApprovalState::Lapsed;
        assert_eq!(
            text(&[approval_line(&a)]),
            ["    ↳ denied: not answered before the run ended: bash: cargo test -q"]
        );
    }
}
