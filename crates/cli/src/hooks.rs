//! `magi-code hooks`: the hooks defined for this directory, and the approval of the
//! project's (docs/hooks.md).
//!
//! A global hook is the person's own and runs without approval; a project hook is code
//! the repository brings and runs only after its definition was approved here. The
//! approval is global (in `MC_HOME`) and names the definition's exact content and the
//! project's directory.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use magi_config::{Env, HookSource};
use magi_core::StartupRequest;
use magi_core::hooks::{HookReview, HooksReview};

/// What `magi-code hooks --help` says it does.
pub const LONG_ABOUT: &str = "\
List the hooks defined for this directory (in the global and the project settings), \
approve or revoke the project's.

A hook is a command run at a point of the agent's work (before a tool call, after one, \
when a prompt is sent...). Global hooks are yours and run as defined. Project hooks come \
with the repository: they run only after their definition was approved here, by a \
person. The approval is global (kept in MC_HOME) and names the definition's exact \
content and the project's directory, so an edited hook needs approving again.";

/// What `magi-code hooks --help` ends with.
pub const AFTER_HELP: &str = "\
Examples:
  magi-code hooks list
  magi-code hooks approve 2
  magi-code hooks revoke 2

More: docs/hooks.md.";

/// What `magi-code hooks` does.
#[derive(clap::Subcommand)]
pub enum HooksCommand {
    /// List the hooks defined for this directory and whether each may run.
    #[command(
        long_about = "List the hooks defined for this directory, one a line: its number, \
                      whether it may run (global, approved, needs approval), its event \
                      and matcher, where it is defined (file:line), the start of its \
                      definition's digest, and its command.",
        after_help = "Example:\n  magi-code hooks list"
    )]
    List,
    /// Approve a project hook's current definition, so backends run it.
    #[command(
        long_about = "Approve a project hook's current definition, so backends started \
                      in this directory run it. Name it by its number in `magi-code hooks \
                      list` or by the start of its digest (8 digits or more). The \
                      approval names the definition's exact content: after a change, \
                      approve it again.",
        after_help = "Example:\n  magi-code hooks approve 2"
    )]
    Approve {
        /// Its number in the listing, or the start of its digest.
        hook: String,
    },
    /// Withdraw the approval of a project hook's current definition.
    #[command(
        long_about = "Withdraw the approval of a project hook's current definition: \
                      backends started afterwards no longer run it.",
        after_help = "Example:\n  magi-code hooks revoke 2"
    )]
    Revoke {
        /// Its number in the listing, or the start of its digest.
        hook: String,
    },
}

/// Runs the command in the current directory.
pub fn run(command: HooksCommand) -> ExitCode {
    let request = StartupRequest {
        cwd: PathBuf::from("."),
        env: Env::from_process(),
    };
    let mut review = match HooksReview::load(&request) {
        Ok(review) => review,
        Err(why) => return fail(&why),
    };
    let mut out = std::io::stdout().lock();
    let written = match command {
        HooksCommand::List => {
            if review.hooks.is_empty() {
                writeln!(out, "No hooks are defined for this directory.")
            } else {
                review
                    .hooks
                    .iter()
                    .try_for_each(|hook| writeln!(out, "{}", line(hook)))
            }
        }
        HooksCommand::Approve { hook } => match review.set_approval(&hook, true) {
            Ok(hook) => writeln!(out, "approved: {}", line(hook)),
            Err(why) => return fail(&why),
        },
        HooksCommand::Revoke { hook } => match review.set_approval(&hook, false) {
            Ok(hook) => writeln!(out, "revoked: {}", line(hook)),
            Err(why) => return fail(&why),
        },
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}

/// One hook, as `list` shows it.
pub fn line(review: &HookReview) -> String {
    let hook = &review.hook;
    let state = match (hook.source, review.approved) {
        (HookSource::Global, _) => "global",
        (HookSource::Project, true) => "approved",
        (HookSource::Project, false) => "needs approval (magi-code hooks approve)",
    };
    let event = match &hook.matcher {
        Some(matcher) => format!("{} [{matcher}]", hook.event.name()),
        None => hook.event.name().to_owned(),
    };
    format!(
        "{}\t{state}\t{event}\t{}\t{}\t{}",
        review.number,
        hook.place(),
        &review.digest[..12],
        hook.command
    )
}

fn fail(why: &str) -> ExitCode {
    eprintln!("magi-code hooks: {why}");
    ExitCode::FAILURE
}

/// The project hooks of this directory that are not approved, loaded in process as the
/// backend loads them; none when the settings cannot be read (the backend's startup
/// says why).
pub fn unapproved() -> Vec<HookReview> {
    let request = StartupRequest {
        cwd: PathBuf::from("."),
        env: Env::from_process(),
    };
    HooksReview::load(&request)
        .map(|review| review.unapproved().cloned().collect())
        .unwrap_or_default()
}

/// Says on stderr, for front end `who`, each project hook that will not run because it
/// is not approved.
pub fn warn_unapproved(who: &str) {
    for hook in unapproved() {
        eprintln!(
            "{who}: project hook {} ({} at {}) is not approved and will not run; \
             `magi-code hooks list` shows it, `magi-code hooks approve {}` approves it",
            hook.number,
            hook.hook.event.name(),
            hook.hook.place(),
            hook.number
        );
    }
}

/// One line saying how many project hooks will not run for want of approval, for
/// Mission Control's status line; none when every hook may run.
pub fn unapproved_notice() -> Option<String> {
    match unapproved().len() {
        0 => None,
        1 => Some(
            "1 project hook is not approved and will not run (magi-code hooks list)".to_owned(),
        ),
        n => Some(format!(
            "{n} project hooks are not approved and will not run (magi-code hooks list)"
        )),
    }
}
