//! The `session.usage` extension: the `usage.updated` event after each model request of
//! a run, the `session.titled` event when a session's title is recorded, and
//! `session.compact`; and `usage.cache_writes`, which adds the tokens written to the
//! provider's prompt cache to `usage.updated` (docs/protocol/extensions.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::nullable;

/// Data of `usage.updated`: the tokens of one model request of the run, as the provider
/// reported them, and the context window it was held to. Every count is `null` when
/// unknown, never left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageUpdated {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// Input tokens, cached ones included.
    pub input_tokens: Option<u64>,
    /// Of the input tokens, those read from the provider's prompt cache.
    pub cached_input_tokens: Option<u64>,
    /// Output tokens, reasoning ones included.
    pub output_tokens: Option<u64>,
    /// Of the output tokens, those spent reasoning.
    pub reasoning_tokens: Option<u64>,
    /// The model's context window in tokens.
    pub context_window: Option<u64>,
    /// The tokens of the window the conversation fills after the request.
    pub context_used: Option<u64>,
    /// Of the input tokens, those written to the provider's prompt cache: present
    /// exactly when `usage.cache_writes` was negotiated, `null` when the provider did
    /// not say.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_write_tokens: Option<Option<u64>>,
}

/// Data of `session.titled`: the attached session's title was recorded (after a
/// turn, by a compaction, or by `magi_control`), so a client can show it at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionTitled {
    /// The session.
    pub session_id: String,
    /// The title as recorded, at most `title_chars` characters.
    pub title: String,
}

/// Params of `session.compact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionCompactParams {
    /// The attached session.
    pub session_id: String,
}

/// The result of `session.compact`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionCompactResult {
    /// Whether a summary now stands for the conversation; false when there was nothing
    /// to compact (no conversation, or only a summary already).
    pub compacted: bool,
    /// Errors of the session's `pre_compact` hooks (each at most
    /// `COMPACT_HOOK_ERROR_BYTES`, at most `HOOKS_PER_EVENT` of them), for the person:
    /// the compaction went on. Absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hook_errors: Vec<String>,
}

/// The `extensions["usage.cache_writes"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UsageCacheWritesDescriptor {
    /// Always 1.
    pub schema_version: u64,
}

impl UsageCacheWritesDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> UsageCacheWritesDescriptor {
        UsageCacheWritesDescriptor { schema_version: 1 }
    }
}

/// The `extensions["session.usage"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionUsageDescriptor {
    /// Always 1.
    pub schema_version: u64,
}

impl SessionUsageDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> SessionUsageDescriptor {
        SessionUsageDescriptor { schema_version: 1 }
    }
}
