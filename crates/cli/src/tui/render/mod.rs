//! Drawing Mission Control: the transcript with its cards, the picker, the composer and
//! the status line.

use magi_protocol::messages::{DIAGNOSTIC_PROVIDER_RETRYING, DIAGNOSTIC_REPLY_TRUNCATED};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block as Frame, Borders, Paragraph};

mod cards;
mod composer;
mod markdown;
mod status;
mod transcript;
mod view;
mod wrap;

use super::App;
pub(super) use markdown::warm_up;
pub(super) use status::{SPINNER_STEP, reduced_motion};
pub(super) use view::View;
use wrap::wrap_lines;

/// What the transcript says while the view is anchored above and output arrives.
const NEWS_BELOW: &str = " ↓ new output below · End to follow ";

impl App {
    /// Draws the whole screen.
    pub(super) fn draw(&mut self, frame: &mut ratatui::Frame) {
        let composer_height = composer::height(&self.composer, frame.area().width);
        let [body, composer, status] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(composer_height),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let width = usize::from(body.width.saturating_sub(2)).max(10);
        let height = usize::from(body.height.saturating_sub(2));
        let shown: Vec<Line> = match &self.question {
            Some(question) => {
                let lines = wrap_lines(&question.lines(), width);
                let first = lines.len().saturating_sub(height);
                lines.into_iter().skip(first).collect()
            }
            None => {
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
        if self.view.news_below() && self.question.is_none() && self.panel.is_none() {
            block = block.title_bottom(
                Line::from(NEWS_BELOW).style(
                    Style::default()
                        .fg(Color::Yellow)
                        .add_modifier(Modifier::BOLD),
                ),
            );
        }
        frame.render_widget(Paragraph::new(shown).block(block), body);
        // A command's panel covers the transcript.
        if let Some(panel) = &self.panel {
            panel.draw(frame, body);
        }
        let hint = if let Some(hint) = self.panel_hint() {
            hint
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
        composer::draw(frame, composer, &self.composer, hint, self.panel.is_none());
        composer::draw_candidates(frame, body, &self.composer);
        frame.render_widget(
            Paragraph::new(self.status_line(std::time::Instant::now()))
                .style(Style::default().add_modifier(Modifier::DIM)),
            status,
        );
    }
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
