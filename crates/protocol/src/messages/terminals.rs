//! `client.terminals`: the backend asks its client to run a `bash` call's command in a
//! terminal of the client's own (an editor's, over ACP) and waits for its end
//! (docs/protocol/client-terminals.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ClientToolCancelReason;

/// The `extensions["client.terminals"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientTerminalsDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// Most bytes of a result's `output`.
    pub output_bytes: u64,
}

impl ClientTerminalsDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> ClientTerminalsDescriptor {
        ClientTerminalsDescriptor {
            schema_version: 1,
            output_bytes: crate::limits::CLIENT_TERMINAL_OUTPUT_BYTES as u64,
        }
    }
}

/// Data of `client.terminal.run`: the client is to run a command in its terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientTerminalRun {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call, as `client.terminal.result` names it.
    pub call_id: String,
    /// The base activity of the call.
    pub activity_id: String,
    /// The command line, for the user's shell (`sh -c`).
    pub command: String,
    /// The absolute folder it runs in.
    pub cwd: String,
    /// Milliseconds it may run before the client kills it and answers `timed_out`.
    pub timeout_ms: u64,
    /// Most bytes of output the client keeps (the last ones) and answers with.
    pub output_bytes: u64,
}

/// How a client terminal's command ended, as the client reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientTerminalOutcome {
    /// It exited, or a signal ended it.
    Exited,
    /// Its `timeout_ms` passed: the client killed it.
    TimedOut,
    /// The terminal could not run it; `output` says why.
    Failed,
}

/// Params of `client.terminal.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientTerminalResultParams {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// How it ended.
    pub outcome: ClientTerminalOutcome,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<String>,
    /// Its output (the last bytes the terminal kept), at most 32 KiB; for `failed`, why.
    pub output: String,
    /// Whether the terminal dropped earlier output.
    pub truncated: bool,
}

/// Data of `client.terminal.cancel`: the call no longer takes a result; the client
/// kills the command and releases its terminal.
pub type ClientTerminalCancel = super::ClientToolCancel;

/// Why a terminal call was withdrawn.
pub type ClientTerminalCancelReason = ClientToolCancelReason;
