//! The tool card schema of the `tool.cards` extension, version 1.
//!
//! A card is a complete replacement snapshot of the displayable facts about one base
//! activity. It describes observed tool results; it never changes execution,
//! permissions or approval routing. This module holds the schema-1 bounds and
//! descriptor, the wire types, the fail-closed single-card validator and the omission
//! merge rules shared by the backend (which builds cards) and the client (which
//! decodes them).
//!
//! Every nullable field is required on the wire: it serializes as `null`, never
//! skipped, and deserializing a card without it fails. Object fields this schema does
//! not name are ignored by deserialization as inert annotations; they carry no meaning.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::names::{is_valid_name, is_valid_session_id};

/// The capability name a client requests to receive cards.
pub const CAPABILITY: &str = "tool.cards";
/// The only card schema version this crate speaks.
pub const SCHEMA_VERSION: u64 = 1;
/// The name of the live event carrying one card snapshot.
pub const EVENT: &str = "tool.card";
/// The field a negotiated `activity` history entry carries its card in (`part=0` only).
pub const HISTORY_FIELD: &str = "tool_card";
/// Parts per snapshot: schema 1 sends each snapshot atomically in one event.
pub const SNAPSHOT_PARTS: usize = 1;
/// Largest compact serialized card, in bytes.
pub const CARD_BYTES: usize = 16_384;
/// Largest reduced core card (fixed title, nullable metadata, required omissions).
pub const CORE_BYTES: usize = 2_048;
/// Most card identities per run, shared with the activity identity budget.
pub const CARDS_PER_RUN: usize = 4_096;
/// Most emitted snapshots per run, counting every revision.
pub const SNAPSHOTS_PER_RUN: usize = 16_384;
/// Most cumulative serialized card bytes per run, counting every revision.
pub const RUN_SNAPSHOT_BYTES: usize = 33_554_432;
/// Most serialized card state a backend retains per run.
pub const RETAINED_CARD_BYTES: usize = 8_388_608;
/// Most blocks in one card.
pub const BLOCKS_PER_CARD: usize = 16;
/// Most rows in one `resources` or `results` block.
pub const ROWS_PER_BLOCK: usize = 32;
/// Most lines in one `diff` block.
pub const DIFF_LINES_PER_BLOCK: usize = 128;
/// Most children in one `children` block.
pub const CHILDREN_PER_BLOCK: usize = 32;
/// Most parent edges above any card.
pub const CHILDREN_DEPTH: usize = 8;
/// Largest general display string, in UTF-8 bytes.
pub const STRING_BYTES: usize = 1_024;
/// Largest card or child title, in UTF-8 bytes.
pub const TITLE_BYTES: usize = 256;
/// Largest metadata display string, in UTF-8 bytes.
pub const METADATA_BYTES: usize = 512;
/// Largest output preview selected into a card, in UTF-8 bytes.
pub const PREVIEW_BYTES: usize = 4_096;
/// Largest `text` block text, in UTF-8 bytes.
pub const TEXT_BLOCK_BYTES: usize = 4_096;
/// Largest `text` block language hint, in UTF-8 bytes.
pub const LANGUAGE_BYTES: usize = 64;
/// Largest `command` block command, in UTF-8 bytes.
pub const COMMAND_BYTES: usize = 4_096;
/// Largest `command` block working directory, in UTF-8 bytes.
pub const WORKING_DIRECTORY_BYTES: usize = 512;
/// Largest `command` block signal name, in UTF-8 bytes.
pub const SIGNAL_BYTES: usize = 64;
/// Largest `diff` block path, in UTF-8 bytes.
pub const DIFF_PATH_BYTES: usize = 512;
/// Largest public protection summary, in UTF-8 bytes.
pub const PROTECTION_SUMMARY_BYTES: usize = 256;
/// Largest full live `tool.card` envelope, including its LF.
pub const LIVE_ENVELOPE_BYTES: usize = 65_536;
/// Largest stored applied-diff preview record, serialized with JSON escaping.
pub const PREVIEW_RECORD_BYTES: usize = 8_192;
/// Most lines in a stored applied-diff preview.
pub const PREVIEW_RECORD_LINES: usize = 128;
/// Largest line of a stored applied-diff preview, in UTF-8 bytes.
pub const PREVIEW_LINE_BYTES: usize = 1_024;
/// Largest integer a card may carry: JavaScript's `Number.MAX_SAFE_INTEGER`, so every
/// consumer reads the same value.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The `extensions["tool.cards"]` object of the `initialize` result. Every field is
/// required and fixed for schema 1; a client compares it with
/// [`ToolCardsDescriptor::schema_1`] and fails closed on any difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[expect(
    missing_docs,
    reason = "each count field mirrors the constant of the same name"
)]
pub struct ToolCardsDescriptor {
    pub schema_version: u64,
    pub event: String,
    pub history_field: String,
    pub snapshot_parts: u64,
    pub card_bytes: u64,
    pub core_bytes: u64,
    pub cards_per_run: u64,
    pub snapshots_per_run: u64,
    pub run_snapshot_bytes: u64,
    pub retained_card_bytes: u64,
    pub blocks_per_card: u64,
    pub rows_per_block: u64,
    pub diff_lines_per_block: u64,
    pub children_per_block: u64,
    pub children_depth: u64,
    pub string_bytes: u64,
    pub title_bytes: u64,
    pub metadata_bytes: u64,
    pub preview_bytes: u64,
}

impl ToolCardsDescriptor {
    /// The schema-1 descriptor, built from the constants of this module.
    pub fn schema_1() -> ToolCardsDescriptor {
        ToolCardsDescriptor {
            schema_version: SCHEMA_VERSION,
            event: EVENT.to_owned(),
            history_field: HISTORY_FIELD.to_owned(),
            snapshot_parts: SNAPSHOT_PARTS as u64,
            card_bytes: CARD_BYTES as u64,
            core_bytes: CORE_BYTES as u64,
            cards_per_run: CARDS_PER_RUN as u64,
            snapshots_per_run: SNAPSHOTS_PER_RUN as u64,
            run_snapshot_bytes: RUN_SNAPSHOT_BYTES as u64,
            retained_card_bytes: RETAINED_CARD_BYTES as u64,
            blocks_per_card: BLOCKS_PER_CARD as u64,
            rows_per_block: ROWS_PER_BLOCK as u64,
            diff_lines_per_block: DIFF_LINES_PER_BLOCK as u64,
            children_per_block: CHILDREN_PER_BLOCK as u64,
            children_depth: CHILDREN_DEPTH as u64,
            string_bytes: STRING_BYTES as u64,
            title_bytes: TITLE_BYTES as u64,
            metadata_bytes: METADATA_BYTES as u64,
            preview_bytes: PREVIEW_BYTES as u64,
        }
    }
}

/// Reads a nullable field that must be present.
///
/// Serde lets an absent `Option` field default to `None`; the schema requires every
/// nullable field on the wire, and a field-level `deserialize_with` turns absence into
/// a `missing field` error instead.
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}

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

/// What is known about a card's parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParentState {
    /// No parent; the parent ID is null.
    Root,
    /// The parent is projected; the parent ID is set.
    Available,
    /// The source ancestry is unavailable.
    Missing,
    /// Known ancestry was excluded by projection bounds or privacy.
    Omitted,
}

/// The kind of tool a card describes; unrecognized tools are [`ToolKind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the tool kinds")]
pub enum ToolKind {
    Read,
    Search,
    Write,
    Edit,
    Command,
    Web,
    Mcp,
    CodeMode,
    Subagent,
    Other,
}

/// The display lifecycle of a card or child, not transport or persistence state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CardState {
    /// Still running; the outcome is null.
    Running,
    /// Finished; the outcome is set.
    Finished,
}

/// The observed outcome of a finished tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CardOutcome {
    /// Authoritative tool completion.
    Success,
    /// An observed failed result.
    Failure,
    /// Observed tool cancellation.
    Cancelled,
    /// Evidence that execution ended without a tool terminal record.
    Interrupted,
    /// Outcome evidence is insufficient.
    Unknown,
}

