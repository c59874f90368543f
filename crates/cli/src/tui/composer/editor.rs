//! The editing model of the composer: multi-line text and a cursor, with the moves and
//! kills of a line editor. No terminal in it: keys are mapped onto it by the composer.
//!
//! The cursor is a byte index that is always on a grapheme boundary, so a move or a
//! delete never splits a character a person sees as one (an emoji with its modifiers,
//! a letter with its accents, a paste placeholder).

use unicode_segmentation::UnicodeSegmentation;

/// Multi-line text with a cursor and the last kill.
#[derive(Debug, Default, Clone)]
pub(crate) struct Editor {
    text: String,
    /// A byte index on a grapheme boundary of `text`.
    cursor: usize,
    /// What the last kill (Ctrl-U, Ctrl-K, Ctrl-W) removed, for Ctrl-Y to put back.
    killed: Option<String>,
    /// The column (in graphemes) Up and Down aim for through a run of vertical moves,
    /// so passing a short line does not lose the column.
    goal: Option<usize>,
}

/// Whether a grapheme is part of a word for the word moves: letters, digits and `_`.
fn is_word(grapheme: &str) -> bool {
    grapheme
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
}

impl Editor {
    /// The text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The cursor, a byte index into [`Editor::text`].
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    /// Whether there is no text.
    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text, with the cursor at its end.
    pub(crate) fn set(&mut self, text: String) {
        self.cursor = text.len();
        self.text = text;
        self.goal = None;
    }

    /// Takes the text out, leaving the editor empty (the last kill is kept).
    pub(crate) fn take(&mut self) -> String {
        self.cursor = 0;
        self.goal = None;
        std::mem::take(&mut self.text)
    }

    /// Inserts `text` at the cursor and moves the cursor past it.
    pub(crate) fn insert(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
        self.goal = None;
        // A combining mark typed after a character joins it: the cursor stays on a
        // grapheme boundary.
        self.cursor = self.boundary_at_or_after(self.cursor);
    }

    /// Replaces the bytes `start..end` (grapheme boundaries) with `with`, the cursor
    /// after it.
    pub(crate) fn replace(&mut self, start: usize, end: usize, with: &str) {
        self.text.replace_range(start..end, with);
        self.cursor = self.boundary_at_or_after(start + with.len());
        self.goal = None;
    }

    fn boundary_at_or_after(&self, at: usize) -> usize {
        let mut end = 0;
        for (start, grapheme) in self.text.grapheme_indices(true) {
            end = start + grapheme.len();
            if start >= at {
                return start;
            }
            if end > at {
                return end;
            }
        }
        end.max(at.min(self.text.len()))
    }

