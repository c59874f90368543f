//! Read-only session discovery (`session.list`): a bounded scan of the working
//! directory's folder of session logs, kept as one snapshot per child and paged by
//! cursor.
//!
//! Listing only reads: it never takes, renews or removes a lease, never repairs a log
//! and writes nothing. Every continuation scans again and compares what it saw with the
//! snapshot, so a page is never served from an inventory that changed under it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    DISCOVERY_DIRECTORY_ENTRIES, DISCOVERY_PAGE_BYTES, DISCOVERY_PAGE_ENTRIES,
    DISCOVERY_SCAN_BYTES, DISCOVERY_SCAN_LINES, DISCOVERY_SCAN_MS, DISCOVERY_SESSION_BYTES,
    DISCOVERY_SESSION_LINES, DISCOVERY_SESSIONS, DISCOVERY_TITLE_BYTES, TITLE_CHARS,
};
use magi_protocol::messages::{
    Eligibility, SessionListEntry, SessionListParams, SessionListResult,
};
use magi_protocol::names::{is_valid_name, is_valid_session_id};
use magi_protocol::text::{has_control, is_secret_like, sanitize};
use magi_store::Home;
use magi_store::lease::{LeaseKind, is_present};
use magi_store::log::{ReadError, ReadLimits, StoredLog, read_log};
use magi_store::records::RecordBody;

use crate::revision::Revision;

/// Top-level notice: at least one log could not be trusted and was left out.
pub const NOTICE_SESSIONS_OMITTED_INVALID: &str = "sessions_omitted_invalid";

/// Entry notice: the session records no working directory, so it was not verified.
pub const NOTICE_CWD_UNVERIFIED: &str = "cwd_unverified";

/// The name ending of a primary session log.
const PRIMARY_SUFFIX: &str = ".jsonl";

/// The per-file read bounds of discovery.
const SESSION_LIMITS: ReadLimits = ReadLimits {
    max_bytes: DISCOVERY_SESSION_BYTES,
    max_lines: DISCOVERY_SESSION_LINES,
};

/// The lease kinds whose presence makes a session possibly busy.
const LEASE_KINDS: [LeaseKind; 3] = [LeaseKind::Writer, LeaseKind::Active, LeaseKind::Append];

/// A `session.list` request whose params passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListRequest {
    /// A fresh listing: scan, replace the snapshot, answer its first page.
    Fresh {
        /// Most entries on the page.
        limit: usize,
    },
    /// The next page of the current snapshot.
    Continue {
        /// The snapshot's revision.
        revision: String,
        /// A cursor the snapshot issued.
        cursor: String,
        /// Most entries on the page.
        limit: usize,
    },
}

/// Checks `session.list` params beyond their shape: `limit` 1–100, revision and
/// cursor both absent or both present, each following the name grammar. Anything else
/// is `invalid_params`. Pure, so the server can answer it before the `busy` rule.
pub fn check_params(params: &SessionListParams) -> Result<ListRequest, ErrorCode> {
    let limit = match params.limit {
        None => DISCOVERY_PAGE_ENTRIES,
        Some(limit) => usize::try_from(limit)
            .ok()
            .filter(|l| (1..=DISCOVERY_PAGE_ENTRIES).contains(l))
            .ok_or(ErrorCode::InvalidParams)?,
    };
    match (&params.revision, &params.cursor) {
        (None, None) => Ok(ListRequest::Fresh { limit }),
        (Some(revision), Some(cursor)) if is_valid_name(revision) && is_valid_name(cursor) => {
            Ok(ListRequest::Continue {
                revision: revision.clone(),
                cursor: cursor.clone(),
                limit,
            })
        }
        _ => Err(ErrorCode::InvalidParams),
    }
}

/// The discovery state of one child: at most one snapshot.
#[derive(Debug, Default)]
pub struct Discovery {
    snapshot: Option<Snapshot>,
}

/// One listing as scanned, and the cursors issued for it.
#[derive(Debug)]
struct Snapshot {
    revision: Revision,
    scan: Scan,
    /// Once a change is seen the snapshot stays stale until a fresh listing.
    stale: bool,
}

