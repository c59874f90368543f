//! Sessions and their history: `session.open`, `session.list`, `session.discover`,
//! `history.page` and the saved entries they return.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::present;

/// Params of `session.open`: exactly `{"session_id": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionOpenParams {
    /// The exact session ID: `[A-Za-z0-9_-]`, 1–64 bytes.
    pub session_id: String,
}

/// Params of `history.page`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryPageParams {
    /// The attached session.
    pub session_id: String,
    /// The history revision being paged.
    pub revision: String,
    /// Null (or omitted) for the first page, else the previous page's `next_cursor`.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// Params of `session.list`: `{"revision", "cursor", "limit"}`, each optional.
///
/// Revision and cursor are both null (or omitted) for a fresh listing, or both set to
/// continue one. `limit` is 1–100 and defaults to 100; a null `limit` is refused, as
/// the protocol types it an integer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionListParams {
    /// The discovery revision being paged; null for a fresh listing.
    #[serde(default)]
    pub revision: Option<String>,
    /// The previous page's `next_cursor`; null for a fresh listing.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most sessions on the page, 1–100; 100 when omitted.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "u64", range(min = 1, max = 100))]
    pub limit: Option<u64>,
}

/// Whether a listed session can be opened now, as far as discovery can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Eligibility {
    /// Every recorded working directory is this child's, and no other owner's lease
    /// file is present.
    Available,
    /// The session records no working directory (an older log): not verified.
    CwdUnverified,
    /// A writer, active or append lease file of another owner is present.
    Busy,
}

/// One session of a `session.list` page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionListEntry {
    /// The exact session ID.
    pub session_id: String,
    /// The stored title, sanitized and at most 50 characters; null when missing or unsafe.
    pub title: Option<String>,
    /// The greatest stored record timestamp, UTC RFC 3339; null for an empty history.
    pub updated_at: Option<String>,
    /// Whether the session can be opened now, as far as discovery can tell.
    pub eligibility: Eligibility,
    /// Fixed notice codes, e.g. `cwd_unverified`.
    pub notices: Vec<String>,
}

/// The result of `session.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionListResult {
    /// The discovery revision this page belongs to.
    pub revision: String,
    /// Sessions in ascending ASCII order of their IDs.
    pub sessions: Vec<SessionListEntry>,
    /// The cursor of the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// True only on the last page.
    pub complete: bool,
    /// Fixed notice codes of the whole listing, e.g. `sessions_omitted_invalid`.
    pub notices: Vec<String>,
}

/// Params of `session.discover`: a new pass (null cursor) or its continuation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionDiscoverParams {
    /// The previous call's `next_cursor`; null starts a new pass.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most sessions in this batch, 1–100; 100 when omitted.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "u64", range(min = 1, max = 100))]
    pub limit: Option<u64>,
}

/// The result of `session.discover`: one batch of a pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionDiscoverResult {
    /// The sessions of this batch, in ascending ID order, entries as in `session.list`.
    pub sessions: Vec<SessionListEntry>,
    /// The cursor of the next batch; null when the pass reached the folder's end.
    pub next_cursor: Option<String>,
    /// Whether this pass has visited every name of the folder.
    pub complete: bool,
    /// Always true: each batch is its own snapshot.
    pub provisional: bool,
    /// Fixed notice codes.
    pub notices: Vec<String>,
}

/// The result of `session.create` and `session.open`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionResult {
    /// The attached session.
    pub session_id: String,
    /// Whether the session has a durable log (false for a lazy handle).
    pub durable: bool,
    /// The history revision of the attachment.
    pub revision: String,
    /// Fixed notice codes, e.g. `cwd_unverified`.
    pub notices: Vec<String>,
}

/// What a history entry shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// The user's prompt.
    User,
    /// An assistant segment.
    Assistant,
    /// A provider-marked reasoning summary.
    ReasoningSummary,
    /// A tool call's summary.
    Activity,
    /// A compaction summary.
    Compaction,
    /// A diagnostic, e.g. an interrupted turn.
    Diagnostic,
}

/// One part of one history message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryEntry {
    /// The message, scoped to the session and revision.
    pub message_id: String,
    /// What it shows.
    pub kind: EntryKind,
    /// This part's sanitized text.
    pub text: String,
    /// Whether the message is partial (interrupted, failed, cancelled, started only).
    pub partial: bool,
    /// Part number, from 0; concatenate contiguous parts of the same message.
    pub part: u64,
    /// Whether this is the message's last part.
    pub last_part: bool,
    /// With `tool.cards` negotiated, an activity's `part=0` carries its saved card, or
    /// null when the activity cannot be mapped safely; absent everywhere else.
    #[serde(default, skip_serializing_if = "SavedCard::is_absent")]
    pub tool_card: SavedCard,
}

/// The `tool_card` field of a history entry: absent, null, or a card.
#[derive(Debug, Clone, Default, PartialEq, Eq, JsonSchema)]
pub enum SavedCard {
    /// The field is not sent (cards not negotiated, not an activity, a later part).
    #[default]
    Absent,
    /// `null`: the activity cannot be mapped to a card safely.
    Null,
    /// The saved card.
    Card(Box<crate::cards::Card>),
}

impl SavedCard {
    /// Whether the field is left out.
    pub fn is_absent(&self) -> bool {
        matches!(self, SavedCard::Absent)
    }
}

impl Serialize for SavedCard {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SavedCard::Absent | SavedCard::Null => serializer.serialize_none(),
            SavedCard::Card(card) => serializer.serialize_some(card),
        }
    }
}

impl<'de> Deserialize<'de> for SavedCard {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<SavedCard, D::Error> {
        // Present: null or a card (absent fields take the default instead).
        Ok(
            match Option::<crate::cards::Card>::deserialize(deserializer)? {
                Some(card) => SavedCard::Card(Box::new(card)),
                None => SavedCard::Null,
            },
        )
    }
}

/// The result of `history.page`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryPageResult {
    /// The attached session.
    pub session_id: String,
    /// The revision paged.
    pub revision: String,
    /// Entries in stored order.
    pub entries: Vec<HistoryEntry>,
    /// The cursor of the next page; null on the last page.
    pub next_cursor: Option<String>,
    /// True only on the last page of a complete projection.
    pub complete: bool,
}
