//! Drawing Mission Control: the transcript with its cards, the picker, the composer and
//! the status line.

use magi_protocol::messages::{DIAGNOSTIC_PROVIDER_RETRYING, DIAGNOSTIC_REPLY_TRUNCATED};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block as Frame, Borders, Paragraph};

mod cards;
mod markdown;
mod status;
mod transcript;
mod view;
mod wrap;

use super::{App, Picker};
pub(super) use markdown::warm_up;
pub(super) use status::{SPINNER_STEP, reduced_motion};
pub(super) use view::View;
use wrap::wrap_lines;

/// What the transcript says while the view is anchored above and output arrives.
const NEWS_BELOW: &str = " ↓ new output below · End to follow ";

impl App {
    /// Draws the whole screen.
    pub(super) fn draw(&mut self, frame: &mut ratatui::Frame) {
        let [body, composer, status] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let width = usize::from(body.width.saturating_sub(2)).max(10);
        let height = usize::from(body.height.saturating_sub(2));
        let newest = |lines: Vec<Line<'static>>| {
            let lines = wrap_lines(&lines, width);
            let first = lines.len().saturating_sub(height);
            lines.into_iter().skip(first).collect()
        };
        let shown: Vec<Line> = match (&self.picker, &self.question) {
            (Some(picker), _) => newest(picker_lines(picker)),
            (None, Some(question)) => newest(question.lines()),
            (None, None) => {
                // A queued prompt stays in sight under the transcript.
                let queued = self.queued.as_ref().map(|queued| {
                    let line = styled(
                        format!("⏳ queued, sent when the turn ends (Up edits): {queued}"),
                        Color::DarkGray,
                    );
                    wrap_lines(&[line], width)
                });
                let below = queued.as_ref().map_or(0, Vec::len).min(height);
                let entries = view::Entries {
                    items: self.transcript.items(),
                    stamps: self.transcript.stamps(),
                    draw: &transcript::entry_rows,
                    look: 0,
                };
                let mut shown = self.view.rows(&entries, width, height - below);
                shown.extend(queued.into_iter().flatten().take(below));
                shown
            }
        };
        let mut block = Frame::default().borders(Borders::ALL).title(" magi-code ");
        if self.view.news_below() && self.picker.is_none() && self.question.is_none() {
            block = block.title_bottom(
                Line::from(NEWS_BELOW).style(
                    Style::default()
                        .fg(Color::Yellow)
                        .add_modifier(Modifier::BOLD),
                ),
            );
        }
        frame.render_widget(Paragraph::new(shown).block(block), body);
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
        frame.render_widget(
            Paragraph::new(self.status_line(std::time::Instant::now()))
                .style(Style::default().add_modifier(Modifier::DIM)),
            status,
        );
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

pub(super) fn styled(text: String, color: Color) -> Line<'static> {
    Line::from(Span::styled(text, Style::default().fg(color)))
}

/// A diagnostic in the transcript. A reply cut at the model's output limit is marked
/// as such, so it is never read as a whole answer; a retry is news, not an error.
pub(super) fn diagnostic_line(code: &str, summary: &str) -> Line<'static> {
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
}
