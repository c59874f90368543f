//! Session log I/O: the bounded, fail-closed read of a whole log, the fingerprint that
//! detects any change to it, and the appender whose `Ok` is a durability guarantee.
//!
//! A log is append-only JSONL. Only complete lines (ending in LF) are data; bytes after
//! the last LF are a torn tail left by a writer that died mid-append. They were never
//! acknowledged, so readers ignore them and the next writer cuts them off.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use magi_protocol::limits::{STORED_READ_BYTES, STORED_READ_LINES};

use crate::fs::{OpenError, open_regular, same_inode};
use crate::records::{Record, RecordBody};

/// Size of one backwards read while looking for the last LF of a torn log.
const TAIL_SCAN_CHUNK: usize = 65_536;

/// How much of a log one read may take in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// Most bytes of the file, torn tail included.
    pub max_bytes: usize,
    /// Most complete lines.
    pub max_lines: usize,
}

impl ReadLimits {
    /// The protocol's bounds for reading a stored session.
    pub const STORED: ReadLimits = ReadLimits {
        max_bytes: STORED_READ_BYTES,
        max_lines: STORED_READ_LINES,
    };
}

/// Identity and state of a log file, as the file system reports them. Two equal
/// fingerprints mean no write, truncation, replacement or metadata change happened in
/// between (ctime moves on every one of those).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFingerprint {
    /// Device holding the file.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Length in bytes.
    pub len: u64,
    /// Last modification, seconds since the epoch.
    pub mtime: i64,
    /// Nanoseconds part of `mtime`.
    pub mtime_nsec: i64,
    /// Last status change, seconds since the epoch.
    pub ctime: i64,
    /// Nanoseconds part of `ctime`.
    pub ctime_nsec: i64,
}

impl LogFingerprint {
    fn of(meta: &Metadata) -> LogFingerprint {
        LogFingerprint {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }
}

/// A log as read.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredLog {
    /// The records of the complete lines, in file order, kinds this build does not
    /// know left out.
    pub records: Vec<Record>,
    /// Whether bytes followed the last LF (they are not data).
    pub torn_tail: bool,
    /// Bytes read, torn tail included.
    pub bytes: u64,
    /// Complete lines read, skipped kinds included.
    pub lines: usize,
    /// The file as it was opened, taken before reading: if the file changes during or
    /// after the read, a later fingerprint differs from this one.
    pub fingerprint: LogFingerprint,
}

/// Why a log could not be read. It never carries the file's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// There is no file.
    Missing,
    /// The path is a symlink or not a regular file, or changed while being opened.
    Unsafe,
    /// The file could not be opened, inspected or read.
    Unreadable,
    /// A complete line is empty, not UTF-8, not a record, or has version 0.
    Malformed,
    /// A record belongs to another session.
    ForeignSession,
    /// The file has more bytes or lines than the limits allow.
    OverLimit,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ReadError::Missing => "the session log does not exist",
            ReadError::Unsafe => "the session log is not a regular file",
            ReadError::Unreadable => "the session log cannot be read",
            ReadError::Malformed => "the session log holds a malformed line",
            ReadError::ForeignSession => "the session log holds another session's record",
            ReadError::OverLimit => "the session log exceeds the read bounds",
        })
    }
}

impl std::error::Error for ReadError {}

/// What a streaming read learned about the log besides its records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSummary {
    /// Whether bytes followed the last LF (they are not data).
    pub torn_tail: bool,
    /// Bytes read, torn tail included.
    pub bytes: u64,
    /// Complete lines read, skipped kinds included.
    pub lines: usize,
    /// The file as it was opened, taken before reading.
    pub fingerprint: LogFingerprint,
}

/// Size of the read buffer of a streaming read.
const SCAN_BUFFER_BYTES: usize = 256 * 1024;

/// Reads the whole log at `path` for `session_id`, within `limits`.
///
/// Fails closed: a symlink or special file, any malformed complete line, any record of
/// another session, or a file over the limits is an error, never a partial result. The
/// torn tail, if any, is reported and ignored.
pub fn read_log(path: &Path, session_id: &str, limits: ReadLimits) -> Result<StoredLog, ReadError> {
    let mut records = Vec::new();
    let summary = scan_log(path, session_id, limits, |record| records.push(record))?;
    Ok(StoredLog {
        records,
        torn_tail: summary.torn_tail,
        bytes: summary.bytes,
        lines: summary.lines,
        fingerprint: summary.fingerprint,
    })
}

