//! Drawing the composer: its text wrapped by display width (words kept whole where
//! they fit, graphemes never split, paste placeholders drawn as their labels), growing
//! with the text up to [`MAX_ROWS`] rows and then scrolling to keep the cursor in view,
//! the terminal's cursor placed where the composer's is, and the candidates of an `@`
//! mention or a slash command listed above it.

use magi_protocol::limits::COMPLETION_CANDIDATES;
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

use super::wrap::terminal_parts;
use crate::tui::composer::{Completion, CompletionKind, Composer};

/// Most rows of text the composer shows; a taller text scrolls.
pub(super) const MAX_ROWS: usize = 8;
/// What starts the first row.
const PROMPT: &str = "› ";
/// Columns before the text: the prompt's, and the indent of the other rows.
const GUTTER: usize = 2;
/// The composer's title while the history search is open.
const SEARCH_TITLE: &str =
    " history search: type to narrow · Ctrl-R older · Enter take · Esc leave ";
/// Columns a tab is drawn as.
const TAB: &str = "    ";

/// One row on screen: the bytes `start..end` of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    start: usize,
    end: usize,
}

/// How a grapheme is drawn: a tab as spaces, a paste marker as its label, an emoji
/// sequence terminals count differently as its parts ([`terminal_parts`]).
fn shown(grapheme: &str, label: &dyn Fn(char) -> Option<String>) -> Option<String> {
    if grapheme == "\t" {
        return Some(TAB.to_owned());
    }
    let mut chars = grapheme.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => label(c),
        _ => {
            let parts: String = terminal_parts(grapheme).collect();
            (parts != grapheme).then_some(parts)
        }
    }
}

/// The columns a grapheme takes.
fn width_of(grapheme: &str, label: &dyn Fn(char) -> Option<String>) -> usize {
    shown(grapheme, label).map_or_else(|| grapheme.width(), |s| s.width())
}

/// The text cut into rows of at most `width` columns. A row breaks after the last
/// white space that lets the word after it fit, else before the grapheme that does not
/// fit; white space at a break stays at the end of its row.
fn rows(text: &str, width: usize, label: &dyn Fn(char) -> Option<String>) -> Vec<Row> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut line_start = 0;
    for line in text.split('\n') {
        let mut row_start = line_start;
        let mut column = 0;
        // After the last white space in this row: its byte index and the column there.
        let mut after_space: Option<(usize, usize)> = None;
        for (offset, grapheme) in line.grapheme_indices(true) {
            let at = line_start + offset;
            let cells = width_of(grapheme, label);
            let space = grapheme.chars().all(char::is_whitespace);
            while column + cells > width && at > row_start && !space {
                match after_space.take() {
                    Some((start, columns)) if start > row_start => {
                        rows.push(Row {
                            start: row_start,
                            end: start,
                        });
                        row_start = start;
                        column -= columns;
                    }
                    _ => {
                        rows.push(Row {
                            start: row_start,
                            end: at,
                        });
                        row_start = at;
                        column = 0;
                    }
                }
            }
            column += cells;
            if space {
                after_space = Some((at + grapheme.len(), column));
            }
        }
        rows.push(Row {
            start: row_start,
            end: line_start + line.len(),
        });
        line_start += line.len() + 1;
    }
    rows
}

/// The row and column of byte `cursor`: on the last row starting at or before it (so
/// at a wrap it is at the start of the next row).
fn place(
    text: &str,
    rows: &[Row],
    cursor: usize,
    label: &dyn Fn(char) -> Option<String>,
) -> (usize, usize) {
    let row = rows
        .iter()
        .rposition(|row| row.start <= cursor)
        .unwrap_or(0);
    let start = rows.get(row).map_or(0, |r| r.start);
    let column = text
        .get(start..cursor)
        .unwrap_or_default()
        .graphemes(true)
        .map(|g| width_of(g, label))
        .sum();
    (row, column)
}

/// One row as a line, placeholders and tabs drawn as they are shown.
fn row_line(
    text: &str,
    row: Row,
    first: bool,
    label: &dyn Fn(char) -> Option<String>,
) -> Line<'static> {
    let gutter = if first { PROMPT } else { "  " };
    let mut spans = vec![Span::raw(gutter)];
    let mut plain = String::new();
    for grapheme in text[row.start..row.end].graphemes(true) {
        match shown(grapheme, label) {
            Some(tab) if grapheme == "\t" => plain.push_str(&tab),
            Some(parts) if grapheme.chars().nth(1).is_some() => plain.push_str(&parts),
            Some(placeholder) => {
                spans.push(Span::raw(std::mem::take(&mut plain)));
                spans.push(Span::styled(
                    placeholder,
                    Style::default().fg(Color::Cyan).add_modifier(Modifier::DIM),
                ));
            }
            None => plain.push_str(grapheme),
        }
    }
    spans.push(Span::raw(plain));
    Line::from(spans)
}

