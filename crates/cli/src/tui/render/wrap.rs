//! Fitting styled text to the screen's width: measured in display cells
//! (`unicode-width`), cut only between graphemes (`unicode-segmentation`), at a space
//! where there is one, keeping each span's style.
//!
//! A row never holds more cells than the width, so the terminal never cuts a wide
//! character (CJK, emoji) at the edge; a word longer than a row is cut between
//! graphemes; wide characters may start a new row anywhere, since the scripts that
//! use them do not put spaces between words.
//!
//! Emoji sequences whose width terminals disagree on are drawn as their parts
//! ([`terminal_parts`]): a terminal that counted a width other than ours would leave a
//! stale cell behind (or shift the rest of the row) until the next full redraw.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// The cells a tab stands for (tabs are drawn as spaces: a terminal cell holds no tab).
const TAB: &str = "    ";

/// One grapheme to place, borrowed from its span (or a space standing for a tab).
#[derive(Clone, Copy)]
struct Grapheme<'a> {
    text: &'a str,
    style: Style,
    width: usize,
    space: bool,
}

/// The display width of `text` in cells, as the wrapper counts it.
pub(super) fn width_of(text: &str) -> usize {
    let mut width = 0;
    push_graphemes(text, Style::default(), &mut |g| width += g.width);
    width
}

/// The display width of `spans` in cells, as the wrapper counts it.
pub(super) fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width_of(&s.content)).sum()
}

/// Calls `each` for every drawable grapheme of `text`: a tab becomes spaces, and other
/// control characters are dropped (they would move the terminal's cursor).
fn push_graphemes<'a>(text: &'a str, style: Style, each: &mut impl FnMut(Grapheme<'a>)) {
    let mut one = |g: &'a str| {
        if g == "\t" {
            for n in 0..TAB.len() {
                each(Grapheme {
                    text: &TAB[n..=n],
                    style,
                    width: 1,
                    space: true,
                });
            }
        } else if !g.chars().any(char::is_control) {
            each(Grapheme {
                text: g,
                style,
                width: g.width(),
                space: g.chars().all(char::is_whitespace),
            });
        }
    };
    if text.is_ascii() {
        // Every ASCII byte is a grapheme of its own but for CR LF, and CR is dropped.
        for at in 0..text.len() {
            one(&text[at..=at]);
        }
    } else {
        for g in text.graphemes(true) {
            for part in terminal_parts(g) {
                one(part);
            }
        }
    }
}

/// `text` with every grapheme drawn as [`terminal_parts`] draws it, for text drawn
/// without wrapping (the status line).
pub(super) fn terminal_text(text: &str) -> String {
    if text.is_ascii() {
        return text.to_owned();
    }
    text.graphemes(true).flat_map(terminal_parts).collect()
}

/// Joins emoji into one picture (U+200D, the zero-width joiner).
const ZWJ: char = '\u{200D}';

/// Whether `c` changes how the character before it is presented, in a way terminals
/// count differently: the variation selectors (text or emoji presentation), the skin
/// tone modifiers, the enclosing keycap and the tag characters of subdivision flags.
fn presentation(c: char) -> bool {
    matches!(c,
        '\u{FE0E}' | '\u{FE0F}' | '\u{20E3}'
        | '\u{1F3FB}'..='\u{1F3FF}'
        | '\u{E0020}'..='\u{E007F}')
}

/// A grapheme as it is drawn: itself, or for an emoji sequence whose width terminals
/// count differently (`❤️` one cell in tmux, two in the width tables; a ZWJ family one
/// picture of two cells or three of six; a skin tone two cells or four), the parts
/// every terminal counts alike: each joined emoji on its own, without its presentation
/// selectors and modifiers. The picture may lose its tone or join; no cell is left
/// stale.
pub(super) fn terminal_parts(grapheme: &str) -> impl Iterator<Item = &str> {
    let careful = grapheme.chars().any(|c| c == ZWJ || presentation(c));
    let parts: Box<dyn Iterator<Item = &str>> = if careful {
        Box::new(
            grapheme
                .split(ZWJ)
                .map(|part| part.split(presentation).next().unwrap_or_default())
                .filter(|part| !part.is_empty()),
        )
    } else {
        Box::new(std::iter::once(grapheme))
    };
    parts
}

