//! One `git` command of the checkpoint store: the `git` program found on `PATH`, run
//! without a shell through the launcher (so it dies with the backend, however that
//! ends; `magi_tools::launcher`) in its own process group against the store's repository and the
//! workspace as its work tree, with none of the person's git settings or `GIT_*`
//! variables, its input written and its output read on threads of their own up to a
//! bound, and its group killed at its timeout or once the work is cancelled.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use magi_protocol::limits::{CHECKPOINT_GIT_MS, CHECKPOINT_GIT_OUTPUT_BYTES};

/// Where a program is looked for when `PATH` is unset, as `execvp` does.
const DEFAULT_PATH: &str = "/bin:/usr/bin";
/// Most bytes of a command's stderr kept for what a failure says.
const STDERR_BYTES: usize = 2_048;
/// The longest pause between two looks at a running command.
const POLL_MAX: Duration = Duration::from_millis(2);

/// Why a `git` command gave no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GitError {
    /// There is no `git` program.
    Missing,
    /// It could not be started, or its pipes failed (why).
    Io(String),
    /// It exited with this status (and the start of its stderr).
    Failed(i32, String),
    /// A signal ended it.
    Signalled,
    /// It ran past [`CHECKPOINT_GIT_MS`] and its group was killed.
    TimedOut,
    /// The work was cancelled and its group was killed.
    Cancelled,
    /// Its output was over [`CHECKPOINT_GIT_OUTPUT_BYTES`].
    OutputOver,
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::Missing => f.write_str("there is no git program on PATH"),
            GitError::Io(why) => write!(f, "git could not be run: {why}"),
            GitError::Failed(code, stderr) => {
                write!(f, "git exited {code}")?;
                match stderr.lines().next() {
                    Some(line) if !line.trim().is_empty() => write!(f, " ({})", line.trim()),
                    _ => Ok(()),
                }
            }
            GitError::Signalled => f.write_str("git was ended by a signal"),
            GitError::TimedOut => write!(f, "git ran over {CHECKPOINT_GIT_MS} ms"),
            GitError::Cancelled => f.write_str("the work was cancelled"),
            GitError::OutputOver => write!(
                f,
                "git's output was over {CHECKPOINT_GIT_OUTPUT_BYTES} bytes"
            ),
        }
    }
}

/// The repository and work tree a command runs against.
pub(crate) struct Git<'a> {
    /// The store's repository.
    pub(crate) git_dir: &'a Path,
    /// The workspace.
    pub(crate) work_tree: &'a Path,
    /// Another index than the repository's own, when given.
    pub(crate) index: Option<PathBuf>,
    /// Polled while a command runs; once true its group is killed.
    pub(crate) cancelled: &'a (dyn Fn() -> bool + Sync),
}

impl Git<'_> {
    /// Creates the repository, bare: its commands name the work tree each time.
    pub(crate) fn init(&self) -> Result<Vec<u8>, GitError> {
        let dir = self.git_dir.as_os_str().to_string_lossy().into_owned();
        self.start(&["init", "-q", "--bare", &dir], None, false)
    }

    /// Runs `git args`, `input` on its stdin, and returns its stdout.
    pub(crate) fn run(&self, args: &[&str], input: Option<Vec<u8>>) -> Result<Vec<u8>, GitError> {
        self.start(args, input, true)
    }

    fn start(
        &self,
        args: &[&str],
        input: Option<Vec<u8>>,
        in_repository: bool,
    ) -> Result<Vec<u8>, GitError> {
        // As `execvp` would find it: `PATH`, or its default when unset. Through the
        // launcher a missing program would only be seen as a command that failed.
        let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
        let git = magi_tools::launcher::find_program(
            std::ffi::OsStr::new("git"),
            Some(&path),
            self.work_tree,
        )
        .ok_or(GitError::Missing)?;
        let (program, leading) = magi_tools::launcher::command_line(git.as_os_str());
        let mut command = Command::new(program);
        command.args(leading);
        // None of the person's git environment reaches the store's commands.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                command.env_remove(name);
            }
        }
        if in_repository {
            command
                .env("GIT_DIR", self.git_dir)
                .env("GIT_WORK_TREE", self.work_tree);
        }
        command
            .args(args)
            .current_dir(self.work_tree)
            // The person's settings could run programs (fsmonitor, hooks) or change
            // what is stored (autocrlf): the store reads none of them.
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so killing it reaches whatever it starts.
            .process_group(0);
        if let Some(index) = &self.index {
            command.env("GIT_INDEX_FILE", index);
        }
        let mut child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => GitError::Missing,
            _ => GitError::Io(e.to_string()),
        })?;
        let writer = match (child.stdin.take(), input) {
            (Some(mut stdin), Some(bytes)) => Some(std::thread::spawn(move || {
                // A command that stops reading early ends the write; its status says
                // whether it failed.
                let _ = stdin.write_all(&bytes);
            })),
            _ => None,
        };
        let stdout = child
            .stdout
            .take()
            .map(|out| std::thread::spawn(move || read_bounded(out, CHECKPOINT_GIT_OUTPUT_BYTES)));
        let stderr = child
            .stderr
            .take()
            .map(|err| std::thread::spawn(move || read_bounded(err, STDERR_BYTES)));
        let end = self.wait(&mut child);
        if end.is_err() {
            kill_group(&child);
            let _ = child.wait();
        }
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        let (out, over) = stdout
            .and_then(|t| t.join().ok())
            .unwrap_or((Vec::new(), false));
        let (err, _) = stderr
            .and_then(|t| t.join().ok())
            .unwrap_or((Vec::new(), false));
        let status = end?;
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(0), _) if over => Err(GitError::OutputOver),
            (Some(0), _) => Ok(out),
            (Some(code), _) => Err(GitError::Failed(
                code,
                String::from_utf8_lossy(&err).into_owned(),
            )),
            (None, _) => Err(GitError::Signalled),
        }
    }

    /// Waits for the command's end, its timeout or the cancellation.
    fn wait(&self, child: &mut std::process::Child) -> Result<std::process::ExitStatus, GitError> {
        let start = Instant::now();
        let timeout = Duration::from_millis(CHECKPOINT_GIT_MS);
        let mut pause = Duration::from_micros(50);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) => {}
                Err(e) => return Err(GitError::Io(e.to_string())),
            }
            if (self.cancelled)() {
                return Err(GitError::Cancelled);
            }
            if start.elapsed() >= timeout {
                return Err(GitError::TimedOut);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(POLL_MAX);
        }
    }
}

/// Kills the command's process group.
fn kill_group(child: &std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Reads `from` to its end, keeping at most `bound` bytes; whether more came.
fn read_bounded(mut from: impl Read, bound: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buffer = [0_u8; 65_536];
    let mut over = false;
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = bound.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
                over |= n > room;
            }
        }
    }
    (kept, over)
}
