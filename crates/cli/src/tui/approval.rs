//! Answering an approval with a key: `y` allow once, `s` allow for this session (only
//! with a suggested rule), `n` deny, `d` deny with a message to the model (typed where
//! the composer was; Enter sends it, Esc returns to the choice). The choices are also
//! numbered (`1`, `2`, …) and one is highlighted: Left/Right move the highlight and
//! Enter takes it.
//!
//! A key read before the prompt was first drawn never answers it: the person could
//! not have seen what they were answering (a `y` typed while the reply streamed).
//! Such a key goes where it would have gone without the prompt.

use std::time::{Duration, Instant};

use magi_protocol::limits::APPROVAL_MESSAGE_BYTES;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::choice::Choice;
use super::{Action, Answer, App};

/// The approval prompt's own state.
#[derive(Debug, Default)]
pub(super) struct ApprovalPrompt {
    /// The approval on screen and when it was first drawn.
    drawn: Option<(String, Instant)>,
    /// The approval last requested and when it arrived: its expiry counts from then.
    arrived: Option<(String, Instant)>,
    /// The highlighted choice, an index into [`Choice::offered`].
    highlighted: usize,
    /// The message to the model, while the person types one (`d`).
    message: Option<String>,
}

impl ApprovalPrompt {
    /// The denial message being typed, if any.
    pub(super) fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The highlighted choice's place among those offered.
    pub(super) fn highlighted(&self) -> usize {
        self.highlighted
    }

    /// Approval `id` was requested at `at`.
    pub(super) fn arrived(&mut self, id: &str, at: Instant) {
        self.arrived = Some((id.to_owned(), at));
    }

    /// Time left to answer approval `id`, which gave `expires_in_ms` when it arrived;
    /// `None` when it was not seen arriving.
    pub(super) fn time_left(&self, id: &str, expires_in_ms: u64, now: Instant) -> Option<Duration> {
        let (arrived, at) = self.arrived.as_ref()?;
        (arrived == id).then(|| {
            Duration::from_millis(expires_in_ms).saturating_sub(now.saturating_duration_since(*at))
        })
    }
}

impl App {
    /// Called after each frame: remembers when the pending approval was first drawn.
    pub(super) fn approval_drawn(&mut self, at: Instant) {
        let pending = self.pending_approval().map(|a| a.approval_id.clone());
        let prompt = &mut self.approval;
        match pending {
            Some(id) if prompt.drawn.as_ref().is_some_and(|(drawn, _)| *drawn == id) => {}
            Some(id) => {
                prompt.drawn = Some((id, at));
                prompt.message = None;
                prompt.highlighted = 0;
            }
            None => {
                prompt.drawn = None;
                prompt.message = None;
            }
        }
    }

    /// A paste while a denial message is typed goes into the message (on one line,
    /// within the bound); `None` otherwise, so it goes to the composer.
    pub(super) fn approval_paste(&mut self, text: &str) -> Option<Action> {
        self.pending_approval()?;
        let message = self.approval.message.as_mut()?;
        for c in text.chars().map(|c| if c.is_control() { ' ' } else { c }) {
            if message.len() + c.len_utf8() > APPROVAL_MESSAGE_BYTES {
                break;
            }
            message.push(c);
        }
        Some(Action::Nothing)
    }