/// Fits `content` into rows of at most `width` cells: the first row starts with
/// `prefix`, every later one with `hang` (a list item's marker and the indent under
/// it, a quote's bar). Breaks after spaces where it can (the spaces at a break are not
/// drawn), else between graphemes; an empty `content` is one row with the prefix.
pub(super) fn wrap(
    prefix: &[Span<'static>],
    content: &[Span<'_>],
    hang: &[Span<'static>],
    width: usize,
) -> Vec<Line<'static>> {
    let mut graphemes = Vec::new();
    for span in content {
        push_graphemes(&span.content, span.style, &mut |g| graphemes.push(g));
    }
    let mut rows = Vec::new();
    let mut start = 0;
    loop {
        let lead = if rows.is_empty() { prefix } else { hang };
        // A lead that leaves no room for text is left out rather than cut.
        let lead = if spans_width(lead) < width { lead } else { &[] };
        let room = width - spans_width(lead);
        let (end, next) = fit(&graphemes, start, room);
        let mut row: Vec<Span<'static>> = lead.to_vec();
        push_spans(&mut row, &graphemes[start..end]);
        rows.push(Line::from(row));
        if next >= graphemes.len() {
            return rows;
        }
        start = next;
    }
}

/// Where the row starting at `start` ends (exclusive, trailing spaces left out) and
/// where the next one starts, within `room` cells.
fn fit(graphemes: &[Grapheme<'_>], start: usize, room: usize) -> (usize, usize) {
    let mut used = 0;
    let mut at = start;
    // The last place a row may end: after a run of spaces, or beside a wide character.
    let mut last_break = None;
    while let Some(g) = graphemes.get(at) {
        if used + g.width > room {
            break;
        }
        if g.width > 1 && at > start {
            last_break = Some(at);
        }
        used += g.width;
        at += 1;
        let next_is_space = graphemes.get(at).is_some_and(|n| n.space);
        if (g.space && !next_is_space) || g.width > 1 {
            last_break = Some(at);
        }
    }
    if at >= graphemes.len() {
        return (trim_end(graphemes, start, at), at);
    }
    if at == start {
        // Not even one grapheme fits (a wide one in one cell): place it anyway, so the
        // text always moves on; the terminal cuts it rather than losing the rest.
        return (start + 1, start + 1);
    }
    let end = if graphemes[at].space {
        at
    } else {
        last_break.filter(|&b| b > start).unwrap_or(at)
    };
    let mut next = end;
    while graphemes.get(next).is_some_and(|g| g.space) {
        next += 1;
    }
    (trim_end(graphemes, start, end), next)
}

/// `end` moved back over trailing spaces, but never to before `start`.
fn trim_end(graphemes: &[Grapheme<'_>], start: usize, mut end: usize) -> usize {
    while end > start && graphemes[end - 1].space {
        end -= 1;
    }
    end
}

/// Appends graphemes to `row`, one span per run of one style.
fn push_spans(row: &mut Vec<Span<'static>>, graphemes: &[Grapheme<'_>]) {
    let mut text = String::new();
    let mut style = None;
    for g in graphemes {
        if style.is_some_and(|s| s != g.style) {
            row.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(g.style);
        text.push_str(g.text);
    }
    if let Some(style) = style {
        row.push(Span::styled(text, style));
    }
}

/// Fits a plain line (a card's, a picker's) to `width`; its rows after the first
/// keep the line's own indent.
pub(super) fn wrap_plain(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let indent = line.spans.first().map_or(0, |s| {
        s.content.len() - s.content.trim_start_matches(' ').len()
    });
    let hang = [Span::raw(" ".repeat(indent))];
    let style = line.style;
    wrap(&[], &line.spans, &hang, width)
        .into_iter()
        .map(|row| row.style(style))
        .collect()
}

/// Fits every line to `width`.
pub(super) fn wrap_lines(lines: &[Line<'static>], width: usize) -> Vec<Line<'static>> {
    lines
        .iter()
        .flat_map(|line| wrap_plain(line, width))
        .collect()
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier};

    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn rows(content: &str, width: usize) -> Vec<String> {
        text(&wrap(&[], &[Span::raw(content)], &[], width))
    }

    #[test]
    fn words_wrap_at_spaces_and_long_words_between_graphemes() {
        assert_eq!(rows("the quick brown fox", 10), ["the quick", "brown fox"]);
        assert_eq!(rows("abcdefghijklmnop", 10), ["abcdefghij", "klmnop"]);
        assert_eq!(rows("a  b", 10), ["a  b"]);
        assert_eq!(
            rows("aaaa bbbbbbbbbbbbbbbb", 10),
            ["aaaa", "bbbbbbbbbb", "bbbbbb"]
        );
        // Spaces at a break are not drawn; leading ones of the line are kept (code).
        assert_eq!(rows("    indented code", 12), ["    indented", "code"]);
        assert_eq!(rows("", 10), [""]);
        assert_eq!(rows("tab\there", 20), ["tab    here"]);
        assert_eq!(rows("bell\u{7}gone", 20), ["bellgone"]);
    }

    #[test]
    fn wide_characters_are_never_cut_and_rows_never_pass_the_width() {
        let cjk = "日本語のテキストを折り返す試験です。漢字とかなが続きます。";
        for width in [9, 10, 11, 40, 120] {
            let wrapped = rows(cjk, width);
            assert_eq!(wrapped.concat(), cjk, "nothing lost at {width}");
            for row in &wrapped {
                assert!(width_of(row) <= width, "{row:?} at {width}");
            }
        }
        // An odd width leaves one cell empty rather than cutting a character.
        assert_eq!(rows("日本語", 5), ["日本", "語"]);
        // Emoji and a flag are never split; a ZWJ family and a skin tone are drawn as
        // the parts every terminal counts alike.
        let emoji = "ok 👍🏽 👨‍👩‍👧 🇯🇵 done";
        for width in 4..12 {
            let wrapped = rows(emoji, width);
            assert_eq!(
                wrapped.join(" ").replace(' ', ""),
                terminal_text(emoji).replace(' ', ""),
                "at {width}"
            );
            for row in &wrapped {
                assert!(width_of(row) <= width, "{row:?} at {width}");
            }
        }
        // Mixed: a CJK run may break anywhere, a Latin word only at its spaces.
        assert_eq!(
            rows("see 漢字漢字漢字 here", 10),
            ["see 漢字漢", "字漢字", "here"]
        );
    }

    #[test]
    fn emoji_sequences_are_drawn_as_parts_every_terminal_counts_alike() {
        fn parts(g: &str) -> Vec<&str> {
            terminal_parts(g).collect()
        }
        assert_eq!(parts("❤\u{FE0F}"), ["❤"]);
        assert_eq!(parts("👍🏽"), ["👍"]);
        assert_eq!(parts("👨\u{200D}👩\u{200D}👧"), ["👨", "👩", "👧"]);
        assert_eq!(parts("1\u{FE0F}\u{20E3}"), ["1"]);
        // Others are drawn as they are, combining accents and flags included.
        assert_eq!(parts("e\u{301}"), ["e\u{301}"]);
        assert_eq!(parts("🇯🇵"), ["🇯🇵"]);
        assert_eq!(parts("日"), ["日"]);
        // The row's width is what the terminal advances: each part at its own width.
        assert_eq!(width_of("a❤\u{FE0F}b"), 3);
        assert_eq!(width_of("👨\u{200D}👩\u{200D}👧"), 6);
        assert_eq!(rows("ok ❤\u{FE0F} done", 20), ["ok ❤ done"]);
    }

    #[test]
    fn styles_prefix_and_hang_are_kept() {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let red = Style::default().fg(Color::Red);
        let content = [
            Span::styled("bold words ", bold),
            Span::styled("red words", red),
        ];
        let prefix = [Span::raw("• ")];
        let hang = [Span::raw("  ")];
        let wrapped = wrap(&prefix, &content, &hang, 12);
        assert_eq!(text(&wrapped), ["• bold words", "  red words"]);
        assert_eq!(wrapped[0].spans[1].style, bold);
        assert_eq!(wrapped[1].spans[1].style, red);
        let wrapped = wrap(&prefix, &content, &hang, 16);
        assert_eq!(text(&wrapped), ["• bold words red", "  words"]);
        assert_eq!(wrapped[0].spans.len(), 3);
        assert_eq!(wrapped[0].spans[2].style, red);
        // A lead as wide as the row is left out, so text still has room.
        assert_eq!(
            text(&wrap(&[Span::raw("1234")], &content[..1], &[], 4)),
            ["bold", "word", "s"]
        );
    }

    #[test]
    fn plain_lines_keep_their_indent() {
        let line = Line::from("    $ cargo test --workspace --all-targets");
        assert_eq!(
            text(&wrap_plain(&line, 24)),
            ["    $ cargo test", "    --workspace", "    --all-targets"]
        );
    }
}
