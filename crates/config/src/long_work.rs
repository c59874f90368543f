//! `[context]` and `[turns]`: how a long turn keeps its context small and when it stops.

use serde::Deserialize;

/// Tokens of the newest tool output kept whole in the model's context by default.
pub const DEFAULT_PRUNE_PROTECT_TOKENS: usize = 40_000;

/// `[context]`: what the model is sent of older tool output.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextSettings {
    /// Tokens of tool output, newest first, kept whole in every model request; older
    /// results are replaced by a one-line stub. `0` turns pruning off.
    #[serde(default = "default_protect")]
    pub prune_protect_tokens: usize,
}

fn default_protect() -> usize {
    DEFAULT_PRUNE_PROTECT_TOKENS
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            prune_protect_tokens: DEFAULT_PRUNE_PROTECT_TOKENS,
        }
    }
}

/// `[turns]`: an optional bound on a turn's model round trips.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnSettings {
    /// Most model round trips one turn may take; without it a turn runs as long as the
    /// model keeps working (loop detection, cancellation and the session's bounds still
    /// stop it).
    #[serde(default)]
    pub max_steps: Option<usize>,
}
