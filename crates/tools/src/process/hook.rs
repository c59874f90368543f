//! One run of a settings hook (`docs/hooks.md`): its command through the user's shell
//! in the session's working directory, in its own process group under the launcher like
//! every command the backend starts, its input written to its stdin, its stdout and
//! stderr captured up to a bound each, and its group killed at its timeout or when the
//! turn is cancelled. What the hook's output means is the caller's business.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use magi_protocol::limits::HOOK_OUTPUT_BYTES;

use super::capture::{Files, read_bounded};
use super::{End, Shell, bash_program, wait};

/// What to run and how.
pub struct HookCommand<'a> {
    /// The command line.
    pub command: &'a str,
    /// The user's shell (`$SHELL`); none runs `bash`.
    pub shell: Option<&'a OsStr>,
    /// The session's working directory.
    pub cwd: &'a Path,
    /// Its input: one JSON object.
    pub input: Vec<u8>,
    /// How long it may run.
    pub timeout: Duration,
    /// Polled while it runs; once true its group is killed.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
    /// Variables it must not see (the backend's credentials).
    pub hidden_env: &'a [String],
}

/// How a hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookEnd {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it (its name).
    Signalled(String),
    /// It ran past its timeout and its group was killed.
    TimedOut,
    /// The turn was cancelled while it ran and its group was killed.
    Cancelled,
    /// It could not be started (why).
    NotStarted(String),
}

/// What one hook run left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// How it ended.
    pub end: HookEnd,
    /// Its stdout, at most [`HOOK_OUTPUT_BYTES`] (lossy UTF-8).
    pub stdout: String,
    /// Its stderr, at most [`HOOK_OUTPUT_BYTES`] (lossy UTF-8).
    pub stderr: String,
    /// Whether stdout had more than was kept.
    pub stdout_cut: bool,
    /// Whether stderr had more than was kept.
    pub stderr_cut: bool,
}

impl HookRun {
    fn not_started(why: String) -> HookRun {
        HookRun {
            end: HookEnd::NotStarted(why),
            stdout: String::new(),
            stderr: String::new(),
            stdout_cut: false,
            stderr_cut: false,
        }
    }
}

/// Runs one hook to its end, its timeout or the cancellation, whichever comes first.
pub fn run_hook(hook: &HookCommand) -> HookRun {
    // The captures live in a temporary directory removed when the run is over.
    let files = match Files::new(None) {
        Ok(files) => files,
        Err(e) => return HookRun::not_started(format!("cannot capture its output: {e}")),
    };
    let shell = Shell {
        live: None,
        program: hook.shell.unwrap_or_else(|| bash_program()),
        cwd: hook.cwd,
        hidden_env: hook.hidden_env,
        // A hook is the person's own command from their settings, not the model's:
        // it runs outside the sandbox, as they would run it themselves.
        policy: None,
        // It belongs to no claimed call.
        durable: &|| true,
    };
    let bound = HOOK_OUTPUT_BYTES as u64;
    let mut started = match shell.spawn(hook.command, files, bound, Some(hook.input.clone())) {
        Ok(started) => started,
        Err(e) => {
            let program = shell.program.to_string_lossy();
            return HookRun::not_started(format!("cannot start {program}: {e}"));
        }
    };
    let end = wait(&mut started, hook.timeout, None, hook.cancelled);
    let (kept, _drained) = started.finish(matches!(end, End::Exited(_)));
    let end = match end {
        End::Exited(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => HookEnd::Exited(code),
                (None, Some(signal)) => HookEnd::Signalled(super::signal_name(signal)),
                (None, None) => HookEnd::Signalled("unknown".to_owned()),
            }
        }
        End::TimedOut => HookEnd::TimedOut,
        // A hook never moves to the background: its wait has no such moment.
        End::Cancelled | End::Background => HookEnd::Cancelled,
    };
    HookRun {
        end,
        stdout: read_bounded(&started.paths[0], bound),
        stderr: read_bounded(&started.paths[1], bound),
        stdout_cut: kept[0].dropped > 0,
        stderr_cut: kept[1].dropped > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, input: &str, timeout: Duration) -> HookRun {
        let dir = tempfile::tempdir().unwrap();
        run_hook(&HookCommand {
            command,
            shell: None,
            cwd: dir.path(),
            input: input.as_bytes().to_vec(),
            timeout,
            cancelled: &|| false,
            hidden_env: &[],
        })
    }

    #[test]
    fn a_hook_reads_its_input_and_reports_its_status_and_output() {
        let got = run(
            "read -r line; echo \"got $line\"; echo oops >&2; exit 2",
            "{\"event\":\"x\"}\n",
            Duration::from_secs(30),
        );
        assert_eq!(got.end, HookEnd::Exited(2));
        assert_eq!(got.stdout, "got {\"event\":\"x\"}\n");
        assert_eq!(got.stderr, "oops\n");
        assert!(!got.stdout_cut && !got.stderr_cut);
    }

    #[test]
    fn a_hook_that_ignores_its_input_and_floods_its_output_is_bounded() {
        let input = "x".repeat(1 << 20);
        let got = run(
            "head -c 100000 /dev/zero | tr '\\0' a",
            &input,
            Duration::from_secs(30),
        );
        assert_eq!(got.end, HookEnd::Exited(0));
        assert_eq!(got.stdout.len(), HOOK_OUTPUT_BYTES);
        assert!(got.stdout_cut);
    }

    #[test]
    fn a_hook_past_its_timeout_is_killed() {
        let got = run("sleep 30", "", Duration::from_millis(100));
        assert_eq!(got.end, HookEnd::TimedOut);
    }

    #[test]
    fn a_cancelled_hook_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let got = run_hook(&HookCommand {
            command: "sleep 30",
            shell: None,
            cwd: dir.path(),
            input: Vec::new(),
            timeout: Duration::from_secs(30),
            cancelled: &|| true,
            hidden_env: &[],
        });
        assert_eq!(got.end, HookEnd::Cancelled);
    }
}
