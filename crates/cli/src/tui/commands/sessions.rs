//! The session picker: this directory's sessions from `session.discover` (so past
//! `session.list`'s 256-session bound), newest first, each with its title (its ID
//! where it has none), when it was last written and whether it can be opened;
//! filtered by what is typed; Enter reopens one.

use std::time::SystemTime;

use magi_protocol::messages::{Eligibility, SessionListEntry};
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::time::ago;
use super::{Anchor, Request, Step, View};

/// Rows a PageUp or PageDown moves.
const PAGE: usize = 10;

/// The picker's state.
pub(in crate::tui) struct SessionPicker {
    /// Newest first.
    sessions: Vec<SessionListEntry>,
    filter: String,
    /// Position in the filtered list.
    selected: usize,
    /// The attached session, marked in the list.
    current: String,
    /// When the list was read, for "5 min ago".
    now: SystemTime,
    /// What the listing said besides the sessions (omitted logs, an unfinished pass).
    notes: Vec<String>,
}

impl SessionPicker {
    pub(super) fn new(
        mut sessions: Vec<SessionListEntry>,
        current: &str,
        notes: Vec<String>,
    ) -> SessionPicker {
        // A session with nothing recorded (or an unreadable time) goes last, and IDs
        // (time-ordered) break ties newest first.
        let written = |s: &SessionListEntry| {
            s.updated_at
                .as_deref()
                .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
        };
        sessions.sort_by(|a, b| {
            written(b)
                .cmp(&written(a))
                .then_with(|| b.session_id.cmp(&a.session_id))
        });
        SessionPicker {
            sessions,
            filter: String::new(),
            selected: 0,
            current: current.to_owned(),
            now: SystemTime::now(),
            notes,
        }
    }

    /// The sessions the filter lets through, in order.
    fn shown(&self) -> Vec<&SessionListEntry> {
        let filter = self.filter.to_lowercase();
        self.sessions
            .iter()
            .filter(|s| matches(s, &filter))
            .collect()
    }

    pub(super) fn key(&mut self, key: KeyEvent) -> Step {
        let count = self.shown().len();
        let last = count.saturating_sub(1);
        match key.code {
            KeyCode::Esc => return Step::Close,
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(PAGE),
            KeyCode::PageDown => self.selected = (self.selected + PAGE).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Enter => {
                return match self.shown().get(self.selected) {
                    Some(session) => Step::Do(Request::Open {
                        session_id: session.session_id.clone(),
                        title: session.title.clone(),
                    }),
                    None => Step::Stay,
                };
            }
            KeyCode::Backspace => {
                self.filter.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) => {
                self.filter.push(c);
                self.selected = 0;
            }
            _ => {}
        }
        Step::Stay
    }

    pub(super) fn view(&self) -> View {
        let shown = self.shown();
        let mut lines = vec![Line::from(Span::styled(
            format!(
                "{} of {} sessions · filter: {}",
                shown.len(),
                self.sessions.len(),
                if self.filter.is_empty() {
                    "(type to filter)"
                } else {
                    &self.filter
                }
            ),
            Style::default().fg(Color::Cyan),
        ))];
        for note in &self.notes {
            lines.push(Line::from(Span::styled(
                note.clone(),
                Style::default().fg(Color::Yellow),
            )));
        }
        let header = lines.len();
        for (n, session) in shown.iter().enumerate() {
            lines.push(self.row(session, n == self.selected));
        }
        if shown.is_empty() {
            lines.push(Line::from("  no session matches"));
        }
        View {
            title: "Sessions of this directory".to_owned(),
            lines,
            anchor: Anchor::Focus(header + self.selected),
        }
    }

    fn row(&self, session: &SessionListEntry, selected: bool) -> Line<'static> {
        let mark = if selected { "▶ " } else { "  " };
        let name = session.title.as_deref().unwrap_or(&session.session_id);
        let mut text = format!(
            "{mark}{name} · {}",
            ago(session.updated_at.as_deref(), self.now)
        );
        if let Some(said) = availability(session.eligibility) {
            text.push_str(" · ");
            text.push_str(said);
        }
        if session.session_id == self.current {
            text.push_str(" · this session");
        }
        let style = match (selected, session.eligibility) {
            (true, _) => Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
            (false, Eligibility::Busy) => Style::default().fg(Color::DarkGray),
            (false, _) => Style::default(),
        };
        Line::from(Span::styled(text, style))
    }
}

