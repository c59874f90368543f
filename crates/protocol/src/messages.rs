//! Params, results and event data of the implemented methods and of run events.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, StartupError};
use crate::limits::Limits;

/// Params that must be exactly `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyParams {}

/// Params of `initialize`: exactly `{"required_capabilities": [...]}`, plus
/// `client_tools` when `client.tools` is required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitializeParams {
    /// Capabilities the client needs. At most 16 names (18 with `client.tools`),
    /// duplicates counted; each follows the name grammar. Gated capabilities work only
    /// when named here.
    pub required_capabilities: Vec<String>,
    /// The tools the client registers for this child's life; present exactly when
    /// `client.tools` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tools: Option<Vec<ClientToolDefinition>>,
}

/// A tool the client executes itself, registered at `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientToolDefinition {
    /// `[a-z][a-z0-9_]*`, 1–64 bytes, not a built-in tool's name.
    pub name: String,
    /// What the model is told it does, 1–1,024 bytes.
    pub description: String,
    /// The JSON Schema of its arguments: an object schema, at most 16 KiB serialized.
    pub parameters: serde_json::Value,
    /// Milliseconds the client has to answer a call, 1–600,000; 120,000 when omitted.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "u64", range(min = 1, max = 600000))]
    pub timeout_ms: Option<u64>,
}

/// The `extensions["client.tools"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolsDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// The registered tools' names, in registration order.
    pub tools: Vec<String>,
    /// Most serialized arguments of a call, in bytes.
    pub arguments_bytes: u64,
    /// Most bytes of a result's content.
    pub result_bytes: u64,
}

/// Data of `client.tool.call`: the client is to run one of its tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolCall {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call, as `client.tool.result` names it.
    pub call_id: String,
    /// The base activity of the call.
    pub activity_id: String,
    /// The registered tool.
    pub tool: String,
    /// The arguments the model gave (a JSON object).
    pub arguments: serde_json::Value,
    /// Milliseconds the client has to answer.
    pub timeout_ms: u64,
}

/// Why a client tool call was withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientToolCancelReason {
    /// The run was cancelled.
    Cancelled,
    /// No answer came in time.
    TimedOut,
}

/// Data of `client.tool.cancel`: the call no longer takes a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolCancel {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// Why.
    pub reason: ClientToolCancelReason,
}

/// How a client tool call ended, as the client reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientToolOutcome {
    /// It did what it was asked.
    Completed,
    /// It failed; `content` says why.
    Failed,
}

/// Params of `client.tool.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientToolResultParams {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// How it ended.
    pub outcome: ClientToolOutcome,
    /// What the model is given, at most 32 KiB.
    pub content: String,
}

/// The result of `client.tool.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolResultResult {
    /// Always true: this was the call's one result.
    pub recorded: bool,
}

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

/// Params of `model.catalog`: a fresh snapshot (revision and cursor both null or
/// omitted) or a continuation (both given).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelCatalogParams {
    /// The catalog revision being paged; null for a fresh snapshot.
    #[serde(default)]
    pub revision: Option<String>,
    /// The previous page's `next_cursor`; null for a fresh snapshot.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Most choices on the page, 1–100; 100 when omitted.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "u64", range(min = 1, max = 100))]
    pub limit: Option<u64>,
}

/// A reasoning effort value. No aliases, no case folding.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// No explicit override (not a prediction of the provider's default).
    Default,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// Extra high.
    Xhigh,
    /// Maximum.
    Max,
}

impl Effort {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Default => "default",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }
}

/// Whether a model's effort can be controlled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EffortSupport {
    /// The backend sends an explicit effort.
    Supported,
    /// The model takes no effort control.
    Unsupported,
    /// Nothing is known of it.
    Unknown,
}

/// Whether a catalog choice can be selected now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    /// Locally admitted (not remotely proven).
    Available,
    /// Its provider's credential is missing.
    AuthenticationUnavailable,
}

/// One choice of `model.catalog`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogChoice {
    /// A stable digest of the provider/model pair (64 hex characters).
    pub selection_id: String,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The provider's display name, when safe.
    pub provider_name: Option<String>,
    /// The model's display name, when safe.
    pub model_name: Option<String>,
    /// Whether it can be selected now.
    pub availability: Availability,
    /// Whether its effort can be controlled.
    pub effort_support: EffortSupport,
    /// The efforts a selection may request.
    pub permitted_efforts: Vec<Effort>,
}

