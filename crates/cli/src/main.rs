//! `magi-code`: the backend (`serve --stdio`) and the commands people run.

mod attach;
mod doctor;
mod exec;
mod explain;
mod hooks;
mod login;
mod mcp;
mod tui;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use magi_config::Env;
use magi_core::{StartupRequest, launcher};

/// Exit status of an invalid launch.
const EXIT_INVALID_LAUNCH: u8 = 2;

/// What `magi-code --help` says first: the interactive client.
const LONG_ABOUT: &str = "\
magi-code is a local coding agent.

Run `magi-code` with no arguments in a terminal to open Mission Control, the \
interactive client: type a prompt and press Enter, watch the reply and the tool calls \
stream in, answer the approvals it asks for; Esc stops a turn, /help lists the \
commands, Ctrl-C twice on an empty prompt quits. `magi-code --continue` reopens this \
directory's newest session, `magi-code --resume ID` a given one.

The commands below are for everything else: one turn from a script (exec), what a \
backend would use (doctor), signing in (login, logout), MCP server approvals and \
sign-ins (mcp), hook approvals (hooks), and the backend itself, which a client spawns \
(serve).";

const AFTER_HELP: &str = "\
Examples:
  magi-code                                    Mission Control, in this directory
  magi-code --continue                         Mission Control on this directory's newest session
  magi-code exec \"What does src/main.rs do?\"   one turn; the reply on stdout
  magi-code doctor                             the provider and model a backend would use
  magi-code help serve                         how a client launches the backend

Settings, providers and permissions: docs/configuration.md.";

const SERVE_ABOUT: &str = "\
Serve the magi-code.local-agent protocol on stdin and stdout, for a client that spawns \
magi-code as its backend.

The launch rule: the only launch is exactly `magi-code serve --stdio`, with stdin and \
stdout inherited pipes. Any other argument (`--help` too), a missing --stdio, or a \
stdin or stdout that is a terminal, a file or a socket is refused with exit status 2 \
before anything is touched, MC_HOME included, so a client gets the protocol or nothing. \
That is why this text is only shown by `magi-code help serve`.

Then one JSON request per line goes in and one JSON response or event per line comes \
out; nothing else is written to stdout or stderr. The protocol: \
docs/protocol/README.md.";

