//! The child's current provider, model and requested effort, and its revision.
//!
//! Startup admits the environment's or the settings' selection with no effort
//! override. Every successful attachment or deliberate mutation gets a fresh revision,
//! so a client that read `status.selection` can tell its view went stale. The selection
//! is memory only: reading it never touches the network, the catalog or a file.

use magi_config::{EffortProfile, ProviderDefinition, effort_profile};
use magi_protocol::messages::{Effort, SelectionStatus};
use magi_protocol::text::safe_display_name;

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
        effort_profile(self.provider.kind, &self.model)
    }

    /// The explicit effort a request carries: only a supported, permitted, non-default
    /// one.
    pub fn request_effort(&self) -> Option<Effort> {
        self.profile()
            .effective(self.requested_effort)
            .filter(|effort| *effort != Effort::Default)
    }

    /// `status.selection`.
    pub fn status(&self) -> SelectionStatus {
        let profile = self.profile();
        SelectionStatus {
            revision: self.revision.clone(),
            provider: safe_display_name(&self.provider.name).map(str::to_owned),
            model: safe_display_name(&self.model).map(str::to_owned),
            requested_effort: self.requested_effort,
            effective_effort: profile.effective(self.requested_effort),
            effort_support: profile.support,
            permitted_efforts: profile.permitted,
        }
    }
}

/// A fresh selection revision: `s` and 32 random hex digits.
pub fn fresh_revision() -> String {
    format!("s{}", uuid::Uuid::new_v4().simple())
}
