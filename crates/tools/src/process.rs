//! Commands run as processes: started in their own process group with their stdout,
//! stderr and both interleaved captured to bounded files, waited for with a timeout, a
//! cancellation flag and the moment they move to the background, and recorded in the
//! call's facts when they end. `bash` runs its commands here and hands one still running
//! over to `jobs`, which keeps waiting on it with the same machinery. Its parts:
//! `capture` (the bounded capture files and what they kept), `launcher` (how a
//! command dies with the backend), `spawner` (the long-lived launcher that starts
//! commands on request), `confine` (a launcher applying the sandbox) and `hook` (a
//! settings hook run with its input on stdin, the same way).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use magi_protocol::limits::{PROCESS_DRAIN_MS, PROCESS_TERM_GRACE_MS};
use nix::sys::signal::Signal;

use crate::ToolContext;
use crate::ToolOutput;
use crate::facts::{CommandFacts, FACT_STRING_BYTES, cut};

mod capture;
pub(crate) mod confine;
pub mod hook;
pub mod launcher;
pub mod live;
mod spawner;

use capture::{Capture, Capturing, Files, Pipes, first_line};
pub(crate) use capture::{Kept, capture_digests, capture_notes, read_bounded};
pub(crate) use spawner::Proc;

/// Longest pause between two looks at the child and the cancellation flag. Short pauses
/// come first so a quick command is not held up by the poll.
const POLL_MAX: Duration = Duration::from_millis(50);

/// The facts every command call starts from: what ran, where, with what timeout.
pub(crate) fn command_facts(
    command: &str,
    ctx: &ToolContext,
    timeout_argument: Option<u64>,
    effective_timeout_ms: Option<u64>,
) -> CommandFacts {
    command_facts_in(command, ctx.cwd, timeout_argument, effective_timeout_ms)
}

/// [`command_facts`] of a command run in `cwd`.
pub(crate) fn command_facts_in(
    command: &str,
    cwd: &Path,
    timeout_argument: Option<u64>,
    effective_timeout_ms: Option<u64>,
) -> CommandFacts {
    CommandFacts {
        command: cut(command, FACT_STRING_BYTES),
        working_directory: cut(&cwd.to_string_lossy(), FACT_STRING_BYTES),
        timeout_ms: timeout_argument,
        effective_timeout_ms,
        tracking: Some(crate::tracking::track(command)),
        ..CommandFacts::default()
    }
}

/// How the command ended.
pub(crate) enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    /// It ran past the moment it moves to the background.
    Background,
}

/// A command started in its own process group, its three captures being written.
pub(crate) struct Started {
    /// The command, leader of its own process group.
    pub(crate) child: Proc,
    /// `stdout.txt`, `stderr.txt`, `output.txt`.
    pub(crate) paths: [PathBuf; 3],
    /// Held, never read: a temporary capture directory lives as long as the command.
    _files: Files,
    output: Arc<Mutex<Capture>>,
    finished: mpsc::Receiver<(usize, Kept)>,
    /// Streams whose reader already ended, taken from `finished` while waiting.
    ended: Vec<(usize, Kept)>,
    /// The signal that ended a command still running when it was stopped: `SIGTERM`,
    /// or `SIGKILL` when the grace period ran out. None while it runs or when it exited.
    ended_by: Option<Signal>,
}

impl Started {
    /// Ends the group (whatever the command left running dies with it: a call owns
    /// everything it started, and a leftover would hold the output pipes open): a
    /// command still running is [`terminate`]d, what a finished one left behind is
    /// killed at once. Then waits a bounded time for the captures to drain and says what
    /// each kept and whether both streams ended.
    pub(crate) fn finish(&mut self, reaped: bool) -> ([Kept; 3], bool) {
        if !reaped {
            self.ended_by = Some(terminate(&mut self.child));
        }
        // While members of the group live its ID cannot be reused; with none left the
        // signal finds nothing, unless the PID space wrapped in the instant since the
        // leader was reaped.
        self.child.signal_group(Signal::SIGKILL);
        // Both readers end once every writer of the pipes is gone; a process that left
        // the group may keep them open, so the wait is bounded.
        let mut kept = [Kept::default(); 3];
        let mut drained = 0;
        for (stream, stream_kept) in self.ended.drain(..) {
            kept[stream] = stream_kept;
            drained += 1;
        }
        let deadline = Instant::now() + Duration::from_millis(PROCESS_DRAIN_MS);
        while drained < 2 {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.finished.recv_timeout(left) {
                Ok((stream, stream_kept)) => {
                    kept[stream] = stream_kept;
                    drained += 1;
                }
                Err(_) => break,
            }
        }
        kept[2] = match self.output.lock() {
            Ok(capture) => Kept::of(&capture),
            Err(poisoned) => Kept::of(&poisoned.into_inner()),
        };
        (kept, drained == 2)
    }
}