/// The result of `model.catalog`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelCatalogResult {
    /// The catalog revision.
    pub revision: String,
    /// This page's choices, by provider then model.
    pub choices: Vec<CatalogChoice>,
    /// The next page's cursor; null on the last page.
    pub next_cursor: Option<String>,
    /// Whether every safely admitted cached choice was paged.
    pub complete: bool,
    /// Fixed notice codes.
    pub notices: Vec<String>,
    /// Always `cache_only`.
    pub source: CatalogSource,
}

/// Where catalog choices come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatalogSource {
    /// Validated local caches only; nothing was fetched.
    CacheOnly,
}

/// The `status.selection` object: the child's current selection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SelectionStatus {
    /// The selection revision (changes with every attachment and mutation).
    pub revision: String,
    /// The provider, when safe to show.
    pub provider: Option<String>,
    /// The model, when safe to show.
    pub model: Option<String>,
    /// The retained requested effort.
    pub requested_effort: Effort,
    /// The effort it resolves to; null when not applicable or unknown.
    pub effective_effort: Option<Effort>,
    /// Whether the model's effort can be controlled.
    pub effort_support: EffortSupport,
    /// The efforts a selection may request.
    pub permitted_efforts: Vec<Effort>,
}

/// How `selection.set` changes the requested effort: exactly `{"mode":"keep"}`,
/// `{"mode":"default"}` or `{"mode":"set","value":<effort>}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case", try_from = "RawEffortRequest")]
pub enum EffortRequest {
    /// Keep the previous requested effort.
    Keep,
    /// Reset to no explicit effort.
    Default,
    /// Request this explicit effort (not `default`: use the reset mode).
    Set {
        /// The effort.
        value: Effort,
    },
}

/// Params of `model.refresh`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelRefreshParams {
    /// The provider whose model list is fetched.
    pub provider: String,
}

/// The result of `model.refresh`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelRefreshResult {
    /// The provider refreshed.
    pub provider: String,
    /// Models now in its cache.
    pub cached_models: u64,
    /// Fixed notice codes.
    pub notices: Vec<String>,
}

/// The mode of an effort request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum EffortMode {
    Keep,
    Default,
    Set,
}

/// An effort request as written, checked into [`EffortRequest`]: serde's tagged enums
/// would let a `value` ride along with `keep`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawEffortRequest {
    mode: EffortMode,
    #[serde(default, deserialize_with = "present")]
    value: Option<Effort>,
}

impl TryFrom<RawEffortRequest> for EffortRequest {
    type Error = &'static str;

    fn try_from(raw: RawEffortRequest) -> Result<EffortRequest, &'static str> {
        match (raw.mode, raw.value) {
            (EffortMode::Keep, None) => Ok(EffortRequest::Keep),
            (EffortMode::Default, None) => Ok(EffortRequest::Default),
            (EffortMode::Set, Some(Effort::Default)) => Err("set/default: use mode default"),
            (EffortMode::Set, Some(value)) => Ok(EffortRequest::Set { value }),
            (EffortMode::Set, None) => Err("set needs a value"),
            (_, Some(_)) => Err("only set takes a value"),
        }
    }
}

/// Params of `selection.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectionSetParams {
    /// The attached session.
    pub session_id: String,
    /// The `status.selection` revision the client saw.
    pub selection_revision: String,
    /// The catalog revision the choice came from.
    pub catalog_revision: String,
    /// The provider.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The effort change; `keep` when omitted (null is not allowed).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub effort: Option<EffortRequest>,
}

/// The scope a selection applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SelectionScope {
    /// The attached session.
    Session,
}

/// The result of `selection.set`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SelectionSetResult {
    /// The attached session.
    pub session_id: String,
    /// The new selection, as `status` reports it from now on.
    pub selection: SelectionStatus,
    /// The catalog revision, unchanged.
    pub catalog_revision: String,
    /// Always `session`.
    pub scope: SelectionScope,
    /// Always true: only a durable append acknowledges a selection.
    pub durable: bool,
    /// The history revision after the preferences record; null when it could not be
    /// projected (reopen explicitly).
    pub history_revision: Option<String>,
    /// Fixed notice codes.
    pub notices: Vec<String>,
}

/// An optional field that is present must hold a value: `null` is not one (omission
/// is how a client leaves it out).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
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

/// Params of `model.catalog.status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogStatusParams {
    /// One provider; every relevant provider when omitted.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider: Option<String>,
}

/// The state of a provider's catalog cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheState {
    /// Valid and not empty.
    Ready,
    /// No cache file.
    Missing,
    /// A file that does not validate.
    Invalid,
    /// Valid, listing no model.
    Empty,
}

/// Whether a provider's credential is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthenticationState {
    /// Its credential is present.
    Available,
    /// Its required credential is absent.
    Unavailable,
    /// It takes none.
    NotRequired,
}

