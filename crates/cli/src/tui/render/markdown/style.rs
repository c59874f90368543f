//! The styles of the parts of a rendered reply.

use pulldown_cmark::HeadingLevel;
use ratatui::style::{Color, Modifier, Style};

pub(super) fn heading_style(level: HeadingLevel) -> Style {
    let style = Style::default()
        .fg(Color::Magenta)
        .add_modifier(Modifier::BOLD);
    match level {
        HeadingLevel::H1 => style.add_modifier(Modifier::UNDERLINED),
        HeadingLevel::H2 => style,
        _ => style.add_modifier(Modifier::ITALIC),
    }
}

pub(super) fn code_style() -> Style {
    Style::default().fg(Color::Cyan)
}

pub(super) fn link_style() -> Style {
    Style::default()
        .fg(Color::Blue)
        .add_modifier(Modifier::UNDERLINED)
}

pub(super) fn quote_style() -> Style {
    Style::default().fg(Color::DarkGray)
}

pub(super) fn marker_style() -> Style {
    Style::default().fg(Color::LightBlue)
}

pub(super) fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}