impl Snapshot {
    /// The page starting at `start`: at most `limit` entries and at most
    /// `DISCOVERY_PAGE_BYTES` serialized.
    fn page(&mut self, start: usize, limit: usize) -> Result<SessionListResult, ErrorCode> {
        let entries = &self.scan.entries;
        // The largest cursor this snapshot can issue, and `false`, make the envelope
        // as long as it can get, so the bound holds whichever page this is.
        let envelope = SessionListResult {
            revision: self.revision.id().to_owned(),
            sessions: Vec::new(),
            next_cursor: Some(self.revision.cursor(entries.len())),
            complete: false,
            notices: self.scan.notices.clone(),
        };
        let mut bytes = serialized_len(&envelope)?;
        let mut end = start;
        for entry in entries.iter().skip(start).take(limit) {
            let separator = usize::from(end > start);
            let grown = bytes + separator + serialized_len(entry)?;
            if grown > DISCOVERY_PAGE_BYTES {
                break;
            }
            bytes = grown;
            end += 1;
        }
        if end == start && start < entries.len() {
            // Not even one entry fits: a bound was exceeded; never a fake empty page.
            return Err(ErrorCode::DiscoveryLimit);
        }
        let next_cursor = if end < entries.len() {
            Some(self.revision.issue(end))
        } else {
            None
        };
        Ok(SessionListResult {
            revision: self.revision.id().to_owned(),
            sessions: entries.get(start..end).unwrap_or_default().to_vec(),
            complete: next_cursor.is_none(),
            next_cursor,
            notices: self.scan.notices.clone(),
        })
    }
}

fn serialized_len<T: serde::Serialize>(value: &T) -> Result<usize, ErrorCode> {
    serde_json::to_vec(value)
        .map(|v| v.len())
        .map_err(|_| ErrorCode::DiscoveryLimit)
}

impl Discovery {
    /// `session.list` for the sessions of `cwd` (canonical) under `home`; `attached` is
    /// the session this child has attached, which is never busy to this child.
    pub fn list(
        &mut self,
        home: &Home,
        cwd: &Path,
        attached: Option<&str>,
        params: &SessionListParams,
    ) -> Result<SessionListResult, ErrorCode> {
        let scope = Scope {
            home,
            cwd,
            attached,
        };
        match check_params(params)? {
            ListRequest::Fresh { limit } => {
                // The request replaces the snapshot even when it fails: the cursors of
                // the old one are not worth keeping once the client started over.
                self.snapshot = None;
                let scan = scope.scan()?;
                let snapshot = self.snapshot.insert(Snapshot {
                    revision: Revision::new('d'),
                    scan,
                    stale: false,
                });
                snapshot.page(0, limit)
            }
            ListRequest::Continue {
                revision,
                cursor,
                limit,
            } => {
                let snapshot = self.snapshot.as_mut().ok_or(ErrorCode::StaleRevision)?;
                if snapshot.revision.id() != revision || snapshot.stale {
                    return Err(ErrorCode::StaleRevision);
                }
                let start = snapshot
                    .revision
                    .resolve(&cursor)
                    .ok_or(ErrorCode::StaleRevision)?;
                match scope.scan() {
                    Ok(scan) if scan == snapshot.scan => snapshot.page(start, limit),
                    Ok(_) | Err(ErrorCode::StaleRevision) => {
                        snapshot.stale = true;
                        Err(ErrorCode::StaleRevision)
                    }
                    // A bound (the deadline, say) tells nothing about the inventory:
                    // the snapshot stays usable for another try.
                    Err(code) => Err(code),
                }
            }
        }
    }
}

/// What one scan saw: the listing it yields and the inventory it yields it from.
/// Two scans are equal only if nothing a client could notice changed in between.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Scan {
    entries: Vec<SessionListEntry>,
    notices: Vec<String>,
    /// Every name in the folder, sorted.
    names: Vec<OsString>,
    /// Each primary log, in session ID order.
    files: Vec<FileState>,
    attached: Option<String>,
}

/// One primary log's identity and state, and which of its leases are present.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileState {
    session_id: String,
    /// `None` when its metadata could not be read (the log is then omitted as invalid).
    meta: Option<MetaPrint>,
    leases: [bool; 3],
}

/// What a failed read is charged. A regular file unchanged since it was listed cannot
/// have yielded more bytes than its length, nor more lines than bytes, so those bound
/// the charge; anything else charges the whole per-file budget.
fn failed_read_charge(path: &Path, listed: Option<&MetaPrint>) -> (u64, u64) {
    let whole = (
        as_u64(DISCOVERY_SESSION_BYTES),
        as_u64(DISCOVERY_SESSION_LINES),
    );
    let Ok(now) = std::fs::symlink_metadata(path) else {
        return whole;
    };
    if !now.file_type().is_file() || listed != Some(&MetaPrint::of(&now)) {
        return whole;
    }
    (now.len().min(whole.0), now.len().min(whole.1))
}

/// The metadata that moves with any write, truncation, replacement or permission
/// change (the status-change time moves with every one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MetaPrint {
    dev: u64,
    ino: u64,
    mode: u32,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
    ctime: i64,
    ctime_nsec: i64,
}

