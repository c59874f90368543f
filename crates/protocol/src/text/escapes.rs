//! Terminal escape sequences in text, found whole (ECMA-48): removing one leaves none of
//! its parameters behind (`ESC[31m` used to lose its `ESC` and show `[31m`).
//!
//! A sequence starts with ESC or a C1 introducer and is:
//! - a control sequence (`ESC [` or U+009B): parameter bytes, intermediate bytes and
//!   one final byte (`ESC[31m`, `ESC[2J`);
//! - a control string (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` or their C1 forms:
//!   a title, a hyperlink, a device control): everything up to BEL or the string
//!   terminator (`ESC \` or U+009C); one never terminated ends at the line's end, so
//!   the text after it is kept;
//! - any other escape: `ESC`, intermediate bytes and one final byte (`ESC(B`, `ESC7`).
//!
//! Only Select Graphic Rendition (`ESC[` digits, `;` and `:`, then `m`) is colour: a
//! caller may keep it and nothing else.

use std::borrow::Cow;

const ESC: char = '\u{1B}';
const BEL: char = '\u{07}';
/// The C1 introducer of a control sequence (the 8-bit form of `ESC [`).
const CSI_C1: char = '\u{9B}';
/// The C1 string terminator.
const ST_C1: char = '\u{9C}';

/// What sort of sequence starts a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ControlSequence,
    ControlString,
    Other,
}

/// The kind of sequence that the introducer `c` (after ESC, or a C1 character alone)
/// begins.
fn kind_after_escape(c: char) -> Option<Kind> {
    match c {
        '[' => Some(Kind::ControlSequence),
        ']' | 'P' | 'X' | '^' | '_' => Some(Kind::ControlString),
        '\u{20}'..='\u{7E}' => Some(Kind::Other),
        _ => None,
    }
}

/// The length in bytes of the escape sequence at the start of `text` (which starts
/// with ESC or a C1 control), and its parameters when it is SGR (`1;31` of `ESC[1;31m`).
/// A lone ESC (followed by nothing a sequence can hold) is one character long.
fn sequence(text: &str) -> (usize, Option<&str>) {
    let mut chars = text.char_indices();
    let Some((_, first)) = chars.next() else {
        return (0, None);
    };
    let (kind, body_start) = match first {
        ESC => match chars.next() {
            Some((at, c)) => match kind_after_escape(c) {
                Some(Kind::Other) => (Kind::Other, at),
                Some(kind) => (kind, at + c.len_utf8()),
                None => return (first.len_utf8(), None),
            },
            None => return (first.len_utf8(), None),
        },
        CSI_C1 => (Kind::ControlSequence, first.len_utf8()),
        '\u{90}' | '\u{98}' | '\u{9D}' | '\u{9E}' | '\u{9F}' => {
            (Kind::ControlString, first.len_utf8())
        }
        other => return (other.len_utf8(), None),
    };
    let body = &text[body_start..];
    match kind {
        Kind::ControlSequence => {
            // Parameters, intermediates, then the final byte; a byte that fits none
            // ends the (malformed) sequence before it.
            let mut end = body.len();
            let mut sgr = None;
            for (at, c) in body.char_indices() {
                match c {
                    '\u{30}'..='\u{3F}' | '\u{20}'..='\u{2F}' => {}
                    '\u{40}'..='\u{7E}' => {
                        let params = &body[..at];
                        sgr = (c == 'm'
                            && params
                                .chars()
                                .all(|p| p.is_ascii_digit() || p == ';' || p == ':'))
                        .then_some(params);
                        end = at + 1;
                        break;
                    }
                    _ => {
                        end = at;
                        break;
                    }
                }
            }
            (body_start + end, sgr)
        }
        Kind::ControlString => {
            let mut end = body.len();
            let mut iter = body.char_indices().peekable();
            while let Some((at, c)) = iter.next() {
                match c {
                    BEL | ST_C1 => {
                        end = at + c.len_utf8();
                        break;
                    }
                    ESC if iter.peek().is_some_and(|(_, n)| *n == '\\') => {
                        end = at + 2;
                        break;
                    }
                    // Never terminated on its line: the rest of the line is kept.
                    '\n' => {
                        end = at;
                        break;
                    }
                    _ => {}
                }
            }
            (body_start + end, None)
        }
        Kind::Other => {
            // Intermediate bytes, then one final byte.
            let mut end = body.len();
            for (at, c) in body.char_indices() {
                match c {
                    '\u{20}'..='\u{2F}' => {}
                    '\u{30}'..='\u{7E}' => {
                        end = at + 1;
                        break;
                    }
                    _ => {
                        end = at;
                        break;
                    }
                }
            }
            (body_start + end, None)
        }
    }
}

