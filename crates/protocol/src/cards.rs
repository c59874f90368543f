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

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

mod blocks;
mod card;
mod kinds;
mod styles;
#[cfg(test)]
mod tests;
mod validate;

pub use blocks::*;
pub use card::*;
pub use kinds::*;
pub use styles::*;
pub use validate::*;

/// The capability name a client requests to receive cards.
pub const CAPABILITY: &str = crate::names::Extension::ToolCards.as_str();
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
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}
