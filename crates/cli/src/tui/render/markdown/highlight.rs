//! Syntax highlighting of fenced code (syntect, its bundled syntaxes and one of its
//! bundled themes), loaded once, lazily, and warmed up off the drawing thread.

use std::sync::LazyLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{self, FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// The bundled theme whose colours the code takes; its plain-text colour is left to
/// the terminal, so unmarked code reads on light and dark backgrounds alike.
const THEME: &str = "base16-ocean.dark";

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);
static THEMES: LazyLock<Option<Theme>> =
    LazyLock::new(|| ThemeSet::load_defaults().themes.remove(THEME));

/// Loads the syntaxes and the theme on a thread of their own, so the first code block
/// drawn does not wait for them (a draw that needs them before then waits only for
/// what is left).
pub(in crate::tui) fn warm_up() {
    std::thread::spawn(|| {
        LazyLock::force(&SYNTAXES);
        LazyLock::force(&THEMES);
    });
}

/// The lines of `code` as styled spans, highlighted for the language the fence's info
/// string names first (`rust`, `py`, `sh`, …); code in a language it does not know,
/// or that fails to highlight, is plain.
pub(in crate::tui) fn code_lines(info: &str, code: &str) -> Vec<Vec<Span<'static>>> {
    let token = info
        .split(|c: char| c == ',' || c == '{' || c.is_whitespace())
        .next()
        .unwrap_or_default();
    highlighted(token, code).unwrap_or_else(|| {
        code.lines()
            .map(|line| vec![Span::raw(line.to_owned())])
            .collect()
    })
}

fn highlighted(token: &str, code: &str) -> Option<Vec<Vec<Span<'static>>>> {
    if token.is_empty() {
        return None;
    }
    let syntax = SYNTAXES.find_syntax_by_token(token)?;
    let theme = THEMES.as_ref()?;
    let plain = theme.settings.foreground;
    let mut highlighter = HighlightLines::new(syntax, theme);
    let mut lines = Vec::new();
    for line in LinesWithEndings::from(code) {
        let ranges = highlighter.highlight_line(line, &SYNTAXES).ok()?;
        lines.push(
            ranges
                .into_iter()
                .filter_map(|(style, text)| {
                    let text = text.trim_end_matches(['\n', '\r']);
                    (!text.is_empty()).then(|| Span::styled(text.to_owned(), convert(style, plain)))
                })
                .collect(),
        );
    }
    Some(lines)
}

/// A syntect style as a terminal one: the foreground (unless it is the theme's plain
/// colour) and the font style; never the background, which is the terminal's.
fn convert(style: highlighting::Style, plain: Option<highlighting::Color>) -> Style {
    let mut out = Style::default();
    if Some(style.foreground) != plain {
        let c = style.foreground;
        out = out.fg(Color::Rgb(c.r, c.g, c.b));
    }
    if style.font_style.contains(FontStyle::BOLD) {
        out = out.add_modifier(Modifier::BOLD);
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        out = out.add_modifier(Modifier::ITALIC);
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        out = out.add_modifier(Modifier::UNDERLINED);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_and_others_are_plain() {
        let rust = code_lines("rust,ignore", "fn main() {\n    let x = 1;\n}\n");
        let text: Vec<String> = rust
            .iter()
            .map(|l| l.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text, ["fn main() {", "    let x = 1;", "}"]);
        assert!(
            rust[0].iter().any(|s| s.style.fg.is_some()),
            "the keyword is coloured: {rust:?}"
        );
        let unknown = code_lines("no-such-language", "a\nb");
        assert_eq!(unknown, [vec![Span::raw("a")], vec![Span::raw("b")]]);
        assert_eq!(code_lines("", "x"), [vec![Span::raw("x")]]);
    }
}
