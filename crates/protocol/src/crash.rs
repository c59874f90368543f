//! What a process that dies of a bug leaves for whoever started it: one line on stderr
//! and an exit status, shared by the backend that writes them and the client library
//! that reads them.
//!
//! A backend's stderr carries nothing else of its own (the protocol is on stdout), so a
//! client that keeps the tail of it finds the line by its prefix.

/// How the line that tells a crash begins; the rest is the panic's message, where it
/// happened and the crash report's path: `… at crates/x/src/y.rs:12 (report: /…)`.
pub const CRASH_LINE_PREFIX: &str = "magi-code: crashed: ";

/// The exit status of a process that ended because of a panic it could not contain.
pub const EXIT_CRASHED: i32 = 101;

/// The crash a line tells, when `line` is a crash line: the text after the prefix.
pub fn crash_in_line(line: &str) -> Option<&str> {
    line.strip_prefix(CRASH_LINE_PREFIX)
        .map(str::trim_end)
        .filter(|told| !told.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_line_is_found_by_its_prefix_alone() {
        let line = format!("{CRASH_LINE_PREFIX}boom at a.rs:1 (report: /r)\n");
        assert_eq!(crash_in_line(&line), Some("boom at a.rs:1 (report: /r)"));
        assert_eq!(crash_in_line("warning: boom"), None);
        assert_eq!(crash_in_line(CRASH_LINE_PREFIX), None);
    }
}