    /// Applies `key`, read at `read_at`, to the pending approval; `None` when the key
    /// is not the approval's (there is none, it was read before the prompt was drawn,
    /// or it is no answer key), so it goes to the rest of the screen.
    pub(super) fn approval_key(&mut self, key: KeyEvent, read_at: Instant) -> Option<Action> {
        let pending = self.pending_approval()?;
        let has_rule = pending.suggested_rule.is_some();
        let id = pending.approval_id.clone();
        let seen = self
            .approval
            .drawn
            .as_ref()
            .is_some_and(|(drawn, at)| *drawn == id && read_at >= *at);
        if !seen {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if let Some(message) = &mut self.approval.message {
            return match key.code {
                // Ctrl-C and the like keep their meaning.
                _ if ctrl => None,
                KeyCode::Enter => {
                    let message = std::mem::take(message);
                    self.approval.message = None;
                    Some(Action::Answer(Answer::DenyWithMessage(message)))
                }
                KeyCode::Esc => {
                    self.approval.message = None;
                    Some(Action::Nothing)
                }
                KeyCode::Backspace => {
                    message.pop();
                    Some(Action::Nothing)
                }
                KeyCode::Char(c) => {
                    if message.len() + c.len_utf8() <= APPROVAL_MESSAGE_BYTES {
                        message.push(c);
                    }
                    Some(Action::Nothing)
                }
                _ => Some(Action::Nothing),
            };
        }
        if ctrl || key.modifiers.contains(KeyModifiers::ALT) {
            return None;
        }
        let offered = Choice::offered(has_rule);
        // Everything the approval carries, in a view of its own.
        if matches!(key.code, KeyCode::Char('v' | 'V')) {
            let pending = self.pending_approval()?;
            let lines = super::render::approval_view(pending);
            self.panel = Some(super::commands::Panel::Text(
                super::commands::TextPanel::new("Approval", lines),
            ));
            return Some(Action::Nothing);
        }
        let chosen = match key.code {
            KeyCode::Char(c) => {
                let letter = c.to_ascii_lowercase();
                c.to_digit(10)
                    .and_then(|n| offered.get((n as usize).checked_sub(1)?))
                    .or_else(|| offered.iter().find(|choice| choice.letter() == letter))
                    .copied()
            }
            KeyCode::Enter => offered.get(self.approval.highlighted).copied(),
            KeyCode::Left => {
                self.approval.highlighted = self.approval.highlighted.saturating_sub(1);
                return Some(Action::Nothing);
            }
            KeyCode::Right => {
                self.approval.highlighted = (self.approval.highlighted + 1).min(offered.len() - 1);
                return Some(Action::Nothing);
            }
            _ => None,
        };
        match chosen? {
            Choice::AllowOnce => Some(Action::Answer(Answer::AllowOnce)),
            Choice::AllowForSession => Some(Action::Answer(Answer::AllowForSession)),
            Choice::Deny => Some(Action::Answer(Answer::Deny)),
            Choice::DenyWithMessage => {
                self.approval.message = Some(String::new());
                Some(Action::Nothing)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use magi_client::fold::FoldInput;
    use magi_protocol::messages::{ApprovalRequested, Event, SessionResult};

    use super::*;

    fn app_with_approval(rule: Option<&str>) -> App {
        let mut app = App::new(SessionResult {
            session_id: "s".into(),
            durable: false,
            revision: "r0".into(),
            notices: Vec::new(),
        });
        app.transcript
            .apply(FoldInput::Event(Event::ApprovalRequested(
                ApprovalRequested {
                    session_id: "s".into(),
                    run_id: "run".into(),
                    approval_id: "a1".into(),
                    summary: "bash touch a".into(),
                    expires_in_ms: 60_000,
                    subject: Some(Some("touch a".into())),
                    suggested_rule: Some(rule.map(str::to_owned)),
                    proposed_change: Some(None),
                },
            )));
        app
    }

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    fn answer(action: Option<Action>) -> Option<Answer> {
        match action {
            Some(Action::Answer(answer)) => Some(answer),
            _ => None,
        }
    }

    #[test]
    fn a_key_read_before_the_prompt_was_drawn_never_answers_it() {
        let mut app = app_with_approval(None);
        let typed = Instant::now();
        // Not drawn yet: the key is not the approval's.
        assert!(app.approval_key(key('y'), typed).is_none());
        let drawn = typed + Duration::from_millis(5);
        app.approval_drawn(drawn);
        // Read before the first frame that showed it, handled after: still not.
        assert!(app.approval_key(key('y'), typed).is_none());
        // A later frame does not move the moment it was first drawn.
        app.approval_drawn(drawn + Duration::from_secs(1));
        assert_eq!(
            answer(app.approval_key(key('y'), drawn)),
            Some(Answer::AllowOnce)
        );
    }

    #[test]
    fn session_is_offered_only_with_a_rule_and_d_asks_for_a_message() {
        let now = Instant::now();
        let mut app = app_with_approval(None);
        app.approval_drawn(now);
        assert!(app.approval_key(key('s'), now).is_none());
        assert_eq!(answer(app.approval_key(key('n'), now)), Some(Answer::Deny));
        let mut app = app_with_approval(Some("bash(touch*)"));
        app.approval_drawn(now);
        assert_eq!(
            answer(app.approval_key(key('s'), now)),
            Some(Answer::AllowForSession)
        );
        assert!(matches!(
            app.approval_key(key('d'), now),
            Some(Action::Nothing)
        ));
        for c in "not that".chars() {
            assert!(matches!(
                app.approval_key(key(c), now),
                Some(Action::Nothing)
            ));
        }
        // `y` is text now, not an answer, and a paste joins the message.
        app.approval_key(key('y'), now);
        assert!(app.approval_paste("!\n").is_some());
        assert_eq!(app.approval.message(), Some("not thaty! "));
        app.approval_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE), now);
        app.approval_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE), now);
        // Esc returns to the choice; `d` starts a fresh message.
        app.approval_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE), now);
        assert_eq!(app.approval.message(), None);
        app.approval_key(key('d'), now);
        app.approval_key(key('x'), now);
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(
            answer(app.approval_key(enter, now)),
            Some(Answer::DenyWithMessage("x".into()))
        );
    }

    #[test]
    fn numbers_and_the_highlighted_choice_answer_too() {
        let now = Instant::now();
        let press = |app: &mut App, code| app.approval_key(KeyEvent::from(code), now);
        // With a rule: 1 allow once, 2 for the session, 3 deny, 4 deny with a message.
        let mut app = app_with_approval(Some("bash(touch*)"));
        app.approval_drawn(now);
        assert_eq!(
            answer(press(&mut app, KeyCode::Char('2'))),
            Some(Answer::AllowForSession)
        );
        assert_eq!(
            answer(press(&mut app, KeyCode::Char('3'))),
            Some(Answer::Deny)
        );
        assert!(press(&mut app, KeyCode::Char('5')).is_none());
        // Enter takes the highlighted one: allow once at first, then where Right moved.
        assert_eq!(
            answer(press(&mut app, KeyCode::Enter)),
            Some(Answer::AllowOnce)
        );
        press(&mut app, KeyCode::Right);
        press(&mut app, KeyCode::Right);
        assert_eq!(app.approval.highlighted(), 2);
        assert_eq!(answer(press(&mut app, KeyCode::Enter)), Some(Answer::Deny));
        // Without a rule the numbers close up: 2 is deny.
        let mut app = app_with_approval(None);
        app.approval_drawn(now);
        assert_eq!(
            answer(press(&mut app, KeyCode::Char('2'))),
            Some(Answer::Deny)
        );
        assert!(matches!(
            press(&mut app, KeyCode::Char('3')),
            Some(Action::Nothing)
        ));
        assert_eq!(app.approval.message(), Some(""));
    }

    #[test]
    fn the_time_left_counts_from_the_request() {
        let mut prompt = ApprovalPrompt::default();
        let at = Instant::now();
        assert_eq!(prompt.time_left("a1", 60_000, at), None);
        prompt.arrived("a1", at);
        assert_eq!(
            prompt.time_left("a1", 60_000, at + Duration::from_secs(15)),
            Some(Duration::from_secs(45))
        );
        assert_eq!(
            prompt.time_left("a1", 60_000, at + Duration::from_secs(90)),
            Some(Duration::ZERO)
        );
        assert_eq!(prompt.time_left("a2", 60_000, at), None);
    }
}
