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
        // Ctrl-C closes a panel first (the model's questions come before any panel).
        if interrupt && self.panel.is_some() && self.question.is_none() {
            self.panel = None;
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
        if self.panel.is_some() {
            return self.panel_key(key);
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
            KeyCode::Enter if super::commands::is_command(&self.composer) => self.enter_command(),
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
    pub(super) fn scroll(&mut self, lines: i32) -> Action {
        // Over a panel or the model's questions the arrows move a cursor: arrows read
        // together (a wheel, or keys typed faster than they are read) are those arrows.
        if self.question.is_some() || self.panel.is_some() {
            return self.arrows(lines);
        }
        Action::Nothing
    }

    /// `lines` presses of Up (negative) or Down (positive), in order, until one asks
    /// the loop for something.
    fn arrows(&mut self, lines: i32) -> Action {
        let code = if lines < 0 {
            KeyCode::Up
        } else {
            KeyCode::Down
        };
        for _ in 0..lines.unsigned_abs() {
            match self.key(KeyEvent::new(code, KeyModifiers::NONE)) {
                Action::Nothing => {}
                action => return action,
            }
        }
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
