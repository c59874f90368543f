//! The magi-code runtime: startup (storage, configuration, provider readiness), the
//! owned sessions of a child, read-only session discovery, and the agent runner.

mod agent;
pub mod answer_gate;
pub mod approvals;
pub mod cards;
pub mod catalog;
pub mod checkpoints;
pub mod client_files;
pub mod client_terminals;
pub mod client_tools;
pub mod discovery;
mod explain;
pub mod fault;
pub mod hooks;
pub mod inspect;
mod invocation;
pub mod mcp;
pub mod model_limits;
mod paging;
pub mod permission_modes;
mod prompt;
pub mod questions;
mod revision;
pub mod runner;
pub mod saved_cards;
pub mod selection;
pub mod sessions;
pub mod sign_in;
mod startup;
mod workspace;

pub use agent::{agent_for, credential_values};
pub use explain::{explain_configuration, explain_startup};
pub use invocation::{INVOCATION_ENV, Invocation, TitleTiming};
/// How every command the backend starts dies with it: see [`magi_tools::launcher`].
pub use magi_tools::launcher;
/// The workspace walk the search tools use, for a front end that lists the same files
/// (Mission Control's `@` mentions).
pub use magi_tools::walker;

/// Kills every background job the agent started: the backend is ending, and its jobs
/// end with it.
pub fn stop_background_jobs() {
    magi_tools::stop_background_jobs();
}
pub use magi_store::CRASH_REPORTS_DIR;
pub use sessions::Sessions;
pub use startup::{ALLOW_ALL_ENV, PERMISSION_MODE_ENV, Runtime, StartupFailure, start};
pub use workspace::{CancelFlag, StartupRequest, home_path};

/// Whether this build has a built-in tool of that name, or reserves it for MCP tools
/// (client tools may not take it).
pub fn is_built_in_tool(name: &str) -> bool {
    magi_tools::exists(name)
        || name == runner::SKILL_TOOL
        || name == magi_config::TASK_TOOL
        || name == questions::ASK_USER_TOOL
        || name.starts_with(mcp::MCP_TOOL_PREFIX)
}