impl MetaPrint {
    fn of(meta: &Metadata) -> MetaPrint {
        MetaPrint {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            len: meta.len(),
            mtime: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }

    /// Whether the read file is the one whose metadata was taken before, unchanged.
    fn matches(&self, log: &StoredLog) -> bool {
        let f = &log.fingerprint;
        (self.dev, self.ino, self.len) == (f.dev, f.ino, f.len)
            && (self.mtime, self.mtime_nsec) == (f.mtime, f.mtime_nsec)
            && (self.ctime, self.ctime_nsec) == (f.ctime, f.ctime_nsec)
    }
}

/// Whose sessions one request lists.
struct Scope<'a> {
    home: &'a Home,
    cwd: &'a Path,
    attached: Option<&'a str>,
}

/// The read work one request may still do.
struct Budget {
    bytes: u64,
    lines: u64,
    deadline: Instant,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            bytes: as_u64(DISCOVERY_SCAN_BYTES),
            lines: as_u64(DISCOVERY_SCAN_LINES),
            deadline: Instant::now() + Duration::from_millis(DISCOVERY_SCAN_MS),
        }
    }

    fn charge(&mut self, bytes: u64, lines: u64) -> Result<(), ErrorCode> {
        self.bytes = self
            .bytes
            .checked_sub(bytes)
            .ok_or(ErrorCode::DiscoveryLimit)?;
        self.lines = self
            .lines
            .checked_sub(lines)
            .ok_or(ErrorCode::DiscoveryLimit)?;
        Ok(())
    }

    /// The cooperative deadline, checked between files and entries; a filesystem call
    /// in progress is not interrupted.
    fn check_deadline(&self) -> Result<(), ErrorCode> {
        if Instant::now() > self.deadline {
            Err(ErrorCode::DiscoveryLimit)
        } else {
            Ok(())
        }
    }
}

fn as_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl Scope<'_> {
    /// Scans the workspace folder within every discovery bound.
    fn scan(&self) -> Result<Scan, ErrorCode> {
        let mut budget = Budget::new();
        let dir = self.home.workspace_dir(self.cwd);
        let mut scan = Scan {
            entries: Vec::new(),
            notices: Vec::new(),
            names: Vec::new(),
            files: Vec::new(),
            attached: self.attached.map(str::to_owned),
        };
        match std::fs::symlink_metadata(&dir) {
            // No session was ever stored for this working directory.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(scan),
            Ok(meta) if meta.file_type().is_dir() => {}
            // A symlink, a file, or a folder that cannot be inspected.
            _ => return Err(ErrorCode::DiscoveryUnavailable),
        }
        scan.names = list_names(&dir, &budget)?;
        let candidates = primary_candidates(&dir, &scan.names)?;
        let mut cwd_checks = CwdChecks::new(self.cwd);
        let mut omitted = false;
        for (session_id, path) in candidates {
            budget.check_deadline()?;
            let meta = match std::fs::symlink_metadata(&path) {
                Ok(meta) => Some(MetaPrint::of(&meta)),
                // Listed a moment ago, gone now: the inventory is changing.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(ErrorCode::StaleRevision);
                }
                Err(_) => None,
            };
            let leases =
                LEASE_KINDS.map(|kind| is_present(&self.home.lease_path(&session_id, kind)));
            let entry = match read_log(&path, &session_id, SESSION_LIMITS) {
                Ok(log) => {
                    budget.charge(log.bytes, as_u64(log.lines))?;
                    if !meta.is_some_and(|m| m.matches(&log)) {
                        return Err(ErrorCode::StaleRevision);
                    }
                    self.entry(&session_id, &log, leases, &mut cwd_checks, &budget)?
                }
                Err(ReadError::Missing) => return Err(ErrorCode::StaleRevision),
                Err(ReadError::OverLimit) => return Err(ErrorCode::DiscoveryLimit),
                Err(
                    ReadError::Unsafe
                    | ReadError::Unreadable
                    | ReadError::Malformed
                    | ReadError::ForeignSession,
                ) => {
                    let (bytes, lines) = failed_read_charge(&path, meta.as_ref());
                    budget.charge(bytes, lines)?;
                    omitted = true;
                    None
                }
            };
            scan.files.push(FileState {
                session_id,
                meta,
                leases,
            });
            if let Some(entry) = entry {
                scan.entries.push(entry);
                if scan.entries.len() > DISCOVERY_SESSIONS {
                    return Err(ErrorCode::DiscoveryLimit);
                }
            }
        }
        // The second inventory pass: a name that came or went while the logs were
        // read means the listing describes no moment of the folder.
        budget.check_deadline()?;
        if list_names(&dir, &budget)? != scan.names {
            return Err(ErrorCode::StaleRevision);
        }
        if omitted {
            scan.notices
                .push(NOTICE_SESSIONS_OMITTED_INVALID.to_owned());
        }
        Ok(scan)
    }

    /// The entry of one readable log, or `None` when it belongs to another workspace.
    fn entry(
        &self,
        session_id: &str,
        log: &StoredLog,
        leases: [bool; 3],
        cwd_checks: &mut CwdChecks<'_>,
        budget: &Budget,
    ) -> Result<Option<SessionListEntry>, ErrorCode> {
        let mut recorded = false;
        for record in &log.records {
            if let RecordBody::SessionMeta { cwd: Some(cwd) } = &record.body
                && !cwd.is_empty()
            {
                recorded = true;
                if !cwd_checks.same_workspace(cwd, budget)? {
                    return Ok(None);
                }
            }
        }
        let busy = leases.contains(&true) && self.attached != Some(session_id);
        let eligibility = if busy {
            Eligibility::Busy
        } else if !recorded {
            Eligibility::CwdUnverified
        } else {
            Eligibility::Available
        };
        let notices = if recorded {
            Vec::new()
        } else {
            vec![NOTICE_CWD_UNVERIFIED.to_owned()]
        };
        Ok(Some(SessionListEntry {
            session_id: session_id.to_owned(),
            title: title(log),
            updated_at: updated_at(log),
            eligibility,
            notices,
        }))
    }
}