/// One provider of `model.catalog.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderCatalogStatus {
    /// The provider.
    pub provider: String,
    /// Its cache.
    pub cache: CacheState,
    /// Its credential.
    pub authentication: AuthenticationState,
    /// Its entries in `providers.catalog.enabled`.
    pub enabled_models: u64,
    /// Models in its cache.
    pub cached_models: u64,
    /// Fixed reason codes, in the documented order.
    pub reasons: Vec<String>,
}

/// The result of `model.catalog.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CatalogStatusResult {
    /// Providers by name.
    pub providers: Vec<ProviderCatalogStatus>,
    /// Fixed notice codes.
    pub notices: Vec<String>,
}

/// Params of `operation.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationCancelParams {
    /// The request ID of the operation to cancel.
    pub request_id: String,
}

/// The result of `operation.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OperationCancelResult {
    /// Whether that request's operation was running and was asked to stop.
    pub cancellation_requested: bool,
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

/// Params of `turn.start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnStartParams {
    /// The attached session.
    pub session_id: String,
    /// The prompt: non-blank, at most 16,384 UTF-8 bytes.
    pub prompt: String,
}

/// Params of `turn.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnCancelParams {
    /// The attached session.
    pub session_id: String,
    /// The active run.
    pub run_id: String,
}

/// Params of `approval.answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswerParams {
    /// The attached session.
    pub session_id: String,
    /// The active run.
    pub run_id: String,
    /// The approval being answered.
    pub approval_id: String,
    /// Whether the action is allowed.
    pub allow: bool,
}

/// The result of `turn.start`: admission only, not persistence or success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStartResult {
    /// The run's UUID.
    pub run_id: String,
    /// Always true.
    pub accepted: bool,
}

/// The result of `turn.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnCancelResult {
    /// Always true; the terminal event follows cleanup.
    pub cancellation_requested: bool,
}

/// The result of `approval.answer`: the one winning reply was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalAnswerResult {
    /// Always true.
    pub recorded: bool,
}

/// A request's method and params, tagged as the envelope carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum Call {
    /// `initialize`.
    #[serde(rename = "initialize")]
    Initialize(InitializeParams),
    /// `status`.
    #[serde(rename = "status")]
    Status(EmptyParams),
    /// `shutdown`.
    #[serde(rename = "shutdown")]
    Shutdown(EmptyParams),
    /// `session.create`.
    #[serde(rename = "session.create")]
    SessionCreate(EmptyParams),
    /// `session.open`.
    #[serde(rename = "session.open")]
    SessionOpen(SessionOpenParams),
    /// `session.list`.
    #[serde(rename = "session.list")]
    SessionList(SessionListParams),
    /// `history.page`.
    #[serde(rename = "history.page")]
    HistoryPage(HistoryPageParams),
    /// `turn.start`.
    #[serde(rename = "turn.start")]
    TurnStart(TurnStartParams),
    /// `turn.cancel`.
    #[serde(rename = "turn.cancel")]
    TurnCancel(TurnCancelParams),
    /// `approval.answer`.
    #[serde(rename = "approval.answer")]
    ApprovalAnswer(ApprovalAnswerParams),
}

/// The result of a successful `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    /// The sixteen base capabilities in the protocol's order, then negotiated extensions.
    pub capabilities: Vec<String>,
    /// Every bound of the protocol.
    pub limits: Limits,
    /// The child's status once ready.
    pub status: StatusResult,
    /// The descriptors of negotiated extensions; absent when none was negotiated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Extensions>,
}

/// The `extensions` object of an `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Extensions {
    /// The `tool.cards` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "tool.cards",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_cards: Option<crate::cards::ToolCardsDescriptor>,
    /// The `client.tools` descriptor, when negotiated.
    #[serde(
        rename = "client.tools",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_tools: Option<ClientToolsDescriptor>,
}

/// The lifecycle state reported by `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeState {
    /// Initialization was admitted and startup is running.
    Starting,
    /// Ready, with no active run.
    Idle,
    /// Ready, with an active run.
    Running,
    /// Startup failed; `readiness` holds the reason. Restart to retry.
    Failed,
}

/// Where startup is, while it runs or once it ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessPhase {
    /// Startup is running.
    Initializing,
    /// Locally configured: provider selected and credential present (not remotely proven).
    Ready,
}

/// `status.readiness`: a phase, or the startup error code after a failed startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Readiness {
    /// Initializing or ready.
    Phase(ReadinessPhase),
    /// The safe startup error code.
    Failed(StartupError),
}

