//! The blocks of an `ast_grep` card: what was looked for and where, what the scan
//! found, and the files with a match.

use magi_protocol::cards::{STRING_BYTES, Subject};
use magi_store::records::ToolOutcome;

use super::blocks::Context;
use super::labels::{
    ROW_FILES_SCANNED, ROW_FILES_SKIPPED, ROW_FILES_WITH_MATCHES, ROW_LANGUAGE, ROW_MATCHES,
    ROW_PATTERN, ROW_SCAN, ROW_SCOPE,
};
use super::part::{Part, row};
use super::search::listed_paths;
use super::text::{Notes, counted};

impl Context<'_, '_> {
    /// `looked_for` is (pattern, language); `found` is (matches, files with a match);
    /// `files` is (scanned, skipped).
    pub(super) fn ast_grep(
        &self,
        (pattern, language): (&str, &str),
        path: Option<&str>,
        found: (u64, u64),
        files: (u64, u64),
        complete: bool,
        paths: &[String],
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let scan = if complete {
            "complete"
        } else if self.outcome == Some(ToolOutcome::Completed) {
            "incomplete: results cut at a bound or files skipped"
        } else {
            "incomplete; full totals unknown"
        };
        let rows = vec![
            row(
                ROW_PATTERN,
                Some(notes.text(Subject::Text, pattern, STRING_BYTES)),
            ),
            row(
                ROW_LANGUAGE,
                Some(notes.text(Subject::Text, language, STRING_BYTES)),
            ),
            row(
                ROW_SCOPE,
                Some(match path {
                    Some(path) => notes.text(Subject::Text, path, STRING_BYTES),
                    None => "working directory".to_owned(),
                }),
            ),
            row(ROW_MATCHES, Some(counted(found.0, "match", "matches"))),
            row(
                ROW_FILES_WITH_MATCHES,
                Some(counted(found.1, "file", "files")),
            ),
            row(ROW_FILES_SCANNED, Some(counted(files.0, "file", "files"))),
            row(ROW_FILES_SKIPPED, Some(counted(files.1, "file", "files"))),
            row(ROW_SCAN, Some(scan.to_owned())),
        ];
        let mut parts = vec![Part::results(rows, notes)];
        if !paths.is_empty() {
            parts.push(listed_paths(paths, Some(found.1), true));
        }
        parts
    }
}
