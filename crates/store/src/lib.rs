//! magi-code's durable storage under `MC_HOME`: where things live, the session logs
//! (append-only JSONL, one file per session) and their bounded reads.

pub mod history;
mod home;
pub mod records;

pub use home::{Home, HomeError, context_id, resolve_home_path};
