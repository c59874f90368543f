//! Select Graphic Rendition read as styles: the colour a command printed, kept as spans
//! of its sanitized text instead of as terminal markup (`tool.cards.styles`).
//!
//! The codes read are those terminals agree on: reset (0), bold (1), dim (2), italic
//! (3), underline (4, and 4:0 to end it; 21 is a double underline, shown as one),
//! inverse (7), strikethrough (9), their ends (22–29), the eight colours and their
//! bright forms (30–37, 40–47, 90–97, 100–107), the defaults (39, 49), and palette and
//! 24-bit colours in both their forms (`38;5;n`, `38:5:n`, `38;2;r;g;b`,
//! `38:2::r:g:b`, `38:2:r:g:b`, the same with 48). Others (blink, hidden, fonts,
//! overline, underline colour) change nothing; a malformed extended colour ends the
//! reading of its sequence, as terminals do.

use super::escapes::{Piece, pieces};
use crate::cards::{Attribute, Colour, Style, StyleSpan};

/// Reads text as a terminal shows it: escape sequences removed whole, other control
/// characters (but line feeds and tabs) dropped, and each SGR sequence the style of the
/// text after it. The style carries from one call to the next, as a terminal's does
/// from one line to the next.
#[derive(Debug, Clone, Default)]
pub struct Styler {
    style: Style,
}

impl Styler {
    /// `text` made plain, exactly as [`super::strip_controls`] makes it, and the spans of
    /// the plain text that are styled (offsets in bytes of it), in order.
    pub fn read(&mut self, text: &str) -> (String, Vec<StyleSpan>) {
        let mut plain = String::with_capacity(text.len());
        let mut spans: Vec<StyleSpan> = Vec::new();
        for piece in pieces(text) {
            match piece {
                Piece::Text(text) => {
                    let start = plain.len();
                    plain.extend(
                        text.chars()
                            .filter(|&c| c == '\n' || c == '\t' || !c.is_control()),
                    );
                    self.mark(&mut spans, start, plain.len());
                }
                Piece::Sequence {
                    sgr: Some(params), ..
                } => self.apply(params),
                Piece::Sequence { .. } => {}
            }
        }
        (plain, spans)
    }

    /// Adds `start..end` in the current style to `spans`, joined to the last span when
    /// it continues it in the same style.
    fn mark(&self, spans: &mut Vec<StyleSpan>, start: usize, end: usize) {
        if start == end || self.style.is_plain() {
            return;
        }
        if let Some(last) = spans.last_mut()
            && last.end == start as u64
            && last.style() == self.style
        {
            last.end = end as u64;
            return;
        }
        spans.push(StyleSpan::new(start, end, &self.style));
    }

    /// Applies one SGR sequence's parameters (`1;31`, `38:2::255:0:0`).
    fn apply(&mut self, params: &str) {
        let groups: Vec<&str> = params.split(';').collect();
        let mut at = 0;
        while let Some(group) = groups.get(at) {
            at += 1;
            let mut parts = group.split(':');
            let code = parts.next().map_or(Some(0), number);
            let subparams: Vec<&str> = parts.collect();
            let Some(code) = code else { continue };
            match code {
                0 => self.style = Style::default(),
                1 => self.set(Attribute::Bold, true),
                2 => self.set(Attribute::Dim, true),
                3 => self.set(Attribute::Italic, true),
                4 => {
                    let off = subparams.first().and_then(|s| number(s)) == Some(0);
                    self.set(Attribute::Underline, !off);
                }
                7 => self.set(Attribute::Inverse, true),
                9 => self.set(Attribute::Strikethrough, true),
                21 => self.set(Attribute::Underline, true),
                22 => {
                    self.set(Attribute::Bold, false);
                    self.set(Attribute::Dim, false);
                }
                23 => self.set(Attribute::Italic, false),
                24 => self.set(Attribute::Underline, false),
                27 => self.set(Attribute::Inverse, false),
                29 => self.set(Attribute::Strikethrough, false),
                30..=37 => self.style.fg = Some(Colour::Indexed((code - 30) as u8)),
                39 => self.style.fg = None,
                40..=47 => self.style.bg = Some(Colour::Indexed((code - 40) as u8)),
                49 => self.style.bg = None,
                90..=97 => self.style.fg = Some(Colour::Indexed((code - 90 + 8) as u8)),
                100..=107 => self.style.bg = Some(Colour::Indexed((code - 100 + 8) as u8)),
                38 | 48 => {
                    let colour = if subparams.is_empty() {
                        // `38;5;n` and `38;2;r;g;b`: the colour takes the next groups.
                        let (colour, used) = extended(&groups[at..]);
                        at += used;
                        colour
                    } else {
                        extended_subparams(&subparams)
                    };
                    let Some(colour) = colour else {
                        // Terminals stop reading a sequence at a malformed colour.
                        return;
                    };
                    if code == 38 {
                        self.style.fg = Some(colour);
                    } else {
                        self.style.bg = Some(colour);
                    }
                }
                _ => {}
            }
        }
    }

