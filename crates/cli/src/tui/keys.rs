//! What each key does, given what is on screen.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Action, App};

impl App {
    /// Applies a key to the composer, the history recall or the picker, and says what
    /// the loop is to do.
    pub(super) fn key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(question) = &mut self.question {
            if ctrl && matches!(key.code, KeyCode::Char('c' | 'd')) {
                return Action::Quit;
            }
            return match question.key(key, &mut self.composer) {
                super::question::Step::Stay => Action::Nothing,
                super::question::Step::Done(answers) => Action::AnswerQuestions(answers),
            };
        }
        if let Some(picker) = &mut self.picker {
            return match key.code {
                KeyCode::Char('c' | 'd') if ctrl => Action::Quit,
                KeyCode::Esc => {
                    self.picker = None;
                    Action::Nothing
                }
                KeyCode::Up => {
                    picker.selected = picker.selected.saturating_sub(1);
                    Action::Nothing
                }
                KeyCode::Down => {
                    picker.selected =
                        (picker.selected + 1).min(picker.sessions.len().saturating_sub(1));
                    Action::Nothing
                }
                KeyCode::Enter => {
                    let chosen = picker
                        .sessions
                        .get(picker.selected)
                        .map(|s| s.session_id.clone());
                    self.picker = None;
                    chosen.map_or(Action::Nothing, Action::OpenSession)
                }
                _ => Action::Nothing,
            };
        }
        match key.code {
            // Every tool card expands to all it carries, or collapses again.
            KeyCode::Char('o') if ctrl => {
                self.expanded = !self.expanded;
                Action::Nothing
            }
            KeyCode::Char('c' | 'd') if ctrl => Action::Quit,
            KeyCode::Esc => Action::Stop,
            KeyCode::Char(c) if !ctrl => {
                self.composer.push(c);
                self.recall = None;
                Action::Nothing
            }
            KeyCode::Backspace => {
                self.composer.pop();
                Action::Nothing
            }
            KeyCode::Up => {
                let at = self
                    .recall
                    .map_or(self.history.len(), |i| i)
                    .saturating_sub(1);
                if let Some(prompt) = self.history.get(at) {
                    self.composer = prompt.clone();
                    self.recall = Some(at);
                }
                Action::Nothing
            }
            KeyCode::Down => {
                match self.recall.map(|i| i + 1) {
                    Some(at) if at < self.history.len() => {
                        self.composer = self.history[at].clone();
                        self.recall = Some(at);
                    }
                    _ => {
                        self.composer.clear();
                        self.recall = None;
                    }
                }
                Action::Nothing
            }
            KeyCode::Enter if !self.composer.trim().is_empty() && !self.transcript.run_active() => {
                let prompt = std::mem::take(&mut self.composer);
                self.history.push(prompt.clone());
                self.recall = None;
                Action::Send(prompt)
            }
            _ => Action::Nothing,
        }
    }

    /// A bracketed paste goes into the composer whole.
    pub(super) fn paste(&mut self, text: &str) -> Action {
        self.composer.push_str(text);
        self.recall = None;
        Action::Nothing
    }

    /// The mouse wheel (arrows read together) scrolls the transcript.
    pub(super) fn scroll(&mut self, _lines: i32) -> Action {
        Action::Nothing
    }
}