/// The columns the text gets in a composer `area_width` wide: the borders, the gutter
/// and one column kept free for the cursor at the end of a full row.
fn text_width(area_width: u16) -> usize {
    usize::from(area_width)
        .saturating_sub(2 + GUTTER + 1)
        .max(1)
}

/// What the composer shows: its lines, the cursor's row and column in them.
fn content(composer: &Composer, width: usize) -> (Vec<Line<'static>>, (usize, usize)) {
    if let Some((query, matched)) = composer.search() {
        let head = Line::from(vec![
            Span::styled("search history: ", Style::default().fg(Color::Cyan)),
            Span::raw(query.to_owned()),
        ]);
        let cursor = (0, "search history: ".width() + query.width());
        let mut lines = vec![head];
        let none = |_: char| None;
        // The match is drawn without the prompt mark: it is not in the composer yet.
        match matched {
            Some(text) => lines.extend(
                rows(text, width, &none)
                    .into_iter()
                    .map(|row| row_line(text, row, false, &none)),
            ),
            None if !query.is_empty() => lines.push(Line::styled(
                "  no earlier prompt holds this",
                Style::default().add_modifier(Modifier::DIM),
            )),
            None => {}
        }
        return (lines, cursor);
    }
    let label = |c: char| composer.label(c);
    let text = composer.text();
    let rows = rows(text, width, &label);
    let (row, column) = place(text, &rows, composer.cursor(), &label);
    let lines = rows
        .iter()
        .enumerate()
        .map(|(n, &r)| row_line(text, r, n == 0, &label))
        .collect();
    (lines, (row, GUTTER + column))
}

/// The composer's height in a terminal `area_width` wide: its rows (one at least,
/// [`MAX_ROWS`] at most) and its borders.
pub(super) fn height(composer: &Composer, area_width: u16) -> u16 {
    let (lines, _) = content(composer, text_width(area_width));
    let shown = lines.len().clamp(1, MAX_ROWS);
    u16::try_from(shown + 2).unwrap_or(u16::MAX)
}

/// Draws the composer in `area` with `title` (the search's own while it is open), and
/// places the terminal's cursor in it when `with_cursor`.
pub(super) fn draw(
    frame: &mut Frame,
    area: Rect,
    composer: &Composer,
    title: &str,
    with_cursor: bool,
) {
    let (lines, (row, column)) = content(composer, text_width(area.width));
    let visible = usize::from(area.height.saturating_sub(2)).max(1);
    // Scroll only as far as keeps the cursor's row in view.
    let mut first = composer
        .scroll
        .get()
        .min(lines.len().saturating_sub(visible));
    if row < first {
        first = row;
    } else if row >= first + visible {
        first = row + 1 - visible;
    }
    composer.scroll.set(first);
    let title = if composer.search().is_some() {
        SEARCH_TITLE
    } else {
        title
    };
    let shown: Vec<Line> = lines.into_iter().skip(first).take(visible).collect();
    frame.render_widget(
        Paragraph::new(shown).block(
            Block::default()
                .borders(Borders::ALL)
                .title(title.to_owned()),
        ),
        area,
    );
    if with_cursor {
        let x = area.x + 1 + u16::try_from(column).unwrap_or(u16::MAX);
        let y = area.y + 1 + u16::try_from(row - first).unwrap_or(0);
        let x = x.min(area.right().saturating_sub(2));
        frame.set_cursor_position(Position { x, y });
    }
}

/// Lists the candidates at the bottom of `body` (above the composer), at most
/// [`COMPLETION_CANDIDATES`] at a time around the selected one.
pub(super) fn draw_candidates(frame: &mut Frame, body: Rect, composer: &Composer) {
    let Some(completion) = composer.completion() else {
        return;
    };
    let lines = candidate_lines(completion);
    let height = u16::try_from(lines.len() + 2)
        .unwrap_or(u16::MAX)
        .min(body.height);
    if height < 3 {
        return;
    }
    let area = Rect {
        x: body.x,
        y: body.bottom() - height,
        width: body.width,
        height,
    };
    let title = match completion.kind {
        CompletionKind::Mention => " files · Up/Down choose · Tab take · Esc dismiss ",
        CompletionKind::Command => {
            " commands · Up/Down choose · Tab complete · Enter run · Esc dismiss "
        }
    };
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        area,
    );
}

