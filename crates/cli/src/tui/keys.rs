//! What each key does, given what is on screen.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Action, Answer, App};

impl App {
    /// Applies a key to the composer, the history recall or the picker, and says what
    /// the loop is to do.
    pub(super) fn key(&mut self, key: KeyEvent) -> Action {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let interrupt = ctrl && key.code == KeyCode::Char('c');
        if !interrupt {
            self.quit_armed = false;
        }
        if interrupt && self.picker.is_some() && self.question.is_none() {
            self.picker = None;
            return Action::Nothing;
        }
        if interrupt {
            return self.interrupt();
        }
        if let Some(question) = &mut self.question {
            return match question.key(key, &mut self.composer) {
                super::question::Step::Stay => Action::Nothing,
                super::question::Step::Done(answers) => Action::AnswerQuestions(answers),
            };
        }
        if let Some(picker) = &mut self.picker {
            return match key.code {
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
            KeyCode::Char('o') if ctrl && !self.transcript.run_active() => Action::ListSessions,
            // Ctrl-D on an empty composer, with nothing running, is the end of input.
            KeyCode::Char('d')
                if ctrl && self.composer.is_empty() && !self.transcript.run_active() =>
            {
                Action::Quit
            }
            KeyCode::Esc => Action::Stop,
            KeyCode::Char(c @ ('y' | 'n'))
                if self.composer.is_empty() && self.pending_approval().is_some() =>
            {
                Action::Answer(if c == 'y' {
                    Answer::AllowOnce
                } else {
                    Answer::Deny
                })
            }
            // Without a suggested rule "for this session" would cover this call only,
            // so it is not offered and `s` is an ordinary key.
            KeyCode::Char('s')
                if self.composer.is_empty()
                    && self
                        .pending_approval()
                        .is_some_and(|a| a.suggested_rule.is_some()) =>
            {
                Action::Answer(Answer::AllowForSession)
            }
            KeyCode::Char(c) if !ctrl => {
                self.composer.push(c);
                self.recall = None;
                Action::Nothing
            }
            KeyCode::Backspace => {
                self.composer.pop();
                Action::Nothing
            }
            // The queued prompt comes back to the composer to be edited.
            KeyCode::Up if self.composer.is_empty() && self.queued.is_some() => {
                self.composer = self.queued.take().unwrap_or_default();
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
            KeyCode::Enter if !self.composer.trim().is_empty() => {
                let prompt = std::mem::take(&mut self.composer);
                self.history.push(prompt.clone());
                self.recall = None;
                if self.transcript.run_active() {
                    self.queue(prompt);
                    Action::Nothing
                } else {
                    Action::Send(prompt)
                }
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

    /// Ctrl-C: stops a running turn first; else clears the composer; on an empty
    /// composer it asks for a second press, which quits.
    fn interrupt(&mut self) -> Action {
        if self.transcript.run_active() && !self.stopping {
            return Action::Stop;
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            self.recall = None;
            return Action::Nothing;
        }
        if self.quit_armed {
            return Action::Quit;
        }
        self.quit_armed = true;
        Action::Nothing
    }

    /// Queues a prompt typed while a turn runs: it is sent when the turn ends, and
    /// until then Up on an empty composer brings it back to edit. Prompts queued one
    /// after another go as one, in order.
    fn queue(&mut self, prompt: String) {
        self.queued = Some(match self.queued.take() {
            Some(earlier) => format!("{earlier}\n\n{prompt}"),
            None => prompt,
        });
    }
}
