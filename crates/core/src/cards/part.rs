//! A selected block with the omissions that describe its content, and what it is to
//! the reduction.

use magi_protocol::cards::{Block, ResultRow, ResultsBlock, RowOutcome};

use super::text::Notes;

/// What a block is to the reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Detail that may be shortened or dropped.
    Optional,
    /// The command block: it keeps the exit code.
    Command,
    /// The Bash execution notices: they keep timeout, truncation and cleanup.
    Execution,
}

/// A selected block with the omissions that describe its content.
#[derive(Debug, Clone)]
pub(super) struct Part {
    pub(super) block: Block,
    pub(super) notes: Notes,
    pub(super) role: Role,
}

impl Part {
    pub(super) fn new(block: Block, notes: Notes, role: Role) -> Part {
        Part { block, notes, role }
    }

    pub(super) fn results(rows: Vec<ResultRow>, notes: Notes) -> Part {
        Part::new(Block::Results(ResultsBlock { rows }), notes, Role::Optional)
    }
}

pub(super) fn row(label: &str, value: Option<String>) -> ResultRow {
    ResultRow {
        label: label.to_owned(),
        value,
        outcome: RowOutcome::Unknown,
    }
}
