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
mod tests {
    use super::*;
    use crate::records::{LOG_FORMAT_VERSION, TurnOutcome};
    use std::os::unix::fs::PermissionsExt;

    const SID: &str = "s1";

    fn line(session_id: &str, body: RecordBody) -> String {
        let mut s = serde_json::to_string(&Record::now(session_id, body)).unwrap();
        s.push('\n');
        s
    }

    fn started(turn: &str) -> RecordBody {
        RecordBody::TurnStarted {
            turn_id: turn.into(),
        }
    }

    fn write(dir: &tempfile::TempDir, content: &[u8]) -> PathBuf {
        let path = dir.path().join("s1.jsonl");
        std::fs::write(&path, content).unwrap();
        path
    }

    fn read(path: &Path) -> Result<StoredLog, ReadError> {
        read_log(path, SID, ReadLimits::STORED)
    }

    #[test]
    fn stored_limits_are_the_protocol_bounds() {
        assert_eq!(ReadLimits::STORED.max_bytes, 64 * 1024 * 1024);
        assert_eq!(ReadLimits::STORED.max_lines, 100_000);
        assert_eq!(ReadLimits::STORED.max_bytes, STORED_READ_BYTES);
        assert_eq!(ReadLimits::STORED.max_lines, STORED_READ_LINES);
    }

    #[test]
    fn reads_complete_lines_and_ignores_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let content = format!(
            "{}{}{{\"v\":1,\"session_id\":\"s1\",\"ts\":\"2026",
            line(SID, started("t1")),
            line(SID, started("t2"))
        );
        let path = write(&dir, content.as_bytes());
        let log = read(&path).unwrap();
        assert!(log.torn_tail);
        assert_eq!(log.lines, 2);
        assert_eq!(log.bytes, content.len() as u64);
        assert_eq!(
            log.records
                .iter()
                .map(|r| r.body.clone())
                .collect::<Vec<_>>(),
            vec![started("t1"), started("t2")]
        );

        // A torn tail that would parse as a record on its own is still not data.
        let whole = line(SID, started("t3"));
        let content = format!("{}{}", line(SID, started("t1")), whole.trim_end());
        let path = write(&dir, content.as_bytes());
        let log = read(&path).unwrap();
        assert!(log.torn_tail);
        assert_eq!(log.records.len(), 1);