const SERVE_AFTER_HELP: &str = "\
Example (a client's view; the first line it sends):
  magi-code serve --stdio
  {\"protocol\":\"magi-code.local-agent\",\"version\":1,\"id\":\"r1\",\"method\":\"initialize\",\"params\":{\"required_capabilities\":[\"status\",\"shutdown\"]}}";

const ACP_ABOUT: &str = "\
Serve the Agent Client Protocol (ACP, version 1) on stdin and stdout, for an editor that \
spawns magi-code as its agent: Zed, JetBrains IDEs, Neovim (CodeCompanion, avante) and \
other ACP clients. Each session the editor opens runs the same backend as every other \
front end, in the session's folder, with that folder's settings, instructions and MCP \
servers. Stdout carries ACP messages only; notes go to stderr. Setup for each editor: \
docs/acp.md.";

const DOCTOR_ABOUT: &str = "\
Check the setup: show the configuration in use and where each part comes from \
(MC_HOME, each settings file read or absent, the provider, its base URL, whether its \
credential is present, the model, the MCP servers and their approval), then check it, \
each line ok, warning or error with what to do, every sign-in included (present, \
expiry, refreshable; never a token); recent crash reports (MC_HOME/logs) are listed \
with the file to send. --online also reaches the provider and refreshes each sign-in, \
writing the new tokens back as a turn would. Exits 1 when something is broken.";

const DOCTOR_AFTER_HELP: &str = "\
Examples:
  magi-code doctor
  magi-code doctor --online
  magi-code doctor --json | jq .checks
  MAGI_PROVIDER=anthropic MAGI_MODEL=claude-sonnet-4-5 magi-code doctor --online";

#[derive(Parser)]
#[command(
    name = "magi-code",
    version,
    about = "A local coding agent; with no arguments in a terminal, Mission Control",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    /// Without a command, in a terminal: Mission Control, the interactive client.
    #[command(subcommand)]
    command: Option<Command>,
    /// Open Mission Control on the session with this ID (of this directory).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
    /// Open Mission Control on this directory's newest session.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    continue_newest: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the magi-code.local-agent protocol on stdin and stdout (for clients; pipes
    /// only).
    #[command(
        disable_help_flag = true,
        long_about = SERVE_ABOUT,
        after_help = SERVE_AFTER_HELP
    )]
    Serve {
        /// Serve over inherited stdin/stdout pipes; the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Show the configuration in use and where each part comes from, then check it
    /// (exit status 1 when something is broken).
    #[command(long_about = DOCTOR_ABOUT, after_help = DOCTOR_AFTER_HELP)]
    Doctor {
        /// Also reach the provider: its model list, or a minimal request.
        #[arg(long)]
        online: bool,
        /// Print one JSON object (facts, checks, ok) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Sign in to ChatGPT for provider "codex" (`login codex`), or list every sign-in
    /// (`login status`).
    #[command(subcommand, long_about = login::LOGIN_ABOUT, after_help = login::LOGIN_AFTER_HELP)]
    Login(login::LoginCommand),
    /// End magi-code's ChatGPT sign-in (`logout codex`).
    #[command(subcommand)]
    Logout(login::LogoutCommand),
    /// List the MCP servers defined for this directory, approve or revoke them.
    #[command(subcommand, long_about = mcp::LONG_ABOUT, after_help = mcp::AFTER_HELP)]
    Mcp(mcp::McpCommand),
    /// List the hooks defined for this directory, approve or revoke the project's.
    #[command(subcommand, long_about = hooks::LONG_ABOUT, after_help = hooks::AFTER_HELP)]
    Hooks(hooks::HooksCommand),
    /// Serve the Agent Client Protocol on stdin and stdout, for editors (Zed,
    /// JetBrains, Neovim): see docs/acp.md.
    #[command(long_about = ACP_ABOUT)]
    Acp,
    /// Run one turn in this directory and print the reply, for scripts.
    #[command(long_about = exec::LONG_ABOUT, after_help = exec::AFTER_HELP)]
    Exec(exec::ExecArgs),
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
    install_crash_reports(&cli.command);
    match cli.command {
        None => {
            use std::io::IsTerminal;
            if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
                let target = match (cli.resume, cli.continue_newest) {
                    (Some(id), _) => attach::Target::Resume(id),
                    (None, true) => attach::Target::Newest,
                    (None, false) => attach::Target::New,
                };
                tui::run(target)
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
        Some(Command::Login(command)) => login::login(command),
        Some(Command::Logout(command)) => login::logout(command),
        Some(Command::Hooks(command)) => hooks::run(command),
        Some(Command::Exec(args)) => exec::run(&args),
        Some(Command::Acp) => magi_acp::run(explain::acp_initialize_failed),
    }
}

/// Installs the panic hook that writes crash reports to `$MC_HOME/logs` (see
/// `magi_crash`), naming the part of magi-code this process is. A panic is contained at
/// the root of the thread it happened on wherever that thread's work allows it.
fn install_crash_reports(command: &Option<Command>) {
    let program = match command {
        None => "mission-control",
        Some(Command::Serve { .. }) => "serve",
        Some(Command::Doctor { .. }) => "doctor",
        Some(Command::Mcp(_)) => "mcp",
        Some(Command::Login(_)) => "login",
        Some(Command::Logout(_)) => "logout",
        Some(Command::Hooks(_)) => "hooks",
        Some(Command::Acp) => "acp",
        Some(Command::Exec(_)) => "exec",
    };
    let dir = magi_core::home_path(&Env::from_process())
        .ok()
        .map(|home| home.join(magi_core::CRASH_REPORTS_DIR));
    magi_crash::install(magi_crash::Reports { dir, program });
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
    let request = StartupRequest {
        cwd: PathBuf::from("."),
        env: Env::from_process(),
    };
    // A panic the protocol loop could not contain ends the child in order: its report
    // is written (by the hook), one line goes to stderr, and it exits non-zero.
    match magi_crash::contain(|| magi_server::serve_stdio(request)) {
        // Exit at once: teardown still running after the cleanup wait is detached.
        Ok(status) => std::process::exit(status),
        Err(crash) => magi_crash::exit_fatal(&crash),
    }
}