/// Whether a session passes a (lowercased) filter: by its title or its ID.
fn matches(session: &SessionListEntry, filter: &str) -> bool {
    filter.is_empty()
        || session.session_id.to_lowercase().contains(filter)
        || session
            .title
            .as_deref()
            .is_some_and(|t| t.to_lowercase().contains(filter))
}

/// Whether it can be opened, in words; nothing when it can.
fn availability(eligibility: Eligibility) -> Option<&'static str> {
    match eligibility {
        Eligibility::Available => None,
        Eligibility::CwdUnverified => Some("older log, directory not recorded"),
        Eligibility::Busy => Some("in use by another magi-code"),
    }
}

/// What a discovery notice means.
pub(super) fn notice(code: &str) -> String {
    match code {
        "sessions_omitted_invalid" => {
            "some session logs are not shown: they are unreadable or malformed".to_owned()
        }
        "sessions_omitted_over_limit" => {
            "some session logs are not shown: they are over the size a listing reads".to_owned()
        }
        other => format!("note: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, title: Option<&str>, updated_at: Option<&str>) -> SessionListEntry {
        SessionListEntry {
            session_id: id.to_owned(),
            title: title.map(str::to_owned),
            updated_at: updated_at.map(str::to_owned),
            eligibility: Eligibility::Available,
            notices: Vec::new(),
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::from(code)
    }

    fn picker() -> SessionPicker {
        SessionPicker::new(
            vec![
                entry("aaa", Some("Fix the parser"), Some("2026-11-01T10:00:00Z")),
                entry("bbb", None, Some("2026-11-03T10:00:00Z")),
                entry("ccc", Some("Parser tests"), None),
                entry("ddd", Some("Write docs"), Some("2026-11-02T10:00:00Z")),
            ],
            "ddd",
            Vec::new(),
        )
    }

    fn ids(picker: &SessionPicker) -> Vec<&str> {
        picker
            .shown()
            .iter()
            .map(|s| s.session_id.as_str())
            .collect()
    }

    #[test]
    fn sessions_are_newest_first_and_filtered_by_title_or_id() {
        let mut picker = picker();
        assert_eq!(ids(&picker), ["bbb", "ddd", "aaa", "ccc"]);
        for c in "PARSER".chars() {
            picker.key(key(KeyCode::Char(c)));
        }
        assert_eq!(ids(&picker), ["aaa", "ccc"]);
        picker.key(key(KeyCode::Down));
        match picker.key(key(KeyCode::Enter)) {
            Step::Do(Request::Open { session_id, title }) => {
                assert_eq!(
                    (session_id.as_str(), title.as_deref()),
                    ("ccc", Some("Parser tests"))
                )
            }
            _ => panic!("Enter opens the selected session"),
        }
        for _ in 0..6 {
            picker.key(key(KeyCode::Backspace));
        }
        picker.key(key(KeyCode::Char('b')));
        assert_eq!(ids(&picker), ["bbb"], "an untitled session matches by ID");
        picker.key(key(KeyCode::Char('x')));
        assert!(ids(&picker).is_empty());
        assert!(matches!(picker.key(key(KeyCode::Enter)), Step::Stay));
    }

    #[test]
    fn a_row_shows_the_title_or_the_id_its_age_and_availability() {
        let mut busy = entry("eee", None, None);
        busy.eligibility = Eligibility::Busy;
        let picker = SessionPicker::new(
            vec![busy, entry("ddd", Some("Write docs"), None)],
            "ddd",
            Vec::new(),
        );
        let text: Vec<String> = picker
            .view()
            .lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(
            text,
            [
                "2 of 2 sessions · filter: (type to filter)",
                "▶ eee · nothing recorded yet · in use by another magi-code",
                "  Write docs · nothing recorded yet · this session",
            ]
        );
    }
}
