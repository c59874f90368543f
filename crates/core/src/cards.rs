//! The card selector: the one place that turns the recorded facts of a tool call into
//! a schema-1 tool card, for live `tool.card` events and for saved cards in
//! `history.page` alike.
//!
//! Everything here is a pure function of a [`CardSource`]: no file, clock or process is
//! consulted, so a saved card is exactly what the records say, never what today's files
//! say. Outcome, changes and the protection decision come from authoritative evidence
//! only (the result record, the change facts, the recorded protection label); display
//! detail comes from the facts and the recorded preview. Every string passes through
//! [`magi_protocol::text::sanitize`] before it is sized, and every cut, exclusion, redaction or missing value
//! is stated as an omission. The fixed rows are documented in `docs/protocol/cards.md`.

mod ast_grep;
mod blocks;
mod change;
mod code_mode;
mod command;
mod control;
mod diff;
mod draft;
mod hook;
mod image;
mod job;
mod labels;
mod mcp;
mod metadata;
mod part;
mod plan;
mod project;
mod questions;
mod read;
mod search;
mod source;
mod task;
#[cfg(test)]
mod tests;
mod text;
mod web;

pub(crate) use control::{context_used, status_label, tokens};
pub use labels::*;
pub use metadata::{fixed_title, tool_kind};
pub use project::{core, project};
pub use source::{
    CardSource, HookSource, PreviewSource, Settlement, TaskChildren, TranscriptStyles,
};
