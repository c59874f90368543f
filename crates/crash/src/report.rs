//! Crash reports: one text file a panic leaves in `$MC_HOME/logs`, written whole or
//! not at all, at most [`CRASH_REPORT_BYTES`], the newest [`CRASH_REPORTS_KEPT`] kept;
//! and the list `magi-code doctor` shows.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use magi_protocol::limits::{CRASH_REPORT_BYTES, CRASH_REPORTS_KEPT};

/// How every report's name begins, and ends.
const PREFIX: &str = "crash-";
const SUFFIX: &str = ".txt";
/// The report's first line.
const HEADING: &str = "magi-code crash report";
/// Said where a report was cut to its bound.
const CUT: &str = "\n[the report was cut here at its bound of 65,536 bytes]\n";
/// How much of a report `recent` reads: its header is well within it.
const HEADER_BYTES: u64 = 4_096;

/// What a report says.
pub(crate) struct Report<'a> {
    pub(crate) program: &'a str,
    pub(crate) thread: &'a str,
    pub(crate) location: &'a str,
    pub(crate) message: &'a str,
    pub(crate) backtrace: &'a str,
}

impl Report<'_> {
    /// The report's text at `time`, cut to the bound.
    fn render(&self, time: &str) -> String {
        let message = self.message.replace('\n', "\n  ");
        let mut text = format!(
            "{HEADING}\nversion: {}\nprogram: {}\nplatform: {} {}\npid: {}\nthread: {}\n\
             time: {time}\nlocation: {}\nmessage: {message}\n\nbacktrace:\n{}\n",
            env!("CARGO_PKG_VERSION"),
            self.program,
            std::env::consts::OS,
            std::env::consts::ARCH,
            std::process::id(),
            self.thread,
            self.location,
            self.backtrace,
        );
        if text.len() > CRASH_REPORT_BYTES {
            let mut end = CRASH_REPORT_BYTES - CUT.len();
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str(CUT);
        }
        text
    }
}

/// Writes `report` into `dir` (made owner-only when missing) under a name of its own,
/// through a temporary file renamed into place, so a reader never sees half a report;
/// then removes the oldest beyond the kept number. Returns the report's path.
pub(crate) fn write(dir: &Path, report: &Report<'_>) -> io::Result<PathBuf> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let now = SystemTime::now();
    let time = humantime::format_rfc3339_seconds(now).to_string();
    let stamp: String = time.chars().filter(|c| *c != '-' && *c != ':').collect();
    let pid = std::process::id();
    let text = report.render(&time);
    let temporary = dir.join(format!(".{PREFIX}{stamp}-{pid}.tmp"));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(text.as_bytes())?;
    drop(file);
    // Two panics of one process in one second get names of their own.
    let path = (1..=CRASH_REPORTS_KEPT)
        .map(|n| match n {
            1 => dir.join(format!("{PREFIX}{stamp}-{pid}{SUFFIX}")),
            n => dir.join(format!("{PREFIX}{stamp}-{pid}-{n}{SUFFIX}")),
        })
        .find(|path| !path.exists())
        .ok_or_else(|| io::Error::other("too many crash reports in one second"))?;
    std::fs::rename(&temporary, &path)?;
    prune(dir);
    Ok(path)
}

/// The reports in `dir`, oldest first: by when each was written, then by name (which
/// begins with the time of the panic).
fn reports(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut paths: Vec<(Option<SystemTime>, PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|name| name.starts_with(PREFIX) && name.ends_with(SUFFIX))
        })
        .map(|entry| {
            let written = entry.metadata().and_then(|m| m.modified()).ok();
            (written, entry.path())
        })
        .collect();
    paths.sort();
    Ok(paths.into_iter().map(|(_, path)| path).collect())
}

