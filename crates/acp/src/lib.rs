//! `magi-code acp`: an Agent Client Protocol (version 1) agent on stdin and stdout, for
//! editors such as Zed, JetBrains IDEs and Neovim.
//!
//! It is a front end like Mission Control and `exec`: each ACP session gets a backend of
//! its own — the same `magi-code serve --stdio` runtime, started in the session's folder
//! through the client library — and this crate translates between ACP and the
//! local-agent protocol (docs/acp.md). Stdout carries ACP messages only; anything said
//! about the connection goes to stderr.
//!
//! The parts: `transport` (bounded lines in, one writer out), `rpc` (JSON-RPC envelopes
//! and the agent's own requests), `agent` (the methods), `session` (one session's task
//! and backend), `prompt` (ACP content as the runtime's input), `tool_calls` (cards
//! as ACP tool calls), `plan` (the model's plan as ACP `plan` updates) and `mcp` (the
//! editor's MCP servers for a session's backend).

mod agent;
mod mcp;
mod plan;
mod prompt;
mod rpc;
mod session;
mod tool_calls;
mod transport;

use std::process::ExitCode;

/// Says why a backend refused `initialize` with `code` in `cwd`, started with the
/// variables `env` beyond this process's: what happened and what to do, from the
/// configuration (the command line's explanations; this crate sees only the client).
pub type Explain =
    fn(code: magi_protocol::ErrorCode, cwd: &std::path::Path, env: &[(String, String)]) -> String;

/// How backend refusals are explained, set once by [`run`].
static EXPLAIN: std::sync::OnceLock<Explain> = std::sync::OnceLock::new();

/// The explanation of a refused `initialize`, when [`run`] was given a way to make one.
pub(crate) fn explain(
    code: magi_protocol::ErrorCode,
    cwd: &std::path::Path,
    env: &[(String, String)],
) -> Option<String> {
    EXPLAIN.get().map(|explain| explain(code, cwd, env))
}

/// Serves ACP on this process's stdin and stdout until stdin ends; a backend that
/// refuses to start is explained with `explain`.
pub fn run(explain: Explain) -> ExitCode {
    let _ = EXPLAIN.set(explain);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("magi-code acp: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(agent::serve(tokio::io::stdin(), tokio::io::stdout()));
    ExitCode::SUCCESS
}
