//! How a backend ended, told the same way by every front end: its stderr read
//! continuously into a bounded tail (so the child never blocks on a full pipe), its exit
//! status, and the crash line a backend that died of a bug leaves.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};

use magi_protocol::crash::crash_in_line;
use magi_protocol::limits::BACKEND_STDERR_TAIL_BYTES;
use magi_protocol::text::{sanitize, signal_name};
use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio::sync::watch;

/// The newest bytes the backend wrote on stderr, at most
/// [`BACKEND_STDERR_TAIL_BYTES`], and whether its stderr ended.
#[derive(Default)]
pub(super) struct StderrTail {
    bytes: Mutex<Vec<u8>>,
}

impl StderrTail {
    fn push(&self, read: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        bytes.extend_from_slice(read);
        let excess = bytes.len().saturating_sub(BACKEND_STDERR_TAIL_BYTES);
        bytes.drain(..excess);
    }

    /// The tail as text; a character cut at its start is dropped.
    pub(super) fn text(&self) -> String {
        let bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&bytes)
            .trim_start_matches('\u{fffd}')
            .to_owned()
    }
}

/// Reads the child's stderr to its end into `tail`, then says so on `ended`.
pub(super) async fn read_stderr(
    mut stderr: ChildStderr,
    tail: Arc<StderrTail>,
    ended: watch::Sender<bool>,
) {
    let mut buffer = vec![0u8; 4_096];
    loop {
        match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => tail.push(&buffer[..read]),
        }
    }
    let _ = ended.send(true);
}

/// How a backend ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendEnd {
    /// Its exit status, when it was seen to exit.
    pub status: Option<ExitStatus>,
    /// What its crash line told, when it died of a bug: the panic's message, where it
    /// happened and its crash report (`… at crates/x/src/y.rs:12 (report: /…)`).
    pub crash: Option<String>,
    /// The newest of what it wrote on stderr, at most
    /// [`BACKEND_STDERR_TAIL_BYTES`], sanitized.
    pub stderr_tail: String,
}

impl BackendEnd {
    /// The end of a backend whose exit was `status` and whose stderr held `stderr`.
    pub(super) fn of(status: Option<ExitStatus>, stderr: &str) -> BackendEnd {
        let crash = stderr.lines().rev().find_map(crash_in_line).map(sanitize);
        BackendEnd {
            status,
            crash,
            stderr_tail: sanitize(stderr),
        }
    }

    /// One sentence saying how the backend ended, the same in every front end: "the
    /// backend crashed: … (report: …)", "the backend was killed by signal 9 (KILL)",
    /// "the backend exited with status 1: <its last line on stderr>", "the backend
    /// ended" when nothing more is known.
    pub fn describe(&self) -> String {
        if let Some(crash) = &self.crash {
            return format!("the backend crashed: {crash}");
        }
        let last_line = self
            .stderr_tail
            .lines()
            .rev()
            .map(str::trim)
            .find(|line| !line.is_empty());
        let how = match self.status {
            Some(status) => match (status.code(), status.signal()) {
                (_, Some(signal)) => match signal_name(signal) {
                    Some(name) => format!("the backend was killed by signal {signal} ({name})"),
                    None => format!("the backend was killed by signal {signal}"),
                },
                (Some(code), None) => format!("the backend exited with status {code}"),
                (None, None) => "the backend ended".to_owned(),
            },
            None => "the backend ended".to_owned(),
        };
        match last_line {
            Some(line) => format!("{how}: {line}"),
            None => how,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magi_protocol::crash::CRASH_LINE_PREFIX;

    fn status(raw: i32) -> Option<ExitStatus> {
        Some(ExitStatus::from_raw(raw))
    }

    #[test]
    fn a_crash_line_wins_over_everything_else() {
        let stderr = format!("note\n{CRASH_LINE_PREFIX}boom at a.rs:3 (report: /r.txt)\n");
        let end = BackendEnd::of(status(101 << 8), &stderr);
        assert_eq!(
            end.describe(),
            "the backend crashed: boom at a.rs:3 (report: /r.txt)"
        );
    }

    #[test]
    fn a_signal_or_a_status_is_named_with_the_last_line() {
        assert_eq!(
            BackendEnd::of(status(9), "").describe(),
            "the backend was killed by signal 9 (KILL)"
        );
        assert_eq!(
            BackendEnd::of(status(1 << 8), "first\nlast words\n\n").describe(),
            "the backend exited with status 1: last words"
        );
        assert_eq!(BackendEnd::of(None, "").describe(), "the backend ended");
    }

    #[test]
    fn the_tail_keeps_the_newest_bytes_within_its_bound() {
        let tail = StderrTail::default();
        tail.push(&vec![b'a'; BACKEND_STDERR_TAIL_BYTES]);
        tail.push("é and the end".as_bytes());
        let text = tail.text();
        assert!(text.len() <= BACKEND_STDERR_TAIL_BYTES);
        assert!(text.ends_with("é and the end"));
    }
}