    /// The boundary of the grapheme before the cursor.
    fn previous(&self) -> usize {
        self.text[..self.cursor]
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(at, _)| at)
    }

    /// The boundary of the grapheme after the cursor.
    fn next(&self) -> usize {
        self.text[self.cursor..]
            .graphemes(true)
            .next()
            .map_or(self.cursor, |g| self.cursor + g.len())
    }

    /// The start of the line the cursor is on.
    fn line_start_at(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |n| n + 1)
    }

    /// The end (before its newline) of the line the cursor is on.
    fn line_end_at(&self, at: usize) -> usize {
        self.text[at..]
            .find('\n')
            .map_or(self.text.len(), |n| at + n)
    }

    /// One grapheme left.
    pub(crate) fn left(&mut self) {
        self.cursor = self.previous();
        self.goal = None;
    }

    /// One grapheme right.
    pub(crate) fn right(&mut self) {
        self.cursor = self.next();
        self.goal = None;
    }

    /// The start of the word before the cursor: what Alt-b moves to and Ctrl-W kills
    /// back to (white space and punctuation are skipped first).
    fn word_start_before(&self) -> usize {
        let mut at = self.cursor;
        let mut in_word = false;
        for (start, grapheme) in self.text[..self.cursor].grapheme_indices(true).rev() {
            if is_word(grapheme) {
                in_word = true;
            } else if in_word {
                break;
            }
            at = start;
        }
        at
    }

    /// The end of the word after the cursor (Alt-f).
    fn word_end_after(&self) -> usize {
        let mut at = self.cursor;
        let mut in_word = false;
        for (start, grapheme) in self.text[self.cursor..].grapheme_indices(true) {
            if is_word(grapheme) {
                in_word = true;
            } else if in_word {
                break;
            }
            at = self.cursor + start + grapheme.len();
        }
        at
    }

    /// To the start of the word before the cursor.
    pub(crate) fn word_left(&mut self) {
        self.cursor = self.word_start_before();
        self.goal = None;
    }

    /// To the end of the word after the cursor.
    pub(crate) fn word_right(&mut self) {
        self.cursor = self.word_end_after();
        self.goal = None;
    }

    /// To the start of the current line.
    pub(crate) fn line_start(&mut self) {
        self.cursor = self.line_start_at(self.cursor);
        self.goal = None;
    }

    /// To the end of the current line.
    pub(crate) fn line_end(&mut self) {
        self.cursor = self.line_end_at(self.cursor);
        self.goal = None;
    }

    /// Whether the cursor is on the first line.
    pub(crate) fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// Whether the cursor is on the last line.
    pub(crate) fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// The cursor's column on its line, in graphemes.
    fn column(&self) -> usize {
        self.text[self.line_start_at(self.cursor)..self.cursor]
            .graphemes(true)
            .count()
    }

    /// Puts the cursor on the line starting at `start`, at the goal column or its end.
    fn move_to_column(&mut self, start: usize, goal: usize) {
        let end = self.line_end_at(start);
        self.cursor = self.text[start..end]
            .grapheme_indices(true)
            .nth(goal)
            .map_or(end, |(at, _)| start + at);
        self.goal = Some(goal);
    }

    /// One line up, keeping the column; `false` (and no move) on the first line.
    pub(crate) fn up(&mut self) -> bool {
        if self.on_first_line() {
            return false;
        }
        let goal = self.goal.unwrap_or_else(|| self.column());
        let start = self.line_start_at(self.cursor);
        let above = self.line_start_at(start - 1);
        self.move_to_column(above, goal);
        true
    }

    /// One line down, keeping the column; `false` (and no move) on the last line.
    pub(crate) fn down(&mut self) -> bool {
        if self.on_last_line() {
            return false;
        }
        let goal = self.goal.unwrap_or_else(|| self.column());
        let below = self.line_end_at(self.cursor) + 1;
        self.move_to_column(below, goal);
        true
    }

    /// Deletes the grapheme before the cursor.
    pub(crate) fn backspace(&mut self) {
        let start = self.previous();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        self.goal = None;
    }

    /// Deletes the grapheme after the cursor.
    pub(crate) fn delete(&mut self) {
        let end = self.next();
        self.text.replace_range(self.cursor..end, "");
        self.goal = None;
    }

    /// Removes `start..end` and keeps it as the last kill (an empty kill keeps the
    /// previous one).
    fn kill(&mut self, start: usize, end: usize) {
        if start == end {
            return;
        }
        self.killed = Some(self.text[start..end].to_owned());
        self.text.replace_range(start..end, "");
        self.cursor = start;
        self.goal = None;
    }

    /// Ctrl-U: kills back to the start of the line; at the start of a line, the line
    /// break before it (joining the lines, as Ctrl-K does forwards).
    pub(crate) fn kill_to_line_start(&mut self) {
        let start = self.line_start_at(self.cursor);
        if start == self.cursor {
            self.kill(self.previous(), self.cursor);
        } else {
            self.kill(start, self.cursor);
        }
    }

    /// Ctrl-K: kills to the end of the line; at the end of a line, its line break.
    pub(crate) fn kill_to_line_end(&mut self) {
        let end = self.line_end_at(self.cursor);
        if end == self.cursor {
            self.kill(self.cursor, self.next());
        } else {
            self.kill(self.cursor, end);
        }
    }

    /// Ctrl-W: kills the word before the cursor, with the white space and punctuation
    /// between it and the cursor.
    pub(crate) fn kill_word_before(&mut self) {
        self.kill(self.word_start_before(), self.cursor);
    }

    /// Kills the whole text.
    pub(crate) fn kill_all(&mut self) {
        self.kill(0, self.text.len());
    }

    /// Ctrl-Y: puts the last kill back at the cursor (it stays available).
    pub(crate) fn yank(&mut self) {
        if let Some(killed) = self.killed.clone() {
            self.insert(&killed);
        }
    }

    /// The last kill, if any (so the composer keeps what it refers to).
    pub(crate) fn killed(&self) -> Option<&str> {
        self.killed.as_deref()
    }

    /// The white-space-delimited word that ends at the cursor, with its start: what a
    /// completion (`@path`, `/command`) replaces.
    pub(crate) fn word_at_cursor(&self) -> (usize, &str) {
        let before = &self.text[..self.cursor];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(at, c)| at + c.len_utf8());
        (start, &before[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An editor holding `marked`, whose `|` is the cursor.
    fn ed(marked: &str) -> Editor {
        let cursor = marked.find('|').unwrap();
        let mut editor = Editor::default();
        editor.set(marked.replacen('|', "", 1));
        editor.cursor = cursor;
        editor
    }

    /// The editor's text with `|` at the cursor.
    fn shown(editor: &Editor) -> String {
        let mut text = editor.text().to_owned();
        text.insert(editor.cursor(), '|');
        text
    }

    /// Applies `edit` to `before` and checks the result.
    fn check(before: &str, edit: impl Fn(&mut Editor), after: &str) {
        let mut editor = ed(before);
        edit(&mut editor);
        assert_eq!(shown(&editor), after, "from {before:?}");
    }

    #[test]
    fn insertion_goes_at_the_cursor() {
        check("ab|cd", |e| e.insert("XY"), "abXY|cd");
        check("|", |e| e.insert("a\nb"), "a\nb|");
        // A combining accent joins the letter before it.
        check("e|", |e| e.insert("\u{301}"), "e\u{301}|");
    }

    #[test]
    fn left_and_right_move_by_grapheme() {
        check("ab|c", Editor::left, "a|bc");
        check("|abc", Editor::left, "|abc");
        check("a|bc", Editor::right, "ab|c");
        check("abc|", Editor::right, "abc|");
        // A family emoji is one grapheme of many code points, CJK one of three bytes.
        let family = "👨‍👩‍👧";
        check(&format!("x{family}|"), Editor::left, &format!("x|{family}"));
        check(
            &format!("x|{family}"),
            Editor::right,
            &format!("x{family}|"),
        );
        check("漢|字", Editor::left, "|漢字");
        check("e\u{301}|", Editor::left, "|e\u{301}");
    }

    #[test]
    fn word_moves_skip_punctuation_then_a_word() {
        check("foo bar|", Editor::word_left, "foo |bar");
        check("foo bar |", Editor::word_left, "foo |bar ");
        check("foo, |bar", Editor::word_left, "|foo, bar");
        check("|foo bar", Editor::word_left, "|foo bar");
        check("|foo bar", Editor::word_right, "foo| bar");
        check("foo| bar", Editor::word_right, "foo bar|");
        check("a_b1|.c", Editor::word_left, "|a_b1.c");
        check("one\n|two", Editor::word_left, "|one\ntwo");
    }

    #[test]
    fn home_and_end_are_the_current_line() {
        check("one\ntw|o\nthree", Editor::line_start, "one\n|two\nthree");
        check("one\ntw|o\nthree", Editor::line_end, "one\ntwo|\nthree");
        check("o|ne", Editor::line_start, "|one");
        check("o|ne", Editor::line_end, "one|");
    }

    #[test]
    fn up_and_down_move_between_lines_keeping_the_column() {
        check("one\ntw|o", |e| assert!(e.up()), "on|e\ntwo");
        check("long line\nx|", |e| assert!(e.up()), "l|ong line\nx");
        check("ab\nlong li|ne", |e| assert!(e.up()), "ab|\nlong line");
        check("a|b\nc", |e| assert!(e.down()), "ab\nc|");
        check("fi|rst", |e| assert!(!e.up()), "fi|rst");
        check("fi|rst", |e| assert!(!e.down()), "fi|rst");
        // The goal column survives a short line in between.
        check(
            "abcdef\nx\nabcd|ef",
            |e| {
                assert!(e.up());
                assert!(e.up());
            },
            "abcd|ef\nx\nabcdef",
        );
        let editor = ed("a\n|b");
        assert!(!editor.on_first_line() && editor.on_last_line());
        let editor = ed("a|\nb");
        assert!(editor.on_first_line() && !editor.on_last_line());
    }

    #[test]
    fn backspace_and_delete_remove_one_grapheme() {
        check("ab|c", Editor::backspace, "a|c");
        check("|abc", Editor::backspace, "|abc");
        check("a|bc", Editor::delete, "a|c");
        check("abc|", Editor::delete, "abc|");
        check("a\n|b", Editor::backspace, "a|b");
        check("x👍🏽|", Editor::backspace, "x|");
        check("|漢字", Editor::delete, "|字");
    }

    #[test]
    fn kills_remove_text_and_ctrl_y_puts_it_back() {
        check("one tw|o", Editor::kill_to_line_start, "|o");
        check("a\none tw|o", Editor::kill_to_line_start, "a\n|o");
        check("a\n|b", Editor::kill_to_line_start, "a|b");
        check("one tw|o\nb", Editor::kill_to_line_end, "one tw|\nb");
        check("a|\nb", Editor::kill_to_line_end, "a|b");
        check("foo bar  |", Editor::kill_word_before, "foo |");
        check("foo/bar|", Editor::kill_word_before, "foo/|");
        check("|foo", Editor::kill_word_before, "|foo");
        // Ctrl-Y is the undo of the last kill, the cursor after what it puts back.
        for (kill, after) in [
            (Editor::kill_to_line_start as fn(&mut Editor), "one tw|o"),
            (Editor::kill_to_line_end, "one two|"),
            (Editor::kill_word_before, "one tw|o"),
        ] {
            check(
                "one tw|o",
                |e| {
                    kill(e);
                    e.yank();
                },
                after,
            );
        }
        // An empty kill keeps the one before.
        check(
            "ab|",
            |e| {
                e.kill_word_before();
                e.kill_to_line_end();
                e.yank();
                e.yank();
            },
            "abab|",
        );
        check("a|", Editor::yank, "a|");
        check(
            "one\ntw|o",
            |e| {
                e.kill_all();
                assert!(e.is_empty());
                e.yank();
            },
            "one\ntwo|",
        );
    }

    #[test]
    fn the_word_at_the_cursor_is_what_a_completion_replaces() {
        assert_eq!(ed("look at @src/ma|").word_at_cursor(), (8, "@src/ma"));
        assert_eq!(ed("@x|").word_at_cursor(), (0, "@x"));
        assert_eq!(ed("a\n/he|").word_at_cursor(), (2, "/he"));
        assert_eq!(ed("a |").word_at_cursor(), (2, ""));
    }

    #[test]
    fn replace_and_take() {
        let mut editor = ed("see @sr|");
        editor.replace(4, 7, "@src/main.rs ");
        assert_eq!(shown(&editor), "see @src/main.rs |");
        assert_eq!(editor.take(), "see @src/main.rs ");
        assert!(editor.is_empty());
        assert_eq!(editor.cursor(), 0);
    }
}