/// The result of `status` (and the `status` inside the `initialize` result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusResult {
    /// Lifecycle state.
    pub state: RuntimeState,
    /// Startup phase or failure code.
    pub readiness: Readiness,
    /// The effective provider; null while starting or when unsafe to show.
    pub provider: Option<String>,
    /// The effective model; null while starting or when unsafe to show.
    pub model: Option<String>,
    /// The opaque context identity digest; null while starting.
    pub context_id: Option<String>,
    /// The attached session, if any.
    pub session_id: Option<String>,
    /// The active run, if any.
    pub run_id: Option<String>,
    /// The current selection; null while starting and after a failed startup.
    #[serde(default)]
    pub selection: Option<SelectionStatus>,
}

/// The state in a `shutdown` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StoppingState {
    /// No later input is admitted.
    Stopping,
}

/// The result of `shutdown`: exactly `{"state":"stopping"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShutdownResult {
    /// Always `stopping`.
    pub state: StoppingState,
}

/// Any method's result. Results are told apart by the request they answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ResultBody {
    /// `initialize`.
    Initialize(Box<InitializeResult>),
    /// `status`.
    Status(Box<StatusResult>),
    /// `shutdown`.
    Shutdown(ShutdownResult),
    /// `session.create`, `session.open`.
    Session(SessionResult),
    /// `history.page`.
    HistoryPage(HistoryPageResult),
    /// `turn.start`.
    TurnStart(TurnStartResult),
    /// `turn.cancel`.
    TurnCancel(TurnCancelResult),
    /// `approval.answer`.
    ApprovalAnswer(ApprovalAnswerResult),
    /// `session.list`.
    SessionList(SessionListResult),
    /// `model.catalog`.
    ModelCatalog(Box<ModelCatalogResult>),
    /// `selection.set`.
    SelectionSet(Box<SelectionSetResult>),
    /// `model.refresh`.
    ModelRefresh(ModelRefreshResult),
    /// `session.discover`.
    SessionDiscover(SessionDiscoverResult),
    /// `model.catalog.status`.
    CatalogStatus(CatalogStatusResult),
    /// `operation.cancel`.
    OperationCancel(OperationCancelResult),
    /// `client.tool.result`.
    ClientToolResult(ClientToolResultResult),
}

/// Data of `input.persisted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputPersisted {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The persisted input's message ID within `revision`.
    pub message_id: String,
    /// Always true.
    pub durable: bool,
    /// The history revision of the acknowledgement.
    pub revision: String,
}

/// Data of `message.delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageDelta {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The assistant segment.
    pub message_id: String,
    /// Delta part number, from 0, increasing per message; a gap means a dropped delta.
    pub part: u64,
    /// Redacted text to append.
    pub text: String,
}

/// Data of `message.reconcile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageReconcile {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The assistant segment.
    pub message_id: String,
    /// Reconciliation part number, from 0.
    pub part: u64,
    /// Authoritative text of this part.
    pub text: String,
    /// Whether this part completes the reconciliation.
    pub last_part: bool,
    /// Whether the segment itself is partial (failed or cancelled).
    pub partial: bool,
}

/// What an activity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    /// A tool call.
    Tool,
    /// A subagent.
    Subagent,
    /// A compaction.
    Compaction,
}

/// Where an activity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActivityState {
    /// Started.
    Started,
    /// Completed.
    Completed,
    /// Failed.
    Failed,
}

/// Data of `activity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Activity {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The activity, run-scoped.
    pub activity_id: String,
    /// What it is.
    pub kind: ActivityKind,
    /// Where it is.
    pub state: ActivityState,
    /// Its name (a tool name, a profile name).
    pub name: String,
    /// A safe summary, at most 1024 UTF-8 bytes; never raw params or results.
    pub summary: String,
}

/// Data of `approval.requested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRequested {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The approval, a run-scoped UUID.
    pub approval_id: String,
    /// A safe summary, at most 1024 UTF-8 bytes.
    pub summary: String,
    /// Time left before the approval expires and is denied.
    pub expires_in_ms: u64,
}

/// Data of `diagnostic`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// What kind of diagnostic this is.
    pub code: String,
    /// A redacted summary, at most 1024 UTF-8 bytes.
    pub summary: String,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// The model stopped on its own.
    Completed,
    /// Cancelled by the client, shutdown or end of input.
    Cancelled,
    /// Failed.
    Failed,
}

/// What of the run reached durable history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Persistence {
    /// Everything required was appended.
    Durable,
    /// The input was appended, something later was not.
    Degraded,
    /// Nothing was appended.
    NotStarted,
}