/// What is known about the changes a tool made; independent of the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Changes {
    /// A non-mutating operation by contract.
    NotApplicable,
    /// Evidence that no changes occurred.
    None,
    /// Observed changes completed.
    Applied,
    /// Observed changes, incompletely applied.
    Partial,
    /// No change evidence.
    Unknown,
}

/// Where a card comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The live `tool.card` stream.
    Live,
    /// A projection of durable history records.
    Saved,
}

/// `detail`: how much safe detail a card carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Detail {
    /// How complete the detail is.
    pub availability: Availability,
    /// Null for complete/none; set for truncated/unavailable.
    #[serde(deserialize_with = "nullable")]
    pub reason: Option<Reason>,
}

/// How complete a card's detail is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    /// All safely displayable detail from the source fits.
    Complete,
    /// Selected detail was shortened or excluded.
    Truncated,
    /// No safe detail can be provided.
    Unavailable,
    /// The activity has no display detail by design.
    None,
}

/// Why detail is missing, for `detail.reason` and omissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The card or block size bound.
    SizeLimit,
    /// A run or history budget.
    BudgetLimit,
    /// Redaction.
    Redacted,
    /// The source never recorded it.
    NotRecorded,
    /// The source is of an unsupported kind.
    UnsupportedSource,
    /// The source is inaccessible.
    MissingSource,
}

impl Reason {
    /// Every reason, strongest first: when several apply, the first one is reported.
    pub const PRIORITY: [Reason; 6] = [
        Reason::Redacted,
        Reason::MissingSource,
        Reason::NotRecorded,
        Reason::UnsupportedSource,
        Reason::BudgetLimit,
        Reason::SizeLimit,
    ];

    /// Position in [`Reason::PRIORITY`]; lower is stronger.
    pub fn rank(self) -> usize {
        match self {
            Reason::Redacted => 0,
            Reason::MissingSource => 1,
            Reason::NotRecorded => 2,
            Reason::UnsupportedSource => 3,
            Reason::BudgetLimit => 4,
            Reason::SizeLimit => 5,
        }
    }

    /// The stronger of two reasons.
    pub fn stronger(self, other: Reason) -> Reason {
        if other.rank() < self.rank() {
            other
        } else {
            self
        }
    }
}

/// The reason to report when all of `reasons` apply, for `detail.reason` or an
/// omission: the strongest by [`Reason::PRIORITY`], or none when none applies.
pub fn strongest_reason(reasons: impl IntoIterator<Item = Reason>) -> Option<Reason> {
    reasons.into_iter().reduce(Reason::stronger)
}

/// The fixed `metadata` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Metadata {
    /// A sanitized tool name, never routing information; at most [`METADATA_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub tool_name: Option<String>,
    /// A selected display path; at most [`METADATA_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub resource_path: Option<String>,
    /// A selected working directory; at most [`METADATA_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub working_directory: Option<String>,
    /// The latest authoritative public protection decision.
    pub public_protection: PublicProtection,
}

/// `metadata.public_protection`: the latest public decision, never a private
/// assessment. It cannot authorize execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublicProtection {
    /// The decision.
    pub decision: ProtectionDecision,
    /// The backend's public summary, at most [`PROTECTION_SUMMARY_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub summary: Option<String>,
}

/// A public protection decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the decisions")]
pub enum ProtectionDecision {
    NotReported,
    Allowed,
    Blocked,
    ApprovalRequired,
    Denied,
}

/// An explicit statement that part of a card's content was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Omission {
    /// What was left out.
    pub subject: Subject,
    /// Why.
    pub reason: Reason,
    /// How many items were left out (Unicode scalar values for text), if known.
    #[serde(deserialize_with = "nullable")]
    pub omitted_count: Option<u64>,
}

impl Omission {
    /// Merges two omissions of the same subject: counts add when both are known, an
    /// unknown count (or a sum past [`MAX_SAFE_INTEGER`]) makes the result unknown,
    /// and the stronger reason wins. Returns `None` for different subjects.
    pub fn merge(self, other: Omission) -> Option<Omission> {
        if self.subject != other.subject {
            return None;
        }
        let omitted_count = match (self.omitted_count, other.omitted_count) {
            (Some(a), Some(b)) => a.checked_add(b).filter(|n| *n <= MAX_SAFE_INTEGER),
            _ => None,
        };
        Some(Omission {
            subject: self.subject,
            reason: self.reason.stronger(other.reason),
            omitted_count,
        })
    }
}

/// Merges same-subject omissions into one per subject, keeping the order in which
/// subjects first appear. See [`Omission::merge`] for counts and reasons.
pub fn merge_omissions(omissions: impl IntoIterator<Item = Omission>) -> Vec<Omission> {
    let mut merged: Vec<Omission> = Vec::new();
    for omission in omissions {
        match merged.iter_mut().find(|m| m.subject == omission.subject) {
            Some(existing) => {
                if let Some(combined) = existing.merge(omission) {
                    *existing = combined;
                }
            }
            None => merged.push(omission),
        }
    }
    merged
}

/// What an omission describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the subjects")]
pub enum Subject {
    Title,
    Metadata,
    Blocks,
    Rows,
    Text,
    DiffLines,
    Children,
    Progress,
    Ancestry,
    Updates,
}

impl Subject {
    /// How many subjects there are: the most omissions one card can carry.
    pub const COUNT: usize = 10;
}

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

/// A rule a card, or the event carrying it, breaks. Field names are wire paths; `[]`
/// stands for any element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardViolation {
    /// `schema_version` is not [`SCHEMA_VERSION`].
    SchemaVersion(u64),
    /// An ID field does not follow the 1–64-byte ID grammar.
    Id(&'static str),
    /// `card_id` differs from `activity_id`.
    CardIdMismatch,
    /// `parent_state` and `parent_activity_id` disagree, or the card is its own parent.
    Parent,
    /// A state and its outcome disagree (running with an outcome, finished without).
    Outcome(&'static str),
    /// `detail.reason` is set for complete/none or missing for truncated/unavailable.
    Detail,
    /// A string is longer than its bound, in UTF-8 bytes.
    TooLong {
        /// The field.
        field: &'static str,
        /// Its bound.
        max: usize,
    },
    /// A string holds a control character other than LF or TAB.
    Control(&'static str),
    /// An array has more elements than its bound.
    TooMany {
        /// The field.
        field: &'static str,
        /// Its bound.
        max: usize,
    },
    /// A diff line carries line numbers its kind does not allow, or a zero.
    LineNumbers,
    /// A progress block's `completed` exceeds its `total`.
    Progress,
    /// A children block's `total` is below the number of children it lists.
    ChildrenTotal,
    /// More than one omission has this subject.
    DuplicateOmission(Subject),
    /// An integer is above [`MAX_SAFE_INTEGER`].
    UnsafeInteger(&'static str),
    /// The compact serialized card exceeds [`CARD_BYTES`].
    TooLarge {
        /// The serialized size.
        bytes: usize,
    },
    /// The event's `part` is not 0.
    Part,
    /// The event's `last_part` is not true.
    LastPart,
    /// The event's `activity_id` differs from the card's.
    EventIdMismatch,
    /// The card's `origin` is wrong for where it arrived.
    Origin,
    /// The event's session or run ID does not follow its grammar.
    Scope,
    /// A saved card is not finished at revision 0.
    Saved,
}

impl fmt::Display for CardViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CardViolation::SchemaVersion(v) => write!(f, "unsupported card schema version {v}"),
            CardViolation::Id(field) => write!(f, "{field} does not follow the ID grammar"),
            CardViolation::CardIdMismatch => f.write_str("card_id differs from activity_id"),
            CardViolation::Parent => f.write_str("parent_state disagrees with parent_activity_id"),
            CardViolation::Outcome(field) => write!(f, "{field} disagrees with its state"),
            CardViolation::Detail => f.write_str("detail.reason disagrees with availability"),
            CardViolation::TooLong { field, max } => {
                write!(f, "{field} is longer than {max} bytes")
            }
            CardViolation::Control(field) => write!(f, "{field} holds a control character"),
            CardViolation::TooMany { field, max } => {
                write!(f, "{field} has more than {max} elements")
            }
            CardViolation::LineNumbers => {
                f.write_str("a diff line's numbers do not match its kind")
            }
            CardViolation::Progress => f.write_str("progress completed exceeds total"),
            CardViolation::ChildrenTotal => {
                f.write_str("children total is below the listed children")
            }
            CardViolation::DuplicateOmission(subject) => {
                write!(f, "more than one omission for subject {subject:?}")
            }
            CardViolation::UnsafeInteger(field) => {
                write!(f, "{field} is above the safe integer range")
            }
            CardViolation::TooLarge { bytes } => {
                write!(f, "card is {bytes} bytes, over {CARD_BYTES}")
            }
            CardViolation::Part => f.write_str("tool.card part is not 0"),
            CardViolation::LastPart => f.write_str("tool.card last_part is not true"),
            CardViolation::EventIdMismatch => {
                f.write_str("event activity_id differs from the card's")
            }
            CardViolation::Origin => f.write_str("card origin is wrong for its channel"),
            CardViolation::Scope => f.write_str("event session_id or run_id is malformed"),
            CardViolation::Saved => f.write_str("saved card is not finished at revision 0"),
        }
    }
}

