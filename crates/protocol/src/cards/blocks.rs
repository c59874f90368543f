//! The typed display blocks of a card.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::kinds::{CardOutcome, CardState, Changes};
use super::nullable;
use super::styles::StyleSpan;
#[cfg(doc)]
use super::{
    CHILDREN_PER_BLOCK, COMMAND_BYTES, DIFF_LINES_PER_BLOCK, DIFF_PATH_BYTES, LANGUAGE_BYTES,
    ROWS_PER_BLOCK, SIGNAL_BYTES, STYLE_SPANS_PER_BLOCK, TEXT_BLOCK_BYTES, TITLE_BYTES,
    WORKING_DIRECTORY_BYTES,
};
use crate::fields::present_nullable;

/// A typed display block. No block nests another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text or code.
    Text(TextBlock),
    /// Files, URLs or resources.
    Resources(ResourcesBlock),
    /// Labelled results.
    Results(ResultsBlock),
    /// A command and its exit.
    Command(CommandBlock),
    /// A selected diff preview.
    Diff(DiffBlock),
    /// References to child activities.
    Children(ChildrenBlock),
    /// Progress counts.
    Progress(ProgressBlock),
}

/// A `text` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TextBlock {
    /// The text, at most [`TEXT_BLOCK_BYTES`].
    pub text: String,
    /// How to show it.
    pub format: TextFormat,
    /// A display hint only, at most [`LANGUAGE_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub language: Option<String>,
    /// The colour and emphasis of spans of `text`: present exactly when
    /// `tool.cards.styles` was negotiated; an empty list for plain text, null when the
    /// text's styles were left out (more spans than [`STYLE_SPANS_PER_BLOCK`], or no
    /// room in the card).
    #[serde(
        default,
        deserialize_with = "present_nullable",
        skip_serializing_if = "Option::is_none"
    )]
    pub styles: Option<Option<Vec<StyleSpan>>>,
}

/// How a `text` block is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the formats")]
pub enum TextFormat {
    Plain,
    Code,
}

/// A `resources` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourcesBlock {
    /// At most [`ROWS_PER_BLOCK`] rows.
    pub rows: Vec<ResourceRow>,
}

/// One row of a `resources` block; inert display data, never opened automatically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceRow {
    /// What it is.
    pub kind: ResourceKind,
    /// Its label.
    pub label: String,
    /// Where it is, if shown.
    #[serde(deserialize_with = "nullable")]
    pub location: Option<String>,
    /// Source evidence about it, not permission to open or fetch it.
    pub availability: ResourceAvailability,
}

/// The kind of a resource row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the kinds")]
pub enum ResourceKind {
    File,
    Url,
    Resource,
}

/// Source evidence about a resource row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the availabilities")]
pub enum ResourceAvailability {
    Available,
    Unavailable,
    Unknown,
}

/// A `results` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResultsBlock {
    /// At most [`ROWS_PER_BLOCK`] rows.
    pub rows: Vec<ResultRow>,
}

/// One row of a `results` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ResultRow {
    /// Its fixed label; consumers identify rows by it.
    pub label: String,
    /// Its value, if known.
    #[serde(deserialize_with = "nullable")]
    pub value: Option<String>,
    /// The row's outcome; never replaces the card outcome.
    pub outcome: RowOutcome,
}

/// The outcome of a result row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the outcomes")]
pub enum RowOutcome {
    Success,
    Failure,
    Partial,
    Unknown,
}

/// A `command` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CommandBlock {
    /// The command, null when unknown or redacted; at most [`COMMAND_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub command: Option<String>,
    /// At most [`WORKING_DIRECTORY_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub working_directory: Option<String>,
    /// The exit code, if known.
    #[serde(deserialize_with = "nullable")]
    pub exit_code: Option<i32>,
    /// The terminating signal, if any; at most [`SIGNAL_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub signal: Option<String>,
}

/// A `diff` block: a selected preview, not a patch to apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiffBlock {
    /// At most [`DIFF_PATH_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub old_path: Option<String>,
    /// At most [`DIFF_PATH_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub new_path: Option<String>,
    /// What is known about applying it.
    pub application: DiffApplication,
    /// At most [`DIFF_LINES_PER_BLOCK`] lines.
    pub lines: Vec<DiffLine>,
}

/// What is known about applying a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the states")]
pub enum DiffApplication {
    Proposed,
    Applied,
    Partial,
    Unknown,
}

/// One line of a `diff` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiffLine {
    /// Authoritative; clients never parse the text to infer it.
    pub kind: DiffLineKind,
    /// The text, without a context/added/removed prefix.
    pub text: String,
    /// Positive when known; only for context and removed lines.
    #[serde(deserialize_with = "nullable")]
    pub old_line: Option<u64>,
    /// Positive when known; only for context and added lines.
    #[serde(deserialize_with = "nullable")]
    pub new_line: Option<u64>,
}

/// The kind of a diff line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the kinds")]
pub enum DiffLineKind {
    FileHeader,
    HunkHeader,
    Context,
    Added,
    Removed,
    NoNewline,
}

/// A `children` block: references, never embedded cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChildrenBlock {
    /// At most [`CHILDREN_PER_BLOCK`] children.
    pub children: Vec<Child>,
    /// The known source count, if known.
    #[serde(deserialize_with = "nullable")]
    pub total: Option<u64>,
}

/// A reference to a separately projected child activity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Child {
    /// The child activity.
    pub activity_id: String,
    /// Its mapped task identity, if any.
    #[serde(deserialize_with = "nullable")]
    pub task_id: Option<String>,
    /// At most [`TITLE_BYTES`].
    pub title: String,
    /// Same rules as a card's state.
    pub state: CardState,
    /// Same rules as a card's outcome.
    #[serde(deserialize_with = "nullable")]
    pub outcome: Option<CardOutcome>,
    /// Same meaning as a card's changes.
    pub changes: Changes,
}

/// A `progress` block. Counts never establish success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProgressBlock {
    /// Its label.
    pub label: String,
    /// Done so far, if known.
    #[serde(deserialize_with = "nullable")]
    pub completed: Option<u64>,
    /// The total, if known; at least `completed` when both are known.
    #[serde(deserialize_with = "nullable")]
    pub total: Option<u64>,
    /// What is counted.
    pub unit: ProgressUnit,
}

/// What a progress block counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the units")]
pub enum ProgressUnit {
    Items,
    Bytes,
    Steps,
    Unknown,
}
