//! Colour and emphasis of a text block's spans: the `tool.cards.styles` extension.
//!
//! Card strings never carry terminal markup. What a command printed in colour keeps
//! its colour as data beside the text instead: spans of the sanitized text, each with
//! a foreground, a background and attributes. They are inert display annotations:
//! ignoring them loses colour and nothing else.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::nullable;

/// Most spans one text block's `styles` lists; a text with more has none listed
/// (`styles` null).
pub const STYLE_SPANS_PER_BLOCK: usize = 128;

/// A colour: one of the terminal's 256 palette entries (0–7 the standard colours,
/// 8–15 their bright forms, 16–255 the colour cube and the grey ramp), written as its
/// index, or a 24-bit colour, written `#rrggbb` in lower case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Colour {
    /// A palette index.
    Indexed(u8),
    /// Red, green and blue.
    Rgb(u8, u8, u8),
}

impl Serialize for Colour {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Colour::Indexed(index) => serializer.serialize_u8(index),
            Colour::Rgb(r, g, b) => serializer.serialize_str(&format!("#{r:02x}{g:02x}{b:02x}")),
        }
    }
}

impl<'de> Deserialize<'de> for Colour {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Index(u8),
            Hex(String),
        }
        match Written::deserialize(deserializer)? {
            Written::Index(index) => Ok(Colour::Indexed(index)),
            Written::Hex(hex) => parse_hex(&hex).ok_or_else(|| {
                serde::de::Error::custom("a colour is a palette index or `#rrggbb` in lower case")
            }),
        }
    }
}

/// `#rrggbb`, lower-case hex digits only.
fn parse_hex(text: &str) -> Option<Colour> {
    let digits = text.strip_prefix('#')?;
    let lower = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if digits.len() != 6 || !digits.bytes().all(lower) {
        return None;
    }
    let channel = |at: usize| u8::from_str_radix(&digits[at..at + 2], 16).ok();
    Some(Colour::Rgb(channel(0)?, channel(2)?, channel(4)?))
}

impl JsonSchema for Colour {
    fn schema_name() -> Cow<'static, str> {
        "Colour".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A palette index (0-255), or a 24-bit colour `#rrggbb` in lower case.",
            "oneOf": [
                { "type": "integer", "minimum": 0, "maximum": 255 },
                { "type": "string", "pattern": "^#[0-9a-f]{6}$" }
            ]
        })
    }
}

/// An emphasis a span carries. A span lists each at most once, in this order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the attributes")]
pub enum Attribute {
    Bold,
    Dim,
    Italic,
    Underline,
    Strikethrough,
    Inverse,
}

impl Attribute {
    /// Every attribute, in the order a span lists them.
    pub const ALL: [Attribute; 6] = [
        Attribute::Bold,
        Attribute::Dim,
        Attribute::Italic,
        Attribute::Underline,
        Attribute::Strikethrough,
        Attribute::Inverse,
    ];
}

/// How a stretch of text is shown: the terminal's default is no colour and no
/// attribute.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Style {
    /// The foreground colour; none for the terminal's default.
    pub fg: Option<Colour>,
    /// The background colour; none for the terminal's default.
    pub bg: Option<Colour>,
    /// The attributes, each once, in [`Attribute::ALL`]'s order.
    pub attributes: Vec<Attribute>,
}

impl Style {
    /// Whether the style is the terminal's default (no span is listed for it).
    pub fn is_plain(&self) -> bool {
        self.fg.is_none() && self.bg.is_none() && self.attributes.is_empty()
    }
}

/// A styled span of a text block's `text`: the bytes `start..end`, both on character
/// boundaries. Spans are listed in order, never overlap, and text no span covers is
/// shown in the terminal's default style.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StyleSpan {
    /// The first byte of the span in the block's `text`.
    pub start: u64,
    /// The byte after the span's last.
    pub end: u64,
    /// The foreground colour; null for the default.
    #[serde(deserialize_with = "nullable")]
    pub fg: Option<Colour>,
    /// The background colour; null for the default.
    #[serde(deserialize_with = "nullable")]
    pub bg: Option<Colour>,
    /// The attributes, each once, in [`Attribute::ALL`]'s order.
    pub attributes: Vec<Attribute>,
}

