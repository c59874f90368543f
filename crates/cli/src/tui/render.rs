//! Drawing Mission Control: the transcript with its cards, the picker, the composer and
//! the status line.

use magi_client::fold::{
    ActivityDisplay, Approval, ApprovalState, CardView, Item, PromptState, Role,
};
use magi_protocol::cards::{Block, Card, DiffLineKind};
use magi_protocol::messages::{DIAGNOSTIC_PROVIDER_RETRYING, DIAGNOSTIC_REPLY_TRUNCATED};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block as Frame, Borders, Paragraph};

use super::{App, Picker};

/// Lines of a card's diff shown under its activity.
const DIFF_LINES_SHOWN: usize = 12;

impl App {
    /// Draws the whole screen.
    pub(super) fn draw(&self, frame: &mut ratatui::Frame) {
        let [body, composer, status] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let width = usize::from(body.width.saturating_sub(2)).max(10);
        let lines = match (&self.picker, &self.question) {
            (Some(picker), _) => picker_lines(picker),
            (None, Some(question)) => question.lines(),
            (None, None) => self.transcript_lines(),
        };
        let lines = wrap(lines, width);
        let height = usize::from(body.height.saturating_sub(2));
        let first = lines.len().saturating_sub(height);
        let shown: Vec<Line> = lines.into_iter().skip(first).collect();
        frame.render_widget(
            Paragraph::new(shown)
                .block(Frame::default().borders(Borders::ALL).title(" magi-code ")),
            body,
        );
        let hint = if self.picker.is_some() {
            " sessions: Up/Down choose · Enter open · Esc back "
        } else if let Some(question) = &self.question {
            question.hint()
        } else if let Some(approval) = self.pending_approval() {
            if approval.suggested_rule.is_some() {
                " approval pending: y allow once · s allow for this session · n deny "
            } else {
                " approval pending: y allow once · n deny "
            }
        } else {
            " prompt · Enter send "
        };
        frame.render_widget(
            Paragraph::new(format!("› {}", self.composer))
                .block(Frame::default().borders(Borders::ALL).title(hint)),
            composer,
        );
        let state = if self.transcript.transport_lost() {
            "disconnected"
        } else if self.transcript.run_active() {
            "running · Esc stop"
        } else {
            "idle"
        };
        // The notice comes before the key hints, so a narrow terminal cuts the hints.
        let session = format!(" session {}", self.session_id);
        let mut parts = vec![session.as_str(), state];
        if !self.status.trim().is_empty() {
            parts.push(self.status.trim());
        }
        parts.push("Up/Down history · Ctrl-O sessions · Ctrl-C quit");
        frame.render_widget(
            Paragraph::new(parts.join(" · ")).style(Style::default().add_modifier(Modifier::DIM)),
            status,
        );
    }

    fn transcript_lines(&self) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for item in self.transcript.items() {
            match item {
                Item::Prompt(p) => {
                    let note = match &p.state {
                        PromptState::Submitted => " (sending)",
                        _ => "",
                    };
                    lines.push(styled(format!("› {}{note}", p.text), Color::Cyan));
                }
                Item::Message(m) => {
                    for line in m.text().lines() {
                        lines.push(Line::from(line.to_owned()));
                    }
                }
                Item::Activity(a) => {
                    let (mark, color) = match a.state {
                        ActivityDisplay::Started => ("…", Color::Yellow),
                        ActivityDisplay::Completed => ("✓", Color::Green),
                        ActivityDisplay::Failed => ("✗", Color::Red),
                        ActivityDisplay::Unknown => ("?", Color::Magenta),
                    };
                    // A subagent's call is shown under its task.
                    let indent = match &a.card {
                        CardView::Card(card) if card.parent_activity_id.is_some() => "  ↳ ",
                        _ => "",
                    };
                    lines.push(styled(
                        format!("{indent}{mark} {}: {}", a.name, a.summary),
                        color,
                    ));
                    match &a.card {
                        CardView::Card(card) => lines.extend(card_lines(card)),
                        CardView::Unknown => {
                            lines.push(styled("    card unknown".to_owned(), Color::Magenta))
                        }
                        CardView::None => {}
                    }
                }
                Item::Approval(a) => lines.push(approval_line(a)),
                Item::Diagnostic(d) => lines.push(diagnostic_line(&d.code, &d.summary)),
                Item::History(h) => {
                    let (prefix, color) = match item.role() {
                        Role::User => ("› ", Some(Color::Cyan)),
                        Role::Activity => ("• ", Some(Color::Green)),
                        Role::Diagnostic => ("! ", Some(Color::Red)),
                        _ => ("", None),
                    };
                    for (n, line) in h.text.lines().enumerate() {
                        let text = format!("{}{line}", if n == 0 { prefix } else { "  " });
                        lines.push(match color {
                            Some(color) => styled(text, color),
                            None => Line::from(text),
                        });
                    }
                    if let Some(card) = &h.card {
                        lines.extend(card_lines(card));
                    }
                }
            }
        }
        lines
    }
}