    fn set(&mut self, attribute: Attribute, on: bool) {
        let attributes = &mut self.style.attributes;
        match (attributes.binary_search(&attribute), on) {
            (Err(at), true) => attributes.insert(at, attribute),
            (Ok(at), false) => {
                attributes.remove(at);
            }
            _ => {}
        }
    }
}

/// A parameter's number: empty is 0 (`ESC[m` resets); too large is none.
fn number(text: &str) -> Option<u32> {
    if text.is_empty() {
        Some(0)
    } else {
        text.parse().ok()
    }
}

/// A channel or palette index: 0–255.
fn byte(text: &str) -> Option<u8> {
    u8::try_from(number(text)?).ok()
}

/// The colour `5;n` or `2;r;g;b` at the start of `groups`, and how many groups it took.
fn extended(groups: &[&str]) -> (Option<Colour>, usize) {
    match groups.first().and_then(|g| number(g)) {
        Some(5) => (groups.get(1).and_then(|n| byte(n)).map(Colour::Indexed), 2),
        Some(2) => {
            let channel = |i: usize| groups.get(i).and_then(|n| byte(n));
            let colour = (|| Some(Colour::Rgb(channel(1)?, channel(2)?, channel(3)?)))();
            (colour, 4)
        }
        _ => (None, 1),
    }
}

