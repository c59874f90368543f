//! `magi-code mcp`: the MCP servers defined for this directory, and their approval.
//!
//! A server runs only after its definition was approved here; the approval is global
//! (in `MC_HOME`) and names the definition's exact content and source.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use magi_config::{Env, McpSource};
use magi_core::StartupRequest;
use magi_core::mcp::{McpReview, ServerReview};

/// What `magi-code mcp --help` says it does.
pub const LONG_ABOUT: &str = "\
List the MCP servers defined for this directory (in the global and the project \
settings), approve or revoke them.

A server runs only after its definition was approved here, by a person: the backend \
never starts one on its own. The approval is global (kept in MC_HOME) and names the \
definition's exact content and source, so a changed definition needs approving again.";

/// What `magi-code mcp --help` ends with.
pub const AFTER_HELP: &str = "\
Examples:
  magi-code mcp list
  magi-code mcp approve github
  magi-code mcp revoke github
  magi-code mcp login tracker

More: docs/mcp.md.";

/// What `magi-code mcp` does.
#[derive(clap::Subcommand)]
pub enum McpCommand {
    /// List the servers defined for this directory and whether each may run.
    #[command(
        long_about = "List the MCP servers defined for this directory, one a line: its \
                      name, whether it may run (approved, needs approval, disabled), \
                      where it is defined (global or project), what it runs or reaches, \
                      and the start of its definition's digest.",
        after_help = "Example:\n  magi-code mcp list"
    )]
    List,
    /// Approve a server's current definition, so the backend connects it.
    #[command(
        long_about = "Approve a server's current definition, so backends started in this \
                      directory connect it. The approval names the definition's exact \
                      content: after a change, approve it again.",
        after_help = "Example:\n  magi-code mcp approve github"
    )]
    Approve {
        /// The server's name.
        name: String,
    },
    /// Withdraw the approval of a server's current definition.
    #[command(
        long_about = "Withdraw the approval of a server's current definition: backends \
                      started afterwards no longer connect it.",
        after_help = "Example:\n  magi-code mcp revoke github"
    )]
    Revoke {
        /// The server's name.
        name: String,
    },
    /// Sign in to a server that asks for it (`oauth` in its definition).
    #[command(
        long_about = "Sign in to an approved MCP server reached over HTTP whose definition \
                      has `oauth`: its authorization server is found from the server's \
                      metadata, a client is registered there unless the definition names \
                      one, and the sign-in is made in a browser (or with --device where the \
                      server offers it). The tokens are kept in MC_HOME; backends refresh \
                      them and never ask for a sign-in.",
        after_help = "Examples:\n  magi-code mcp login tracker\n  magi-code mcp login tracker --device"
    )]
    Login {
        /// The server's name.
        name: String,
        #[command(flatten)]
        flags: crate::login::Flags,
    },
    /// End a server's sign-in: revoke it where the server offers that, and delete it.
    #[command(after_help = "Example:\n  magi-code mcp logout tracker")]
    Logout {
        /// The server's name.
        name: String,
    },
}

/// Runs the command in the current directory.
pub fn run(command: McpCommand) -> ExitCode {
    match command {
        McpCommand::Login { name, flags } => return crate::login::mcp_login(&name, flags),
        McpCommand::Logout { name } => return crate::login::mcp_logout(&name),
        _ => {}
    }
    let request = StartupRequest {
        cwd: PathBuf::from("."),
        env: Env::from_process(),
    };
    let mut review = match McpReview::load(&request) {
        Ok(review) => review,
        Err(why) => return fail(&why),
    };
    let mut out = std::io::stdout().lock();
    let written = match command {
        McpCommand::List => {
            if review.servers.is_empty() {
                writeln!(out, "No MCP servers are defined for this directory.")
            } else {
                review
                    .servers
                    .iter()
                    .try_for_each(|server| writeln!(out, "{}", line(server)))
            }
        }
        McpCommand::Approve { name } | McpCommand::Revoke { name } if name.is_empty() => {
            return fail("a server name is needed");
        }
        McpCommand::Approve { name } => match review.set_approval(&name, true) {
            Ok(server) => writeln!(out, "approved: {}", line(server)),
            Err(why) => return fail(&why),
        },
        McpCommand::Revoke { name } => match review.set_approval(&name, false) {
            Ok(server) => writeln!(out, "revoked: {}", line(server)),
            Err(why) => return fail(&why),
        },
        McpCommand::Login { .. } | McpCommand::Logout { .. } => Ok(()),
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}

fn line(review: &ServerReview) -> String {
    let server = &review.server;
    let state = match (server.enabled, review.approved) {
        (false, _) => "disabled",
        (true, true) => "approved",
        (true, false) => "needs approval (magi-code mcp approve)",
    };
    let source = match server.source {
        McpSource::Global => "global",
        McpSource::Project => "project",
        McpSource::Client => "client",
    };
    format!(
        "{}\t{state}\t{source}\t{}\t{}",
        server.name,
        server.describe(),
        &review.digest[..12]
    )
}

fn fail(why: &str) -> ExitCode {
    eprintln!("magi-code mcp: {why}");
    ExitCode::FAILURE
}
