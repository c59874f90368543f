//! The blocks of a search card.

use magi_protocol::cards::{
    Block, ROWS_PER_BLOCK, Reason, ResourceAvailability, ResourceKind, ResourceRow, ResourcesBlock,
    STRING_BYTES, Subject,
};
use magi_store::records::ToolOutcome;
use magi_tools::BuiltinTool;

use super::blocks::Context;
use super::labels::{ROW_FILES_WITH_MATCHES, ROW_MATCHES, ROW_PATTERN, ROW_SCAN, ROW_SCOPE};
use super::part::{Part, Role, row};
use super::text::{Notes, counted, safe_count};

impl Context<'_, '_> {
    pub(super) fn search(
        &self,
        pattern: Option<&str>,
        path: Option<&str>,
        matches: u64,
        files: Option<u64>,
        complete: bool,
        paths: &[String],
    ) -> Vec<Part> {
        let tool = BuiltinTool::from_name(self.source.tool_name);
        let mut notes = Notes::default();
        let (one, many) = match tool {
            Some(BuiltinTool::Grep) => ("match", "matches"),
            Some(BuiltinTool::Find) => ("file", "files"),
            _ => ("entry", "entries"),
        };
        let scan = if complete {
            "complete"
        } else if self.outcome == Some(ToolOutcome::Completed) {
            "stopped at a bound; full totals unknown"
        } else {
            "incomplete; full totals unknown"
        };
        let rows = vec![
            row(
                ROW_PATTERN,
                pattern.map(|p| notes.text(Subject::Text, p, STRING_BYTES)),
            ),
            row(
                ROW_SCOPE,
                Some(match path {
                    Some(path) => notes.text(Subject::Text, path, STRING_BYTES),
                    None => "working directory".to_owned(),
                }),
            ),
            row(ROW_MATCHES, Some(counted(matches, one, many))),
            row(
                ROW_FILES_WITH_MATCHES,
                files
                    .filter(|_| tool == Some(BuiltinTool::Grep))
                    .map(|n| counted(n, "file", "files")),
            ),
            row(ROW_SCAN, Some(scan.to_owned())),
        ];
        let mut parts = vec![Part::results(rows, notes)];
        if paths.is_empty() {
            return parts;
        }
        // `grep` lists files with a match; the others list what they count.
        let reported = if tool == Some(BuiltinTool::Grep) {
            files
        } else {
            Some(matches)
        };
        // A listing's entries are names in the listed directory, with marks.
        parts.push(listed_paths(
            paths,
            reported,
            tool != Some(BuiltinTool::List),
        ));
        parts
    }
}

/// The Resources block of the first `paths` a search reported, `reported` being how many
/// there were in all (when known); `located` gives each row its path as `location`.
/// Listed rows are the first reported ones; the rest are omitted from display.
pub(super) fn listed_paths(paths: &[String], reported: Option<u64>, located: bool) -> Part {
    let mut notes = Notes::default();
    let listed = paths.len().min(ROWS_PER_BLOCK);
    let rows: Vec<ResourceRow> = paths[..listed]
        .iter()
        .map(|p| {
            let label = notes.text(Subject::Text, p, STRING_BYTES);
            ResourceRow {
                kind: ResourceKind::File,
                location: located.then(|| label.clone()),
                label,
                availability: ResourceAvailability::Unknown,
            }
        })
        .collect();
    let listed = listed as u64;
    let excluded_paths = paths.len() as u64 - listed;
    match reported {
        Some(reported) => {
            let omitted = reported.saturating_sub(listed).max(excluded_paths);
            if omitted > 0 {
                notes.add(Subject::Rows, Reason::SizeLimit, safe_count(omitted));
            }
        }
        None if excluded_paths > 0 => notes.add(Subject::Rows, Reason::SizeLimit, None),
        None => {}
    }
    Part::new(
        Block::Resources(ResourcesBlock { rows }),
        notes,
        Role::Optional,
    )
}