impl std::error::Error for CardViolation {}

/// Counts bytes written, so sizing a card needs no buffer.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The compact serialized size of `card` in bytes, as [`CARD_BYTES`] measures it
/// (after JSON escaping, with every key and null).
///
/// Serializing these types cannot fail; if it ever did, the size is `usize::MAX` so
/// that every bound check fails closed.
pub fn serialized_len(card: &Card) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, card) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Checks every rule that one card can be checked against on its own.
///
/// Rules spanning cards (revisions, identity budgets, hierarchy depth) belong to the
/// stream that carries them. The serialized size is checked last, as it is the only
/// check that serializes.
pub fn validate(card: &Card) -> Result<(), CardViolation> {
    if card.schema_version != SCHEMA_VERSION {
        return Err(CardViolation::SchemaVersion(card.schema_version));
    }
    id("card_id", &card.card_id)?;
    id("activity_id", &card.activity_id)?;
    if card.card_id != card.activity_id {
        return Err(CardViolation::CardIdMismatch);
    }
    if let Some(parent) = &card.parent_activity_id {
        id("parent_activity_id", parent)?;
    }
    if let Some(task) = &card.task_id {
        id("task_id", task)?;
    }
    let parent_ok = match card.parent_state {
        ParentState::Root => card.parent_activity_id.is_none(),
        ParentState::Available => card.parent_activity_id.is_some(),
        ParentState::Missing | ParentState::Omitted => true,
    };
    // A card that is its own parent is a cycle, which the hierarchy forbids.
    if !parent_ok || card.parent_activity_id.as_deref() == Some(card.activity_id.as_str()) {
        return Err(CardViolation::Parent);
    }
    lifecycle("outcome", card.state, card.outcome)?;
    safe("revision", Some(card.revision))?;
    let reason_needed = matches!(
        card.detail.availability,
        Availability::Truncated | Availability::Unavailable
    );
    if reason_needed != card.detail.reason.is_some() {
        return Err(CardViolation::Detail);
    }
    text("title", &card.title, TITLE_BYTES)?;
    let metadata = &card.metadata;
    opt_text("metadata.tool_name", &metadata.tool_name, METADATA_BYTES)?;
    opt_text(
        "metadata.resource_path",
        &metadata.resource_path,
        METADATA_BYTES,
    )?;
    opt_text(
        "metadata.working_directory",
        &metadata.working_directory,
        METADATA_BYTES,
    )?;
    opt_text(
        "metadata.public_protection.summary",
        &metadata.public_protection.summary,
        PROTECTION_SUMMARY_BYTES,
    )?;
    count("blocks", card.blocks.len(), BLOCKS_PER_CARD)?;
    for block in &card.blocks {
        validate_block(block)?;
    }
    count("omissions", card.omissions.len(), Subject::COUNT)?;
    for (i, omission) in card.omissions.iter().enumerate() {
        if card.omissions[..i]
            .iter()
            .any(|o| o.subject == omission.subject)
        {
            return Err(CardViolation::DuplicateOmission(omission.subject));
        }
        safe("omissions[].omitted_count", omission.omitted_count)?;
    }
    let bytes = serialized_len(card);
    if bytes > CARD_BYTES {
        return Err(CardViolation::TooLarge { bytes });
    }
    Ok(())
}

/// Checks the data of a live `tool.card` event: the single-part framing, the identity
/// shared by the event and its card, live origin, and the card itself.
pub fn validate_event(event: &ToolCardEvent) -> Result<(), CardViolation> {
    if event.part != 0 {
        return Err(CardViolation::Part);
    }
    if !event.last_part {
        return Err(CardViolation::LastPart);
    }
    if !is_valid_session_id(&event.session_id) || !is_valid_name(&event.run_id) {
        return Err(CardViolation::Scope);
    }
    if event.activity_id != event.card.activity_id || event.activity_id != event.card.card_id {
        return Err(CardViolation::EventIdMismatch);
    }
    if event.card.origin != Origin::Live {
        return Err(CardViolation::Origin);
    }
    validate(&event.card)
}

/// Checks a card attached to a saved `activity` history entry: both IDs equal the
/// entry's `message_id`, the origin is saved, and it is finished at revision 0.
pub fn validate_saved(card: &Card, message_id: &str) -> Result<(), CardViolation> {
    if card.activity_id != message_id || card.card_id != message_id {
        return Err(CardViolation::EventIdMismatch);
    }
    if card.origin != Origin::Saved {
        return Err(CardViolation::Origin);
    }
    if card.state != CardState::Finished || card.revision != 0 {
        return Err(CardViolation::Saved);
    }
    validate(card)
}

fn validate_block(block: &Block) -> Result<(), CardViolation> {
    match block {
        Block::Text(b) => {
            text("blocks[].text", &b.text, TEXT_BLOCK_BYTES)?;
            opt_text("blocks[].language", &b.language, LANGUAGE_BYTES)
        }
        Block::Resources(b) => {
            count("blocks[].rows", b.rows.len(), ROWS_PER_BLOCK)?;
            for row in &b.rows {
                text("blocks[].rows[].label", &row.label, STRING_BYTES)?;
                opt_text("blocks[].rows[].location", &row.location, STRING_BYTES)?;
            }
            Ok(())
        }
        Block::Results(b) => {
            count("blocks[].rows", b.rows.len(), ROWS_PER_BLOCK)?;
            for row in &b.rows {
                text("blocks[].rows[].label", &row.label, STRING_BYTES)?;
                opt_text("blocks[].rows[].value", &row.value, STRING_BYTES)?;
            }
            Ok(())
        }
        Block::Command(b) => {
            opt_text("blocks[].command", &b.command, COMMAND_BYTES)?;
            opt_text(
                "blocks[].working_directory",
                &b.working_directory,
                WORKING_DIRECTORY_BYTES,
            )?;
            opt_text("blocks[].signal", &b.signal, SIGNAL_BYTES)
        }
        Block::Diff(b) => {
            opt_text("blocks[].old_path", &b.old_path, DIFF_PATH_BYTES)?;
            opt_text("blocks[].new_path", &b.new_path, DIFF_PATH_BYTES)?;
            count("blocks[].lines", b.lines.len(), DIFF_LINES_PER_BLOCK)?;
            for line in &b.lines {
                text("blocks[].lines[].text", &line.text, STRING_BYTES)?;
                diff_numbers(line)?;
            }
            Ok(())
        }
        Block::Children(b) => {
            count("blocks[].children", b.children.len(), CHILDREN_PER_BLOCK)?;
            safe("blocks[].total", b.total)?;
            if b.total.is_some_and(|total| total < b.children.len() as u64) {
                return Err(CardViolation::ChildrenTotal);
            }
            for child in &b.children {
                id("blocks[].children[].activity_id", &child.activity_id)?;
                if let Some(task) = &child.task_id {
                    id("blocks[].children[].task_id", task)?;
                }
                text("blocks[].children[].title", &child.title, TITLE_BYTES)?;
                lifecycle("blocks[].children[].outcome", child.state, child.outcome)?;
            }
            Ok(())
        }
        Block::Progress(b) => {
            text("blocks[].label", &b.label, STRING_BYTES)?;
            safe("blocks[].completed", b.completed)?;
            safe("blocks[].total", b.total)?;
            match (b.completed, b.total) {
                (Some(completed), Some(total)) if completed > total => Err(CardViolation::Progress),
                _ => Ok(()),
            }
        }
    }
}

