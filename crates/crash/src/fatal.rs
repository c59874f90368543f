//! The end of a process that cannot outlive a panic: its report is already written by
//! the hook; one line goes to stderr if it can, and the process exits.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use magi_protocol::crash::{CRASH_LINE_PREFIX, EXIT_CRASHED};
use magi_protocol::limits::FATAL_STDERR_WAIT_MS;

use crate::Crash;

/// Ends the process after `crash`, which it cannot outlive (the backend's protocol
/// loop): one line on stderr, written by a thread of its own and waited for at most
/// [`FATAL_STDERR_WAIT_MS`], so a full pipe never holds the exit; then exit status
/// [`EXIT_CRASHED`]. The crash report was written before, by the hook.
pub fn exit_fatal(crash: &Crash) -> ! {
    let line = format!("{CRASH_LINE_PREFIX}{}\n", crash.describe());
    let (written, done) = mpsc::channel();
    let writer = std::thread::Builder::new()
        .name("crash-line".to_owned())
        .spawn(move || {
            let _ = std::io::stderr().write_all(line.as_bytes());
            let _ = written.send(());
        });
    if writer.is_ok() {
        let _ = done.recv_timeout(Duration::from_millis(FATAL_STDERR_WAIT_MS));
    }
    std::process::exit(EXIT_CRASHED)
}
