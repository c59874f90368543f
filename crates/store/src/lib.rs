//! magi-code's durable storage under `MC_HOME`: where things live, and (as later
//! capabilities grow it) the session logs and their bounded reads.

mod home;

pub use home::{Home, HomeError, context_id, resolve_home_path};
