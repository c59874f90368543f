//! The transcript: prompts, replies, activities with their cards, approvals,
//! diagnostics and saved history, as lines.

use magi_client::fold::{ActivityDisplay, CardView, Item, PromptState, Role};
use ratatui::style::Color;
use ratatui::text::Line;

use super::cards::{approval_line, card_lines};
use super::{diagnostic_line, styled};
use crate::tui::App;

impl App {
    /// Every line of the transcript, unwrapped.
    pub(super) fn transcript_lines(&self) -> Vec<Line<'static>> {
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