/// Every name in `dir`, sorted; more than `DISCOVERY_DIRECTORY_ENTRIES` iterations is
/// `discovery_limit`.
fn list_names(dir: &Path, budget: &Budget) -> Result<Vec<OsString>, ErrorCode> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ErrorCode::StaleRevision);
        }
        Err(_) => return Err(ErrorCode::DiscoveryUnavailable),
    };
    let mut names = Vec::new();
    for entry in entries {
        if names.len() == DISCOVERY_DIRECTORY_ENTRIES {
            return Err(ErrorCode::DiscoveryLimit);
        }
        budget.check_deadline()?;
        let entry = entry.map_err(|_| ErrorCode::DiscoveryUnavailable)?;
        names.push(entry.file_name());
    }
    names.sort();
    Ok(names)
}

/// The primary logs among `names`, by session ID in ascending ASCII order. A name
/// ending in `.jsonl` whose stem is no session ID is `discovery_unavailable`; any
/// other name is not a log and is ignored.
fn primary_candidates(dir: &Path, names: &[OsString]) -> Result<Vec<(String, PathBuf)>, ErrorCode> {
    let mut candidates = Vec::new();
    for name in names {
        if !name.as_bytes().ends_with(PRIMARY_SUFFIX.as_bytes()) {
            continue;
        }
        let session_id = name
            .to_str()
            .and_then(|n| n.strip_suffix(PRIMARY_SUFFIX))
            .filter(|id| is_valid_session_id(id))
            .ok_or(ErrorCode::DiscoveryUnavailable)?;
        candidates.push((session_id.to_owned(), dir.join(name)));
    }
    // "a-b.jsonl" sorts before "a.jsonl", but "a" comes before "a-b": order by ID.
    candidates.sort();
    Ok(candidates)
}

/// The same-workspace rule of `session.open`, with each recorded path canonicalized
/// once per scan.
struct CwdChecks<'a> {
    canonical_cwd: &'a Path,
    known: HashMap<String, bool>,
}

