//! A panel over the transcript: a text one (`/help`, `/status`, `/diff`) that scrolls,
//! or a picker (sessions, models) that keeps its selection in view. Esc closes it.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::model::ModelPicker;
use super::sessions::SessionPicker;
use super::{Anchor, Request, Step, View};

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

    /// Draws the panel over whatever `area` held, bordered and titled, its lines wrapped
    /// to the width.
    pub(in crate::tui) fn draw(&self, frame: &mut ratatui::Frame, area: Rect) {
        let view = self.view();
        let width = usize::from(area.width.saturating_sub(2)).max(1);
        let height = usize::from(area.height.saturating_sub(2)).max(1);
        // The anchor names a line of the view; it moves to where that line's first row
        // lands once the lines before it are wrapped.
        let (index, focus_last) = match view.anchor {
            Anchor::Scroll(line) => (line, false),
            Anchor::Focus(line) => (line, true),
        };
        let mut rows = Vec::new();
        let mut at = 0;
        for (n, line) in view.lines.into_iter().enumerate() {
            if n == index {
                at = rows.len();
            }
            rows.extend(wrap(line, width));
        }
        let anchor = if focus_last {
            Anchor::Focus(at)
        } else {
            Anchor::Scroll(at)
        };
        let first = first_shown(anchor, rows.len(), height);
        let shown: Vec<Line> = rows.into_iter().skip(first).take(height).collect();
        frame.render_widget(Clear, area);
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

/// A line cut into rows of at most `width` display cells, between words where it can
/// and never inside a character; rows after the first are indented by two cells.
fn wrap(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    if line.width() <= width || width <= INDENT.len() + 1 {
        return vec![line];
    }
    let mut rows = Rows {
        style: line.style,
        done: Vec::new(),
        row: Vec::new(),
        used: 0,
    };
    for span in &line.spans {
        for word in span.content.split_inclusive(' ') {
            let cells = word.trim_end_matches(' ').width();
            if rows.used + cells > width && rows.used > INDENT.len() {
                rows.next_row();
            }
            if rows.used + cells <= width {
                rows.push(word, span.style);
                continue;
            }
            // A word longer than a row is cut between its characters.
            for c in word.chars() {
                if rows.used + c.width().unwrap_or(0) > width {
                    rows.next_row();
                }
                rows.push(c.encode_utf8(&mut [0; 4]), span.style);
            }
        }
    }
    rows.next_row();
    rows.done
}

/// What a continued row starts with.
const INDENT: &str = "  ";

/// The rows of a line being wrapped.
struct Rows {
    style: ratatui::style::Style,
    done: Vec<Line<'static>>,
    row: Vec<Span<'static>>,
    used: usize,
}

impl Rows {
    fn push(&mut self, text: &str, style: ratatui::style::Style) {
        // A continued row does not start with the space its word was cut at.
        let text = if self.used == INDENT.len() && !self.done.is_empty() {
            text.trim_start_matches(' ')
        } else {
            text
        };
        self.used += text.width();
        self.row.push(Span::styled(text.to_owned(), style));
    }

    /// Ends the row (without the spaces it ends with) and starts a continued one.
    fn next_row(&mut self) {
        let mut row = std::mem::take(&mut self.row);
        while let Some(last) = row.last_mut() {
            let kept = last.content.trim_end_matches(' ').to_owned();
            if kept.is_empty() {
                row.pop();
            } else {
                last.content = kept.into();
                break;
            }
        }
        self.done.push(Line::from(row).style(self.style));
        self.row.push(Span::raw(INDENT));
        self.used = INDENT.len();
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
    /// Keys that make a request (a previewed restore's Enter), which its lines name.
    actions: Vec<(KeyCode, Request)>,
}

impl TextPanel {
    pub(in crate::tui) fn new(title: impl Into<String>, lines: Vec<Line<'static>>) -> TextPanel {
        TextPanel {
            title: title.into(),
            lines,
            offset: 0,
            actions: Vec::new(),
        }
    }

    /// The same panel, with `key` making `request` (once: the panel is then closed).
    pub(in crate::tui) fn with_action(mut self, key: KeyCode, request: Request) -> TextPanel {
        self.actions.push((key, request));
        self
    }

    /// The same panel opened with line `offset` at its top.
    pub(in crate::tui) fn scrolled_to(mut self, offset: usize) -> TextPanel {
        self.offset = offset.min(self.lines.len().saturating_sub(1));
        self
    }

    /// Its lines, for tests.
    #[cfg(test)]
    pub(super) fn lines(&self) -> &[Line<'static>] {
        &self.lines
    }

    fn key(&mut self, key: KeyEvent) -> Step {
        if let Some(at) = self.actions.iter().position(|(code, _)| *code == key.code) {
            let (_, request) = self.actions.swap_remove(at);
            return Step::Do(request);
        }
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

    fn text(line: &Line) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn a_long_line_wraps_by_display_width_without_cutting_a_character() {
        let rows: Vec<String> = wrap(Line::from("ab 模型二 😀xyz"), 6)
            .iter()
            .map(text)
            .collect();
        assert_eq!(rows, ["ab", "  模型", "  二", "  😀xy", "  z"]);
        let rows: Vec<String> = wrap(Line::from("add the model to settings"), 12)
            .iter()
            .map(text)
            .collect();
        assert_eq!(rows, ["add the", "  model to", "  settings"]);
        for row in wrap(Line::from("模型".repeat(20)), 7) {
            assert!(row.width() <= 7, "{}", text(&row));
        }
        let short = Line::from("fits");
        assert_eq!(wrap(short.clone(), 4), [short]);
    }

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
