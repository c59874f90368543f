//! The transcript: prompts, replies, activities with their cards, approvals,
//! diagnostics and saved history, as lines.

use magi_client::fold::{ApprovalState, Item, PromptState, Role};
use ratatui::style::Color;
use ratatui::text::Line;

use super::approval::approval_line;
use super::cards::{Look, activity_lines, saved_lines};
use super::{diagnostic_line, styled, words};
use crate::tui::App;

impl App {
    /// Every line of the transcript, unwrapped.
    pub(super) fn transcript_lines(&self) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let now = std::time::Instant::now();
        let look = Look {
            expanded: self.expanded,
            approval_pending: self.pending_approval().is_some(),
        };
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
                    let timing = self.clock.timing(&a.run_id, &a.activity_id, now);
                    lines.extend(activity_lines(a, timing, look));
                }
                // A pending approval is asked above the composer; once answered, its
                // line says how.
                Item::Approval(a) if a.state == ApprovalState::Pending => {}
                Item::Approval(a) => lines.push(approval_line(a)),
                Item::Diagnostic(d) => lines.push(diagnostic_line(&d.code, &d.summary)),
                // A saved tool call is shown as its card, like a live one.
                Item::History(h) if h.card.is_some() && item.role() == Role::Activity => {
                    if let Some(card) = &h.card {
                        lines.extend(saved_lines(card, &h.text, look));
                    }
                }
                Item::History(h) => {
                    let (prefix, color) = match item.role() {
                        Role::User => ("› ", Some(Color::Cyan)),
                        Role::Activity => ("• ", Some(Color::Green)),
                        Role::Diagnostic => ("! ", Some(Color::Red)),
                        _ => ("", None),
                    };
                    let text = match item.role() {
                        Role::Diagnostic => words::history_diagnostic(&h.text),
                        _ => std::borrow::Cow::Borrowed(h.text.as_str()),
                    };
                    for (n, line) in text.lines().enumerate() {
                        let text = format!("{}{line}", if n == 0 { prefix } else { "  " });
                        lines.push(match color {
                            Some(color) => styled(text, color),
                            None => Line::from(text),
                        });
                    }
                    if let Some(card) = &h.card {
                        lines.extend(saved_lines(card, &h.text, look));
                    }
                }
            }
        }
        lines
    }
}