/// The picker's lines: one per session, the selected one marked.
fn picker_lines(picker: &Picker) -> Vec<Line<'static>> {
    let mut lines = vec![styled(
        "Sessions of this directory:".to_owned(),
        Color::Cyan,
    )];
    for (n, session) in picker.sessions.iter().enumerate() {
        let mark = if n == picker.selected { "▶" } else { " " };
        let text = format!(
            "{mark} {}  {}  {}",
            session.session_id,
            session.updated_at.as_deref().unwrap_or("-"),
            session.title.as_deref().unwrap_or("")
        );
        lines.push(if n == picker.selected {
            styled(text, Color::Yellow)
        } else {
            Line::from(text)
        });
    }
    lines
}

/// An approval: what the call acts on and, while pending, the keys that answer it.
fn approval_line(approval: &Approval) -> Line<'static> {
    let what = approval.description();
    let (text, color) = match approval.state {
        ApprovalState::Pending => {
            let session = match &approval.suggested_rule {
                Some(rule) => format!(" · s allow for this session ({rule})"),
                None => String::new(),
            };
            (
                format!("? Allow {what}? y allow once{session} · n deny"),
                Color::Yellow,
            )
        }
        ApprovalState::Answered { allow: true } => (format!("  allowed: {what}"), Color::Green),
        ApprovalState::Answered { allow: false } => (format!("  denied: {what}"), Color::Red),
        ApprovalState::Lapsed => (format!("  lapsed (denied): {what}"), Color::Red),
        ApprovalState::Unknown => (format!("  approval unknown: {what}"), Color::Magenta),
    };
    styled(text, color)
}

fn styled(text: String, color: Color) -> Line<'static> {
    Line::from(Span::styled(text, Style::default().fg(color)))
}

/// What a card adds under its activity: its command and exit code, the first lines of
/// its diff in colour, a subagent's calls, and what it left out.
fn card_lines(card: &Card) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for block in &card.blocks {
        match block {
            Block::Command(command) => {
                let exit = command
                    .exit_code
                    .map_or_else(|| "exit code unknown".to_owned(), |c| format!("exit {c}"));
                lines.push(styled(
                    format!(
                        "    $ {} ({exit})",
                        command.command.as_deref().unwrap_or("(not shown)")
                    ),
                    Color::Gray,
                ));
            }
            Block::Diff(diff) => {
                for line in diff.lines.iter().take(DIFF_LINES_SHOWN) {
                    let (prefix, color) = match line.kind {
                        DiffLineKind::Added => ("+", Color::Green),
                        DiffLineKind::Removed => ("-", Color::Red),
                        DiffLineKind::HunkHeader | DiffLineKind::FileHeader => ("", Color::Blue),
                        _ => (" ", Color::Gray),
                    };
                    lines.push(styled(format!("    {prefix}{}", line.text), color));
                }
                if diff.lines.len() > DIFF_LINES_SHOWN {
                    lines.push(styled(
                        format!(
                            "    … {} more diff lines",
                            diff.lines.len() - DIFF_LINES_SHOWN
                        ),
                        Color::DarkGray,
                    ));
                }
            }
            Block::Children(children) => {
                let finished = children
                    .children
                    .iter()
                    .filter(|c| c.state == magi_protocol::cards::CardState::Finished)
                    .count();
                let total = children
                    .total
                    .map_or_else(|| "unknown".to_owned(), |t| t.to_string());
                lines.push(styled(
                    format!("    subagent calls: {total} ({finished} of those shown finished)"),
                    Color::Gray,
                ));
            }
            _ => {}
        }
    }
    for omission in &card.omissions {
        let count = omission
            .omitted_count
            .map_or_else(String::new, |n| format!("{n} "));
        lines.push(styled(
            format!(
                "    ({count}{} omitted: {})",
                serde_json::to_value(omission.subject)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                serde_json::to_value(omission.reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ),
            Color::DarkGray,
        ));
    }
    lines
}