/// The colour written in subparameters: `5:n`, `2:r:g:b`, or `2:<colour space>:r:g:b`.
fn extended_subparams(subparams: &[&str]) -> Option<Colour> {
    match subparams.split_first()? {
        (&"5", [index]) => byte(index).map(Colour::Indexed),
        (&"2", [r, g, b]) | (&"2", [_, r, g, b]) => Some(Colour::Rgb(byte(r)?, byte(g)?, byte(b)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::strip_controls;

    fn style(fg: Option<Colour>, bg: Option<Colour>, attributes: &[Attribute]) -> Style {
        Style {
            fg,
            bg,
            attributes: attributes.to_vec(),
        }
    }

    fn read(text: &str) -> (String, Vec<(u64, u64, Style)>) {
        let (plain, spans) = Styler::default().read(text);
        let spans = spans
            .into_iter()
            .map(|s| (s.start, s.end, s.style()))
            .collect();
        (plain, spans)
    }

    #[test]
    fn colour_becomes_spans_of_the_plain_text() {
        let red = style(Some(Colour::Indexed(1)), None, &[]);
        assert_eq!(
            read("\u{1b}[31mred\u{1b}[0m plain"),
            ("red plain".to_owned(), vec![(0, 3, red.clone())])
        );
        // Bold and bright green on blue, then bold ends and the colour stays.
        let (plain, spans) = read("a\u{1b}[1;92;44mbc\u{1b}[22mde\u{1b}[m");
        assert_eq!(plain, "abcde");
        let green_on_blue = |attributes: &[Attribute]| {
            style(
                Some(Colour::Indexed(10)),
                Some(Colour::Indexed(4)),
                attributes,
            )
        };
        assert_eq!(
            spans,
            vec![
                (1, 3, green_on_blue(&[Attribute::Bold])),
                (3, 5, green_on_blue(&[])),
            ]
        );
        // Palette and 24-bit colours, both forms; offsets count bytes.
        let (plain, spans) =
            read("\u{1b}[38;5;196m日\u{1b}[38:2::1:2:3mx\u{1b}[48;2;10;20;30my\u{1b}[38:5:7;39mz");
        assert_eq!(plain, "日xyz");
        assert_eq!(
            spans,
            vec![
                (0, 3, style(Some(Colour::Indexed(196)), None, &[])),
                (3, 4, style(Some(Colour::Rgb(1, 2, 3)), None, &[])),
                (
                    4,
                    5,
                    style(
                        Some(Colour::Rgb(1, 2, 3)),
                        Some(Colour::Rgb(10, 20, 30)),
                        &[]
                    )
                ),
                (5, 6, style(None, Some(Colour::Rgb(10, 20, 30)), &[])),
            ]
        );
    }

    #[test]
    fn the_same_style_over_text_and_removed_sequences_is_one_span() {
        let (plain, spans) = read("\u{1b}[4mun\u{1b}[2K\u{1b}[4mder\u{1b}]0;t\u{7}line\u{1b}[24m.");
        assert_eq!(plain, "underline.");
        assert_eq!(
            spans,
            vec![(0, 9, style(None, None, &[Attribute::Underline]))]
        );
        // Attributes are listed in their fixed order, whatever order they were set in.
        let (_, spans) = read("\u{1b}[7;9;3;2;1;4mx");
        assert_eq!(spans[0].2.attributes, Attribute::ALL.to_vec());
        // 4:0 ends an underline, 4:3 (curly) is one.
        let (_, spans) = read("\u{1b}[4:3ma\u{1b}[4:0mb");
        assert_eq!(
            spans,
            vec![(0, 1, style(None, None, &[Attribute::Underline]))]
        );
    }

    #[test]
    fn the_style_carries_from_one_line_to_the_next() {
        let mut styler = Styler::default();
        let (_, first) = styler.read("\u{1b}[33mwarning: one");
        let (plain, second) = styler.read("two\u{1b}[0m three");
        assert_eq!(first.len(), 1);
        assert_eq!(plain, "two three");
        assert_eq!(
            second.iter().map(|s| (s.start, s.end)).collect::<Vec<_>>(),
            [(0, 3)]
        );
    }

    #[test]
    fn what_is_not_understood_changes_nothing_and_breaks_nothing() {
        // Blink, hidden, fonts, overline: no style.
        assert_eq!(read("\u{1b}[5;8;11;53mx").1, vec![]);
        // A malformed colour ends its sequence: the bold after it is not read.
        assert_eq!(read("\u{1b}[38;5;999;1mx").1, vec![]);
        assert_eq!(read("\u{1b}[38;7mx").1, vec![]);
        assert_eq!(read("\u{1b}[38:2:300:0:0mx").1, vec![]);
        // A number too large for anything is skipped, the rest read.
        assert_eq!(
            read("\u{1b}[99999999999;1mx").1,
            vec![(0, 1, style(None, None, &[Attribute::Bold]))]
        );
        // The plain text is always exactly what stripping controls gives.
        for hostile in [
            "\u{1b}[31m\u{7}a\u{0}b\u{1b}[2J\u{9b}1mc\u{1b}]8;;x\u{1b}\\d\r\n\te",
            "\u{1b}[",
            "\u{1b}[31",
            "x\u{1b}",
            "\u{1b}]0;never ended\nnext",
            "plain 日本 ❤️",
        ] {
            assert_eq!(read(hostile).0, strip_controls(hostile), "{hostile:?}");
        }
    }

    /// Text made of what escape sequences are made of, in any order: the style reader
    /// must agree with sanitizing on the text and give spans a client accepts.
    fn awkward_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop::sample::select(vec![
            "\u{1b}[", "\u{1b}]", "\u{1b}\\", "\u{9b}", "\u{7}", "m", ";", ":", "38", "48", "5",
            "2", "1", "0", "31", "255", "999", "a", "日", "❤️", "\n", "\t", "\r", "\u{0}",
            "\u{85}", "[", "4:3",
        ]);
        prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
    }

    proptest::proptest! {
        #[test]
        fn any_text_reads_as_sanitizing_leaves_it_with_spans_a_client_accepts(
            lines in proptest::collection::vec(awkward_text(), 1..4)
        ) {
            let mut styler = Styler::default();
            for line in &lines {
                let (plain, spans) = styler.read(line);
                proptest::prop_assert_eq!(&plain, &strip_controls(line));
                let bounded: Vec<_> = spans.into_iter().take(crate::cards::STYLE_SPANS_PER_BLOCK).collect();
                proptest::prop_assert!(crate::cards::spans_fit(&bounded, &plain), "{:?}", bounded);
            }
        }
    }
}