/// The shell commands run with: `bash` as this process's `PATH` finds it, looked up
/// once (a search per call tries each earlier `PATH` entry in turn), or the bare name
/// when no entry has it, so that starting it reports the failure.
fn bash_program() -> &'static OsStr {
    static BASH: OnceLock<OsString> = OnceLock::new();
    BASH.get_or_init(|| {
        let path = std::env::var_os("PATH");
        launcher::find_program("bash".as_ref(), path.as_deref(), Path::new("/"))
            .map_or_else(|| "bash".into(), PathBuf::into_os_string)
    })
}

/// Ends a command's process group as a person would: `SIGTERM` to the whole group, then
/// `SIGKILL` once the grace period is over unless its leader exited first; the leader is
/// reaped either way. Says which of the two signals ended it.
pub(crate) fn terminate(child: &mut Proc) -> Signal {
    child.signal_group(Signal::SIGTERM);
    if wait_until_exited(child, Duration::from_millis(PROCESS_TERM_GRACE_MS)) {
        return Signal::SIGTERM;
    }
    child.signal_group(Signal::SIGKILL);
    let _ = child.wait();
    Signal::SIGKILL
}

/// A process that can be waited on with a bound: a child of this process, or a command
/// however it was started.
pub(crate) trait Reap {
    /// Its status if it ends within `within`, told the moment it ends.
    fn wait_timeout(&mut self, within: Duration) -> std::io::Result<Option<ExitStatus>>;
}

impl Reap for std::process::Child {
    /// Watched through a pidfd, readable the moment it ends; on a kernel without
    /// pidfds (before Linux 5.3) looked at again after growing pauses up to
    /// `POLL_MAX`.
    fn wait_timeout(&mut self, within: Duration) -> std::io::Result<Option<ExitStatus>> {
        use rustix::process::{Pid, PidfdFlags, pidfd_open};
        if let Some(status) = self.try_wait()? {
            return Ok(Some(status));
        }
        let deadline = Instant::now() + within;
        // Its process ID stays its own until it is reaped here: the pidfd is this child's.
        let pidfd = i32::try_from(self.id())
            .ok()
            .and_then(Pid::from_raw)
            .and_then(|pid| pidfd_open(pid, PidfdFlags::empty()).ok());
        let mut pause = Duration::from_micros(100);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match &pidfd {
                Some(pidfd) => ended_within(pidfd, left),
                None => std::thread::sleep(pause.min(left)),
            }
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            pause = (pause * 2).min(POLL_MAX);
        }
    }
}

/// Waits at most `within` for process `pid` to end, told the moment it does through a
/// pidfd (any process, a child or not; a child that ended waits to be reaped). False
/// where no pidfd can be opened for it: gone already, or a kernel without pidfds
/// (before Linux 5.3), where the caller looks in turns.
pub fn await_end(pid: i32, within: Duration) -> bool {
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let Some(pidfd) = Pid::from_raw(pid).and_then(|pid| pidfd_open(pid, PidfdFlags::empty()).ok())
    else {
        return false;
    };
    ended_within(&pidfd, within);
    true
}

/// Waits at most `within` for the process behind `pidfd` to end (its pidfd becomes
/// readable then).
pub(crate) fn ended_within(pidfd: &OwnedFd, within: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let Ok(timeout) = Timespec::try_from(within) else {
        return;
    };
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    // Interrupted or failed, it returns early: the caller looks again.
    let _ = poll(&mut fds, Some(&timeout));
}

impl Reap for Proc {
    fn wait_timeout(&mut self, within: Duration) -> std::io::Result<Option<ExitStatus>> {
        Proc::wait_timeout(self, within)
    }
}

/// Whether `child` exits (and is reaped) within `within`. A child that cannot be
/// watched counts as not exited.
pub(crate) fn wait_until_exited(child: &mut impl Reap, within: Duration) -> bool {
    matches!(child.wait_timeout(within), Ok(Some(_)))
}

/// Starts the spawn server for `policy` (none: the unconfined one) when there is none
/// yet, so that the first command of that policy does not wait for it. The early
/// server ([`start_early_server`]), if one waits, is the one told this policy.
pub(crate) fn warm(policy: Option<&confine::Policy>) {
    spawner::warm(policy, launcher::server_command);
}

