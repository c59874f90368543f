//! A panel over the transcript: a text one (`/help`, `/status`, `/diff`) that scrolls,
//! or a picker (sessions, models) that keeps its selection in view. Esc closes it.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Request;
use super::model::ModelPicker;
use super::sessions::SessionPicker;

/// Lines a PageUp or PageDown moves.
const PAGE: usize = 10;

/// What is open over the transcript.
pub(in crate::tui) enum Panel {
    /// Text to read (`/help`, `/status`, `/diff`).
    Text(TextPanel),
    /// The session picker (`/sessions`, Ctrl-O).
    Sessions(SessionPicker),
    /// The model picker (`/model`).
    Model(ModelPicker),
}

/// What a key did to a panel.
pub(super) enum Step {
    /// Nothing for the loop to do.
    Stay,
    /// The panel is closed.
    Close,
    /// The loop is to make this request.
    Do(Request),
}

/// What a panel shows: its title, its lines and which part of them is in view.
pub(super) struct View {
    pub(super) title: String,
    pub(super) lines: Vec<Line<'static>>,
    pub(super) anchor: Anchor,
}

/// Which lines of a view are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// From this line on (a text scrolled this far).
    Scroll(usize),
    /// Around this line (a picker's selection).
    Focus(usize),
}

impl Panel {
    pub(super) fn key(&mut self, key: KeyEvent) -> Step {
        match self {
            Panel::Text(text) => text.key(key),
            Panel::Sessions(picker) => picker.key(key),
            Panel::Model(picker) => picker.key(key),
        }
    }

    pub(super) fn hint(&self) -> &'static str {
        match self {
            Panel::Text(_) => " Up/Down/PageUp/PageDown scroll · Esc close ",
            Panel::Sessions(_) => {
                " sessions: type to filter · Up/Down choose · Enter open · Esc back "
            }
            Panel::Model(picker) => picker.hint(),
        }
    }

    fn view(&self) -> View {
        match self {
            Panel::Text(text) => View {
                title: text.title.clone(),
                lines: text.lines.clone(),
                anchor: Anchor::Scroll(text.offset),
            },
            Panel::Sessions(picker) => picker.view(),
            Panel::Model(picker) => picker.view(),
        }
    }

    /// Draws the panel in `area`, bordered and titled.
    pub(in crate::tui) fn draw(&self, frame: &mut ratatui::Frame, area: Rect) {
        let view = self.view();
        let height = usize::from(area.height.saturating_sub(2)).max(1);
        let first = first_shown(view.anchor, view.lines.len(), height);
        let shown: Vec<Line> = view.lines.into_iter().skip(first).take(height).collect();
        frame.render_widget(
            Paragraph::new(shown).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(format!(" {} ", view.title)),
            ),
            area,
        );
    }
}

/// The first line drawn of `len` lines in `height` rows: a scrolled text never scrolls
/// past its end; a picker's focus stays in the middle where it can.
fn first_shown(anchor: Anchor, len: usize, height: usize) -> usize {
    let last_start = len.saturating_sub(height);
    match anchor {
        Anchor::Scroll(offset) => offset.min(last_start),
        Anchor::Focus(line) => line.saturating_sub(height / 2).min(last_start),
    }
}

/// Text to read, scrolled by keys.
pub(in crate::tui) struct TextPanel {
    title: String,
    lines: Vec<Line<'static>>,
    offset: usize,
}

impl TextPanel {
    pub(super) fn new(title: impl Into<String>, lines: Vec<Line<'static>>) -> TextPanel {
        TextPanel {
            title: title.into(),
            lines,
            offset: 0,
        }
    }

    /// Its lines, for tests.
    #[cfg(test)]
    pub(super) fn lines(&self) -> &[Line<'static>] {
        &self.lines
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        let last = self.lines.len().saturating_sub(1);
        self.offset = match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Step::Close,
            KeyCode::Up => self.offset.saturating_sub(1),
            KeyCode::Down => self.offset + 1,
            KeyCode::PageUp => self.offset.saturating_sub(PAGE),
            KeyCode::PageDown | KeyCode::Char(' ') => self.offset + PAGE,
            KeyCode::Home => 0,
            KeyCode::End => last,
            _ => return Step::Stay,
        }
        .min(last);
        Step::Stay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrolled_text_stops_at_its_end_and_a_focus_stays_in_view() {
        assert_eq!(first_shown(Anchor::Scroll(0), 100, 10), 0);
        assert_eq!(first_shown(Anchor::Scroll(95), 100, 10), 90);
        assert_eq!(first_shown(Anchor::Scroll(5), 3, 10), 0);
        assert_eq!(first_shown(Anchor::Focus(0), 100, 10), 0);
        assert_eq!(first_shown(Anchor::Focus(50), 100, 10), 45);
        assert_eq!(first_shown(Anchor::Focus(99), 100, 10), 90);
        for focus in 0..100 {
            let first = first_shown(Anchor::Focus(focus), 100, 10);
            assert!((first..first + 10).contains(&focus), "{focus}");
        }
    }
}
