//! The magi-code runtime: startup (storage, configuration, provider readiness), the
//! owned sessions of a child and read-only session discovery. The agent runner grows
//! here.

pub mod discovery;
mod revision;
pub mod sessions;
mod startup;

pub use sessions::Sessions;
pub use startup::{CancelFlag, Runtime, StartupFailure, StartupRequest, start};
