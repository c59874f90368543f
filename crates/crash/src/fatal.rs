//! The end of a process that cannot outlive a panic: its report is already written by
//! the hook; one line goes to stderr if it can, and the process exits.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use magi_protocol::crash::{CRASH_LINE_PREFIX, EXIT_CRASHED};
use magi_protocol::limits::STDERR_LINE_WAIT_MS;

use crate::Crash;

/// Ends the process after `crash`, which it cannot outlive (the backend's protocol
/// loop): one line on stderr ([`last_line`]), then exit status [`EXIT_CRASHED`]. The
/// crash report was written before, by the hook.
pub fn exit_fatal(crash: &Crash) -> ! {
    last_line(&format!("{CRASH_LINE_PREFIX}{}", crash.describe()));
    std::process::exit(EXIT_CRASHED)
}

/// Writes `line` and a line feed on stderr from a thread of its own, waiting for it at
/// most [`STDERR_LINE_WAIT_MS`]: the last thing a process says before it exits, which a
/// full pipe nobody reads never holds up.
pub fn last_line(line: &str) {
    let line = format!("{line}\n");
    let (written, done) = mpsc::channel();
    let writer = std::thread::Builder::new()
        .name("last-line".to_owned())
        .spawn(move || {
            let _ = std::io::stderr().write_all(line.as_bytes());
            let _ = written.send(());
        });
    if writer.is_ok() {
        let _ = done.recv_timeout(Duration::from_millis(STDERR_LINE_WAIT_MS));
    }
}
