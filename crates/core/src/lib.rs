//! The magi-code runtime: startup (storage, configuration, provider readiness) and the
//! owned sessions of a child. The agent runner grows here.

pub mod sessions;
mod startup;

pub use sessions::Sessions;
pub use startup::{CancelFlag, Runtime, StartupFailure, StartupRequest, start};