/// Starts a spawn server before its policy is known, to be told it once the kernel
/// probe answered: its start-up overlaps the probe.
pub(crate) fn start_early_server() {
    spawner::start_early(launcher::early_server_command());
}

/// Ends the early server when no policy will be sent to it.
pub(crate) fn discard_early_server() {
    spawner::discard_early();
}

/// Starts `command` with bounded captures, in its own group, confined to `policy` when
/// one is given (`sandbox::prepare` says which); refusals come back as the call's failed
/// output.
pub(crate) fn start(
    command: &str,
    ctx: &ToolContext,
    capture_bytes: u64,
    policy: Option<&confine::Policy>,
) -> Result<Started, ToolOutput> {
    let files = Files::new(ctx.assets_dir).map_err(|e| {
        ToolOutput::failed(
            "cannot capture output",
            format!("Cannot create the capture directory: {e}."),
        )
    })?;
    let shell = Shell {
        program: bash_program(),
        cwd: ctx.cwd,
        hidden_env: ctx.hidden_env,
        policy,
        durable: ctx.durable,
        live: ctx.live_output.clone(),
    };
    shell
        .spawn(command, files, capture_bytes, None)
        .map_err(|e| {
            ToolOutput::failed(
                "cannot start the command",
                format!("Cannot start bash: {e}."),
            )
        })
}

/// The shell a command runs in, where, and what it must not see.
pub(crate) struct Shell<'a> {
    /// The shell program, run as `program -c command`.
    pub(crate) program: &'a OsStr,
    /// The working directory.
    pub(crate) cwd: &'a Path,
    /// Variables removed from its environment.
    pub(crate) hidden_env: &'a [String],
    /// The sandbox the launcher confines it to; none runs it unconfined.
    pub(crate) policy: Option<&'a confine::Policy>,
    /// Waited for just before the command starts: false stops it from starting
    /// ([`ToolContext::durable`]).
    pub(crate) durable: &'a (dyn Fn() -> bool + Sync),
    /// Where its newest output goes while it runs, for a live card.
    pub(crate) live: Option<std::sync::Arc<live::LiveOutput>>,
}

impl Shell<'_> {
    /// Starts `command` in its own process group through a spawn server (or a launcher
    /// of its own when none serves it), its stdout and
    /// stderr captured into `files` up to `capture_bytes` each; `stdin` (when given) is
    /// written to its standard input from a thread of its own, then closed, and it reads
    /// nothing otherwise.
    pub(crate) fn spawn(
        &self,
        command: &str,
        files: Files,
        capture_bytes: u64,
        stdin: Option<Vec<u8>>,
    ) -> std::io::Result<Started> {
        let paths = crate::facts::CAPTURE_FILES.map(|name| files.dir.join(name));
        let arguments = [OsStr::new("-c"), OsStr::new(command)];
        let served = spawner::spawn(&spawner::Spawn {
            program: self.program,
            args: &arguments,
            cwd: self.cwd,
            hidden_env: self.hidden_env,
            stdin: stdin.is_some(),
            policy: self.policy,
            server_command: launcher::server_command,
            durable: self.durable,
        });
        let started = match served {
            Some(spawned) => spawned,
            None => self.launch(command, stdin.is_some()),
        };
        // A command that cannot start leaves no capture behind.
        let (child, streams) = started?;
        if let (Some(bytes), Some(mut pipe)) = (stdin, streams.stdin) {
            // A command that never reads its input must not hold up the wait: the
            // writer ends when the pipe closes, at the latest when the group is killed.
            std::thread::spawn(move || {
                use std::io::Write;
                let _ = magi_crash::contain(|| pipe.write_all(&bytes));
            });
        }
        // Its files are made at their first bytes, while it runs.
        let pipes = Pipes {
            stdout: streams.stdout,
            stderr: streams.stderr,
        };
        let Capturing { output, finished } =
            Capturing::start(&paths, capture_bytes, pipes, self.live.clone());
        Ok(Started {
            child,
            paths,
            _files: files,
            output,
            finished,
            ended: Vec::new(),
            ended_by: None,
        })
    }

    /// Starts `command` through a launcher of its own (or directly, without one), when
    /// no spawn server serves it.
    fn launch(
        &self,
        command: &str,
        piped_stdin: bool,
    ) -> std::io::Result<(Proc, spawner::Streams)> {
        if !(self.durable)() {
            return Err(spawner::not_durable());
        }
        let mut command_line = launcher::command(self.program, self.policy);
        for name in self.hidden_env {
            command_line.env_remove(name);
        }
        let mut child = command_line
            .arg("-c")
            .arg(command)
            .current_dir(self.cwd)
            .stdin(if piped_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so one signal reaches everything the command starts.
            .process_group(0)
            .spawn()?;
        let pipe = |fd: Option<OwnedFd>| {
            fd.map(File::from)
                .ok_or_else(|| std::io::Error::other("no pipe"))
        };
        let streams = spawner::Streams {
            stdin: child.stdin.take().map(OwnedFd::from).map(File::from),
            stdout: pipe(child.stdout.take().map(OwnedFd::from))?,
            stderr: pipe(child.stderr.take().map(OwnedFd::from))?,
        };
        Ok((Proc::Direct(child), streams))
    }
}