/// Whether `c` may begin an escape sequence.
fn introduces(c: char) -> bool {
    c == ESC || ('\u{80}'..='\u{9F}').contains(&c)
}

/// A piece of text as escape sequences divide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// Text between sequences (it may still hold other control characters).
    Text(&'a str),
    /// A whole escape sequence: its parameters when it is SGR, else none.
    Sequence {
        /// The sequence as it was.
        whole: &'a str,
        /// The parameters of an SGR sequence (`1;31` of `ESC[1;31m`).
        sgr: Option<&'a str>,
    },
}

/// `text` divided into text and whole escape sequences, in order.
pub(crate) fn pieces(text: &str) -> impl Iterator<Item = Piece<'_>> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match rest.find(introduces) {
            Some(0) => {
                let (len, sgr) = sequence(rest);
                let whole = &rest[..len];
                rest = &rest[len..];
                Some(Piece::Sequence { whole, sgr })
            }
            Some(at) => {
                let text = &rest[..at];
                rest = &rest[at..];
                Some(Piece::Text(text))
            }
            None => Some(Piece::Text(std::mem::take(&mut rest))),
        }
    })
}

/// `text` with every escape sequence removed whole; with `keep_sgr`, SGR sequences
/// (colour and style) are kept as they were. Other control characters are left to the
/// caller.
pub fn remove_escapes(text: &str, keep_sgr: bool) -> Cow<'_, str> {
    if !text.chars().any(introduces) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Sequence {
                whole,
                sgr: Some(_),
            } if keep_sgr => out.push_str(whole),
            Piece::Sequence { .. } => {}
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn removed(text: &str) -> String {
        remove_escapes(text, false).into_owned()
    }

    #[test]
    fn colour_and_every_other_sequence_go_whole() {
        assert_eq!(removed("\u{1b}[31mred\u{1b}[0m"), "red");
        assert_eq!(removed("a\u{1b}[1;38;2;255;0;0mb"), "ab");
        // Cursor moves, screen clears, private modes.
        assert_eq!(removed("\u{1b}[2J\u{1b}[H\u{1b}[?25lx\u{1b}[10;20H"), "x");
        // A title and a hyperlink, ended by BEL or ST; the link's text stays.
        assert_eq!(removed("\u{1b}]0;owned\u{7}ok"), "ok");
        assert_eq!(
            removed("\u{1b}]8;;https://example.com\u{1b}\\link\u{1b}]8;;\u{1b}\\ text"),
            "link text"
        );
        // Device control strings, charset selections, two-byte escapes.
        assert_eq!(
            removed("\u{1b}P+q544e\u{1b}\\a\u{1b}(Bb\u{1b}7c\u{1b}8"),
            "abc"
        );
        // The C1 forms.
        assert_eq!(removed("\u{9b}31mx\u{9d}0;t\u{9c}y"), "xy");
    }

    #[test]
    fn broken_sequences_lose_only_themselves() {
        // A title never ended keeps the next line.
        assert_eq!(removed("\u{1b}]0;title\nnext"), "\nnext");
        // A control sequence cut by a byte it cannot hold ends there.
        assert_eq!(removed("\u{1b}[31\nred"), "\nred");
        // A lone ESC at the end, and ESC before a newline.
        assert_eq!(removed("end\u{1b}"), "end");
        assert_eq!(removed("a\u{1b}\nb"), "a\nb");
        // Text without any is untouched.
        assert!(matches!(
            remove_escapes("plain 日本", false),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn sgr_alone_may_be_kept() {
        assert_eq!(
            remove_escapes("\u{1b}[1;31merr\u{1b}[0m \u{1b}[2K\u{1b}]0;t\u{7}ok", true),
            "\u{1b}[1;31merr\u{1b}[0m ok"
        );
        // A private or intermediate form of `m` is not SGR.
        assert_eq!(remove_escapes("\u{1b}[>4;2mx\u{1b}[?1m", true), "x");
    }
}
