//! The question picker (`user.questions`): the model's questions, one at a time, each
//! with its options to move through and pick; words typed in the composer answer in
//! the person's own words instead; Esc declines them all.

use magi_protocol::messages::{Question, QuestionAsked, QuestionReply};
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

/// The open questions and the answers given so far.
pub(super) struct QuestionPicker {
    pub(super) asked: QuestionAsked,
    /// The question shown.
    index: usize,
    /// The option under the cursor.
    cursor: usize,
    /// The options picked so far in a multi-select question.
    picked: Vec<bool>,
    replies: Vec<QuestionReply>,
}

/// What a key did to the picker.
pub(super) enum Step {
    /// Nothing to send yet.
    Stay,
    /// Every question is answered (`Some`), or they were declined (`None`).
    Done(Option<Vec<QuestionReply>>),
}

impl QuestionPicker {
    pub(super) fn new(asked: QuestionAsked) -> QuestionPicker {
        let picked = vec![false; asked.questions.first().map_or(0, |q| q.options.len())];
        QuestionPicker {
            asked,
            index: 0,
            cursor: 0,
            picked,
            replies: Vec::new(),
        }
    }

    fn question(&self) -> Option<&Question> {
        self.asked.questions.get(self.index)
    }

    /// Applies a key; `composer` holds words typed as a free answer.
    pub(super) fn key(&mut self, key: KeyEvent, composer: &mut String) -> Step {
        let Some(question) = self.question().cloned() else {
            return Step::Done(None);
        };
        let last = question.options.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return Step::Done(None),
            KeyCode::Up => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Down => self.cursor = (self.cursor + 1).min(last),
            KeyCode::Char(' ') if question.multi_select && composer.is_empty() => {
                if let Some(picked) = self.picked.get_mut(self.cursor) {
                    *picked = !*picked;
                }
            }
            KeyCode::Enter => {
                let other = (!composer.trim().is_empty()).then(|| std::mem::take(composer));
                let mut selected: Vec<String> = question
                    .options
                    .iter()
                    .zip(&self.picked)
                    .filter(|(_, picked)| **picked)
                    .map(|(o, _)| o.label.clone())
                    .collect();
                // Enter on an option picks it, unless words or picks answer already.
                if selected.is_empty() && other.is_none() {
                    selected.extend(question.options.get(self.cursor).map(|o| o.label.clone()));
                }
                self.replies.push(QuestionReply { selected, other });
                self.index += 1;
                self.cursor = 0;
                let options = self.question().map_or(0, |q| q.options.len());
                self.picked = vec![false; options];
                if self.index >= self.asked.questions.len() {
                    return Step::Done(Some(std::mem::take(&mut self.replies)));
                }
            }
            KeyCode::Char(c) => composer.push(c),
            KeyCode::Backspace => {
                composer.pop();
            }
            _ => {}
        }
        Step::Stay
    }

    /// The question shown, its options with the cursor and the picks.
    pub(super) fn lines(&self) -> Vec<Line<'static>> {
        let Some(question) = self.question() else {
            return Vec::new();
        };
        let count = self.asked.questions.len();
        let mut title = format!("The model asks ({} of {count})", self.index + 1);
        if let Some(header) = &question.header {
            title.push_str(&format!(" · {header}"));
        }
        let cyan = |text: String| Line::from(Span::styled(text, Style::default().fg(Color::Cyan)));
        let mut lines = vec![cyan(title), Line::from(question.question.clone())];
        for (n, option) in question.options.iter().enumerate() {
            let cursor = if n == self.cursor { "▶" } else { " " };
            let mark = match (question.multi_select, self.picked.get(n)) {
                (true, Some(true)) => "[x] ",
                (true, _) => "[ ] ",
                (false, _) => "",
            };
            let mut text = format!("{cursor} {mark}{}", option.label);
            if let Some(description) = &option.description {
                text.push_str(&format!(" — {description}"));
            }
            lines.push(if n == self.cursor {
                Line::from(Span::styled(text, Style::default().fg(Color::Yellow)))
            } else {
                Line::from(text)
            });
        }
        lines.push(Line::from(
            "Or type an answer in your own words below.".to_owned(),
        ));
        lines
    }

    /// The composer's title while the picker is open.
    pub(super) fn hint(&self) -> &'static str {
        if self.question().is_some_and(|q| q.multi_select) {
            " question: Up/Down move · Space pick · Enter answer · Esc decline "
        } else {
            " question: Up/Down move · Enter choose · Esc decline "
        }
    }
}
