//! `/cards`: every card of the transcript, live and saved, in order and in full (every
//! row, a value not reported said so), opened at the newest. Apart from the commands
//! so that drawing a card (`super::render`) is not something the commands depend on.

use ratatui::text::Line;

use super::App;
use super::commands::{TextPanel, transcript_cards};
use super::render::card_view;

impl App {
    /// The `/cards` panel of the transcript as it is now.
    pub(super) fn cards_panel(&self) -> TextPanel {
        let mut lines = Vec::new();
        let mut newest = 0;
        for card in transcript_cards(&self.transcript) {
            if !lines.is_empty() {
                lines.push(Line::from(""));
            }
            newest = lines.len();
            lines.extend(card_view(card));
        }
        if lines.is_empty() {
            lines.push(Line::from("no tool calls in this session's transcript"));
        }
        TextPanel::new("Cards", lines).scrolled_to(newest)
    }
}
