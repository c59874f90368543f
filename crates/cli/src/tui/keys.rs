//! What each key does, given what is on screen.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::composer::Edit;
use super::{Action, App};

/// Rows the transcript moves per step of the mouse wheel.
const WHEEL_ROWS: i32 = 3;

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
            return match self.composer.edit_plain(|text| question.key(key, text)) {
                super::question::Step::Stay => Action::Nothing,
                super::question::Step::Done(answers) => Action::AnswerQuestions(answers),
            };
        }
        if self.panel.is_some() {
            return self.panel_key(key);
        }
        // An open history search or list of candidates takes Esc, Enter and arrows.
        if self.composer.captures(&key) {
            return self.composer_key(key);
        }
        if self.view.key(key, self.composer.is_empty()) {
            return Action::Nothing;
        }
        match key.code {
            // The terminal goes back to the shell until it continues this process.
            KeyCode::Char('z') if ctrl => Action::Suspend,
            // The prompt is edited in the person's own editor.
            KeyCode::Char('g') if ctrl => Action::Editor,
            // Every tool card expands to all it carries, or collapses again.
            KeyCode::Char('o') if ctrl => {
                self.expanded = !self.expanded;
                Action::Nothing
            }
            // Ctrl-D on an empty composer, with nothing running, is the end of input.
            KeyCode::Char('d')
                if ctrl && self.composer.is_empty() && !self.transcript.run_active() =>
            {
                Action::Quit
            }
            KeyCode::Esc => Action::Stop,
            // Shift+Tab: the next approval mode, even while a turn runs.
            KeyCode::BackTab => Action::CycleMode,
            // After the backend ended, `r` on an empty composer starts a fresh one.
            KeyCode::Char('r') if self.backend_gone && !ctrl && self.composer.is_empty() => {
                Action::Renew
            }
            // The queued prompts come back to the composer to be edited.
            KeyCode::Up if self.composer.is_empty() && !self.queued.is_empty() => {
                let queued = std::mem::take(&mut self.queued).join(QUEUED_JOIN);
                self.composer.set_text(queued);
                Action::Nothing
            }
            _ => self.composer_key(key),
        }
    }

    /// A key for the composer; Enter sends its prompt, or queues it while a turn runs.
    fn composer_key(&mut self, key: KeyEvent) -> Action {
        match self.composer.key(key) {
            Edit::Submit => {
                if self.composer.text().trim().is_empty() {
                    return Action::Nothing;
                }
                // A slash command (completed from the list or typed whole) runs.
                if super::commands::is_command(self.composer.text()) {
                    return self.enter_command();
                }
                match self.composer.submit() {
                    Ok(prompt) => {
                        // A new prompt makes the last notice old news.
                        self.status.clear();
                        if let Some(problem) = self.composer.take_problem() {
                            self.status = problem;
                        }
                        if self.transcript.run_active() {
                            self.queue(prompt);
                            Action::Nothing
                        } else {
                            Action::Send(prompt)
                        }
                    }
                    // The prompt stays in the composer, to be cut down.
                    Err(problem) => {
                        self.status = problem;
                        Action::Nothing
                    }
                }
            }
            Edit::Done => Action::Nothing,
            // Home/End on an empty composer: the transcript's keys.
            Edit::NotMine => Action::Nothing,
        }
    }

    /// A bracketed paste goes into the composer whole (a large one as a placeholder);
    /// a paste of image files' paths goes in as the `@` mentions that attach them.
    pub(super) fn paste(&mut self, text: &str) -> Action {
        let cwd = std::env::current_dir().unwrap_or_default();
        match super::attachments::pasted_images(text, &cwd) {
            Some(Ok(mentions)) => {
                let before = &self.composer.text()[..self.composer.cursor()];
                let gap = if before.is_empty() || before.ends_with(char::is_whitespace) {
                    ""
                } else {
                    " "
                };
                self.composer.paste(&format!("{gap}{mentions} "));
            }
            Some(Err(problem)) => {
                self.composer.paste(text);
                self.status = problem;
            }
            None => self.composer.paste(text),
        }
        Action::Nothing
    }

    /// The mouse wheel (arrows read together) scrolls the transcript, a few rows a
    /// step.
    pub(super) fn scroll(&mut self, lines: i32) -> Action {
        // Over a panel or the model's questions the arrows move a cursor: arrows read
        // together (a wheel, or keys typed faster than they are read) are those arrows.
        if self.question.is_some() || self.panel.is_some() {
            return self.arrows(lines);
        }
        self.view.scroll(lines.saturating_mul(WHEEL_ROWS));
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
        self.queued.push(prompt);
    }

    /// The prompts queued during the turn, as the one prompt they are sent as.
    pub(super) fn take_queued(&mut self) -> Option<String> {
        (!self.queued.is_empty()).then(|| std::mem::take(&mut self.queued).join(QUEUED_JOIN))
    }
}

/// Between prompts queued one after another, in the one prompt they are sent as.
const QUEUED_JOIN: &str = "\n\n";
