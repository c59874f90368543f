//! Tool cards under their activities, and approvals.
use magi_client::fold::{Approval, ApprovalState};
use magi_protocol::cards::{Block, Card, DiffLineKind};
use ratatui::style::Color;
use ratatui::text::Line;

use super::styled;

/// Lines of a card's diff shown under its activity.
const DIFF_LINES_SHOWN: usize = 12;

/// What a card adds under its activity: its command and exit code, the first lines of
/// its diff in colour, a subagent's calls, and what it left out.
pub(super) fn card_lines(card: &Card) -> Vec<Line<'static>> {
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

/// An approval: what the call acts on and, while pending, the keys that answer it.
pub(super) fn approval_line(approval: &Approval) -> Line<'static> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