/// Line numbers by kind: context may carry both, added only the new one, removed
/// only the old one, headers and no-newline markers neither. Known numbers are
/// positive and safe; unknown ones stay null.
fn diff_numbers(line: &DiffLine) -> Result<(), CardViolation> {
    let (old_allowed, new_allowed) = match line.kind {
        DiffLineKind::Context => (true, true),
        DiffLineKind::Added => (false, true),
        DiffLineKind::Removed => (true, false),
        DiffLineKind::FileHeader | DiffLineKind::HunkHeader | DiffLineKind::NoNewline => {
            (false, false)
        }
    };
    let fits = |number: Option<u64>, allowed: bool| match number {
        None => true,
        Some(n) => allowed && n > 0,
    };
    if !fits(line.old_line, old_allowed) || !fits(line.new_line, new_allowed) {
        return Err(CardViolation::LineNumbers);
    }
    safe("blocks[].lines[].old_line", line.old_line)?;
    safe("blocks[].lines[].new_line", line.new_line)
}

fn lifecycle(
    field: &'static str,
    state: CardState,
    outcome: Option<CardOutcome>,
) -> Result<(), CardViolation> {
    match (state, outcome) {
        (CardState::Running, None) | (CardState::Finished, Some(_)) => Ok(()),
        _ => Err(CardViolation::Outcome(field)),
    }
}

fn id(field: &'static str, value: &str) -> Result<(), CardViolation> {
    if is_valid_name(value) {
        Ok(())
    } else {
        Err(CardViolation::Id(field))
    }
}

/// A display string: within its byte bound, and sanitized, so no control character
/// other than the LF and TAB that sanitization keeps (terminal escapes are controls).
fn text(field: &'static str, value: &str, max: usize) -> Result<(), CardViolation> {
    if value.len() > max {
        return Err(CardViolation::TooLong { field, max });
    }
    if value
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(CardViolation::Control(field));
    }
    Ok(())
}

fn opt_text(field: &'static str, value: &Option<String>, max: usize) -> Result<(), CardViolation> {
    match value {
        Some(value) => text(field, value, max),
        None => Ok(()),
    }
}

fn count(field: &'static str, len: usize, max: usize) -> Result<(), CardViolation> {
    if len > max {
        Err(CardViolation::TooMany { field, max })
    } else {
        Ok(())
    }
}

