//! `[models."provider/model"]`: what a person says about one model, overriding what the
//! catalog or the shipped table know of it (its context window, output limit and whether
//! it takes images), and the effort it gets when a selection asks for none.

use serde::Deserialize;

use magi_protocol::messages::Effort;

/// One `[models."provider/model"]` table. Every key is optional: one left out falls back
/// to the catalog's metadata, then to the shipped table, then to the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// The model's context window in tokens.
    pub context_window: Option<u64>,
    /// The most tokens one response of the model may have.
    pub max_output_tokens: Option<u64>,
    /// Whether the model takes images.
    pub images: Option<bool>,
    /// The effort a selection of the model that requests none gets, when the model
    /// takes it (over the top-level `effort`; `MAGI_EFFORT` wins over it).
    pub effort: Option<Effort>,
}
