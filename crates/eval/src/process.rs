//! How every process of the suite runs: in a process group of its own, stdin empty,
//! its output read as it comes, waited for within a bound, stopped with its whole group
//! when the bound passes, and its group killed once it ended (or when it is dropped), so
//! nothing it started outlives it.

use std::collections::VecDeque;
use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use magi_protocol::limits::EVAL_DRAIN_MS;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::task::JoinHandle;

/// A running process, leader of its own process group.
pub struct Group {
    child: Child,
    /// The group's ID: the leader's PID.
    pgid: Option<Pid>,
}

/// How a process that outlived its bound is stopped.
#[derive(Debug, Clone, Copy)]
pub enum Stop {
    /// SIGKILL to its group at once.
    Kill,
    /// SIGTERM to its group, so it can end in order (`magi-code exec` cancels its run);
    /// SIGKILL to the group if it has not ended after this long.
    Terminate(Duration),
}

/// How a process ended.
#[derive(Debug, Clone, Copy)]
pub struct Ended {
    /// Its exit status; `None` when it could not be waited for.
    pub status: Option<ExitStatus>,
    /// Whether it outlived its bound and was stopped.
    pub timed_out: bool,
}

impl Group {
    /// Starts `command` as the leader of a new process group, stdin on `/dev/null`,
    /// stdout and stderr piped.
    pub fn spawn(mut command: Command) -> io::Result<Group> {
        command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let child = command.spawn()?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        Ok(Group { child, pgid })
    }

    /// Its stdout, to be read by the caller (once).
    pub fn stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    /// Its stderr, to be read by the caller (once).
    pub fn stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Waits for the leader to end within `bound`, else stops the group as `stop` says;
    /// either way the group is killed after, for whatever the leader left running.
    pub async fn wait(mut self, bound: Duration, stop: Stop) -> Ended {
        let ended = match tokio::time::timeout(bound, self.child.wait()).await {
            Ok(status) => Ended {
                status: status.ok(),
                timed_out: false,
            },
            Err(_) => {
                let status = match stop {
                    Stop::Kill => self.kill().await,
                    Stop::Terminate(grace) => {
                        self.signal(Signal::SIGTERM);
                        match tokio::time::timeout(grace, self.child.wait()).await {
                            Ok(status) => status.ok(),
                            Err(_) => self.kill().await,
                        }
                    }
                };
                Ended {
                    status,
                    timed_out: true,
                }
            }
        };
        self.signal(Signal::SIGKILL);
        ended
    }

    /// Kills the group and reaps the leader, waiting for that at most [`EVAL_DRAIN_MS`]
    /// (a process stuck in the kernel may not die at once): its status, if it came.
    async fn kill(&mut self) -> Option<ExitStatus> {
        self.signal(Signal::SIGKILL);
        let reaped =
            tokio::time::timeout(Duration::from_millis(EVAL_DRAIN_MS), self.child.wait()).await;
        reaped.ok().and_then(Result::ok)
    }

    /// Sends `signal` to the whole group. After the leader was reaped its ID may name no
    /// group any more; the group's other members keep it in use, so it cannot name
    /// another's.
    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, signal);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // A wait that was abandoned (its future dropped) still ends the group.
        self.signal(Signal::SIGKILL);
    }
}

/// The newest bytes of a stream, at most a bound of them, and how many came before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    kept: VecDeque<u8>,
    dropped: u64,
    bound: usize,
}

impl Tail {
    /// An empty tail keeping at most `bound` bytes.
    pub fn new(bound: usize) -> Tail {
        Tail {
            kept: VecDeque::with_capacity(bound.min(64 * 1024)),
            dropped: 0,
            bound,
        }
    }

    /// Takes in `bytes`, dropping the oldest past the bound.
    pub fn push(&mut self, bytes: &[u8]) {
        self.kept.extend(bytes);
        let over = self.kept.len().saturating_sub(self.bound);
        self.kept.drain(..over);
        self.dropped += over as u64;
    }

    /// The kept bytes as text (invalid UTF-8 replaced), saying first how many bytes
    /// came before them when some were dropped.
    pub fn text(&self) -> String {
        let (front, back) = self.kept.as_slices();
        let text = String::from_utf8_lossy(&[front, back].concat()).into_owned();
        if self.dropped == 0 {
            text
        } else {
            format!("[… {} earlier bytes]\n{text}", self.dropped)
        }
    }
}

