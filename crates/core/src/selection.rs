//! The child's current provider, model and requested effort, and its revision.
//!
//! Startup admits the environment's or the settings' selection with no effort
//! override. Every successful attachment or deliberate mutation gets a fresh revision,
//! so a client that read `status.selection` can tell its view went stale. The selection
//! is memory only: reading it never touches the network, the catalog or a file.

use magi_config::{EffortControl, EffortProfile, ProviderDefinition, effort_profile};
use magi_protocol::messages::{Effort, SelectionStatus};
use magi_protocol::text::safe_display_name;
use magi_provider::Reasoning;

use crate::startup::Runtime;

/// The selection turns use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveSelection {
    /// The provider, resolved with its endpoint and credential source.
    pub provider: ProviderDefinition,
    /// The model.
    pub model: String,
    /// The requested effort, kept even when it no longer applies.
    pub requested_effort: Effort,
    /// The opaque revision clients compare.
    pub revision: String,
}

impl ActiveSelection {
    /// The selection startup admitted, with no effort override.
    pub fn from_runtime(runtime: &Runtime) -> ActiveSelection {
        ActiveSelection {
            provider: runtime.selection.provider.clone(),
            model: runtime.selection.model.clone(),
            requested_effort: Effort::Default,
            revision: fresh_revision(),
        }
    }

    /// The built-in effort profile of the selected model.
    pub fn profile(&self) -> EffortProfile {
        effort_profile(&self.provider, &self.model)
    }

    /// The effort the selection resolves to: its requested one, or for `default` the
    /// configured default effort (`MAGI_EFFORT`, the model's, the global one) where the
    /// model takes it; none where effort is unsupported or unknown.
    pub fn effective_effort(&self) -> Option<Effort> {
        let fallback = self.provider.default_efforts.of(&self.model);
        self.profile().effective(self.requested_effort, fallback)
    }

    /// How the selection's requests ask the model to reason: the effort in the terms of
    /// its provider's format, and for an OpenAI reasoning model its encrypted reasoning
    /// kept whatever the effort. None leaves the provider's default (an Anthropic model
    /// given no effort does not think).
    pub fn reasoning(&self) -> Option<Reasoning> {
        let effort = self
            .effective_effort()
            .filter(|effort| *effort != Effort::Default);
        match self.profile().control {
            EffortControl::Responses => Some(Reasoning::Responses { effort }),
            EffortControl::Chat => effort.map(|effort| Reasoning::Chat { effort }),
            EffortControl::AnthropicBudget => {
                effort.map(|effort| Reasoning::AnthropicBudget { effort })
            }
            EffortControl::AnthropicAdaptive => {
                effort.map(|effort| Reasoning::AnthropicAdaptive { effort })
            }
            EffortControl::None => None,
        }
    }

    /// `status.selection`.
    pub fn status(&self) -> SelectionStatus {
        let profile = self.profile();
        SelectionStatus {
            revision: self.revision.clone(),
            provider: safe_display_name(&self.provider.name).map(str::to_owned),
            model: safe_display_name(&self.model).map(str::to_owned),
            requested_effort: self.requested_effort,
            effective_effort: self.effective_effort(),
            effort_support: profile.support,
            permitted_efforts: profile.permitted,
        }
    }
}

/// A fresh selection revision: `s` and 32 random hex digits.
pub fn fresh_revision() -> String {
    format!("s{}", uuid::Uuid::new_v4().simple())
}