/// Data of `run.finished`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunFinished {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// How the run ended.
    pub outcome: RunOutcome,
    /// What reached durable history.
    pub persistence: Persistence,
    /// The history revision to page next; null means reopen to obtain history.
    pub revision: Option<String>,
    /// Why the run failed, if it did.
    pub error_code: Option<ErrorCode>,
}

/// A run event: its name and data, tagged as the event frame carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", content = "data")]
pub enum Event {
    /// `input.persisted`.
    #[serde(rename = "input.persisted")]
    InputPersisted(InputPersisted),
    /// `message.delta`.
    #[serde(rename = "message.delta")]
    MessageDelta(MessageDelta),
    /// `message.reconcile`.
    #[serde(rename = "message.reconcile")]
    MessageReconcile(MessageReconcile),
    /// `activity`.
    #[serde(rename = "activity")]
    Activity(Activity),
    /// `approval.requested`.
    #[serde(rename = "approval.requested")]
    ApprovalRequested(ApprovalRequested),
    /// `diagnostic`.
    #[serde(rename = "diagnostic")]
    Diagnostic(Diagnostic),
    /// `run.finished`.
    #[serde(rename = "run.finished")]
    RunFinished(RunFinished),
    /// `tool.card`, only with `tool.cards` negotiated.
    #[serde(rename = "tool.card")]
    ToolCard(Box<crate::cards::ToolCardEvent>),
    /// `client.tool.call`, only with `client.tools` negotiated.
    #[serde(rename = "client.tool.call")]
    ClientToolCall(Box<ClientToolCall>),
    /// `client.tool.cancel`, only with `client.tools` negotiated.
    #[serde(rename = "client.tool.cancel")]
    ClientToolCancel(ClientToolCancel),
}

/// Results and event data tolerate fields a later backend adds; params do not.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effort_requests_are_exact() {
        let parse = |effort: &str| {
            serde_json::from_str::<SelectionSetParams>(&format!(
                r#"{{"session_id":"s","selection_revision":"r","catalog_revision":"c","provider":"p","model":"m"{effort}}}"#
            ))
        };
        assert_eq!(parse("").unwrap().effort, None);
        assert_eq!(
            parse(r#","effort":{"mode":"keep"}"#).unwrap().effort,
            Some(EffortRequest::Keep)
        );
        assert_eq!(
            parse(r#","effort":{"mode":"set","value":"high"}"#)
                .unwrap()
                .effort,
            Some(EffortRequest::Set {
                value: Effort::High
            })
        );
        for bad in [
            r#","effort":null"#,
            r#","effort":{"mode":"keep","value":"high"}"#,
            r#","effort":{"mode":"default","value":"low"}"#,
            r#","effort":{"mode":"set"}"#,
            r#","effort":{"mode":"set","value":null}"#,
            r#","effort":{"mode":"set","value":"HIGH"}"#,
            r#","effort":{"mode":"turbo"}"#,
            r#","effort":{"mode":"set","value":"high","x":1}"#,
            r#","extra":1"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn params_are_exact_and_results_tolerate_additions() {
        assert!(serde_json::from_str::<EmptyParams>(r#"{"x":1}"#).is_err());
        assert!(
            serde_json::from_str::<InitializeParams>(r#"{"required_capabilities":[],"x":1}"#)
                .is_err()
        );
        let status = r#"{"state":"failed","readiness":"provider_unavailable","provider":null,"model":null,"context_id":null,"session_id":null,"run_id":null,"selection":null}"#;
        let status: StatusResult = serde_json::from_str(status).unwrap();
        assert_eq!(
            status.readiness,
            Readiness::Failed(StartupError::ProviderUnavailable)
        );
        assert!(serde_json::from_str::<Readiness>(r#""maybe""#).is_err());
    }

    #[test]
    fn session_list_params_are_exact() {
        let parse = serde_json::from_str::<SessionListParams>;
        assert_eq!(parse("{}").unwrap(), SessionListParams::default());
        let all = parse(r#"{"revision":"r","cursor":"c","limit":5}"#).unwrap();
        assert_eq!(
            (all.revision.as_deref(), all.cursor.as_deref(), all.limit),
            (Some("r"), Some("c"), Some(5))
        );
        let nulls = parse(r#"{"revision":null,"cursor":null}"#).unwrap();
        assert_eq!(nulls, SessionListParams::default());
        for bad in [
            r#"{"limit":null}"#,
            r#"{"limit":-1}"#,
            r#"{"limit":1.5}"#,
            r#"{"limit":"1"}"#,
            r#"{"revision":1}"#,
            r#"{"x":1}"#,
            r#"{"limit":1,"limit":2}"#,
            r#"{"cursor":null,"cursor":null}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
