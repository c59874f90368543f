//! The magi-code runtime. Today it admits a child: startup resolves storage, loads the
//! configuration and checks provider readiness. The agent runner grows here.

mod startup;

pub use startup::{CancelFlag, Runtime, StartupFailure, StartupRequest, start};
