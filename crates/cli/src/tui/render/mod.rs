//! Drawing Mission Control: the transcript with its cards, the picker, what runs now,
//! the plan, the approval, the composer and the status line.

use magi_protocol::messages::{DIAGNOSTIC_PROVIDER_RETRYING, DIAGNOSTIC_REPLY_TRUNCATED};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block as Frame, Borders, Paragraph};

mod activity;
mod approval;
mod cards;
mod composer;
mod diff;
mod markdown;
mod plan;
mod saved_times;
mod status;
mod transcript;
mod view;
mod welcome;
mod words;
mod wrap;

pub(super) use activity::Clock;
pub(super) use approval::full_view as approval_view;
pub(super) use cards::full_view as card_view;
pub(super) use markdown::warm_up;
pub(super) use status::{SPINNER_STEP, merged_usage, reduced_motion};
pub(super) use view::View;
pub(super) use welcome::Place;

use super::App;
use wrap::wrap_lines;

/// What the transcript says while the view is anchored above and output arrives.
const NEWS_BELOW: &str = " ↓ new output below · End to follow ";

impl App {
    /// Draws the whole screen.
    pub(super) fn draw(&mut self, frame: &mut ratatui::Frame) {
        let now = std::time::Instant::now();
        let pending = self.pending_approval().cloned();
        let pending = pending.as_ref();
        // What runs now, and the approval prompt, sit above the composer when there
        // is something to show.
        let running = self.activity_area(now);
        let width = usize::from(frame.area().width).max(10);
        let prompt = pending
            .map(|a| {
                let asking = approval::Asking {
                    message: self.approval.message(),
                    highlighted: self.approval.highlighted(),
                    time_left: self
                        .approval
                        .time_left(&a.approval_id, a.expires_in_ms, now),
                };
                wrap_lines(&approval::panel(a, asking), width)
            })
            .unwrap_or_default();
        let above = |lines: &Vec<Line>| match lines.len() {
            0 => 0,
            n => u16::try_from(n + 1).unwrap_or(u16::MAX),
        };
        // The model's plan (`plan.todo`) stays pinned while there is one.
        let plan = plan::current(self.transcript.items());
        let plan_lines = plan
            .as_deref()
            .map(|p| plan::lines(p, self.expanded, width))
            .unwrap_or_default();
        let composer_height = composer::height(&self.composer, frame.area().width);
        let [
            body,
            activity_area,
            plan_area,
            approval_area,
            composer,
            status,
        ] = Layout::vertical([
            Constraint::Min(3),
            Constraint::Length(above(&running)),
            Constraint::Length(above(&plan_lines)),
            Constraint::Length(above(&prompt)),
            Constraint::Length(composer_height),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        if !running.is_empty() {
            frame.render_widget(
                Paragraph::new(running).block(
                    Frame::default()
                        .borders(Borders::TOP)
                        .title(" running now "),
                ),
                activity_area,
            );
        }
        if let Some(plan) = plan.as_deref().filter(|_| !plan_lines.is_empty()) {
            frame.render_widget(
                Paragraph::new(plan_lines).block(
                    Frame::default()
                        .borders(Borders::TOP)
                        .title(plan::title(plan, self.expanded)),
                ),
                plan_area,
            );
        }
        if !prompt.is_empty() {
            frame.render_widget(
                Paragraph::new(prompt)
                    .block(Frame::default().borders(Borders::TOP).title(" approval ")),
                approval_area,
            );
        }
        let width = usize::from(body.width.saturating_sub(2)).max(10);
        let height = usize::from(body.height.saturating_sub(2));
        let shown: Vec<Line> = match &self.question {
            Some(question) => {
                let lines = wrap_lines(&question.lines(), width);
                let first = lines.len().saturating_sub(height);
                lines.into_iter().skip(first).collect()
            }
            None => {
                // Queued prompts stay in sight under the transcript, each on lines
                // of its own.
                let queued = (!self.queued.is_empty())
                    .then(|| wrap_lines(&queued_lines(&self.queued), width));
                let below = queued.as_ref().map_or(0, Vec::len).min(height / 2);
                let drawing = transcript::Drawing {
                    look: cards::Look {
                        expanded: self.expanded,
                        approval_pending: pending.is_some(),
                    },
                    clock: &self.clock,
                    now,
                };
                let entries = view::Entries {
                    items: self.transcript.items(),
                    stamps: self.transcript.stamps(),
                    draw: &|item, width| transcript::entry_rows(item, width, &drawing),
                    look: drawing.look_key(),
                };
                let mut shown = if self.transcript.items().is_empty() {
                    // Nothing said yet: where this is and what answers.
                    let model = self.selection.as_ref().and_then(status::model_words);
                    wrap_lines(&welcome::lines(&self.place, model.as_deref()), width)
                } else {
                    self.view.rows(&entries, width, height - below)
                };
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
        } else if let Some(approval) = pending {
            approval::hint(approval, self.approval.message())
        } else {
            " prompt · Enter send "
        };
        // While a denial message is typed, the composer's place is its input.
        match (pending, self.approval.message()) {
            (Some(_), Some(message)) => frame.render_widget(
                Paragraph::new(format!("✎ {message}"))
                    .block(Frame::default().borders(Borders::ALL).title(hint)),
                composer,
            ),
            _ => {
                composer::draw(frame, composer, &self.composer, hint, self.panel.is_none());
                composer::draw_candidates(frame, body, &self.composer);
            }
        }
        frame.render_widget(
            Paragraph::new(self.status_line(now, usize::from(status.width)))
                .style(Style::default().add_modifier(Modifier::DIM)),
            status,
        );
    }
}

/// The queued prompts: a heading, then each prompt's lines under a mark of its own.
fn queued_lines(queued: &[String]) -> Vec<Line<'static>> {
    let mut lines = vec![styled(
        "⏳ queued, sent when the turn ends (Up edits):".to_owned(),
        Color::DarkGray,
    )];
    for prompt in queued {
        for (n, line) in prompt.lines().enumerate() {
            let mark = if n == 0 { "  › " } else { "    " };
            lines.push(styled(format!("{mark}{line}"), Color::DarkGray));
        }
    }
    lines
}

pub(super) fn styled(text: String, color: Color) -> Line<'static> {
    Line::from(Span::styled(text, Style::default().fg(color)))
}

/// A diagnostic in the transcript, in words ([`words::diagnostic`]). A reply cut at the
/// model's output limit is marked as such, so it is never read as a whole answer; a
/// retry is news, not an error.
pub(super) fn diagnostic_line(code: &str, summary: &str) -> Line<'static> {
    let color = match code {
        DIAGNOSTIC_REPLY_TRUNCATED | DIAGNOSTIC_PROVIDER_RETRYING => Color::Yellow,
        _ => Color::Red,
    };
    let mark = if code == DIAGNOSTIC_PROVIDER_RETRYING {
        "…"
    } else {
        "!"
    };
    styled(
        format!("{mark} {}", words::diagnostic(code, summary)),
        color,
    )
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
        assert_eq!(failed, "! the provider could not be reached: refused");
    }
}