/// The candidates' lines, the selected one marked, and the note.
fn candidate_lines(completion: &Completion) -> Vec<Line<'static>> {
    let count = completion.candidates.len();
    let first = (completion.selected + 1)
        .saturating_sub(COMPLETION_CANDIDATES)
        .min(count.saturating_sub(COMPLETION_CANDIDATES));
    let name_width = completion
        .candidates
        .iter()
        .map(|c| c.label.width())
        .max()
        .unwrap_or(0);
    let mut lines: Vec<Line<'static>> = completion
        .candidates
        .iter()
        .enumerate()
        .skip(first)
        .take(COMPLETION_CANDIDATES)
        .map(|(n, candidate)| {
            let selected = n == completion.selected;
            let mark = if selected { "▶ " } else { "  " };
            let style = if selected {
                Style::default().fg(Color::Yellow)
            } else {
                Style::default()
            };
            let mut spans = vec![Span::styled(format!("{mark}{}", candidate.label), style)];
            if !candidate.detail.is_empty() {
                let pad = name_width.saturating_sub(candidate.label.width()) + 2;
                spans.push(Span::styled(
                    format!("{}{}", " ".repeat(pad), candidate.detail),
                    Style::default().add_modifier(Modifier::DIM),
                ));
            }
            Line::from(spans)
        })
        .collect();
    if let Some(note) = completion.note {
        lines.push(Line::styled(
            note,
            Style::default().add_modifier(Modifier::DIM),
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: char) -> Option<String> {
        None
    }

    /// The rows of `text` at `width`, as strings.
    fn wrapped(text: &str, width: usize) -> Vec<&str> {
        rows(text, width, &none)
            .into_iter()
            .map(|r| &text[r.start..r.end])
            .collect()
    }

    #[test]
    fn rows_break_after_white_space_by_display_width() {
        assert_eq!(wrapped("", 10), [""]);
        assert_eq!(wrapped("one two three", 8), ["one two ", "three"]);
        assert_eq!(wrapped("a\n\nb", 8), ["a", "", "b"]);
        // A word longer than the row is cut at the width.
        assert_eq!(wrapped("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        // Wide characters take two columns and are never split.
        assert_eq!(wrapped("漢字漢字漢", 5), ["漢字", "漢字", "漢"]);
        assert_eq!(wrapped("👍🏽👍🏽👍🏽", 4), ["👍🏽👍🏽", "👍🏽"]);
        // White space at a break stays at the end of its row.
        assert_eq!(wrapped("ab cd", 2), ["ab ", "cd"]);
    }

    #[test]
    fn the_cursor_is_placed_by_display_width() {
        let text = "漢字 ab\nxy";
        let rows = rows(text, 80, &none);
        assert_eq!(place(text, &rows, 0, &none), (0, 0));
        assert_eq!(place(text, &rows, "漢字".len(), &none), (0, 4));
        assert_eq!(place(text, &rows, "漢字 ab".len(), &none), (0, 7));
        assert_eq!(place(text, &rows, text.len(), &none), (1, 2));
        // At a wrap the cursor is at the start of the next row.
        let text = "abcdefgh";
        let wrapped = super::rows(text, 4, &none);
        assert_eq!(place(text, &wrapped, 4, &none), (1, 0));
        assert_eq!(place(text, &wrapped, 8, &none), (1, 4));
    }

    #[test]
    fn a_placeholder_and_a_tab_are_drawn_as_they_are_shown() {
        let label = |c: char| (c == '\u{FDD0}').then(|| "[pasted 9 lines]".to_owned());
        let text = "see \u{FDD0}\tx";
        let rows = rows(text, 80, &label);
        assert_eq!(place(text, &rows, text.len(), &label), (0, 4 + 16 + 4 + 1));
        let line = row_line(text, rows[0], true, &label);
        let drawn: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(drawn, "› see [pasted 9 lines]    x");
        // The placeholder is never split: it moves to the next row whole.
        let narrow = super::rows(text, 10, &label);
        assert_eq!(narrow[0], Row { start: 0, end: 4 });
    }
}
