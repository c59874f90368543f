//! magi-code's durable storage under `MC_HOME`: where things live, the session logs
//! (append-only JSONL, one file per session) and their bounded reads.

pub mod catalog;
mod fs;
pub mod history;
mod home;
mod layout;
pub mod lease;
pub mod log;
pub mod records;

pub use home::{CRASH_REPORTS_DIR, Home, HomeError, context_id, resolve_home_path};
pub use lease::{Lease, LeaseError, LeaseKind};
pub use log::{AppendError, Appender, LogFingerprint, ReadError, ReadLimits, StoredLog, read_log};
