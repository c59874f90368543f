//! Unit tests of the card selector's string and diff helpers.

use magi_protocol::cards::{DiffLineKind, Reason, Subject};

use super::diff::diff_lines;
use super::text::{Notes, counted, cut, line_range, omission, seconds};

fn kinds(diff: &str) -> Vec<(DiffLineKind, String, Option<u64>, Option<u64>)> {
    let mut notes = Notes::default();
    diff_lines(diff, false, &mut notes)
        .into_iter()
        .map(|l| (l.kind, l.text, l.old_line, l.new_line))
        .collect()
}

#[test]
fn hunk_counts_tell_removed_lines_from_file_headers() {
    // A removed line whose text starts with `-- ` reads like a file header; the
    // hunk's counts say it is still inside the hunk.
    let lines = kinds("--- a\n+++ a\n@@ -7 +7 @@\n--- x\n+++ y\n--- b\n");
    assert_eq!(
        lines,
        vec![
            (DiffLineKind::FileHeader, "--- a".into(), None, None),
            (DiffLineKind::FileHeader, "+++ a".into(), None, None),
            (DiffLineKind::HunkHeader, "@@ -7 +7 @@".into(), None, None),
            (DiffLineKind::Removed, "-- x".into(), Some(7), None),
            (DiffLineKind::Added, "++ y".into(), None, Some(7)),
            (DiffLineKind::FileHeader, "--- b".into(), None, None),
        ]
    );
}

#[test]
fn lines_outside_hunks_and_zero_numbers_are_never_invented() {
    let mut notes = Notes::default();
    let lines = diff_lines(
        "stray\n@@ -0,0 +0,1 @@\n+x\n@@ bad @@\n y\n",
        false,
        &mut notes,
    );
    let numbers: Vec<_> = lines.iter().map(|l| (l.old_line, l.new_line)).collect();
    // `+0` is no line number: it stays unknown, as does everything after a header
    // that cannot be read.
    assert_eq!(
        numbers,
        vec![(None, None), (None, None), (None, None), (None, None)]
    );
    assert_eq!(
        notes.0,
        vec![omission(
            Subject::DiffLines,
            Reason::UnsupportedSource,
            Some(1)
        )]
    );
}

#[test]
fn value_formats() {
    assert_eq!(seconds(120_000), "120s");
    assert_eq!(seconds(1_500), "1.5s");
    assert_eq!(seconds(200), "0.2s");
    assert_eq!(seconds(1_234), "1.234s");
    assert_eq!(line_range(3, 3).as_deref(), Some("3"));
    assert_eq!(line_range(3, 2), None);
    assert_eq!(counted(1, "line", "lines"), "1 line");
    assert_eq!(counted(0, "line", "lines"), "0 lines");
    assert_eq!(cut("héllo", 2), ("h".to_owned(), 4));
}

#[test]
fn first_lines_count_what_they_leave_out() {
    let mut notes = Notes::default();
    assert_eq!(
        notes.first_line("\n  \nerror: x  \n", 1024).as_deref(),
        Some("error: x")
    );
    assert!(notes.0.is_empty(), "a trailing newline is no omitted text");
    assert_eq!(notes.first_line("one\ntwo", 1024).as_deref(), Some("one"));
    assert_eq!(
        notes.0,
        vec![omission(Subject::Text, Reason::SizeLimit, Some(4))]
    );
    let mut notes = Notes::default();
    assert_eq!(notes.first_line(" \n\t", 1024), None);
    assert_eq!(
        notes.first_line("key sk-abcdefghijklmnop", 1024).as_deref(),
        Some("key [redacted]")
    );
    assert_eq!(
        notes.0,
        vec![omission(Subject::Text, Reason::Redacted, None)]
    );
}
