//! The blocks of a background job card.

use magi_protocol::cards::{STRING_BYTES, Subject};

use super::blocks::Context;
use super::labels::{ROW_JOB, ROW_LINES_SHOWN, ROW_OUTPUT_LINES, ROW_STATE};
use super::part::{Part, row};
use super::text::{Notes, counted, line_range};

impl Context<'_, '_> {
    pub(super) fn job(
        &self,
        job_id: &str,
        state: Option<&str>,
        first_line: Option<u64>,
        lines: Option<u64>,
        total_lines: Option<u64>,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        // The tool's offsets are 0-based; cards show lines 1-based, as `read` does.
        let shown = match (first_line, lines) {
            (Some(_), Some(0)) => Some("none".to_owned()),
            (Some(first), Some(count)) => first
                .checked_add(1)
                .zip(first.checked_add(count))
                .and_then(|(a, b)| line_range(a, b)),
            _ => None,
        };
        let rows = vec![
            row(
                ROW_JOB,
                Some(notes.text(Subject::Text, job_id, STRING_BYTES)),
            ),
            row(
                ROW_STATE,
                state.map(|s| notes.text(Subject::Text, s, STRING_BYTES)),
            ),
            row(ROW_LINES_SHOWN, shown),
            row(
                ROW_OUTPUT_LINES,
                total_lines.map(|n| counted(n, "line", "lines")),
            ),
        ];
        vec![Part::results(rows, notes)]
    }
}
