//! The blocks of an MCP tool card.

use magi_protocol::cards::{STRING_BYTES, Subject};

use super::blocks::Context;
use super::labels::{
    ROW_ANSWERED, ROW_NON_TEXT_CONTENT, ROW_RESULT_SIZE, ROW_SERVER, ROW_SERVER_ERROR, ROW_TOOL,
};
use super::part::{Part, row};
use super::text::{Notes, counted, yes_no};

impl Context<'_, '_> {
    pub(super) fn mcp(
        &self,
        server: &str,
        tool: &str,
        answered: bool,
        server_error: Option<bool>,
        result_bytes: Option<u64>,
        non_text_items: Option<u64>,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let rows = vec![
            row(
                ROW_SERVER,
                Some(notes.text(Subject::Text, server, STRING_BYTES)),
            ),
            row(
                ROW_TOOL,
                Some(notes.text(Subject::Text, tool, STRING_BYTES)),
            ),
            row(ROW_ANSWERED, Some(yes_no(answered))),
            row(ROW_SERVER_ERROR, server_error.map(yes_no)),
            row(
                ROW_RESULT_SIZE,
                result_bytes.map(|n| counted(n, "byte", "bytes")),
            ),
            row(
                ROW_NON_TEXT_CONTENT,
                non_text_items.map(|n| match n {
                    0 => "none".to_owned(),
                    n => format!("{}, not shown", counted(n, "item", "items")),
                }),
            ),
        ];
        vec![Part::results(rows, notes)]
    }
}