fn safe(field: &'static str, value: Option<u64>) -> Result<(), CardViolation> {
    if value.is_some_and(|v| v > MAX_SAFE_INTEGER) {
        Err(CardViolation::UnsafeInteger(field))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The data of the spec's live example event (partial cancellation).
    const LIVE_EXAMPLE: &str = r#"{"session_id":"example-session","run_id":"run-1","activity_id":"a1","part":0,"last_part":true,"card":{"schema_version":1,"card_id":"a1","activity_id":"a1","parent_activity_id":null,"parent_state":"root","task_id":null,"tool_kind":"edit","state":"finished","outcome":"cancelled","changes":"partial","revision":2,"origin":"live","detail":{"availability":"truncated","reason":"size_limit"},"title":"Edit example.rs","metadata":{"tool_name":"hash_edit","resource_path":"example.rs","working_directory":null,"public_protection":{"decision":"allowed","summary":null}},"blocks":[{"type":"diff","old_path":"example.rs","new_path":"example.rs","application":"partial","lines":[{"kind":"removed","text":"let count = 1;","old_line":4,"new_line":null},{"kind":"added","text":"let count = 2;","old_line":null,"new_line":4}]}],"omissions":[{"subject":"diff_lines","reason":"size_limit","omitted_count":null}]}}"#;

    /// The card of the spec's saved example entry (legacy interrupted command).
    const SAVED_EXAMPLE: &str = r#"{"schema_version":1,"card_id":"saved-a1","activity_id":"saved-a1","parent_activity_id":null,"parent_state":"missing","task_id":null,"tool_kind":"command","state":"finished","outcome":"interrupted","changes":"unknown","revision":0,"origin":"saved","detail":{"availability":"unavailable","reason":"not_recorded"},"title":"Command","metadata":{"tool_name":null,"resource_path":null,"working_directory":null,"public_protection":{"decision":"not_reported","summary":null}},"blocks":[],"omissions":[{"subject":"blocks","reason":"not_recorded","omitted_count":null},{"subject":"ancestry","reason":"not_recorded","omitted_count":null}]}"#;

    const DESCRIPTOR: &str = r#"{"schema_version":1,"event":"tool.card","history_field":"tool_card","snapshot_parts":1,"card_bytes":16384,"core_bytes":2048,"cards_per_run":4096,"snapshots_per_run":16384,"run_snapshot_bytes":33554432,"retained_card_bytes":8388608,"blocks_per_card":16,"rows_per_block":32,"diff_lines_per_block":128,"children_per_block":32,"children_depth":8,"string_bytes":1024,"title_bytes":256,"metadata_bytes":512,"preview_bytes":4096}"#;

    fn live() -> ToolCardEvent {
        serde_json::from_str(LIVE_EXAMPLE).unwrap()
    }

    fn card() -> Card {
        live().card
    }

    fn with(block: Block) -> Card {
        let mut card = card();
        card.blocks = vec![block];
        card
    }

    fn diff(lines: Vec<DiffLine>) -> Block {
        Block::Diff(DiffBlock {
            old_path: None,
            new_path: None,
            application: DiffApplication::Unknown,
            lines,
        })
    }

    fn line(kind: DiffLineKind, old_line: Option<u64>, new_line: Option<u64>) -> DiffLine {
        DiffLine {
            kind,
            text: "x".to_owned(),
            old_line,
            new_line,
        }
    }

    fn omission(subject: Subject, reason: Reason, omitted_count: Option<u64>) -> Omission {
        Omission {
            subject,
            reason,
            omitted_count,
        }
    }

    #[test]
    fn descriptor_json_is_the_specified_one() {
        let json = serde_json::to_string(&ToolCardsDescriptor::schema_1()).unwrap();
        assert_eq!(json, DESCRIPTOR);
        let parsed: ToolCardsDescriptor = serde_json::from_str(DESCRIPTOR).unwrap();
        assert_eq!(parsed, ToolCardsDescriptor::schema_1());
        let extra = DESCRIPTOR.replace("{\"schema", "{\"x\":1,\"schema");
        assert!(serde_json::from_str::<ToolCardsDescriptor>(&extra).is_err());
        let missing = DESCRIPTOR.replace(",\"preview_bytes\":4096", "");
        assert!(serde_json::from_str::<ToolCardsDescriptor>(&missing).is_err());
    }

    #[test]
    fn spec_examples_parse_validate_and_round_trip() {
        let event = live();
        assert_eq!(validate_event(&event), Ok(()));
        assert_eq!(serde_json::to_string(&event).unwrap(), LIVE_EXAMPLE);
        let saved: Card = serde_json::from_str(SAVED_EXAMPLE).unwrap();
        assert_eq!(validate_saved(&saved, "saved-a1"), Ok(()));
        assert_eq!(serde_json::to_string(&saved).unwrap(), SAVED_EXAMPLE);
        assert_eq!(serialized_len(&saved), SAVED_EXAMPLE.len());
    }

    #[test]
    fn nullable_fields_are_required_and_serialized_as_null() {
        for field in [
            "\"parent_activity_id\":null,",
            "\"task_id\":null,",
            "\"working_directory\":null,",
            ",\"summary\":null",
            ",\"omitted_count\":null",
            ",\"new_line\":null",
        ] {
            let json = LIVE_EXAMPLE.replacen(field, "", 1);
            let err = serde_json::from_str::<ToolCardEvent>(&json).unwrap_err();
            assert!(err.to_string().contains("missing field"), "{field}: {err}");
        }
        let detail = LIVE_EXAMPLE.replace(
            "\"reason\":\"size_limit\"},\"title\"",
            "\"reason\":null},\"title\"",
        );
        assert!(serde_json::from_str::<ToolCardEvent>(&detail).is_ok());
        let no_reason =
            LIVE_EXAMPLE.replace(",\"reason\":\"size_limit\"},\"title\"", "},\"title\"");
        assert!(serde_json::from_str::<ToolCardEvent>(&no_reason).is_err());
    }

    #[test]
    fn unknown_enums_and_block_types_do_not_parse() {
        for (from, to) in [
            ("\"tool_kind\":\"edit\"", "\"tool_kind\":\"hash_edit\""),
            ("\"outcome\":\"cancelled\"", "\"outcome\":\"aborted\""),
            ("\"type\":\"diff\"", "\"type\":\"html\""),
            ("\"kind\":\"removed\"", "\"kind\":\"deleted\""),
            ("\"decision\":\"allowed\"", "\"decision\":\"maybe\""),
            ("\"revision\":2", "\"revision\":-2"),
            ("\"revision\":2", "\"revision\":2.5"),
        ] {
            let json = LIVE_EXAMPLE.replace(from, to);
            assert!(
                serde_json::from_str::<ToolCardEvent>(&json).is_err(),
                "{to}"
            );
        }
    }

    #[test]
    fn schema_version_and_identity() {
        let mut c = card();
        c.schema_version = 2;
        assert_eq!(validate(&c), Err(CardViolation::SchemaVersion(2)));
        let mut c = card();
        c.card_id = "a2".to_owned();
        assert_eq!(validate(&c), Err(CardViolation::CardIdMismatch));
        for bad in ["", "a b", "é", &"a".repeat(65)] {
            let mut c = card();
            c.card_id = bad.to_owned();
            c.activity_id = bad.to_owned();
            assert_eq!(validate(&c), Err(CardViolation::Id("card_id")), "{bad:?}");
        }
        let mut c = card();
        c.card_id = "a".repeat(64);
        c.activity_id = c.card_id.clone();
        assert_eq!(validate(&c), Ok(()));
        let mut c = card();
        c.parent_state = ParentState::Missing;
        c.task_id = Some("task/1".to_owned());
        assert_eq!(validate(&c), Err(CardViolation::Id("task_id")));
    }

    #[test]
    fn parent_state_and_parent_id() {
        let cases = [
            (ParentState::Root, None, true),
            (ParentState::Root, Some("p"), false),
            (ParentState::Available, Some("p"), true),
            (ParentState::Available, None, false),
            (ParentState::Missing, None, true),
            (ParentState::Missing, Some("p"), true),
            (ParentState::Omitted, None, true),
            (ParentState::Omitted, Some("p"), true),
            (ParentState::Available, Some("a1"), false),
            (ParentState::Available, Some("p q"), false),
        ];
        for (state, parent, ok) in cases {
            let mut c = card();
            c.parent_state = state;
            c.parent_activity_id = parent.map(str::to_owned);
            assert_eq!(validate(&c).is_ok(), ok, "{state:?} {parent:?}");
        }
    }

    #[test]
    fn state_and_outcome() {
        let mut c = card();
        c.state = CardState::Running;
        assert_eq!(validate(&c), Err(CardViolation::Outcome("outcome")));
        c.outcome = None;
        assert_eq!(validate(&c), Ok(()));
        c.state = CardState::Finished;
        assert_eq!(validate(&c), Err(CardViolation::Outcome("outcome")));
    }

    #[test]
    fn detail_reason_follows_availability() {
        for (availability, reason, ok) in [
            (Availability::Complete, None, true),
            (Availability::None, None, true),
            (Availability::Complete, Some(Reason::Redacted), false),
            (Availability::None, Some(Reason::SizeLimit), false),
            (Availability::Truncated, Some(Reason::SizeLimit), true),
            (Availability::Unavailable, Some(Reason::MissingSource), true),
            (Availability::Truncated, None, false),
            (Availability::Unavailable, None, false),
        ] {
            let mut c = card();
            c.detail = Detail {
                availability,
                reason,
            };
            let expected = if ok {
                Ok(())
            } else {
                Err(CardViolation::Detail)
            };
            assert_eq!(validate(&c), expected, "{availability:?} {reason:?}");
        }
    }

    /// Each bounded string accepts exactly its bound and rejects one byte more,
    /// counting UTF-8 bytes rather than characters.
    #[test]
    fn string_bounds_in_bytes() {
        type Setter = fn(&mut Card, String);
        let cases: [(&str, usize, Setter); 6] = [
            ("title", TITLE_BYTES, |c, s| c.title = s),
            ("metadata.tool_name", METADATA_BYTES, |c, s| {
                c.metadata.tool_name = Some(s)
            }),
            ("metadata.resource_path", METADATA_BYTES, |c, s| {
                c.metadata.resource_path = Some(s)
            }),
            ("metadata.working_directory", METADATA_BYTES, |c, s| {
                c.metadata.working_directory = Some(s)
            }),
            (
                "metadata.public_protection.summary",
                PROTECTION_SUMMARY_BYTES,
                |c, s| c.metadata.public_protection.summary = Some(s),
            ),
            ("blocks[].lines[].text", STRING_BYTES, |c, s| {
                if let Some(Block::Diff(d)) = c.blocks.first_mut() {
                    d.lines[0].text = s;
                }
            }),
        ];
        for (field, max, set) in cases {
            let mut c = card();
            set(&mut c, "é".repeat(max / 2));
            assert_eq!(validate(&c), Ok(()), "{field}");
            set(&mut c, format!("{}a", "é".repeat(max / 2)));
            assert_eq!(
                validate(&c),
                Err(CardViolation::TooLong { field, max }),
                "{field}"
            );
        }
    }

    #[test]
    fn block_string_bounds() {
        let at = |n: usize| "a".repeat(n);
        let text = |t: String, language: Option<String>| {
            Block::Text(TextBlock {
                text: t,
                format: TextFormat::Code,
                language,
            })
        };
        let command = |command: Option<String>, wd: Option<String>, signal: Option<String>| {
            Block::Command(CommandBlock {
                command,
                working_directory: wd,
                exit_code: Some(-1),
                signal,
            })
        };
        let path = |old: Option<String>, new: Option<String>| {
            Block::Diff(DiffBlock {
                old_path: old,
                new_path: new,
                application: DiffApplication::Applied,
                lines: vec![],
            })
        };
        let resource = |label: String, location: Option<String>| {
            Block::Resources(ResourcesBlock {
                rows: vec![ResourceRow {
                    kind: ResourceKind::Url,
                    label,
                    location,
                    availability: ResourceAvailability::Unknown,
                }],
            })
        };
        let result = |label: String, value: Option<String>| {
            Block::Results(ResultsBlock {
                rows: vec![ResultRow {
                    label,
                    value,
                    outcome: RowOutcome::Unknown,
                }],
            })
        };
        let child = |title: String| {
            Block::Children(ChildrenBlock {
                children: vec![Child {
                    activity_id: "c1".to_owned(),
                    task_id: None,
                    title,
                    state: CardState::Running,
                    outcome: None,
                    changes: Changes::Unknown,
                }],
                total: None,
            })
        };
        let progress = |label: String| {
            Block::Progress(ProgressBlock {
                label,
                completed: None,
                total: None,
                unit: ProgressUnit::Unknown,
            })
        };
        type Build = Box<dyn Fn(usize) -> Block>;
        let cases: Vec<(&str, usize, Build)> = vec![
            (
                "blocks[].text",
                TEXT_BLOCK_BYTES,
                Box::new(move |n| text(at(n), None)),
            ),
            (
                "blocks[].language",
                LANGUAGE_BYTES,
                Box::new(move |n| text(at(1), Some(at(n)))),
            ),
            (
                "blocks[].command",
                COMMAND_BYTES,
                Box::new(move |n| command(Some(at(n)), None, None)),
            ),
            (
                "blocks[].working_directory",
                WORKING_DIRECTORY_BYTES,
                Box::new(move |n| command(None, Some(at(n)), None)),
            ),
            (
                "blocks[].signal",
                SIGNAL_BYTES,
                Box::new(move |n| command(None, None, Some(at(n)))),
            ),
            (
                "blocks[].old_path",
                DIFF_PATH_BYTES,
                Box::new(move |n| path(Some(at(n)), None)),
            ),
            (
                "blocks[].new_path",
                DIFF_PATH_BYTES,
                Box::new(move |n| path(None, Some(at(n)))),
            ),
            (
                "blocks[].rows[].label",
                STRING_BYTES,
                Box::new(move |n| resource(at(n), None)),
            ),
            (
                "blocks[].rows[].location",
                STRING_BYTES,
                Box::new(move |n| resource(at(1), Some(at(n)))),
            ),
            (
                "blocks[].rows[].label",
                STRING_BYTES,
                Box::new(move |n| result(at(n), None)),
            ),
            (
                "blocks[].rows[].value",
                STRING_BYTES,
                Box::new(move |n| result(at(1), Some(at(n)))),
            ),
            (
                "blocks[].children[].title",
                TITLE_BYTES,
                Box::new(move |n| child(at(n))),
            ),
            (
                "blocks[].label",
                STRING_BYTES,
                Box::new(move |n| progress(at(n))),
            ),
        ];
        for (field, max, build) in cases {
            assert_eq!(validate(&with(build(max))), Ok(()), "{field}");
            assert_eq!(
                validate(&with(build(max + 1))),
                Err(CardViolation::TooLong { field, max }),
                "{field}"
            );
        }
    }

    #[test]
    fn control_characters_are_refused_but_lf_and_tab_kept() {
        let mut c = card();
        c.title = "a\tb\nc".to_owned();
        assert_eq!(validate(&c), Ok(()));
        for bad in ["\u{1b}[31mred", "a\rb", "a\u{7f}", "a\u{9b}b"] {
            c.title = bad.to_owned();
            assert_eq!(
                validate(&c),
                Err(CardViolation::Control("title")),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn array_bounds() {
        let text = Block::Text(TextBlock {
            text: String::new(),
            format: TextFormat::Plain,
            language: None,
        });
        let mut c = card();
        c.blocks = vec![text.clone(); BLOCKS_PER_CARD];
        assert_eq!(validate(&c), Ok(()));
        c.blocks.push(text);
        assert_eq!(
            validate(&c),
            Err(CardViolation::TooMany {
                field: "blocks",
                max: BLOCKS_PER_CARD
            })
        );

        let row = ResultRow {
            label: "l".to_owned(),
            value: None,
            outcome: RowOutcome::Success,
        };
        let rows = |n| {
            Block::Results(ResultsBlock {
                rows: vec![row.clone(); n],
            })
        };
        assert_eq!(validate(&with(rows(ROWS_PER_BLOCK))), Ok(()));
        assert_eq!(
            validate(&with(rows(ROWS_PER_BLOCK + 1))),
            Err(CardViolation::TooMany {
                field: "blocks[].rows",
                max: ROWS_PER_BLOCK
            })
        );
        let resource = ResourceRow {
            kind: ResourceKind::File,
            label: "l".to_owned(),
            location: None,
            availability: ResourceAvailability::Available,
        };
        let resources = Block::Resources(ResourcesBlock {
            rows: vec![resource; ROWS_PER_BLOCK + 1],
        });
        assert!(validate(&with(resources)).is_err());

        let lines = |n| diff(vec![line(DiffLineKind::Context, Some(1), Some(1)); n]);
        assert_eq!(validate(&with(lines(DIFF_LINES_PER_BLOCK))), Ok(()));
        assert_eq!(
            validate(&with(lines(DIFF_LINES_PER_BLOCK + 1))),
            Err(CardViolation::TooMany {
                field: "blocks[].lines",
                max: DIFF_LINES_PER_BLOCK
            })
        );

        let child = Child {
            activity_id: "c".to_owned(),
            task_id: Some("t".to_owned()),
            title: "t".to_owned(),
            state: CardState::Finished,
            outcome: Some(CardOutcome::Success),
            changes: Changes::None,
        };
        let children = |n| {
            Block::Children(ChildrenBlock {
                children: vec![child.clone(); n],
                total: None,
            })
        };
        assert_eq!(validate(&with(children(CHILDREN_PER_BLOCK))), Ok(()));
        assert_eq!(
            validate(&with(children(CHILDREN_PER_BLOCK + 1))),
            Err(CardViolation::TooMany {
                field: "blocks[].children",
                max: CHILDREN_PER_BLOCK
            })
        );
    }

    #[test]
    fn diff_line_numbers_follow_the_kind() {
        use DiffLineKind::*;
        let cases = [
            (Context, Some(3), Some(4), true),
            (Context, None, Some(4), true),
            (Context, None, None, true),
            (Added, None, Some(4), true),
            (Added, None, None, true),
            (Added, Some(3), Some(4), false),
            (Removed, Some(3), None, true),
            (Removed, Some(3), Some(4), false),
            (Removed, None, Some(4), false),
            (FileHeader, None, None, true),
            (FileHeader, Some(1), None, false),
            (HunkHeader, None, Some(1), false),
            (NoNewline, None, None, true),
            (NoNewline, Some(1), None, false),
            (Context, Some(0), Some(1), false),
            (Added, None, Some(0), false),
        ];
        for (kind, old, new, ok) in cases {
            let expected = if ok {
                Ok(())
            } else {
                Err(CardViolation::LineNumbers)
            };
            assert_eq!(
                validate(&with(diff(vec![line(kind, old, new)]))),
                expected,
                "{kind:?} {old:?} {new:?}"
            );
        }
        assert_eq!(
            validate(&with(diff(vec![line(
                Added,
                None,
                Some(MAX_SAFE_INTEGER + 1)
            )]))),
            Err(CardViolation::UnsafeInteger("blocks[].lines[].new_line"))
        );
        assert_eq!(
            validate(&with(diff(vec![line(Added, None, Some(MAX_SAFE_INTEGER))]))),
            Ok(())
        );
    }

    #[test]
    fn progress_counts() {
        let progress = |completed, total| {
            with(Block::Progress(ProgressBlock {
                label: "files".to_owned(),
                completed,
                total,
                unit: ProgressUnit::Items,
            }))
        };
        assert_eq!(validate(&progress(Some(3), Some(3))), Ok(()));
        assert_eq!(validate(&progress(Some(4), None)), Ok(()));
        assert_eq!(validate(&progress(None, Some(0))), Ok(()));
        assert_eq!(
            validate(&progress(Some(4), Some(3))),
            Err(CardViolation::Progress)
        );
        assert_eq!(
            validate(&progress(Some(MAX_SAFE_INTEGER + 1), None)),
            Err(CardViolation::UnsafeInteger("blocks[].completed"))
        );
    }

    #[test]
    fn children_rules() {
        let child = |state, outcome| Child {
            activity_id: "c1".to_owned(),
            task_id: None,
            title: "sub".to_owned(),
            state,
            outcome,
            changes: Changes::Unknown,
        };
        let block =
            |children: Vec<Child>, total| with(Block::Children(ChildrenBlock { children, total }));
        let ok = child(CardState::Finished, Some(CardOutcome::Failure));
        assert_eq!(validate(&block(vec![ok.clone()], Some(5))), Ok(()));
        assert_eq!(validate(&block(vec![ok.clone()], Some(1))), Ok(()));
        assert_eq!(
            validate(&block(vec![ok.clone(), ok.clone()], Some(1))),
            Err(CardViolation::ChildrenTotal)
        );
        assert_eq!(
            validate(&block(
                vec![child(CardState::Running, Some(CardOutcome::Success))],
                None
            )),
            Err(CardViolation::Outcome("blocks[].children[].outcome"))
        );
        assert_eq!(
            validate(&block(vec![child(CardState::Finished, None)], None)),
            Err(CardViolation::Outcome("blocks[].children[].outcome"))
        );
        let mut bad_id = ok;
        bad_id.activity_id = String::new();
        assert_eq!(
            validate(&block(vec![bad_id], None)),
            Err(CardViolation::Id("blocks[].children[].activity_id"))
        );
    }

    #[test]
    fn omissions_one_per_subject_with_safe_counts() {
        let mut c = card();
        c.omissions
            .push(omission(Subject::DiffLines, Reason::Redacted, Some(1)));
        assert_eq!(
            validate(&c),
            Err(CardViolation::DuplicateOmission(Subject::DiffLines))
        );
        let mut c = card();
        c.omissions[0].omitted_count = Some(MAX_SAFE_INTEGER + 1);
        assert_eq!(
            validate(&c),
            Err(CardViolation::UnsafeInteger("omissions[].omitted_count"))
        );
        c.revision = MAX_SAFE_INTEGER + 1;
        c.omissions.clear();
        assert_eq!(validate(&c), Err(CardViolation::UnsafeInteger("revision")));
    }

    #[test]
    fn serialized_size_bound_counts_escaping() {
        // Quotes double in size when escaped: 15 text blocks of 1024 quotes each fit
        // every string bound but not the card bound.
        let mut c = card();
        c.blocks = vec![
            Block::Text(TextBlock {
                text: "\"".repeat(1024),
                format: TextFormat::Plain,
                language: None,
            });
            15
        ];
        let bytes = serialized_len(&c);
        assert_eq!(bytes, serde_json::to_vec(&c).unwrap().len());
        assert!(bytes > CARD_BYTES);
        assert_eq!(validate(&c), Err(CardViolation::TooLarge { bytes }));
    }

    #[test]
    fn event_rules() {
        let mut e = live();
        e.part = 1;
        assert_eq!(validate_event(&e), Err(CardViolation::Part));
        let mut e = live();
        e.last_part = false;
        assert_eq!(validate_event(&e), Err(CardViolation::LastPart));
        let mut e = live();
        e.activity_id = "a2".to_owned();
        assert_eq!(validate_event(&e), Err(CardViolation::EventIdMismatch));
        let mut e = live();
        e.card.origin = Origin::Saved;
        assert_eq!(validate_event(&e), Err(CardViolation::Origin));
        let mut e = live();
        e.session_id = "a.b".to_owned();
        assert_eq!(validate_event(&e), Err(CardViolation::Scope));
        let mut e = live();
        e.card.title = "\u{1b}".to_owned();
        assert_eq!(validate_event(&e), Err(CardViolation::Control("title")));
    }

    #[test]
    fn saved_rules() {
        let saved: Card = serde_json::from_str(SAVED_EXAMPLE).unwrap();
        assert_eq!(
            validate_saved(&saved, "saved-a2"),
            Err(CardViolation::EventIdMismatch)
        );
        let mut c = saved.clone();
        c.origin = Origin::Live;
        assert_eq!(validate_saved(&c, "saved-a1"), Err(CardViolation::Origin));
        let mut c = saved.clone();
        c.revision = 1;
        assert_eq!(validate_saved(&c, "saved-a1"), Err(CardViolation::Saved));
        let mut c = saved;
        c.state = CardState::Running;
        c.outcome = None;
        assert_eq!(validate_saved(&c, "saved-a1"), Err(CardViolation::Saved));
    }

    #[test]
    fn reason_priority() {
        assert_eq!(strongest_reason([]), None);
        assert_eq!(
            strongest_reason([Reason::SizeLimit, Reason::BudgetLimit]),
            Some(Reason::BudgetLimit)
        );
        assert_eq!(
            strongest_reason([
                Reason::SizeLimit,
                Reason::NotRecorded,
                Reason::MissingSource,
                Reason::UnsupportedSource
            ]),
            Some(Reason::MissingSource)
        );
        assert_eq!(
            strongest_reason(Reason::PRIORITY.iter().rev().copied()),
            Some(Reason::Redacted)
        );
        for (rank, reason) in Reason::PRIORITY.iter().enumerate() {
            assert_eq!(reason.rank(), rank);
        }
    }

    #[test]
    fn merging_omissions() {
        use Reason::*;
        use Subject::*;
        let merged = merge_omissions([
            omission(Rows, SizeLimit, Some(2)),
            omission(Text, BudgetLimit, Some(10)),
            omission(Rows, UnsupportedSource, Some(3)),
            omission(Text, SizeLimit, None),
            omission(Ancestry, NotRecorded, None),
            omission(Rows, SizeLimit, Some(1)),
        ]);
        assert_eq!(
            merged,
            vec![
                omission(Rows, UnsupportedSource, Some(6)),
                omission(Text, BudgetLimit, None),
                omission(Ancestry, NotRecorded, None),
            ]
        );
        assert_eq!(
            omission(Rows, Redacted, Some(1)).merge(omission(Text, Redacted, Some(1))),
            None
        );
        assert_eq!(
            omission(Rows, Redacted, Some(MAX_SAFE_INTEGER)).merge(omission(
                Rows,
                Redacted,
                Some(1)
            )),
            Some(omission(Rows, Redacted, None))
        );
        assert_eq!(merge_omissions([]), vec![]);
    }

    fn string(max_chars: usize) -> impl Strategy<Value = String> {
        // Multi-byte scalars and characters JSON escapes, so byte bounds and escaping
        // are both exercised; at most 4 bytes each, so `4 * max_chars` bounds bytes.
        let chars = prop::sample::select(vec![
            'a', 'Z', '0', ' ', '.', '/', '"', '\\', '\n', '\t', 'é', '✓', '𝄞',
        ]);
        prop::collection::vec(chars, 0..=max_chars).prop_map(|v| v.into_iter().collect())
    }

    fn id_strategy() -> impl Strategy<Value = String> {
        "[A-Za-z0-9._-]{1,64}"
    }

    fn positive() -> impl Strategy<Value = u64> {
        prop_oneof![1..=10_000u64, Just(MAX_SAFE_INTEGER)]
    }

    fn count_strategy() -> impl Strategy<Value = u64> {
        prop_oneof![0..=10_000u64, Just(MAX_SAFE_INTEGER)]
    }

    fn lifecycle_strategy() -> impl Strategy<Value = (CardState, Option<CardOutcome>)> {
        prop_oneof![
            Just((CardState::Running, None)),
            prop::sample::select(vec![
                CardOutcome::Success,
                CardOutcome::Failure,
                CardOutcome::Cancelled,
                CardOutcome::Interrupted,
                CardOutcome::Unknown,
            ])
            .prop_map(|o| (CardState::Finished, Some(o))),
        ]
    }

    fn changes_strategy() -> impl Strategy<Value = Changes> {
        prop::sample::select(vec![
            Changes::NotApplicable,
            Changes::None,
            Changes::Applied,
            Changes::Partial,
            Changes::Unknown,
        ])
    }

    fn reason_strategy() -> impl Strategy<Value = Reason> {
        prop::sample::select(Reason::PRIORITY.to_vec())
    }

    fn diff_line_strategy() -> impl Strategy<Value = DiffLine> {
        use DiffLineKind::*;
        let kind = prop::sample::select(vec![
            FileHeader, HunkHeader, Context, Added, Removed, NoNewline,
        ]);
        (
            kind,
            string(24),
            prop::option::of(positive()),
            prop::option::of(positive()),
        )
            .prop_map(|(kind, text, old, new)| {
                let (old_line, new_line) = match kind {
                    Context => (old, new),
                    Added => (None, new),
                    Removed => (old, None),
                    FileHeader | HunkHeader | NoNewline => (None, None),
                };
                DiffLine {
                    kind,
                    text,
                    old_line,
                    new_line,
                }
            })
    }

    fn block_strategy() -> impl Strategy<Value = Block> {
        let text = (
            string(48),
            prop::sample::select(vec![TextFormat::Plain, TextFormat::Code]),
            prop::option::of(string(12)),
        )
            .prop_map(|(text, format, language)| {
                Block::Text(TextBlock {
                    text,
                    format,
                    language,
                })
            });
        let resource = (
            prop::sample::select(vec![
                ResourceKind::File,
                ResourceKind::Url,
                ResourceKind::Resource,
            ]),
            string(24),
            prop::option::of(string(24)),
            prop::sample::select(vec![
                ResourceAvailability::Available,
                ResourceAvailability::Unavailable,
                ResourceAvailability::Unknown,
            ]),
        )
            .prop_map(|(kind, label, location, availability)| ResourceRow {
                kind,
                label,
                location,
                availability,
            });
        let resources = prop::collection::vec(resource, 0..=6)
            .prop_map(|rows| Block::Resources(ResourcesBlock { rows }));
        let result = (
            string(24),
            prop::option::of(string(24)),
            prop::sample::select(vec![
                RowOutcome::Success,
                RowOutcome::Failure,
                RowOutcome::Partial,
                RowOutcome::Unknown,
            ]),
        )
            .prop_map(|(label, value, outcome)| ResultRow {
                label,
                value,
                outcome,
            });
        let results = prop::collection::vec(result, 0..=6)
            .prop_map(|rows| Block::Results(ResultsBlock { rows }));
        let command = (
            prop::option::of(string(48)),
            prop::option::of(string(24)),
            prop::option::of(any::<i32>()),
            prop::option::of(string(12)),
        )
            .prop_map(|(command, working_directory, exit_code, signal)| {
                Block::Command(CommandBlock {
                    command,
                    working_directory,
                    exit_code,
                    signal,
                })
            });
        let diff = (
            prop::option::of(string(24)),
            prop::option::of(string(24)),
            prop::sample::select(vec![
                DiffApplication::Proposed,
                DiffApplication::Applied,
                DiffApplication::Partial,
                DiffApplication::Unknown,
            ]),
            prop::collection::vec(diff_line_strategy(), 0..=8),
        )
            .prop_map(|(old_path, new_path, application, lines)| {
                Block::Diff(DiffBlock {
                    old_path,
                    new_path,
                    application,
                    lines,
                })
            });
        let child = (
            id_strategy(),
            prop::option::of(id_strategy()),
            string(24),
            lifecycle_strategy(),
            changes_strategy(),
        )
            .prop_map(
                |(activity_id, task_id, title, (state, outcome), changes)| Child {
                    activity_id,
                    task_id,
                    title,
                    state,
                    outcome,
                    changes,
                },
            );
        let children = (
            prop::collection::vec(child, 0..=6),
            prop::option::of(0..=100u64),
        )
            .prop_map(|(children, extra)| {
                let total = extra.map(|e| children.len() as u64 + e);
                Block::Children(ChildrenBlock { children, total })
            });
        let progress = (
            string(24),
            prop::option::of(count_strategy()),
            prop::option::of(count_strategy()),
            prop::sample::select(vec![
                ProgressUnit::Items,
                ProgressUnit::Bytes,
                ProgressUnit::Steps,
                ProgressUnit::Unknown,
            ]),
        )
            .prop_map(|(label, a, b, unit)| {
                let (completed, total) = match (a, b) {
                    (Some(a), Some(b)) => (Some(a.min(b)), Some(a.max(b))),
                    other => other,
                };
                Block::Progress(ProgressBlock {
                    label,
                    completed,
                    total,
                    unit,
                })
            });
        prop_oneof![text, resources, results, command, diff, children, progress]
    }

    fn card_strategy() -> impl Strategy<Value = Card> {
        // Parent IDs start with `p` and card IDs with `a`, so a card is never its own
        // parent (a cycle the validator refuses).
        let parent_id = || "p[A-Za-z0-9._-]{0,63}";
        let parent = prop_oneof![
            Just((ParentState::Root, None)),
            parent_id().prop_map(|p| (ParentState::Available, Some(p))),
            prop::option::of(parent_id()).prop_map(|p| (ParentState::Missing, p)),
            prop::option::of(parent_id()).prop_map(|p| (ParentState::Omitted, p)),
        ];
        let detail = prop_oneof![
            Just(Detail {
                availability: Availability::Complete,
                reason: None
            }),
            Just(Detail {
                availability: Availability::None,
                reason: None
            }),
            reason_strategy().prop_map(|r| Detail {
                availability: Availability::Truncated,
                reason: Some(r)
            }),
            reason_strategy().prop_map(|r| Detail {
                availability: Availability::Unavailable,
                reason: Some(r)
            }),
        ];
        let tool_kind = prop::sample::select(vec![
            ToolKind::Read,
            ToolKind::Search,
            ToolKind::Write,
            ToolKind::Edit,
            ToolKind::Command,
            ToolKind::Web,
            ToolKind::Mcp,
            ToolKind::CodeMode,
            ToolKind::Subagent,
            ToolKind::Other,
        ]);
        let metadata = (
            prop::option::of(string(24)),
            prop::option::of(string(24)),
            prop::option::of(string(24)),
            prop::sample::select(vec![
                ProtectionDecision::NotReported,
                ProtectionDecision::Allowed,
                ProtectionDecision::Blocked,
                ProtectionDecision::ApprovalRequired,
                ProtectionDecision::Denied,
            ]),
            prop::option::of(string(24)),
        )
            .prop_map(
                |(tool_name, resource_path, working_directory, decision, summary)| Metadata {
                    tool_name,
                    resource_path,
                    working_directory,
                    public_protection: PublicProtection { decision, summary },
                },
            );
        let subjects = vec![
            Subject::Title,
            Subject::Metadata,
            Subject::Blocks,
            Subject::Rows,
            Subject::Text,
            Subject::DiffLines,
            Subject::Children,
            Subject::Progress,
            Subject::Ancestry,
            Subject::Updates,
        ];
        let omissions =
            prop::sample::subsequence(subjects, 0..=Subject::COUNT).prop_flat_map(|subjects| {
                let n = subjects.len();
                (
                    Just(subjects),
                    prop::collection::vec(
                        (reason_strategy(), prop::option::of(count_strategy())),
                        n,
                    ),
                )
                    .prop_map(|(subjects, rest)| {
                        subjects
                            .into_iter()
                            .zip(rest)
                            .map(|(subject, (reason, omitted_count))| Omission {
                                subject,
                                reason,
                                omitted_count,
                            })
                            .collect::<Vec<_>>()
                    })
            });
        (
            (
                "a[A-Za-z0-9._-]{0,63}",
                parent,
                prop::option::of(id_strategy()),
                tool_kind,
            ),
            (
                lifecycle_strategy(),
                changes_strategy(),
                0..=MAX_SAFE_INTEGER,
            ),
            (
                prop::sample::select(vec![Origin::Live, Origin::Saved]),
                detail,
                string(48),
                metadata,
            ),
            prop::collection::vec(block_strategy(), 0..=6),
            omissions,
        )
            .prop_map(
                |(
                    (id, (parent_state, parent), task_id, tool_kind),
                    ((state, outcome), changes, revision),
                    (origin, detail, title, metadata),
                    blocks,
                    omissions,
                )| Card {
                    schema_version: SCHEMA_VERSION,
                    card_id: id.clone(),
                    activity_id: id,
                    parent_activity_id: parent,
                    parent_state,
                    task_id,
                    tool_kind,
                    state,
                    outcome,
                    changes,
                    revision,
                    origin,
                    detail,
                    title,
                    metadata,
                    blocks,
                    omissions,
                },
            )
    }

    proptest! {
        #[test]
        fn generated_cards_validate_fit_and_round_trip(card in card_strategy()) {
            prop_assert_eq!(validate(&card), Ok(()));
            let json = serde_json::to_string(&card).unwrap();
            prop_assert!(json.len() <= CARD_BYTES);
            prop_assert_eq!(json.len(), serialized_len(&card));
            let back: Card = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back, card);
        }

        #[test]
        fn breaking_a_bound_is_rejected(card in card_strategy(), which in 0..8usize) {
            let mut card = card;
            let filler = Block::Progress(ProgressBlock {
                label: String::new(),
                completed: None,
                total: None,
                unit: ProgressUnit::Unknown,
            });
            match which {
                0 => card.blocks.resize(BLOCKS_PER_CARD + 1, filler),
                1 => card.title = "a".repeat(TITLE_BYTES + 1),
                2 => card.schema_version = 2,
                3 => card.card_id.push('!'),
                4 => {
                    card.state = CardState::Running;
                    card.outcome = Some(CardOutcome::Success);
                }
                5 => {
                    card.omissions = vec![
                        omission(Subject::Rows, Reason::SizeLimit, None),
                        omission(Subject::Rows, Reason::Redacted, None),
                    ];
                }
                6 => card.revision = MAX_SAFE_INTEGER + 1,
                _ => card.blocks.push(Block::Results(ResultsBlock {
                    rows: vec![
                        ResultRow {
                            label: String::new(),
                            value: None,
                            outcome: RowOutcome::Unknown,
                        };
                        ROWS_PER_BLOCK + 1
                    ],
                })),
            }
            prop_assert!(validate(&card).is_err());
        }
    }
}