/// Removes the oldest reports beyond the kept number; what cannot be removed stays.
fn prune(dir: &Path) {
    if let Ok(paths) = reports(dir) {
        let excess = paths.len().saturating_sub(CRASH_REPORTS_KEPT);
        for path in &paths[..excess] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One crash report, as `magi-code doctor` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportSummary {
    /// The report.
    pub path: PathBuf,
    /// When the panic happened (RFC 3339, UTC), as the report says.
    pub time: String,
    /// Which part of magi-code it was.
    pub program: String,
    /// Where it happened.
    pub location: String,
    /// The first line of its message.
    pub message: String,
}

/// The crash reports in `dir`, newest first; none when the folder does not exist. A
/// file that is not a readable report is listed with what could be read of it.
pub fn recent(dir: &Path) -> io::Result<Vec<ReportSummary>> {
    let paths = match reports(dir) {
        Ok(paths) => paths,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    Ok(paths.into_iter().rev().map(|path| summary(&path)).collect())
}

fn summary(path: &Path) -> ReportSummary {
    let mut header = String::new();
    if let Ok(file) = std::fs::File::open(path) {
        let mut bytes = Vec::new();
        let _ = file.take(HEADER_BYTES).read_to_end(&mut bytes);
        header = String::from_utf8_lossy(&bytes).into_owned();
    }
    let field = |name: &str| {
        header
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(": "))
            .unwrap_or("unknown")
            .to_owned()
    };
    ReportSummary {
        path: path.to_owned(),
        time: field("time"),
        program: field("program"),
        location: field("location"),
        message: field("message"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report<'a>(message: &'a str, backtrace: &'a str) -> Report<'a> {
        Report {
            program: "serve",
            thread: "magi-run",
            location: "crates/core/src/x.rs:12",
            message,
            backtrace,
        }
    }

    #[test]
    fn a_report_is_written_whole_owner_only_and_listed_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        let first = write(&logs, &report("first\nsecond line", "frames")).unwrap();
        let second = write(&logs, &report("again", "frames")).unwrap();
        assert_ne!(first, second);
        let text = std::fs::read_to_string(&first).unwrap();
        assert!(text.starts_with("magi-code crash report\n"), "{text}");
        assert!(text.contains("location: crates/core/src/x.rs:12\n"));
        assert!(text.contains("message: first\n  second line\n"));
        assert!(text.contains("\nbacktrace:\nframes\n"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&first).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let listed = recent(&logs).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].path, second);
        assert_eq!(listed[1].message, "first");
        assert_eq!(listed[1].program, "serve");
        // No temporary file is left beside them.
        assert_eq!(std::fs::read_dir(&logs).unwrap().count(), 2);
        assert!(recent(&dir.path().join("none")).unwrap().is_empty());
    }

    #[test]
    fn a_long_report_is_cut_to_its_bound_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let backtrace = "a frame of the backtrace, é\n".repeat(10_000);
        let path = write(dir.path(), &report("long", &backtrace)).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.len() <= CRASH_REPORT_BYTES);
        assert!(text.ends_with(CUT));
    }

    #[test]
    fn only_the_newest_reports_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        // Older reports, as earlier panics left them.
        for n in 0..CRASH_REPORTS_KEPT + 5 {
            let name = format!("{PREFIX}20200101T0000{n:02}Z-1{SUFFIX}");
            let file = std::fs::File::create(dir.path().join(name)).unwrap();
            let written = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(n as u64);
            file.set_modified(written).unwrap();
        }
        std::fs::write(dir.path().join("other.txt"), "not a report").unwrap();
        let newest = write(dir.path(), &report("new", "")).unwrap();
        let kept = reports(dir.path()).unwrap();
        assert_eq!(kept.len(), CRASH_REPORTS_KEPT);
        assert_eq!(kept.last(), Some(&newest));
        assert!(
            !kept
                .iter()
                .any(|p| p.ends_with(format!("{PREFIX}20200101T000000Z-1{SUFFIX}")))
        );
        assert!(dir.path().join("other.txt").exists());
    }
}
