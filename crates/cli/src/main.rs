//! `magi-code`: the backend (`serve --stdio`) and the commands people run.

mod doctor;
mod exec;
mod explain;
mod mcp;
mod tui;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use magi_config::Env;
use magi_core::{StartupRequest, launcher};

/// Exit status of an invalid launch.
const EXIT_INVALID_LAUNCH: u8 = 2;

#[derive(Parser)]
#[command(name = "magi-code", version, about = "A local coding agent")]
struct Cli {
    /// Without a command, in a terminal: Mission Control, the interactive client.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the magi-code.local-agent protocol on standard input and output (pipes only).
    #[command(disable_help_flag = true)]
    Serve {
        /// Serve over inherited stdin/stdout pipes; the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Show the configuration in use and where each part comes from, then check it
    /// (exit status 1 when something is broken).
    Doctor {
        /// Also reach the provider: its model list, or a minimal request.
        #[arg(long)]
        online: bool,
        /// Print one JSON object (facts, checks, ok) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the MCP servers defined for this directory, approve or revoke them.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Run one turn in the current directory and print the reply as it streams.
    Exec {
        /// Print the protocol's event frames as JSON lines.
        #[arg(long)]
        json: bool,
        /// Run every tool call without asking, for this run only (deny and ask rules
        /// in settings still apply).
        #[arg(long)]
        allow_all: bool,
        /// The prompt.
        prompt: String,
    },
}

fn main() -> ExitCode {
    // A command the backend starts runs under this program as its launcher; that is
    // decided before anything else, and never by the command line parser.
    let mut arguments = std::env::args_os().skip(1);
    if arguments.next().as_deref() == Some(launcher::LAUNCH_ARGUMENT.as_ref()) {
        return launcher::main(arguments);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                EXIT_INVALID_LAUNCH
            } else {
                0
            });
        }
    };
    match cli.command {
        None => {
            use std::io::IsTerminal;
            if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
                tui::run()
            } else {
                eprintln!(
                    "magi-code: Mission Control needs a terminal; see `magi-code --help` \
                     for the commands"
                );
                ExitCode::from(EXIT_INVALID_LAUNCH)
            }
        }
        Some(Command::Serve { stdio: true }) => serve(),
        Some(Command::Serve { stdio: false }) => {
            eprintln!("magi-code: serve requires --stdio");
            ExitCode::from(EXIT_INVALID_LAUNCH)
        }
        Some(Command::Doctor { online, json }) => doctor::run(online, json),
        Some(Command::Mcp(command)) => mcp::run(command),
        Some(Command::Exec {
            json,
            allow_all,
            prompt,
        }) => exec::run(&prompt, json, allow_all),
    }
}

fn serve() -> ExitCode {
    if let Err(e) = magi_server::launch::check_stdio_pipes() {
        eprintln!("magi-code: {e}");
        return ExitCode::from(EXIT_INVALID_LAUNCH);
    }
    // `/proc/self/exe` rather than the path this program was started by: it names this
    // very executable even when the file was replaced or removed since.
    if let Err(e) = launcher::enable(PathBuf::from("/proc/self/exe")) {
        eprintln!(
            "magi-code: warning: commands will not be stopped if the backend is killed: \
             cannot make the lifeline pipe: {e}"
        );
    }
    let status = magi_server::serve_stdio(StartupRequest {
        cwd: PathBuf::from("."),
        env: Env::from_process(),
    });
    // Exit at once: teardown still running after the cleanup wait is detached.
    std::process::exit(status)
}