        let path = write(&dir, line(SID, started("t1")).as_bytes());
        assert!(!read(&path).unwrap().torn_tail);
    }

    #[test]
    fn an_empty_file_is_an_empty_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, b"");
        let log = read(&path).unwrap();
        assert!(log.records.is_empty());
        assert!(!log.torn_tail);
        assert_eq!((log.bytes, log.lines), (0, 0));
    }

    #[test]
    fn a_torn_only_file_has_no_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(&dir, b"{\"v\":1");
        let log = read(&path).unwrap();
        assert!(log.torn_tail);
        assert!(log.records.is_empty());
        assert_eq!((log.bytes, log.lines), (6, 0));
    }

    #[test]
    fn malformed_complete_lines_fail_the_read() {
        let dir = tempfile::tempdir().unwrap();
        let good = line(SID, started("t1"));
        let v0 =
            line(SID, started("t1")).replacen(&format!("\"v\":{LOG_FORMAT_VERSION}"), "\"v\":0", 1);
        assert!(v0.contains("\"v\":0"));
        let diagnostic =
            format!("{{\"v\":1,\"session_id\":\"{SID}\",\"ts\":\"x\",\"kind\":\"diagnostic\"}}\n");
        let cases: [&[u8]; 7] = [
            diagnostic.as_bytes(),
            b"\n",
            b"not json\n",
            b"{\"v\":1,\"session_id\":\"s1\",\"ts\":\"x\",\"kind\":\"turn_started\"}\n",
            b"{\"v\":1,\"session_id\":\"s1\",\"ts\":\"x\",\"kind\":\"title\",\"title\":\"\xff\"}\n",
            b"[1,2]\n",
            v0.as_bytes(),
        ];
        for case in cases {
            let mut content = good.clone().into_bytes();
            content.extend_from_slice(case);
            content.extend_from_slice(good.as_bytes());
            let path = write(&dir, &content);
            assert_eq!(
                read(&path).unwrap_err(),
                ReadError::Malformed,
                "{}",
                String::from_utf8_lossy(case)
            );
        }
        // A blank line between records is malformed too, not skipped.
        let path = write(&dir, format!("{good}\n{good}").as_bytes());
        assert_eq!(read(&path).unwrap_err(), ReadError::Malformed);
    }

    #[test]
    fn a_record_of_another_session_fails_the_read() {
        let dir = tempfile::tempdir().unwrap();
        let content = format!("{}{}", line(SID, started("t1")), line("s2", started("t2")));
        let path = write(&dir, content.as_bytes());
        assert_eq!(read(&path).unwrap_err(), ReadError::ForeignSession);
        assert!(read_log(&path, "s2", ReadLimits::STORED).is_err());
        // The envelope applies to kinds this build does not know as well.
        let unknown = r#"{"v":1,"session_id":"s2","ts":"x","kind":"hologram"}"#;
        let path = write(&dir, format!("{unknown}\n").as_bytes());
        assert_eq!(read(&path).unwrap_err(), ReadError::ForeignSession);
    }

    #[test]
    fn unknown_kinds_are_skipped_but_counted() {
        let dir = tempfile::tempdir().unwrap();
        let unknown = r#"{"v":7,"session_id":"s1","ts":"x","kind":"hologram","x":[1]}"#;
        let finished = RecordBody::TurnFinished {
            turn_id: "t1".into(),
            outcome: TurnOutcome::Completed,
            error_code: None,
        };
        let content = format!(
            "{}{unknown}\n{}",
            line(SID, started("t1")),
            line(SID, finished.clone())
        );
        let path = write(&dir, content.as_bytes());
        let log = read(&path).unwrap();
        assert_eq!(log.lines, 3);
        assert_eq!(
            log.records
                .iter()
                .map(|r| r.body.clone())
                .collect::<Vec<_>>(),
            vec![started("t1"), finished]
        );
    }

    #[test]
    fn symlinks_directories_and_missing_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = write(&dir, line(SID, started("t1")).as_bytes());
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(read(&link).unwrap_err(), ReadError::Unsafe);
        assert_eq!(fingerprint(&link).unwrap_err(), ReadError::Unsafe);

        let sub = dir.path().join("sub.jsonl");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(read(&sub).unwrap_err(), ReadError::Unsafe);
        assert_eq!(fingerprint(&sub).unwrap_err(), ReadError::Unsafe);

        let missing = dir.path().join("missing.jsonl");
        assert_eq!(read(&missing).unwrap_err(), ReadError::Missing);
        assert_eq!(fingerprint(&missing).unwrap_err(), ReadError::Missing);

        assert!(read(&target).is_ok());
    }

    #[test]
    fn the_byte_bound_is_inclusive() {
        let dir = tempfile::tempdir().unwrap();
        let content = format!("{}{}", line(SID, started("t1")), line(SID, started("t2")));
        let path = write(&dir, content.as_bytes());
        let exact = ReadLimits {
            max_bytes: content.len(),
            max_lines: 10,
        };
        assert_eq!(read_log(&path, SID, exact).unwrap().records.len(), 2);
        let under = ReadLimits {
            max_bytes: content.len() - 1,
            max_lines: 10,
        };
        assert_eq!(
            read_log(&path, SID, under).unwrap_err(),
            ReadError::OverLimit
        );
        // A torn tail counts towards the byte bound.
        let path = write(&dir, format!("{content}x").as_bytes());
        assert_eq!(
            read_log(&path, SID, exact).unwrap_err(),
            ReadError::OverLimit
        );
    }

    #[test]
    fn the_line_bound_is_inclusive() {
        let dir = tempfile::tempdir().unwrap();
        let three: String = ["t1", "t2", "t3"]
            .iter()
            .map(|t| line(SID, started(t)))
            .collect();
        let path = write(&dir, three.as_bytes());
        let limits = ReadLimits {
            max_bytes: 1 << 20,
            max_lines: 3,
        };
        assert_eq!(read_log(&path, SID, limits).unwrap().lines, 3);
        // A torn tail is not a line.
        let path = write(&dir, format!("{three}{{").as_bytes());
        assert_eq!(read_log(&path, SID, limits).unwrap().lines, 3);
        let four = format!("{three}{}", line(SID, started("t4")));
        let path = write(&dir, four.as_bytes());
        assert_eq!(
            read_log(&path, SID, limits).unwrap_err(),
            ReadError::OverLimit
        );
    }

    #[test]
    fn the_appender_creates_owner_only_files_and_appends_readable_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ws").join("deeper").join("s1.jsonl");
        let mut appender = Appender::open(&path, SID).unwrap();
        let first = Record::now(SID, started("t1"));
        let second = Record::now(
            SID,
            RecordBody::UserInput {
                turn_id: "t1".into(),
                message_id: "m1".into(),
                text: "two\nlines and a \u{0} byte".into(),
                images: Vec::new(),
            },
        );
        appender.append(&first).unwrap();
        appender.append(&second).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(mode(path.parent().unwrap().parent().unwrap()), 0o700);

        let log = read(&path).unwrap();
        assert_eq!(log.records, vec![first.clone(), second]);
        assert_eq!(log.lines, 2);

        // Reopening an intact log keeps it as it is.
        let before = std::fs::read(&path).unwrap();
        drop(appender);
        Appender::open(&path, SID).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), before);

        let mut appender = Appender::open(&path, SID).unwrap();
        let foreign = Record::now("s2", started("t9"));
        assert_eq!(
            appender.append(&foreign).unwrap_err(),
            AppendError::ForeignSession
        );
        let mut v0 = first.clone();
        v0.v = 0;
        assert_eq!(appender.append(&v0).unwrap_err(), AppendError::Serialize);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // Refused records do not spoil the appender.
        appender.append(&first).unwrap();
        assert_eq!(read(&path).unwrap().records.len(), 3);
    }

    #[test]
    fn the_appender_cuts_a_torn_tail_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let kept = line(SID, started("t1"));
        let path = write(
            &dir,
            format!("{kept}{{\"v\":1,\"session_id\":\"s1\",\"ts").as_bytes(),
        );
        assert!(read(&path).unwrap().torn_tail);

        let mut appender = Appender::open(&path, SID).unwrap();
        // The cut happens at open, before anything is appended.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), kept);
        let next = Record::now(SID, started("t2"));
        appender.append(&next).unwrap();

        let log = read(&path).unwrap();
        assert!(!log.torn_tail);
        assert_eq!(log.lines, 2);
        assert_eq!(log.records.last(), Some(&next));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{kept}{}\n", serde_json::to_string(&next).unwrap())
        );
    }

    #[test]
    fn the_appender_cuts_a_file_that_is_all_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        // Longer than one scan chunk, so the backwards scan crosses chunks.
        let path = write(&dir, &vec![b'x'; TAIL_SCAN_CHUNK * 2 + 17]);
        let mut appender = Appender::open(&path, SID).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        appender.append(&Record::now(SID, started("t1"))).unwrap();
        let log = read(&path).unwrap();
        assert_eq!((log.lines, log.torn_tail), (1, false));

        let kept = line(SID, started("t1"));
        let mut content = kept.clone().into_bytes();
        content.extend(vec![b'y'; TAIL_SCAN_CHUNK + 3]);
        let path = write(&dir, &content);
        Appender::open(&path, SID).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), kept);
    }

    #[test]
    fn the_appender_refuses_symlinks_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        let target = write(&dir, b"");
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(Appender::open(&link, SID).unwrap_err(), AppendError::Unsafe);
        let sub = dir.path().join("sub.jsonl");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(Appender::open(&sub, SID).unwrap_err(), AppendError::Unsafe);
        // A dangling symlink is not followed into creating its target.
        let dangling = dir.path().join("dangling.jsonl");
        let nowhere = dir.path().join("nowhere");
        std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
        assert_eq!(
            Appender::open(&dangling, SID).unwrap_err(),
            AppendError::Unsafe
        );
        assert!(!nowhere.exists());
    }

    #[test]
    fn the_fingerprint_changes_with_every_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s1.jsonl");
        let mut appender = Appender::open(&path, SID).unwrap();
        let empty = fingerprint(&path).unwrap();
        assert_eq!(read(&path).unwrap().fingerprint, empty);
        appender.append(&Record::now(SID, started("t1"))).unwrap();
        let one = fingerprint(&path).unwrap();
        assert_ne!(one, empty);
        assert_eq!(one.len, std::fs::metadata(&path).unwrap().len());
        assert_eq!(read(&path).unwrap().fingerprint, one);
        appender.append(&Record::now(SID, started("t2"))).unwrap();
        let two = fingerprint(&path).unwrap();
        assert_ne!(two, one);
        assert_eq!((one.dev, one.ino), (two.dev, two.ino));
        // Nothing changed, nothing differs.
        assert_eq!(fingerprint(&path).unwrap(), two);
    }

    #[test]
    fn errors_say_nothing_of_the_contents() {
        let all = [
            ReadError::Missing,
            ReadError::Unsafe,
            ReadError::Unreadable,
            ReadError::Malformed,
            ReadError::ForeignSession,
            ReadError::OverLimit,
        ];
        let texts: std::collections::HashSet<String> = all.iter().map(|e| e.to_string()).collect();
        assert_eq!(texts.len(), all.len());
        let append = [
            AppendError::Unsafe,
            AppendError::Io,
            AppendError::ForeignSession,
            AppendError::Serialize,
        ];
        let texts: std::collections::HashSet<String> =
            append.iter().map(|e| e.to_string()).collect();
        assert_eq!(texts.len(), append.len());
    }
}
