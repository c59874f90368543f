//! The blocks of a `task` card, and the children block of a running task.

use magi_protocol::cards::{
    Block, CHILDREN_PER_BLOCK, Child, ChildrenBlock, Origin, Reason, STRING_BYTES, Subject,
};

use super::blocks::Context;
use super::labels::{
    ROW_ENDED, ROW_FINAL_RESPONSE, ROW_MODEL_REQUESTS, ROW_SUBAGENT, ROW_TOOL_CALLS,
};
use super::part::{Part, Role, row};
use super::source::TaskChildren;
use super::text::{Notes, counted};

impl Context<'_, '_> {
    pub(super) fn task(
        &self,
        profile: &str,
        model_requests: u64,
        tool_calls: u64,
        ended: &str,
        report_bytes: Option<u64>,
        tail: &mut Notes,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let rows = vec![
            row(
                ROW_SUBAGENT,
                Some(notes.text(Subject::Text, profile, STRING_BYTES)),
            ),
            row(
                ROW_MODEL_REQUESTS,
                Some(counted(model_requests, "request", "requests")),
            ),
            row(ROW_TOOL_CALLS, Some(counted(tool_calls, "call", "calls"))),
            row(
                ROW_ENDED,
                Some(notes.text(Subject::Text, ended, STRING_BYTES)),
            ),
            row(
                ROW_FINAL_RESPONSE,
                report_bytes.map(|n| {
                    format!(
                        "{}; the full text is in the report file",
                        counted(n, "byte", "bytes")
                    )
                }),
            ),
        ];
        let mut parts = vec![Part::results(rows, notes)];
        match (self.source.children, self.source.origin) {
            (Some(children), Origin::Live) => parts.push(children_part(children)),
            // The subagent's calls live in its own history, not in this one.
            _ if tool_calls > 0 => {
                tail.add(Subject::Children, Reason::NotRecorded, Some(tool_calls))
            }
            _ => {}
        }
        parts
    }
}

/// The children block of a task's live card: the first [`CHILDREN_PER_BLOCK`] calls
/// of its subagent, with the known total.
pub(super) fn children_part(children: &TaskChildren) -> Part {
    let mut notes = Notes::default();
    let shown: Vec<Child> = children
        .children
        .iter()
        .take(CHILDREN_PER_BLOCK)
        .cloned()
        .collect();
    let total = children.total.max(shown.len() as u64);
    if total > shown.len() as u64 {
        notes.add(
            Subject::Children,
            Reason::BudgetLimit,
            Some(total - shown.len() as u64),
        );
    }
    Part::new(
        Block::Children(ChildrenBlock {
            children: shown,
            total: Some(total),
        }),
        notes,
        Role::Optional,
    )
}
