//! The renderer's rows for each markdown construct, as text (and styles where they
//! carry the meaning).

use ratatui::style::{Color, Modifier};

use super::*;

fn rows(markdown: &str, width: usize) -> Vec<String> {
    render(markdown, width)
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

fn check(markdown: &str, expected: &[&str]) {
    assert_eq!(rows(markdown, 40), expected, "rendering {markdown:?}");
}

/// The style of the first span holding `text`.
fn style_of(markdown: &str, text: &str) -> Style {
    render(markdown, 80)
        .iter()
        .flat_map(|l| l.spans.iter())
        .find(|s| s.content.contains(text))
        .map(|s| s.style)
        .unwrap_or_else(|| panic!("{text:?} not rendered from {markdown:?}"))
}

#[test]
fn paragraphs_keep_their_lines_and_are_a_row_apart() {
    check("one\ntwo\n\nthree", &["one", "two", "", "three"]);
    check("hard  \nbreak", &["hard", "break"]);
    check("", &[]);
}

#[test]
fn headings_lose_their_marks_and_gain_a_style() {
    check("# Title\nText", &["Title", "", "Text"]);
    check("Setext\n===", &["Setext"]);
    let h1 = style_of("# Title", "Title");
    assert_eq!(h1.fg, Some(Color::Magenta));
    assert!(
        h1.add_modifier
            .contains(Modifier::BOLD | Modifier::UNDERLINED)
    );
    let h3 = style_of("### Small", "Small");
    assert!(h3.add_modifier.contains(Modifier::BOLD | Modifier::ITALIC));
}

#[test]
fn emphasis_strong_strikethrough_and_inline_code() {
    check("a *b* **c** ~~d~~ `e`", &["a b c d e"]);
    assert!(
        style_of("a *b*", "b")
            .add_modifier
            .contains(Modifier::ITALIC)
    );
    assert!(
        style_of("a **b**", "b")
            .add_modifier
            .contains(Modifier::BOLD)
    );
    assert!(
        style_of("a ~~b~~", "b")
            .add_modifier
            .contains(Modifier::CROSSED_OUT)
    );
    assert_eq!(style_of("a `code`", "code").fg, Some(Color::Cyan));
    // Nested styles add up.
    let both = style_of("***both***", "both");
    assert!(
        both.add_modifier
            .contains(Modifier::BOLD | Modifier::ITALIC)
    );
}

#[test]
fn lists_nest_number_and_hang_their_wrapped_lines() {
    check(
        "- one\n- two\n  - inner\n  - more\n- three",
        &["• one", "• two", "  ◦ inner", "  ◦ more", "• three"],
    );
    check("3. c\n4. d", &["3. c", "4. d"]);
    check(
        "1. first\n   1. nested\n2. second",
        &["1. first", "   1. nested", "2. second"],
    );
    check("- [x] done\n- [ ] todo", &["• [x] done", "• [ ] todo"]);
    // A loose list keeps its items a row apart.
    check("- a\n\n- b", &["• a", "", "• b"]);
    // Text around a list is a row away.
    check(
        "Before:\n\n- a\n\nAfter",
        &["Before:", "", "• a", "", "After"],
    );
    // Wrapped item text hangs under the item's text, not under its marker.
    assert_eq!(
        rows("- the quick brown fox jumps over", 16),
        ["• the quick", "  brown fox", "  jumps over"]
    );
    assert_eq!(
        rows("10. the quick brown fox", 14),
        ["10. the quick", "    brown fox"]
    );
    check("-\n- b", &["• ", "• b"]);
}

#[test]
fn block_quotes_put_a_bar_before_each_row() {
    check(
        "> quoted\n> text\n\nafter",
        &["│ quoted", "│ text", "", "after"],
    );
    check("> a\n>\n> b", &["│ a", "│", "│ b"]);
    check("> outer\n>> inner", &["│ outer", "│", "│ │ inner"]);
    check("> - item", &["│ • item"]);
    assert_eq!(
        rows("> one two three four", 12),
        ["│ one two", "│ three four"]
    );
}

#[test]
fn links_show_their_text_and_their_address() {
    check(
        "see [the docs](https://x.io/d) now",
        &["see the docs (https://x.io/d) now"],
    );
    check("<https://example.com>", &["https://example.com"]);
    check("[https://a.b](https://a.b)", &["https://a.b"]);
    check("![logo](img.png)", &["[image: logo] (img.png)"]);
    let style = style_of("[docs](https://x.y)", "docs");
    assert!(style.add_modifier.contains(Modifier::UNDERLINED));
    // A reference link resolves like an inline one.
    check("[docs][d]\n\n[d]: https://x.y", &["docs (https://x.y)"]);
}

#[test]
fn rules_span_the_row() {
    check("a\n\n---\n\nb", &["a", "", &"─".repeat(40), "", "b"]);
}

#[test]
fn fenced_code_is_indented_highlighted_and_kept_verbatim() {
    let markdown =
        "Run:\n\n```rust\nfn main() {\n    println!(\"*not emphasis*\");\n}\n```\n\nDone.";
    check(
        markdown,
        &[
            "Run:",
            "",
            "  fn main() {",
            "      println!(\"*not emphasis*\");",
            "  }",
            "",
            "Done.",
        ],
    );
    let coloured = render(markdown, 40)[2]
        .spans
        .iter()
        .any(|s| matches!(s.style.fg, Some(Color::Rgb(..))));
    assert!(coloured, "the keyword is highlighted");
    check(
        "```\nplain   spaced\n\n  x\n```",
        &["  plain   spaced", "  ", "    x"],
    );
    check("    indented code", &["  indented code"]);
    // Inside a list item, code sits under the item's text.
    check(
        "- item\n\n  ```sh\n  ls -l\n  ```",
        &["• item", "", "    ls -l"],
    );
}

#[test]
fn a_reply_cut_inside_a_code_fence_renders_as_code_so_far() {
    check(
        "Here:\n\n```python\ndef f():\n    return 1",
        &["Here:", "", "  def f():", "      return 1"],
    );
    check("Here:\n\n```", &["Here:"]);
    check("a **half", &["a **half"]);
}

#[test]
fn tables_line_up_their_columns() {
    check(
        "| name | n |\n|:-----|--:|\n| alpha | 1 |\n| b | 100 |",
        &["name  │   n", "──────┼────", "alpha │   1", "b     │ 100"],
    );
    assert!(
        style_of("| head |\n|---|\n| x |", "head")
            .add_modifier
            .contains(Modifier::BOLD)
    );
    // Too wide: the cells wrap inside narrowed columns, nothing past the row.
    let narrow = rows(
        "| a | b |\n|---|---|\n| one two three four | five six seven eight |",
        20,
    );
    assert_eq!(
        narrow,
        [
            "a        │ b",
            "─────────┼──────────",
            "one two  │ five six",
            "three    │ seven",
            "four     │ eight",
        ]
    );
    for row in &narrow {
        assert!(width_of(row) <= 20, "{row:?}");
    }
}

#[test]
fn wide_text_wraps_by_cells() {
    for width in [40, 120] {
        let cjk = "漢字とかなの文章です。".repeat(30);
        for row in rows(&format!("- {cjk}\n\n> 🙂 {cjk}"), width) {
            assert!(width_of(&row) <= width, "{row:?} is wider than {width}");
        }
    }
}

#[test]
fn html_is_shown_as_written() {
    check("<div>\nhi\n</div>", &["<div>", "hi", "</div>"]);
    check("a <b>bold</b> c", &["a <b>bold</b> c"]);
}

#[test]
fn pieces_cut_only_between_top_level_blocks_and_render_the_same() {
    let mut text = String::new();
    for n in 0..200 {
        text.push_str(&format!("Paragraph {n} has a line\nand a second line.\n\n"));
        if n % 20 == 0 {
            text.push_str("```rust\nlet x = 1;\n\nlet y = 2;\n```\n\n- a\n- b\n\n");
        }
    }
    let cuts = pieces(&text);
    assert!(cuts.len() > 3, "{} pieces", cuts.len());
    assert_eq!(cuts.first().map(|r| r.start), Some(0));
    assert_eq!(cuts.last().map(|r| r.end), Some(text.len()));
    let mut joined = Vec::new();
    for (n, range) in cuts.iter().enumerate() {
        assert!(n + 1 == cuts.len() || range.len() >= PIECE_BYTES);
        if n > 0 {
            joined.push(String::new());
        }
        joined.extend(rows(&text[range.clone()], 40));
    }
    assert_eq!(joined, rows(&text, 40));
    // A short text is one piece, and so is text with a reference definition.
    assert_eq!(pieces("short"), Vec::from_iter(std::iter::once(0..5)));
    let referenced = format!("{text}[d]: https://x.y\n");
    assert_eq!(
        pieces(&referenced),
        Vec::from_iter(std::iter::once(0..referenced.len()))
    );
}