/// Reads the log at `path` line by line and hands each record (of a kind this build
/// knows) to `visit`, holding one line at a time, so memory does not grow with the
/// log. The checks are those of [`read_log`]; on an error, records already visited
/// must be discarded by the caller.
pub fn scan_log(
    path: &Path,
    session_id: &str,
    limits: ReadLimits,
    mut visit: impl FnMut(Record),
) -> Result<LogSummary, ReadError> {
    let file = open_regular(path)?;
    let opened = file.metadata().map_err(|_| ReadError::Unreadable)?;
    let fingerprint = LogFingerprint::of(&opened);

    // One byte past the bound tells "exactly at the bound" from "over it".
    let cap = limits.max_bytes.saturating_add(1);
    let mut reader = io::BufReader::with_capacity(
        SCAN_BUFFER_BYTES,
        file.take(u64::try_from(cap).unwrap_or(u64::MAX)),
    );
    let mut line = Vec::new();
    let mut bytes = 0usize;
    let mut lines = 0usize;
    let mut torn_tail = false;
    loop {
        line.clear();
        let read = io::BufRead::read_until(&mut reader, b'\n', &mut line)
            .map_err(|_| ReadError::Unreadable)?;
        if read == 0 {
            break;
        }
        bytes += read;
        if bytes > limits.max_bytes {
            return Err(ReadError::OverLimit);
        }
        let Some(complete) = line.strip_suffix(b"\n") else {
            // Only the last line can lack its LF: it is a torn tail, never data.
            torn_tail = true;
            break;
        };
        lines += 1;
        if lines > limits.max_lines {
            return Err(ReadError::OverLimit);
        }
        let record = parse_line(complete, session_id)?;
        if record.body != RecordBody::Unknown {
            visit(record);
        }
    }
    Ok(LogSummary {
        torn_tail,
        bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
        lines,
        fingerprint,
    })
}

/// The fingerprint of the log at `path` now, without opening it.
pub fn fingerprint(path: &Path) -> Result<LogFingerprint, ReadError> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => ReadError::Missing,
        _ => ReadError::Unreadable,
    })?;
    if !meta.file_type().is_file() {
        return Err(ReadError::Unsafe);
    }
    Ok(LogFingerprint::of(&meta))
}

/// One complete line (without its LF) as a record of `session_id`.
fn parse_line(line: &[u8], session_id: &str) -> Result<Record, ReadError> {
    if line.is_empty() {
        return Err(ReadError::Malformed);
    }
    let text = std::str::from_utf8(line).map_err(|_| ReadError::Malformed)?;
    let record: Record = serde_json::from_str(text).map_err(|_| ReadError::Malformed)?;
    if record.v < 1 || record.body == RecordBody::Diagnostic {
        return Err(ReadError::Malformed);
    }
    if record.session_id != session_id {
        return Err(ReadError::ForeignSession);
    }
    Ok(record)
}

impl From<OpenError> for ReadError {
    fn from(error: OpenError) -> ReadError {
        match error {
            OpenError::Missing => ReadError::Missing,
            OpenError::Unreadable => ReadError::Unreadable,
            OpenError::Unsafe => ReadError::Unsafe,
        }
    }
}

/// Why an append could not be acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendError {
    /// The path is a symlink or not a regular file, changed while being opened, or
    /// ends in a torn tail longer than any readable log (so it is no log this build
    /// wrote).
    Unsafe,
    /// Creating, opening, repairing, writing or syncing failed, or an earlier append
    /// on this appender failed (reopen to repair the log).
    Io,
    /// The record belongs to another session.
    ForeignSession,
    /// The record cannot become a log line: serialization failed or its version is 0.
    Serialize,
}

impl std::fmt::Display for AppendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AppendError::Unsafe => "the session log is not a regular file",
            AppendError::Io => "the session log cannot be written",
            AppendError::ForeignSession => "the record belongs to another session",
            AppendError::Serialize => "the record cannot be serialized",
        })
    }
}

impl std::error::Error for AppendError {}

/// The append handle of one session's log. Meant to be held under the session's
/// writer lease, which makes it the log's only writer.
#[derive(Debug)]
pub struct Appender {
    file: File,
    session_id: String,
    /// Directories whose entries this appender created, synced by the first append so
    /// an acknowledged record cannot vanish with its file's name.
    unsynced_dirs: Vec<PathBuf>,
    /// Set once an append fails: the file may end in a torn line, which only a
    /// reopen repairs, so further appends would glue onto it.
    failed: bool,
}

impl Appender {
    /// Opens the log at `path` for appending `session_id`'s records, creating its
    /// folder (mode 0700) and the file (mode 0600) if missing.
    ///
    /// A torn tail is cut back to just after the last LF and the cut is synced, so the
    /// next record starts on a line of its own.
    pub fn open(path: &Path, session_id: &str) -> Result<Appender, AppendError> {
        let parent = match path.parent() {
            Some(p) if p.as_os_str().is_empty() => Path::new("."),
            Some(p) => p,
            None => return Err(AppendError::Unsafe),
        };
        let mut unsynced_dirs = Vec::new();
        if let Err(e) = std::fs::symlink_metadata(parent) {
            if e.kind() != io::ErrorKind::NotFound {
                return Err(AppendError::Io);
            }
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|_| AppendError::Io)?;
            // The new folder's own name lives in its parent.
            if let Some(grandparent) = parent.parent().filter(|g| !g.as_os_str().is_empty()) {
                unsynced_dirs.push(grandparent.to_owned());
            }
        }