/// Lines cut to `width` characters, so the newest lines can be kept on screen.
fn wrap(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    let mut wrapped = Vec::new();
    for line in lines {
        let style = line.spans.first().map(|s| s.style).unwrap_or_default();
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        let chars: Vec<char> = text.chars().collect();
        if chars.is_empty() {
            wrapped.push(Line::default());
            continue;
        }
        for piece in chars.chunks(width) {
            wrapped.push(Line::from(Span::styled(
                piece.iter().collect::<String>(),
                style,
            )));
        }
    }
    wrapped
}

/// A diagnostic in the transcript. A reply cut at the model's output limit is marked
/// as such, so it is never read as a whole answer; a retry is news, not an error.
fn diagnostic_line(code: &str, summary: &str) -> Line<'static> {
    match code {
        DIAGNOSTIC_REPLY_TRUNCATED => styled(
            format!("! reply cut at the output limit (incomplete): {summary}"),
            Color::Yellow,
        ),
        DIAGNOSTIC_PROVIDER_RETRYING => styled(format!("… {summary}"), Color::Yellow),
        _ => styled(format!("! {code}: {summary}"), Color::Red),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_reply_is_marked_incomplete() {
        let text = |line: Line<'static>| -> String {
            line.spans.iter().map(|s| s.content.as_ref()).collect()
        };
        let cut = text(diagnostic_line(DIAGNOSTIC_REPLY_TRUNCATED, "cut off"));
        assert_eq!(cut, "! reply cut at the output limit (incomplete): cut off");
        let failed = text(diagnostic_line("provider_unreachable", "refused"));
        assert_eq!(failed, "! provider_unreachable: refused");
    }

    #[test]
    fn a_pending_approval_shows_its_subject_and_offers_the_session_only_with_a_rule() {
        let line = |rule: Option<&str>, state| -> String {
            let approval = Approval {
                run_id: "r".into(),
                approval_id: "a".into(),
                summary: "bash".into(),
                subject: Some("cargo test -q".into()),
                suggested_rule: rule.map(str::to_owned),
                expires_in_ms: 60_000,
                state,
            };
            approval_line(&approval)
                .spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect()
        };
        let pending = ApprovalState::Pending;
        assert_eq!(
            line(Some("bash(cargo test*)"), pending),
            "? Allow bash: cargo test -q? y allow once · s allow for this session \
             (bash(cargo test*)) · n deny"
        );
        assert_eq!(
            line(None, pending),
            "? Allow bash: cargo test -q? y allow once · n deny"
        );
        assert_eq!(
            line(None, ApprovalState::Answered { allow: false }),
            "  denied: bash: cargo test -q"
        );
    }

    #[test]
    fn a_task_card_counts_its_subagents_calls() {
        let card: Card = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
            "parent_activity_id": null, "parent_state": "root", "task_id": "task-1",
            "tool_kind": "subagent", "state": "running", "outcome": null,
            "changes": "unknown", "revision": 1, "origin": "live",
            "detail": {"availability": "complete", "reason": null}, "title": "task reviewer",
            "metadata": {"tool_name": "task", "resource_path": null, "working_directory": null,
                         "public_protection": {"decision": "not_reported", "summary": null}},
            "blocks": [{"type": "children", "total": 3, "children": [
                {"activity_id": "tool-2", "task_id": "task-1", "title": "read a", "state": "finished",
                 "outcome": "success", "changes": "not_applicable"},
                {"activity_id": "tool-3", "task_id": "task-1", "title": "read b", "state": "running",
                 "outcome": null, "changes": "not_applicable"}]}],
            "omissions": []
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let text: Vec<String> = card_lines(&card)
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text, ["    subagent calls: 3 (1 of those shown finished)"]);
    }
}
