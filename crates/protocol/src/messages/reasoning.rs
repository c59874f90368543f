//! The `reasoning.summaries` extension: a provider's reasoning summaries streamed as
//! they arrive, as best-effort `reasoning.delta` events.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Data of `reasoning.delta`, sent only with `reasoning.summaries` negotiated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningDelta {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The summary: run-scoped and opaque, one per reasoning item of the provider.
    pub summary_id: String,
    /// Delta part number, from 0, increasing per summary; a gap means a dropped delta.
    pub part: u64,
    /// Redacted summary text to append.
    pub text: String,
}

/// The `extensions["reasoning.summaries"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningSummariesDescriptor {
    /// Always 1.
    pub schema_version: u64,
}

impl ReasoningSummariesDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> ReasoningSummariesDescriptor {
        ReasoningSummariesDescriptor { schema_version: 1 }
    }
}
