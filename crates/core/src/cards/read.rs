//! The blocks of a `read` card.

use magi_protocol::cards::{
    Block, ResourceAvailability, ResourceKind, ResourceRow, ResourcesBlock, STRING_BYTES, Subject,
};
use magi_store::records::ToolOutcome;

use super::blocks::Context;
use super::labels::{ROW_BINARY, ROW_FILE_LINES, ROW_LINES_SHOWN, ROW_STOPPED_AT_BOUND};
use super::part::{Part, Role, row};
use super::text::{Notes, counted, line_range, yes_no};

impl Context<'_, '_> {
    pub(super) fn read(
        &self,
        path: &str,
        first_line: Option<u64>,
        last_line: Option<u64>,
        total_lines: Option<u64>,
        truncated: bool,
        binary: bool,
    ) -> Vec<Part> {
        let availability = match self.outcome {
            Some(ToolOutcome::Completed) => ResourceAvailability::Available,
            Some(ToolOutcome::Failed) if binary => ResourceAvailability::Available,
            Some(ToolOutcome::Failed) => ResourceAvailability::Unavailable,
            _ => ResourceAvailability::Unknown,
        };
        let resources = file_resource(path, availability);
        let shown = match (first_line, last_line) {
            (Some(first), Some(last)) if first > 0 => line_range(first, last),
            (None, None) if self.outcome == Some(ToolOutcome::Completed) => Some("none".to_owned()),
            _ => None,
        };
        let rows = vec![
            row(ROW_LINES_SHOWN, shown),
            row(
                ROW_FILE_LINES,
                total_lines.map(|n| counted(n, "line", "lines")),
            ),
            row(ROW_STOPPED_AT_BOUND, Some(yes_no(truncated))),
            row(ROW_BINARY, Some(yes_no(binary))),
        ];
        vec![resources, Part::results(rows, Notes::default())]
    }
}

/// The one file a card reads, as its resources block: the path (sanitized and bounded)
/// and whether the file is there.
pub(super) fn file_resource(path: &str, availability: ResourceAvailability) -> Part {
    let mut notes = Notes::default();
    let label = notes.text(Subject::Text, path, STRING_BYTES);
    Part::new(
        Block::Resources(ResourcesBlock {
            rows: vec![ResourceRow {
                kind: ResourceKind::File,
                location: Some(label.clone()),
                label,
                availability,
            }],
        }),
        notes,
        Role::Optional,
    )
}