/// Records how a command ended in its facts.
pub(crate) fn record_end(
    facts: &mut CommandFacts,
    end: &End,
    kept: &[Kept; 3],
    drained: bool,
    started: &Started,
) {
    let paths = &started.paths;
    facts.timed_out = Some(matches!(end, End::TimedOut));
    if let End::Exited(status) = end {
        facts.exit_code = status.code();
        facts.signal = status.signal().map(signal_name);
    } else {
        // The group was stopped; the shell's own status is not what ended it.
        let signal = started.ended_by.unwrap_or(Signal::SIGKILL);
        facts.signal = Some(signal.as_str().to_owned());
    }
    // A stream whose reader did not finish may have lost bytes nobody counted.
    let truncated = |k: &Kept| (drained || k.written > 0).then_some(k.dropped > 0);
    facts.stdout_truncated = truncated(&kept[0]);
    facts.stderr_truncated = truncated(&kept[1]);
    facts.stdout_lines = kept[0].lines();
    facts.stderr_lines = kept[1].lines();
    let failed = !matches!(end, End::Exited(status) if status.success());
    if failed {
        facts.failure_line = first_line(&paths[1]);
    }
    if !drained {
        facts.cleanup_warning = Some("a process outside the group kept the output open".to_owned());
    }
}

/// `SIGKILL` for 9; the number when it has no name.
pub(crate) fn signal_name(number: i32) -> String {
    Signal::try_from(number).map_or_else(|_| format!("signal {number}"), |s| s.as_str().to_owned())
}

/// Waits for the child, the timeout, the moment it moves to the background or the
/// cancellation flag, whichever comes first, looking again at growing intervals up to
/// `POLL_MAX`. Between looks it waits on its output readers rather than sleeping:
/// a command's output ends when it exits, so its end is seen at once.
pub(crate) fn wait(
    started: &mut Started,
    timeout: Duration,
    background_after: Option<Duration>,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> End {
    let start = Instant::now();
    let mut pause = Duration::from_micros(100);
    let next_stop = background_after.unwrap_or(timeout).min(timeout);
    loop {
        match started.child.try_wait() {
            Ok(Some(status)) => return End::Exited(status),
            Ok(None) => {}
            // The child cannot be watched; treat it as cancelled so the group is killed.
            Err(_) => return End::Cancelled,
        }
        if cancelled() {
            return End::Cancelled;
        }
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            return End::TimedOut;
        }
        if background_after.is_some_and(|after| elapsed >= after) {
            return End::Background;
        }
        let nap = pause.min(next_stop.saturating_sub(elapsed));
        pause = (pause * 2).min(POLL_MAX);
        if started.ended.len() < 2 {
            match started.finished.recv_timeout(nap) {
                Ok(ended) => {
                    started.ended.push(ended);
                    // The output closed: the exit is a moment away.
                    pause = Duration::from_micros(50);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(nap),
            }
        } else {
            // Both outputs closed: wait for the exit itself, which a served command's
            // server reports the moment it happens.
            match started.child.wait_timeout(nap) {
                Ok(Some(status)) => return End::Exited(status),
                Ok(None) => {}
                Err(_) => return End::Cancelled,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn a_direct_child_is_waited_for_with_a_bound() {
        let mut sleeping = Command::new("sleep").arg("30").spawn().unwrap();
        // Still running when the bound is over: no status, and it is not reaped.
        assert!(matches!(
            Reap::wait_timeout(&mut sleeping, Duration::from_millis(20)),
            Ok(None)
        ));
        sleeping.kill().unwrap();
        // Its end is seen within the bound, well before it runs out.
        let status = Reap::wait_timeout(&mut sleeping, Duration::from_secs(30)).unwrap();
        assert_eq!(status.and_then(|s| s.signal()), Some(9));
        let mut quick = Command::new("true").spawn().unwrap();
        assert!(wait_until_exited(&mut quick, Duration::from_secs(30)));
    }
}
