//! The card and the live event that carries it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::blocks::Block;
use super::kinds::{
    CardOutcome, CardState, Changes, Detail, Metadata, Omission, Origin, ParentState, ToolKind,
};
use super::nullable;
#[cfg(doc)]
use super::{BLOCKS_PER_CARD, SCHEMA_VERSION, TITLE_BYTES};

/// Data of the live `tool.card` event: one atomic snapshot of one card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCardEvent {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The enhanced base activity; equals both card IDs.
    pub activity_id: String,
    /// Always 0: schema 1 has one part per snapshot.
    pub part: u64,
    /// Always true: schema 1 has one part per snapshot.
    pub last_part: bool,
    /// The replacement snapshot.
    pub card: Card,
}

/// One complete card snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Card {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u64,
    /// The same opaque ID as `activity_id`; not a second identity.
    pub card_id: String,
    /// The enhanced base activity (live), or the history entry's `message_id` (saved).
    pub activity_id: String,
    /// The parent activity in the same scope, if it is projected.
    #[serde(deserialize_with = "nullable")]
    pub parent_activity_id: Option<String>,
    /// What is known about the parent.
    pub parent_state: ParentState,
    /// The mapped delegated-task identity in the same scope, if any.
    #[serde(deserialize_with = "nullable")]
    pub task_id: Option<String>,
    /// The kind of tool.
    pub tool_kind: ToolKind,
    /// The display lifecycle.
    pub state: CardState,
    /// Null while running; the observed outcome once finished.
    #[serde(deserialize_with = "nullable")]
    pub outcome: Option<CardOutcome>,
    /// What is known about changes made, independent of the outcome.
    pub changes: Changes,
    /// Strictly increasing per emitted replacement of this card in its scope.
    pub revision: u64,
    /// Live stream or saved history projection.
    pub origin: Origin,
    /// How much safe detail this snapshot carries, and why not more.
    pub detail: Detail,
    /// The safe selected title, at most [`TITLE_BYTES`].
    pub title: String,
    /// The fixed metadata object.
    pub metadata: Metadata,
    /// Typed display blocks, in order, at most [`BLOCKS_PER_CARD`].
    pub blocks: Vec<Block>,
    /// What this snapshot left out, at most one per subject.
    pub omissions: Vec<Omission>,
}
