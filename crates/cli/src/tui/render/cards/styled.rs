//! A text block's lines in the colour they were printed in (`tool.cards.styles`): each
//! span of the block becomes a styled piece of its line; text no span covers, and a
//! block whose styles were left out or not sent, is shown plain.

use magi_protocol::cards::{Attribute, Colour, StyleSpan, TextBlock};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;

/// The block's lines, as `str::lines` splits its text, each as styled pieces.
pub(super) fn text_lines(block: &TextBlock) -> Vec<Vec<Span<'static>>> {
    let spans: &[StyleSpan] = match &block.styles {
        Some(Some(spans)) => spans,
        _ => &[],
    };
    let text = block.text.as_str();
    let mut lines = Vec::new();
    let mut start = 0usize;
    while start < text.len() {
        let end = text[start..].find('\n').map_or(text.len(), |at| start + at);
        lines.push(pieces(text, start, end, spans));
        start = end + 1;
    }
    lines
}

/// The pieces of `text[start..end]`: plain between spans, styled within them.
fn pieces(text: &str, start: usize, end: usize, spans: &[StyleSpan]) -> Vec<Span<'static>> {
    let mut pieces = Vec::new();
    let mut at = start;
    let overlapping = spans.iter().filter(|span| {
        let (from, to) = bounds(span);
        from < end && to > start
    });
    for span in overlapping {
        let (from, to) = bounds(span);
        let (from, to) = (from.max(start), to.min(end));
        // Spans are validated on character boundaries; a piece that is not is shown
        // plain rather than cut.
        let (Some(before), Some(inside)) = (text.get(at..from), text.get(from..to)) else {
            continue;
        };
        if !before.is_empty() {
            pieces.push(Span::raw(before.to_owned()));
        }
        pieces.push(Span::styled(inside.to_owned(), style_of(span)));
        at = to;
    }
    if let Some(rest) = text.get(at..end)
        && (!rest.is_empty() || pieces.is_empty())
    {
        pieces.push(Span::raw(rest.to_owned()));
    }
    pieces
}

fn bounds(span: &StyleSpan) -> (usize, usize) {
    let byte = |at: u64| usize::try_from(at).unwrap_or(usize::MAX);
    (byte(span.start), byte(span.end))
}

/// The terminal style of a span.
fn style_of(span: &StyleSpan) -> Style {
    let mut style = Style::default();
    if let Some(fg) = span.fg {
        style = style.fg(color(fg));
    }
    if let Some(bg) = span.bg {
        style = style.bg(color(bg));
    }
    for attribute in &span.attributes {
        style = style.add_modifier(match attribute {
            Attribute::Bold => Modifier::BOLD,
            Attribute::Dim => Modifier::DIM,
            Attribute::Italic => Modifier::ITALIC,
            Attribute::Underline => Modifier::UNDERLINED,
            Attribute::Strikethrough => Modifier::CROSSED_OUT,
            Attribute::Inverse => Modifier::REVERSED,
        });
    }
    style
}

/// The terminal colour: the sixteen named ones by name (so the terminal's own palette
/// shows them, as it did for the command), the rest by index or value.
fn color(colour: Colour) -> Color {
    const NAMED: [Color; 16] = [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ];
    match colour {
        Colour::Indexed(index) => NAMED
            .get(usize::from(index))
            .copied()
            .unwrap_or(Color::Indexed(index)),
        Colour::Rgb(r, g, b) => Color::Rgb(r, g, b),
    }
}

#[cfg(test)]
mod tests {
    use magi_protocol::cards::{Style as SpanStyle, TextFormat};

    use super::*;

    fn block(text: &str, spans: Option<Vec<StyleSpan>>) -> TextBlock {
        TextBlock {
            text: text.to_owned(),
            format: TextFormat::Plain,
            language: None,
            styles: Some(spans),
        }
    }

    fn red_bold() -> SpanStyle {
        SpanStyle {
            fg: Some(Colour::Indexed(1)),
            bg: None,
            attributes: vec![Attribute::Bold],
        }
    }

    #[test]
    fn spans_colour_their_part_of_each_line() {
        // "error" red and bold; a span across the line feed colours both lines.
        let text = "error: 日本\nnext";
        let spans = vec![
            StyleSpan::new(0, 5, &red_bold()),
            StyleSpan::new(7, text.len() - 2, &red_bold()),
        ];
        let lines = text_lines(&block(text, Some(spans)));
        let shown: Vec<Vec<(String, Style)>> = lines
            .iter()
            .map(|line| {
                line.iter()
                    .map(|s| (s.content.to_string(), s.style))
                    .collect()
            })
            .collect();
        let red = Style::default().fg(Color::Red).add_modifier(Modifier::BOLD);
        assert_eq!(
            shown,
            vec![
                vec![
                    ("error".to_owned(), red),
                    (": ".to_owned(), Style::default()),
                    ("日本".to_owned(), red),
                ],
                vec![("ne".to_owned(), red), ("xt".to_owned(), Style::default())],
            ]
        );
    }

    #[test]
    fn without_styles_the_lines_are_plain_and_split_as_lines_splits_them() {
        for styles in [None, Some(Vec::new())] {
            let lines = text_lines(&block("a\n\nb\n", styles));
            let texts: Vec<String> = lines
                .iter()
                .map(|l| l.iter().map(|s| s.content.to_string()).collect())
                .collect();
            assert_eq!(texts, "a\n\nb\n".lines().collect::<Vec<_>>());
            assert!(lines.iter().flatten().all(|s| s.style == Style::default()));
        }
        let palette = |index| color(Colour::Indexed(index));
        assert_eq!(palette(9), Color::LightRed);
        assert_eq!(palette(196), Color::Indexed(196));
        assert_eq!(color(Colour::Rgb(1, 2, 3)), Color::Rgb(1, 2, 3));
    }
}