/// Reads `stream` to its end into a [`Tail`] of `bound` bytes, on a task of its own.
pub fn read_tail(
    stream: Option<impl AsyncRead + Unpin + Send + 'static>,
    bound: usize,
) -> JoinHandle<Tail> {
    tokio::spawn(async move {
        let mut tail = Tail::new(bound);
        let Some(mut stream) = stream else {
            return tail;
        };
        let mut buffer = vec![0u8; 8 * 1024];
        while let Ok(read) = stream.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            tail.push(&buffer[..read]);
        }
        tail
    })
}

/// What a reader task produced, once its process ended: it gets [`EVAL_DRAIN_MS`] to
/// read what is left (its group was killed, so its pipe closes), else it is given up.
pub async fn drained<T>(mut reader: JoinHandle<T>) -> Option<T> {
    match tokio::time::timeout(Duration::from_millis(EVAL_DRAIN_MS), &mut reader).await {
        Ok(result) => result.ok(),
        Err(_) => {
            reader.abort();
            None
        }
    }
}

/// A process run to its end within `bound`: how it ended and its combined output's
/// tail of `tail_bytes` (stdout, then stderr).
pub struct Run {
    /// How it ended.
    pub ended: Ended,
    /// The newest output on stdout.
    pub stdout: Tail,
    /// The newest output on stderr.
    pub stderr: Tail,
}

impl Run {
    /// Whether it ended on its own with exit status 0.
    pub fn succeeded(&self) -> bool {
        !self.ended.timed_out && self.ended.status.is_some_and(|s| s.success())
    }

    /// Its output, stdout then stderr, with how it ended when that was not success.
    pub fn describe(&self) -> String {
        let mut text = self.stdout.text();
        let stderr = self.stderr.text();
        if !stderr.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&stderr);
        }
        if self.ended.timed_out {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stopped: it outlived its time bound]");
        } else if let Some(status) = self.ended.status.filter(|s| !s.success()) {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[{status}]"));
        }
        text
    }
}

/// Runs `command` to its end within `bound` (killed with its group past it), keeping the
/// newest `tail_bytes` of its stdout and of its stderr.
pub async fn run(command: Command, bound: Duration, tail_bytes: usize) -> io::Result<Run> {
    let mut group = Group::spawn(command)?;
    let stdout = read_tail(group.stdout(), tail_bytes);
    let stderr = read_tail(group.stderr(), tail_bytes);
    let ended = group.wait(bound, Stop::Kill).await;
    Ok(Run {
        ended,
        stdout: drained(stdout)
            .await
            .unwrap_or_else(|| Tail::new(tail_bytes)),
        stderr: drained(stderr)
            .await
            .unwrap_or_else(|| Tail::new(tail_bytes)),
    })
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_newest_bytes_and_counts_the_rest() {
        let mut tail = Tail::new(4);
        tail.push(b"ab");
        assert_eq!(tail.text(), "ab");
        tail.push(b"cdef");
        assert_eq!(tail.text(), "[… 2 earlier bytes]\ncdef");
    }

    #[tokio::test]
    async fn a_process_past_its_bound_is_killed_with_what_it_started() {
        let mut command = Command::new("bash");
        // The background child holds the pipe open: only the group's kill ends it.
        command.args(["-c", "sleep 600 & echo started; wait"]);
        let run = run(command, Duration::from_secs(2), 1024).await.unwrap();
        assert!(run.ended.timed_out);
        assert!(!run.succeeded());
        assert_eq!(run.stdout.text(), "started\n");
        assert!(
            run.describe()
                .ends_with("[stopped: it outlived its time bound]")
        );
    }

    #[tokio::test]
    async fn a_failing_process_says_its_status() {
        let mut command = Command::new("bash");
        command.args(["-c", "echo out; echo err >&2; exit 3"]);
        let run = run(command, Duration::from_secs(10), 1024).await.unwrap();
        assert!(!run.succeeded());
        assert_eq!(run.describe(), "out\nerr\n[exit status: 3]");
    }
}
