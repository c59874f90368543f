//! Reasoning effort: the values the protocol names, and the built-in profiles that say
//! which a model accepts.
//!
//! A profile is this backend's own policy, not a guess at a provider's remote default:
//! a model gets an explicit effort only where the backend sends one. OpenAI's reasoning
//! models (the `o` series and `gpt-5`) take `reasoning.effort` low, medium or high over
//! the Responses API; every other model of a known hosted provider takes none
//! (`unsupported`); an OpenAI-compatible server's models are `unknown`. `default`
//! (no override) is always permitted.

pub use magi_protocol::messages::{Effort, EffortSupport};

use crate::provider_kind::ProviderKind;

/// What a model accepts: its support and the efforts a selection may request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffortProfile {
    /// Whether effort can be controlled.
    pub support: EffortSupport,
    /// The permitted requests, `default` first.
    pub permitted: Vec<Effort>,
}

impl EffortProfile {
    /// The effort a request resolves to: the requested one when supported and
    /// permitted, none (null) otherwise. `default` resolves to `default` when supported.
    pub fn effective(&self, requested: Effort) -> Option<Effort> {
        match self.support {
            EffortSupport::Supported if self.permitted.contains(&requested) => Some(requested),
            EffortSupport::Supported => Some(Effort::Default),
            EffortSupport::Unsupported | EffortSupport::Unknown => None,
        }
    }
}

/// The built-in profile of `model` at a provider of `kind`.
pub fn profile(kind: ProviderKind, model: &str) -> EffortProfile {
    let reasoning_family = ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|family| model == *family || model.starts_with(&format!("{family}-")));
    match kind {
        // Every model ChatGPT's Codex backend serves reasons.
        ProviderKind::OpenAi if reasoning_family => EffortProfile {
            support: EffortSupport::Supported,
            permitted: vec![Effort::Default, Effort::Low, Effort::Medium, Effort::High],
        },
        ProviderKind::Codex => EffortProfile {
            support: EffortSupport::Supported,
            permitted: vec![Effort::Default, Effort::Low, Effort::Medium, Effort::High],
        },
        ProviderKind::OpenAi | ProviderKind::Anthropic => EffortProfile {
            support: EffortSupport::Unsupported,
            permitted: vec![Effort::Default],
        },
        ProviderKind::OpenAiChat => EffortProfile {
            support: EffortSupport::Unknown,
            permitted: vec![Effort::Default],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_follow_what_the_backend_sends() {
        let o3 = profile(ProviderKind::OpenAi, "o3-mini");
        assert_eq!(o3.support, EffortSupport::Supported);
        assert_eq!(o3.effective(Effort::High), Some(Effort::High));
        assert_eq!(o3.effective(Effort::Max), Some(Effort::Default));
        let gpt4 = profile(ProviderKind::OpenAi, "gpt-4.1");
        assert_eq!(gpt4.support, EffortSupport::Unsupported);
        assert_eq!(gpt4.permitted, vec![Effort::Default]);
        assert_eq!(gpt4.effective(Effort::Default), None);
        assert_eq!(
            profile(ProviderKind::OpenAi, "o30-lookalike").support,
            EffortSupport::Unsupported
        );
        assert_eq!(
            profile(ProviderKind::OpenAiChat, "qwen").support,
            EffortSupport::Unknown
        );
        assert_eq!(
            profile(ProviderKind::Anthropic, "claude-sonnet-4").support,
            EffortSupport::Unsupported
        );
    }
}