impl<'a> CwdChecks<'a> {
    fn new(canonical_cwd: &'a Path) -> CwdChecks<'a> {
        CwdChecks {
            canonical_cwd,
            known: HashMap::new(),
        }
    }

    /// Whether a recorded working directory is absolute and canonicalizes to the
    /// child's. A recorded path that no longer exists does not.
    fn same_workspace(&mut self, recorded: &str, budget: &Budget) -> Result<bool, ErrorCode> {
        if let Some(&same) = self.known.get(recorded) {
            return Ok(same);
        }
        budget.check_deadline()?;
        let path = Path::new(recorded);
        let same = path.is_absolute() && path.canonicalize().is_ok_and(|c| c == self.canonical_cwd);
        self.known.insert(recorded.to_owned(), same);
        Ok(same)
    }
}

/// The title of the last record that sets one (`title`, or `compaction` with a title),
/// if it is safe to show.
fn title(log: &StoredLog) -> Option<String> {
    let raw = log.records.iter().rev().find_map(|r| match &r.body {
        RecordBody::Title { title } => Some(title.as_str()),
        RecordBody::Compaction {
            title: Some(title), ..
        } => Some(title.as_str()),
        _ => None,
    })?;
    safe_title(raw)
}

/// A stored title as shown: at most `DISCOVERY_TITLE_BYTES` of input, no control
/// characters, nothing secret-like, sanitized, trimmed and cut to `TITLE_CHARS`
/// characters. Anything else, or nothing left, is `None`: a title is never invented.
fn safe_title(raw: &str) -> Option<String> {
    if raw.len() > DISCOVERY_TITLE_BYTES || has_control(raw) || is_secret_like(raw) {
        return None;
    }
    let clean = sanitize(raw);
    let shown: String = clean.trim().chars().take(TITLE_CHARS).collect();
    let shown = shown.trim_end();
    (!shown.is_empty()).then(|| shown.to_owned())
}

/// The greatest record timestamp, in UTC RFC 3339 with milliseconds. Timestamps are
/// compared as instants, not as text; one that does not parse is not a time and is
/// skipped.
fn updated_at(log: &StoredLog) -> Option<String> {
    let latest: SystemTime = log
        .records
        .iter()
        .filter_map(|r| humantime::parse_rfc3339(&r.ts).ok())
        .max()?;
    Some(humantime::format_rfc3339_millis(latest).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    struct Fixture {
        _dir: tempfile::TempDir,
        home: Home,
        cwd: PathBuf,
    }

    impl Fixture {
        fn new() -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            let home = Home::prepare(&dir.path().join("mc")).unwrap();
            let cwd = dir.path().join("work");
            std::fs::create_dir(&cwd).unwrap();
            let cwd = cwd.canonicalize().unwrap();
            Fixture {
                _dir: dir,
                home,
                cwd,
            }
        }

        fn write(&self, id: &str, lines: &[Value]) -> PathBuf {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            self.write_raw(&format!("{id}.jsonl"), &text)
        }

        fn write_raw(&self, name: &str, text: &str) -> PathBuf {
            let dir = self.home.workspace_dir(&self.cwd);
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        }

        fn meta(&self, id: &str) -> Value {
            record(
                id,
                "session_meta",
                json!({"cwd": self.cwd.display().to_string()}),
            )
        }

        fn list(
            &self,
            discovery: &mut Discovery,
            params: Value,
        ) -> Result<SessionListResult, ErrorCode> {
            self.list_attached(discovery, None, params)
        }

        fn list_attached(
            &self,
            discovery: &mut Discovery,
            attached: Option<&str>,
            params: Value,
        ) -> Result<SessionListResult, ErrorCode> {
            let params: SessionListParams = serde_json::from_value(params).unwrap();
            discovery.list(&self.home, &self.cwd, attached, &params)
        }
    }

    fn record(id: &str, kind: &str, fields: Value) -> Value {
        record_at(id, "2026-11-01T10:00:00.000Z", kind, fields)
    }

    fn record_at(id: &str, ts: &str, kind: &str, fields: Value) -> Value {
        let mut object = json!({"v": 1, "session_id": id, "ts": ts, "kind": kind});
        for (k, v) in fields.as_object().unwrap() {
            object[k] = v.clone();
        }
        object
    }

    fn ids(result: &SessionListResult) -> Vec<&str> {
        result
            .sessions
            .iter()
            .map(|s| s.session_id.as_str())
            .collect()
    }

    #[test]
    fn params_are_checked_before_any_work() {
        let check = |v: Value| check_params(&serde_json::from_value(v).unwrap());
        assert_eq!(check(json!({})), Ok(ListRequest::Fresh { limit: 100 }));
        assert_eq!(
            check(json!({"limit": 1})),
            Ok(ListRequest::Fresh { limit: 1 })
        );
        assert_eq!(
            check(json!({"revision": "r", "cursor": "r.1", "limit": 100})),
            Ok(ListRequest::Continue {
                revision: "r".into(),
                cursor: "r.1".into(),
                limit: 100
            })
        );
        for bad in [
            json!({"limit": 0}),
            json!({"limit": 101}),
            json!({"revision": "r"}),
            json!({"cursor": "c"}),
            json!({"revision": "r", "cursor": null}),
            json!({"revision": "bad revision", "cursor": "c"}),
            json!({"revision": "r", "cursor": "c".repeat(65)}),
            json!({"revision": "", "cursor": "c"}),
        ] {
            assert_eq!(check(bad.clone()), Err(ErrorCode::InvalidParams), "{bad}");
        }
    }

    #[test]
    fn titles_are_safe_and_bounded() {
        assert_eq!(
            safe_title("Fix the parser").as_deref(),
            Some("Fix the parser")
        );
        assert_eq!(safe_title("  padded  ").as_deref(), Some("padded"));
        let long = "é".repeat(60);
        assert_eq!(
            safe_title(&long).map(|t| t.chars().count()),
            Some(TITLE_CHARS)
        );
        // 256 input bytes are considered, 257 are not.
        assert!(safe_title(&"a ".repeat(128)).is_some());
        assert_eq!(safe_title(&"a".repeat(DISCOVERY_TITLE_BYTES + 1)), None);
        for bad in [
            "",
            "   ",
            "line\nbreak",
            "tab\there",
            "esc\u{1b}[31m",
            "key sk-abcdef",
            "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8",
        ] {
            assert_eq!(safe_title(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn title_and_updated_at_come_from_records() {
        let f = Fixture::new();
        f.write(
            "s1",
            &[
                record_at(
                    "s1",
                    "2026-11-01T10:00:00.000Z",
                    "session_meta",
                    json!({"cwd": f.cwd.display().to_string()}),
                ),
                record_at(
                    "s1",
                    "2026-11-03T09:00:00.250Z",
                    "title",
                    json!({"title": "First"}),
                ),
                // Later in the file, earlier in time: the greatest instant wins.
                record_at(
                    "s1",
                    "2026-11-02T10:00:00Z",
                    "compaction",
                    json!({"summary": "s", "title": "Second"}),
                ),
                record_at("s1", "not a time", "compaction", json!({"summary": "s"})),
                record_at("s1", "2026-11-04T00:00:00.000Z", "future_kind", json!({})),
            ],
        );
        f.write("s2", &[]);
        f.write(
            "s3",
            &[
                record("s3", "title", json!({"title": "ok"})),
                record("s3", "title", json!({"title": "\u{7}bell"})),
            ],
        );
        let mut d = Discovery::default();
        let result = f.list(&mut d, json!({})).unwrap();
        let s1 = &result.sessions[0];
        assert_eq!(s1.title.as_deref(), Some("Second"));
        // Unknown kinds are not read, so their timestamps do not count.
        assert_eq!(s1.updated_at.as_deref(), Some("2026-11-03T09:00:00.250Z"));
        assert_eq!(
            (s1.eligibility, s1.notices.len()),
            (Eligibility::Available, 0)
        );
        let s2 = &result.sessions[1];
        assert_eq!(
            (s2.title.as_deref(), s2.updated_at.as_deref()),
            (None, None)
        );
        assert_eq!(s2.eligibility, Eligibility::CwdUnverified);
        assert_eq!(s2.notices, vec![NOTICE_CWD_UNVERIFIED]);
        // The last title is unsafe: null, not an earlier one.
        assert_eq!(result.sessions[2].title, None);
        assert!(result.complete && result.next_cursor.is_none() && result.notices.is_empty());
    }

    #[test]
    fn order_is_by_id_and_other_workspaces_are_excluded() {
        let f = Fixture::new();
        for id in ["b", "a-b", "a", "Z", "a_"] {
            f.write(id, &[f.meta(id)]);
        }
        f.write(
            "gone",
            &[record(
                "gone",
                "session_meta",
                json!({"cwd": "/no/such/dir"}),
            )],
        );
        f.write(
            "rel",
            &[record("rel", "session_meta", json!({"cwd": "work"}))],
        );
        // One recorded cwd elsewhere is enough to exclude, and an empty one is ignored.
        f.write(
            "mixed",
            &[
                f.meta("mixed"),
                record("mixed", "session_meta", json!({"cwd": "/"})),
            ],
        );
        f.write(
            "blank",
            &[
                record("blank", "session_meta", json!({"cwd": ""})),
                f.meta("blank"),
            ],
        );
        f.write_raw("notes.txt", "x");
        f.write_raw("a.jsonl.tmp", "x");
        let mut d = Discovery::default();
        let result = f.list(&mut d, json!({})).unwrap();
        assert_eq!(ids(&result), vec!["Z", "a", "a-b", "a_", "b", "blank"]);
        assert!(result.notices.is_empty());
    }

    #[test]
    fn invalid_logs_are_omitted_with_one_notice() {
        let f = Fixture::new();
        f.write("good", &[f.meta("good")]);
        f.write_raw("bad1.jsonl", "{not json}\n");
        f.write("bad2", &[record("other", "title", json!({"title": "x"}))]);
        std::fs::create_dir(f.home.workspace_dir(&f.cwd).join("bad3.jsonl")).unwrap();
        let mut d = Discovery::default();
        let result = f.list(&mut d, json!({})).unwrap();
        assert_eq!(ids(&result), vec!["good"]);
        assert_eq!(result.notices, vec![NOTICE_SESSIONS_OMITTED_INVALID]);
    }

    #[test]
    fn bad_names_and_folders_make_discovery_unavailable() {
        let f = Fixture::new();
        let mut d = Discovery::default();
        // No folder yet: nothing stored, a complete empty listing.
        let empty = f.list(&mut d, json!({})).unwrap();
        assert!(empty.sessions.is_empty() && empty.complete && empty.next_cursor.is_none());
        for name in [
            "a.b.jsonl",
            ".jsonl",
            "has space.jsonl",
            &format!("{}.jsonl", "x".repeat(65)),
        ] {
            let path = f.write_raw(name, "");
            assert_eq!(
                f.list(&mut d, json!({})).unwrap_err(),
                ErrorCode::DiscoveryUnavailable,
                "{name}"
            );
            std::fs::remove_file(path).unwrap();
        }
        assert!(f.list(&mut d, json!({})).is_ok());
        let ws = f.home.workspace_dir(&f.cwd);
        std::fs::remove_dir(&ws).unwrap();
        std::fs::write(&ws, "").unwrap();
        assert_eq!(
            f.list(&mut d, json!({})).unwrap_err(),
            ErrorCode::DiscoveryUnavailable
        );
    }

    #[test]
    fn leases_mark_sessions_busy_except_the_attached_one() {
        let f = Fixture::new();
        for id in ["s1", "s2", "s3", "s4"] {
            f.write(id, &[f.meta(id)]);
        }
        f.write("legacy", &[]);
        std::fs::write(f.home.lease_path("s1", LeaseKind::Writer), "").unwrap();
        std::fs::write(f.home.lease_path("s2", LeaseKind::Active), "").unwrap();
        std::fs::write(f.home.lease_path("s3", LeaseKind::Append), "").unwrap();
        std::fs::write(f.home.lease_path("legacy", LeaseKind::Writer), "").unwrap();
        let mut d = Discovery::default();
        let result = f.list_attached(&mut d, Some("s1"), json!({})).unwrap();
        let shown: Vec<(&str, Eligibility, usize)> = result
            .sessions
            .iter()
            .map(|s| (s.session_id.as_str(), s.eligibility, s.notices.len()))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("legacy", Eligibility::Busy, 1),
                ("s1", Eligibility::Available, 0),
                ("s2", Eligibility::Busy, 0),
                ("s3", Eligibility::Busy, 0),
                ("s4", Eligibility::Available, 0),
            ]
        );
        // Listing neither took nor removed any lease file.
        assert!(is_present(&f.home.lease_path("s1", LeaseKind::Writer)));
        assert!(!is_present(&f.home.lease_path("s4", LeaseKind::Writer)));
    }

    #[test]
    fn pages_follow_cursors_and_any_change_is_stale_for_good() {
        let f = Fixture::new();
        for n in 0..5 {
            let id = format!("s{n}");
            f.write(&id, &[f.meta(&id)]);
        }
        let mut d = Discovery::default();
        let first = f.list(&mut d, json!({"limit": 2})).unwrap();
        assert_eq!(ids(&first), vec!["s0", "s1"]);
        assert!(first.revision.starts_with('d') && first.revision.len() == 33);
        let cursor = first.next_cursor.clone().unwrap();
        assert!(!first.complete);
        let next = |d: &mut Discovery, cursor: &str, limit: u64| {
            f.list(
                d,
                json!({"revision": first.revision, "cursor": cursor, "limit": limit}),
            )
        };
        let second = next(&mut d, &cursor, 2).unwrap();
        assert_eq!(ids(&second), vec!["s2", "s3"]);
        let last = next(&mut d, second.next_cursor.as_deref().unwrap(), 100).unwrap();
        assert_eq!(ids(&last), vec!["s4"]);
        assert!(last.complete && last.next_cursor.is_none());
        // A page can be asked for again while nothing changed.
        assert_eq!(next(&mut d, &cursor, 2).unwrap(), second);
        // Cursors it never issued, and other revisions, are stale.
        assert_eq!(
            next(&mut d, &format!("{}.3", first.revision), 2),
            Err(ErrorCode::StaleRevision)
        );
        let other = f.list(
            &mut Discovery::default(),
            json!({"revision": "x", "cursor": "x.1"}),
        );
        assert_eq!(other, Err(ErrorCode::StaleRevision));

        // A lease file appearing is a change, and the snapshot stays stale.
        let lease = f.home.lease_path("s0", LeaseKind::Active);
        std::fs::write(&lease, "").unwrap();
        assert_eq!(next(&mut d, &cursor, 2), Err(ErrorCode::StaleRevision));
        std::fs::remove_file(&lease).unwrap();
        assert_eq!(next(&mut d, &cursor, 2), Err(ErrorCode::StaleRevision));

        // A fresh listing starts over; the attachment is part of what it saw.
        let fresh = f.list(&mut d, json!({"limit": 2})).unwrap();
        assert_ne!(fresh.revision, first.revision);
        let params = json!({"revision": fresh.revision, "cursor": fresh.next_cursor, "limit": 2});
        assert_eq!(
            f.list_attached(&mut d, Some("s0"), params),
            Err(ErrorCode::StaleRevision)
        );

        // So is a log's content, even at the same length.
        let fresh = f.list(&mut d, json!({"limit": 2})).unwrap();
        let path = f.home.workspace_dir(&f.cwd).join("s4.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("10:00", "11:00")).unwrap();
        let params = json!({"revision": fresh.revision, "cursor": fresh.next_cursor, "limit": 2});
        assert_eq!(f.list(&mut d, params), Err(ErrorCode::StaleRevision));

        // And a new sidecar name in the folder.
        let fresh = f.list(&mut d, json!({"limit": 2})).unwrap();
        f.write_raw("sidecar", "");
        let params = json!({"revision": fresh.revision, "cursor": fresh.next_cursor, "limit": 2});
        assert_eq!(f.list(&mut d, params), Err(ErrorCode::StaleRevision));
    }

    #[test]
    fn pages_stay_within_their_byte_bound() {
        let f = Fixture::new();
        // Long IDs and titles of four-byte characters: 100 entries would not fit.
        let title = "\u{1d11e}".repeat(TITLE_CHARS);
        for n in 0..120 {
            let id = format!("{n:03}{}", "x".repeat(61));
            f.write(
                &id,
                &[f.meta(&id), record(&id, "title", json!({"title": title}))],
            );
        }
        let mut d = Discovery::default();
        let mut page = f.list(&mut d, json!({})).unwrap();
        let mut seen = Vec::new();
        loop {
            assert!(serialized_len(&page).unwrap() <= DISCOVERY_PAGE_BYTES);
            assert!(page.sessions.len() < 100);
            seen.extend(page.sessions.iter().map(|s| s.session_id.clone()));
            let Some(cursor) = page.next_cursor.clone() else {
                assert!(page.complete);
                break;
            };
            assert!(!page.complete);
            page = f
                .list(&mut d, json!({"revision": page.revision, "cursor": cursor}))
                .unwrap();
        }
        assert_eq!(seen.len(), 120);
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bounds_fail_the_whole_listing() {
        let f = Fixture::new();
        for n in 0..DISCOVERY_SESSIONS {
            let id = format!("s{n:03}");
            f.write(&id, &[f.meta(&id)]);
        }
        let mut d = Discovery::default();
        assert_eq!(f.list(&mut d, json!({})).unwrap().sessions.len(), 100);
        f.write("s999", &[f.meta("s999")]);
        assert_eq!(f.list(&mut d, json!({})), Err(ErrorCode::DiscoveryLimit));
        // A session beyond its own read bound fails the listing too.
        let f = Fixture::new();
        let lines: Vec<Value> = (0..=DISCOVERY_SESSION_LINES)
            .map(|_| record("big", "future_kind", json!({})))
            .collect();
        f.write("big", &lines);
        assert_eq!(
            f.list(&mut Discovery::default(), json!({})),
            Err(ErrorCode::DiscoveryLimit)
        );
    }

    #[test]
    fn failed_reads_charge_what_they_could_have_read() {
        let f = Fixture::new();
        // Small invalid logs are charged their length, so many of them still list.
        for n in 0..40 {
            f.write_raw(&format!("bad{n}.jsonl"), "not json\n");
        }
        let mut d = Discovery::default();
        assert_eq!(
            f.list(&mut d, json!({})).unwrap().notices,
            vec![NOTICE_SESSIONS_OMITTED_INVALID]
        );
        // A log that is not a regular file is charged its whole per-file budget.
        let whole = DISCOVERY_SCAN_BYTES / DISCOVERY_SESSION_BYTES;
        let dir = f.home.workspace_dir(&f.cwd);
        for n in 0..whole {
            std::fs::create_dir_all(dir.join(format!("odd{n}.jsonl"))).unwrap();
        }
        assert_eq!(f.list(&mut d, json!({})), Err(ErrorCode::DiscoveryLimit));
    }

    #[test]
    fn the_directory_bound_counts_every_name() {
        let f = Fixture::new();
        for n in 0..DISCOVERY_DIRECTORY_ENTRIES {
            f.write_raw(&format!("side{n}"), "");
        }
        let mut d = Discovery::default();
        assert!(f.list(&mut d, json!({})).unwrap().sessions.is_empty());
        f.write_raw("one-more", "");
        assert_eq!(f.list(&mut d, json!({})), Err(ErrorCode::DiscoveryLimit));
    }
}
