//! The approval prompt: what the call would do (the command, redacted as its card is,
//! or the path and a preview of the change), the rule "for this session" would add,
//! and the keys; and an approval's line in the transcript once answered.

use magi_client::fold::{Approval, ApprovalState};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::diff::{diff_lines, parse_unified};
use super::words;

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

/// The pending approval's prompt: the call, a preview of its change, and the keys.
/// With `message` the person is typing a denial message, shown in the composer.
pub(super) fn panel(approval: &Approval, message: Option<&str>) -> Vec<Line<'static>> {
    let (tool, subject) = tool_and_subject(approval);
    let ask = Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("? Allow {tool}"), ask),
        Span::styled(if subject.is_empty() { "?" } else { ": " }, ask),
        Span::raw(subject.clone()),
    ])];
    if let Some(change) = &approval.proposed_change {
        let parsed = parse_unified(&change.diff);
        let shown: Vec<_> = parsed
            .iter()
            .filter(|l| l.kind != magi_protocol::cards::DiffLineKind::FileHeader)
            .collect();
        lines.extend(diff_lines(shown.iter().copied().take(PREVIEW_LINES)));
        let hidden = shown.len().saturating_sub(PREVIEW_LINES);
        if hidden > 0 || change.truncated {
            let more = if hidden > 0 {
                format!("    … {hidden} more lines of the change")
            } else {
                "    … the change is longer than shown".to_owned()
            };
            lines.push(Line::from(Span::styled(
                more,
                Style::default().fg(Color::DarkGray),
            )));
        }
    }
    let keys = match message {
        Some(_) => "type the message to the model · Enter deny with it · Esc back".to_owned(),
        None => {
            let session = match &approval.suggested_rule {
                Some(rule) => format!(" · s allow for this session (adds the rule {rule})"),
                None => String::new(),
            };
            format!("y allow once{session} · n deny · d deny with a message")
        }
    };
    lines.push(Line::from(Span::styled(
        format!("  {keys}"),
        Style::default().fg(Color::Yellow),
    )));
    lines
}

/// The composer's title while an approval waits.
pub(super) fn hint(approval: &Approval, message: Option<&str>) -> &'static str {
    match (message, approval.suggested_rule.is_some()) {
        (Some(_), _) => " message to the model: Enter deny with it · Esc back ",
        (None, true) => {
            " approval pending: y once · s this session · n deny · d deny with a message "
        }
        (None, false) => " approval pending: y once · n deny · d deny with a message ",
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
            }),
            expires_in_ms: 60_000,
            state: ApprovalState::Pending,
        }
    }

    #[test]
    fn the_prompt_shows_the_command_the_rule_and_the_keys() {
        assert_eq!(
            text(&panel(&approval(Some("bash(cargo test*)"), None), None)),
            [
                "? Allow bash: cargo test -q",
                "  y allow once · s allow for this session (adds the rule bash(cargo test*)) \
                 · n deny · d deny with a message"
            ]
        );
        assert_eq!(
            text(&panel(&approval(None, None), Some("no")))[1],
            "  type the message to the model · Enter deny with it · Esc back"
        );
    }

    #[test]
    fn an_edit_shows_its_change_with_line_numbers() {
        let mut edit = approval(
            None,
            Some("--- a.rs\n+++ a.rs\n@@ -3,2 +3,2 @@\n keep\n-old\n+new\n"),
        );
        edit.summary = "edit a.rs".into();
        edit.subject = Some("a.rs".into());
        assert_eq!(
            text(&panel(&edit, None)),
            [
                "? Allow edit: a.rs",
                "    @@ -3,2 +3,2 @@",
                "       3    3 │ keep",
                "       4      │-old",
                "            4 │+new",
                "  y allow once · n deny · d deny with a message"
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
