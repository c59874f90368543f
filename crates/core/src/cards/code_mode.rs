//! The block of a `code_mode` card: the script's execution facts
//! (`execution-task-card-facts`, as docs/protocol/cards.md defines them), from the
//! backend's own counts, never from its nested calls' cards.

use magi_tools::code_mode::limit_name;
use magi_tools::facts::Facts;

use super::blocks::Context;
use super::labels::{
    ROW_ERROR_LINE, ROW_NESTED_COMPLETED, ROW_NESTED_FAILED, ROW_NESTED_STARTED, ROW_OUTPUT_BYTES,
    ROW_STOPPED_BY, ROW_WALL_TIME,
};
use super::part::{Part, row};
use super::text::{Notes, counted};

impl Context<'_, '_> {
    pub(super) fn code_mode(&self, facts: &Facts) -> Vec<Part> {
        let Facts::CodeMode {
            nested_started,
            nested_completed,
            nested_failed,
            wall_ms,
            output_bytes,
            limit,
            error_line,
        } = facts
        else {
            return Vec::new();
        };
        let calls = |n: u64| counted(n, "call", "calls");
        let stopped = match limit {
            Some(limit) => format!("{} limit", limit_name(*limit)),
            None => "no limit".to_owned(),
        };
        let rows = vec![
            row(ROW_NESTED_STARTED, Some(calls(*nested_started))),
            row(ROW_NESTED_COMPLETED, Some(calls(*nested_completed))),
            row(ROW_NESTED_FAILED, Some(calls(*nested_failed))),
            row(ROW_WALL_TIME, Some(format!("{wall_ms} ms"))),
            row(
                ROW_OUTPUT_BYTES,
                Some(counted(*output_bytes, "byte", "bytes")),
            ),
            row(ROW_STOPPED_BY, Some(stopped)),
            row(ROW_ERROR_LINE, error_line.map(|l| format!("line {l}"))),
        ];
        vec![Part::results(rows, Notes::default())]
    }
}