impl StyleSpan {
    /// The span's style.
    pub fn style(&self) -> Style {
        Style {
            fg: self.fg,
            bg: self.bg,
            attributes: self.attributes.clone(),
        }
    }

    /// The span of `style` over `start..end`.
    pub fn new(start: usize, end: usize, style: &Style) -> StyleSpan {
        StyleSpan {
            start: start as u64,
            end: end as u64,
            fg: style.fg,
            bg: style.bg,
            attributes: style.attributes.clone(),
        }
    }
}

/// Whether `spans` may style `text`: at most [`STYLE_SPANS_PER_BLOCK`], each nonempty,
/// styled, within the text on character boundaries, its attributes in order, and each
/// after the one before.
pub fn spans_fit(spans: &[StyleSpan], text: &str) -> bool {
    if spans.len() > STYLE_SPANS_PER_BLOCK {
        return false;
    }
    let boundary = |at: u64| usize::try_from(at).is_ok_and(|at| text.is_char_boundary(at));
    let mut previous_end = 0u64;
    spans.iter().all(|span| {
        let ordered = span.attributes.windows(2).all(|w| w[0] < w[1]);
        let fits = previous_end <= span.start
            && span.start < span.end
            && boundary(span.start)
            && boundary(span.end)
            && ordered
            && !span.style().is_plain();
        previous_end = span.end;
        fits
    })
}

/// The `extensions["tool.cards.styles"]` descriptor ([`crate::names::TOOL_CARD_STYLES`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCardStylesDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// [`STYLE_SPANS_PER_BLOCK`].
    pub spans_per_block: u64,
}

impl ToolCardStylesDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> ToolCardStylesDescriptor {
        ToolCardStylesDescriptor {
            schema_version: 1,
            spans_per_block: STYLE_SPANS_PER_BLOCK as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_written_as_an_index_or_lower_case_hex() {
        let written = |c: Colour| serde_json::to_string(&c).unwrap();
        assert_eq!(written(Colour::Indexed(9)), "9");
        assert_eq!(written(Colour::Rgb(255, 0, 16)), "\"#ff0010\"");
        let read = |json: &str| serde_json::from_str::<Colour>(json).ok();
        assert_eq!(read("196"), Some(Colour::Indexed(196)));
        assert_eq!(read("\"#0a0b0c\""), Some(Colour::Rgb(10, 11, 12)));
        for bad in [
            "256",
            "-1",
            "\"#FF0000\"",
            "\"#fff\"",
            "\"red\"",
            "1.5",
            "null",
        ] {
            assert_eq!(read(bad), None, "{bad}");
        }
    }

    #[test]
    fn spans_must_be_ordered_styled_and_on_boundaries() {
        let red = Style {
            fg: Some(Colour::Indexed(1)),
            ..Style::default()
        };
        let span = |start, end| StyleSpan::new(start, end, &red);
        let text = "ab日c";
        assert!(spans_fit(&[span(0, 1), span(1, 5)], text));
        assert!(spans_fit(&[], text));
        assert!(!spans_fit(&[span(0, 3)], text), "inside 日");
        assert!(!spans_fit(&[span(0, 7)], text), "past the end");
        assert!(!spans_fit(&[span(2, 2)], text), "empty");
        assert!(!spans_fit(&[span(1, 2), span(0, 1)], text), "out of order");
        assert!(!spans_fit(&[span(0, 2), span(1, 2)], text), "overlapping");
        assert!(!spans_fit(&[StyleSpan::new(0, 1, &Style::default())], text));
        let mut twice = span(0, 1);
        twice.attributes = vec![Attribute::Bold, Attribute::Bold];
        assert!(!spans_fit(&[twice], text));
        let mut reversed = span(0, 1);
        reversed.attributes = vec![Attribute::Inverse, Attribute::Bold];
        assert!(!spans_fit(&[reversed], text));
        let many: Vec<StyleSpan> = (0..=STYLE_SPANS_PER_BLOCK)
            .map(|i| span(i, i + 1))
            .collect();
        assert!(!spans_fit(&many, &"x".repeat(STYLE_SPANS_PER_BLOCK + 1)));
        assert!(spans_fit(
            &many[..STYLE_SPANS_PER_BLOCK],
            &"x".repeat(STYLE_SPANS_PER_BLOCK)
        ));
    }
}
