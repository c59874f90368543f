//! The model catalog and the selection: `model.catalog`, `model.refresh`,
//! `model.catalog.status` and `selection.set`; and `model.cached`, which pages a
//! provider's cached model list (docs/protocol/extensions.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::present;

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

/// Params of `model.cached`: a fresh listing of `provider`'s cache (cursor null or
/// omitted) or the page after a cursor the listing issued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelCachedParams {
    /// The provider whose cached model list is paged (1–256 bytes).
    pub provider: String,
    /// The previous page's `next_cursor`; null (or omitted) for a fresh listing.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// One model of a provider's cached list, as `model.cached` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CachedModelEntry {
    /// The model ID exactly as the provider listed it.
    pub model: String,
    /// Its display name, when the list gave one that is safe to show.
    pub display_name: Option<String>,
    /// Whether `provider/model` is in `providers.catalog.enabled`.
    pub enabled: bool,
}

/// The result of `model.cached`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelCachedResult {
    /// The provider listed.
    pub provider: String,
    /// Its cache: the models are there only when it is `ready`.
    pub cache: CacheState,
    /// This page's models, in the cached list's order.
    pub models: Vec<CachedModelEntry>,
    /// The next page's cursor; null on the last page.
    pub next_cursor: Option<String>,
    /// Fixed notice codes.
    pub notices: Vec<String>,
}

/// The `extensions["model.cached"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModelCachedDescriptor {
    /// Always 1.
    pub schema_version: u64,
}

impl ModelCachedDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> ModelCachedDescriptor {
        ModelCachedDescriptor { schema_version: 1 }
    }
}
