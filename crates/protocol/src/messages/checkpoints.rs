//! The `checkpoints` extension: the workspace's files as they were before each turn
//! (`checkpoint.list`), put back with a preview first (`checkpoint.restore`), and a
//! session's conversation forked before a turn (`session.fork`)
//! (docs/protocol/extensions.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `checkpoint.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointListParams {
    /// The attached session.
    pub session_id: String,
}

/// Whether the checkpoint store can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStore {
    /// Turns are recorded.
    Ready,
    /// There is no `git` program: nothing is recorded.
    GitMissing,
    /// The store cannot be used (it lies inside the workspace, or cannot be created).
    Unavailable,
    /// The settings turned checkpoints off (`[checkpoints] enabled = false`): nothing
    /// is recorded.
    Off,
}

/// One checkpoint: the workspace's files as they were when a turn began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Checkpoint {
    /// The checkpoint: the ID of the turn it precedes.
    pub checkpoint_id: String,
    /// The turn's place in the session, from 1.
    pub turn: u64,
    /// The first line of the turn's prompt, at most
    /// [`crate::limits::CHECKPOINT_PROMPT_BYTES`] bytes, control characters stripped.
    pub prompt: String,
    /// When the turn began (its `turn_started` record's time).
    pub started_at: String,
    /// Whether its state was recorded and is still in the store.
    pub available: bool,
}

/// The result of `checkpoint.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointListResult {
    /// The session's newest turns, oldest first, at most
    /// [`crate::limits::CHECKPOINT_LIST_ENTRIES`].
    pub checkpoints: Vec<Checkpoint>,
    /// Whether older turns were left out.
    pub truncated: bool,
    /// Whether the store records turns.
    pub store: CheckpointStore,
}

/// Params of `checkpoint.restore`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointRestoreParams {
    /// The attached session.
    pub session_id: String,
    /// The checkpoint (a turn ID of the session).
    pub checkpoint_id: String,
    /// Put the files back; `false` (the default) only previews.
    #[serde(default)]
    pub apply: bool,
    /// Overwrite files changed since outside the session's turns; `false` (the default)
    /// refuses such a restore with `checkpoint_conflict`.
    #[serde(default)]
    pub overwrite_changed: bool,
}

/// What a restore does to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointAction {
    /// The file is written back with its content then.
    Write,
    /// The file, gone since, is created again.
    Create,
    /// The file, new since, is removed.
    Delete,
}

/// One file a restore changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointChange {
    /// The path relative to the working directory (not valid UTF-8 bytes replaced).
    pub path: String,
    /// What the restore does to it.
    pub action: CheckpointAction,
    /// Whether it changed since the checkpoint outside the session's turns (or whether
    /// it did cannot be told): a restore overwrites it only when asked to.
    pub changed_outside: bool,
}

/// The result of `checkpoint.restore`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointRestoreResult {
    /// The checkpoint.
    pub checkpoint_id: String,
    /// Whether the files were put back (`false`: a preview).
    pub applied: bool,
    /// The files the restore changes (or changed), those changed outside the turns
    /// first, then by path; at most [`crate::limits::CHECKPOINT_CHANGES_BYTES`]
    /// serialized bytes.
    pub changes: Vec<CheckpointChange>,
    /// Changes left out of `changes`.
    pub more: u64,
    /// Of all the changes, those of files changed outside the session's turns.
    pub changed_outside: u64,
}

/// Params of `session.fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionForkParams {
    /// The attached session.
    pub session_id: String,
    /// The turn before which the conversation is forked.
    pub checkpoint_id: String,
}

/// The result of `session.fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionForkResult {
    /// The new session (not attached: `session.open` opens it).
    pub session_id: String,
    /// The session it was forked from, which is unchanged.
    pub forked_from: String,
    /// The turn before which it was forked.
    pub checkpoint_id: String,
}

/// The `extensions["checkpoints"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointsDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// Most checkpoints a `checkpoint.list` result carries.
    pub list_entries: u64,
    /// Most serialized bytes of a `checkpoint.restore` result's `changes`.
    pub changes_bytes: u64,
}

impl CheckpointsDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> CheckpointsDescriptor {
        CheckpointsDescriptor {
            schema_version: 1,
            list_entries: crate::limits::CHECKPOINT_LIST_ENTRIES as u64,
            changes_bytes: crate::limits::CHECKPOINT_CHANGES_BYTES as u64,
        }
    }
}