        let (file, created) = open_append(path)?;
        if created {
            unsynced_dirs.push(parent.to_owned());
        } else {
            cut_torn_tail(&file)?;
        }
        Ok(Appender {
            file,
            session_id: session_id.to_owned(),
            unsynced_dirs,
            failed: false,
        })
    }

    /// Appends `record` as one line and returns once it is durable: the line is
    /// written with a single `write_all` and synced (`sync_data`), and on the first
    /// append to a new file its folder entry is synced too. `Ok` is the acknowledgement.
    pub fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends `records` as consecutive lines with one write and one sync: they are
    /// durable together, and a crash during the write leaves at most a torn tail that
    /// the next open cuts back (no record of the batch is acknowledged before all are).
    pub fn append_all(&mut self, records: &[Record]) -> Result<(), AppendError> {
        if self.failed {
            return Err(AppendError::Io);
        }
        let mut lines = Vec::new();
        for record in records {
            if record.session_id != self.session_id {
                return Err(AppendError::ForeignSession);
            }
            if record.v < 1 {
                return Err(AppendError::Serialize);
            }
            // Compact JSON escapes control characters, so a line holds no LF of its own.
            serde_json::to_writer(&mut lines, record).map_err(|_| AppendError::Serialize)?;
            lines.push(b'\n');
        }
        let written = self.write_and_sync(&lines);
        if written.is_err() {
            self.failed = true;
        }
        written
    }

    fn write_and_sync(&mut self, line: &[u8]) -> Result<(), AppendError> {
        self.file.write_all(line).map_err(|_| AppendError::Io)?;
        self.file.sync_data().map_err(|_| AppendError::Io)?;
        // Innermost first: the file's name, then the new folder's name.
        while let Some(dir) = self.unsynced_dirs.last() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|_| AppendError::Io)?;
            self.unsynced_dirs.pop();
        }
        Ok(())
    }
}

/// Opens the regular file at `path` for appending, creating it if missing. Returns
/// whether it was created.
fn open_append(path: &Path) -> Result<(File, bool), AppendError> {
    let before = match std::fs::symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(_) => return Err(AppendError::Io),
    };
    let Some(before) = before else {
        // Exclusive creation never follows a symlink planted at the path.
        return match OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(file) => Ok((file, true)),
            // Someone else created it in between; the writer lease should prevent
            // that, so refuse rather than guess whose file it is.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(AppendError::Unsafe),
            Err(_) => Err(AppendError::Io),
        };
    };
    if !before.file_type().is_file() {
        return Err(AppendError::Unsafe);
    }
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|_| AppendError::Io)?;
    let opened = file.metadata().map_err(|_| AppendError::Io)?;
    if !opened.file_type().is_file() || !same_inode(&before, &opened) {
        return Err(AppendError::Unsafe);
    }
    Ok((file, false))
}

/// Cuts whatever follows the last LF and syncs the cut. Those bytes were never
/// acknowledged: an append is acknowledged only after its whole line is synced.
fn cut_torn_tail(file: &File) -> Result<(), AppendError> {
    let len = file.metadata().map_err(|_| AppendError::Io)?.len();
    let mut last = [0_u8; 1];
    if len == 0 {
        return Ok(());
    }
    file.read_exact_at(&mut last, len - 1)
        .map_err(|_| AppendError::Io)?;
    if last[0] == b'\n' {
        return Ok(());
    }

    // Scan backwards, no further than a readable log could reach: no line this build
    // writes is longer than that.
    let floor = len.saturating_sub(u64::try_from(STORED_READ_BYTES).unwrap_or(u64::MAX));
    let mut chunk = vec![0_u8; TAIL_SCAN_CHUNK];
    let mut end = len;
    let keep = loop {
        if end == floor {
            if floor == 0 {
                break 0;
            }
            return Err(AppendError::Unsafe);
        }
        let start = end
            .saturating_sub(u64::try_from(TAIL_SCAN_CHUNK).unwrap_or(u64::MAX))
            .max(floor);
        let window = usize::try_from(end - start).map_err(|_| AppendError::Io)?;
        let window_buf = chunk.get_mut(..window).ok_or(AppendError::Io)?;
        file.read_exact_at(window_buf, start)
            .map_err(|_| AppendError::Io)?;
        if let Some(i) = window_buf.iter().rposition(|&b| b == b'\n') {
            break start + u64::try_from(i).map_err(|_| AppendError::Io)? + 1;
        }
        end = start;
    };
    file.set_len(keep).map_err(|_| AppendError::Io)?;
    file.sync_data().map_err(|_| AppendError::Io)
}

#[cfg(test)]
mod tests;
