//! The magi-code runtime: startup (storage, configuration, provider readiness), the
//! owned sessions of a child, read-only session discovery, and the agent runner.

mod agent;
pub mod approvals;
pub mod discovery;
mod revision;
pub mod runner;
pub mod sessions;
mod startup;

pub use agent::agent_for;
pub use sessions::Sessions;
pub use startup::{CancelFlag, Runtime, StartupFailure, StartupRequest, start};
