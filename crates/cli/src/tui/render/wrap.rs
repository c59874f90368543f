//! Fitting lines to the screen's width.

use ratatui::text::{Line, Span};
/// Lines cut to `width` characters, so the newest lines can be kept on screen.
pub(super) fn wrap(lines: Vec<Line<'static>>, width: usize) -> Vec<Line<'static>> {
    let mut wrapped = Vec::new();
    for line in lines {
        let style = line.spans.first().map(|s| s.style).unwrap_or_default();
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        let chars: Vec<char> = text.chars().collect();
        if chars.is_empty() {
            wrapped.push(Line::default());
            continue;
        }
        for piece in chars.chunks(width) {
            wrapped.push(Line::from(Span::styled(
                piece.iter().collect::<String>(),
                style,
            )));
        }
    }
    wrapped
}
