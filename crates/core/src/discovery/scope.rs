//! Reading the workspace folder's session logs for one request: the scan behind a
//! `session.list` snapshot and the batch of a `session.discover` call, each log
//! visited with its metadata and leases and read within the request's budget.

use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    DISCOVERY_DIRECTORY_ENTRIES, DISCOVERY_SCAN_BYTES, DISCOVERY_SCAN_LINES, DISCOVERY_SCAN_MS,
    DISCOVERY_SESSIONS, ID_BYTES,
};
use magi_protocol::messages::{Eligibility, SessionDiscoverResult, SessionListEntry};
use magi_store::Home;
use magi_store::lease::{LeaseKind, is_present};
use magi_store::log::{ReadError, ReadLimits, StoredLog, read_log};
use magi_store::records::RecordBody;

use crate::paging::PageBytes;

use super::budget::{Budget, SESSION_LIMITS, as_u64};
use super::entry::{CwdChecks, title, updated_at};
use super::folder::{list_names, primary_candidates};
use super::{
    DiscoverBounds, NOTICE_CWD_UNVERIFIED, NOTICE_SESSIONS_OMITTED_INVALID,
    NOTICE_SESSIONS_OMITTED_OVER_LIMIT,
};

/// The lease kinds whose presence makes a session possibly busy.
const LEASE_KINDS: [LeaseKind; 3] = [LeaseKind::Writer, LeaseKind::Active, LeaseKind::Append];

/// What one `session.discover` call found after one session ID.
pub(super) struct Batch {
    pub(super) entries: Vec<SessionListEntry>,
    /// The last session ID visited; the one the batch started after when none was.
    pub(super) last: String,
    /// Whether every primary log after the start was visited.
    pub(super) complete: bool,
    /// Whether a log was left out as invalid.
    pub(super) invalid: bool,
    /// Whether a log was left out as over its own read bound.
    pub(super) over_limit: bool,
}

/// What one scan saw: the listing it yields and the inventory it yields it from.
/// Two scans are equal only if nothing a client could notice changed in between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Scan {
    pub(super) entries: Vec<SessionListEntry>,
    pub(super) notices: Vec<String>,
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

/// What a failed read under `limits` is charged. A regular file unchanged since it was
/// listed cannot have yielded more bytes than its length, nor more lines than bytes, so
/// those bound the charge; anything else charges the whole of `limits`.
fn failed_read_charge(path: &Path, listed: Option<&MetaPrint>, limits: ReadLimits) -> (u64, u64) {
    let whole = (as_u64(limits.max_bytes), as_u64(limits.max_lines));
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
    pub(super) fn of(meta: &Metadata) -> MetaPrint {
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
    pub(super) fn matches(&self, log: &StoredLog) -> bool {
        let f = &log.fingerprint;
        (self.dev, self.ino, self.len) == (f.dev, f.ino, f.len)
            && (self.mtime, self.mtime_nsec) == (f.mtime, f.mtime_nsec)
            && (self.ctime, self.ctime_nsec) == (f.ctime, f.ctime_nsec)
    }
}

/// Whose sessions one request lists.
pub(super) struct Scope<'a> {
    pub(super) home: &'a Home,
    pub(super) cwd: &'a Path,
    pub(super) attached: Option<&'a str>,
}

/// One primary log as one visit found it.
pub(super) struct Visit {
    /// `None` when its metadata could not be read.
    meta: Option<MetaPrint>,
    leases: [bool; 3],
    pub(super) read: Read,
}

/// How reading one primary log went.
pub(super) enum Read {
    Log(StoredLog),
    /// Listed a moment ago, gone now.
    Gone,
    /// Over the read bounds it was read with; carries the read's charge.
    OverLimit((u64, u64)),
    /// Not a log that can be trusted; carries the read's charge.
    Invalid((u64, u64)),
}

impl Scope<'_> {
    /// The workspace folder, or `None` when no session was ever stored for this
    /// working directory.
    pub(super) fn folder(&self) -> Result<Option<PathBuf>, ErrorCode> {
        let dir = self.home.workspace_dir(self.cwd);
        match std::fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Ok(meta) if meta.file_type().is_dir() => Ok(Some(dir)),
            // A symlink, a file, or a folder that cannot be inspected.
            _ => Err(ErrorCode::DiscoveryUnavailable),
        }
    }

    /// Takes one primary log's metadata and leases, then reads it under `limits`.
    pub(super) fn visit(&self, session_id: &str, path: &Path, limits: ReadLimits) -> Visit {
        let meta = match std::fs::symlink_metadata(path) {
            Ok(meta) => Some(MetaPrint::of(&meta)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Visit {
                    meta: None,
                    leases: [false; 3],
                    read: Read::Gone,
                };
            }
            Err(_) => None,
        };
        let leases = LEASE_KINDS.map(|kind| is_present(&self.home.lease_path(session_id, kind)));
        let read = match read_log(path, session_id, limits) {
            Ok(log) => Read::Log(log),
            Err(ReadError::Missing) => Read::Gone,
            Err(ReadError::OverLimit) => {
                Read::OverLimit(failed_read_charge(path, meta.as_ref(), limits))
            }
            Err(
                ReadError::Unsafe
                | ReadError::Unreadable
                | ReadError::Malformed
                | ReadError::ForeignSession,
            ) => Read::Invalid(failed_read_charge(path, meta.as_ref(), limits)),
        };
        Visit { meta, leases, read }
    }

    /// Scans the workspace folder within every discovery bound.
    pub(super) fn scan(&self) -> Result<Scan, ErrorCode> {
        let mut budget = Budget::new(
            DISCOVERY_SCAN_BYTES,
            DISCOVERY_SCAN_LINES,
            DISCOVERY_SCAN_MS,
        );
        let mut scan = Scan {
            entries: Vec::new(),
            notices: Vec::new(),
            names: Vec::new(),
            files: Vec::new(),
            attached: self.attached.map(str::to_owned),
        };
        let Some(dir) = self.folder()? else {
            return Ok(scan);
        };
        let deadline = Some(budget.deadline);
        // A folder that vanished since it was inspected: the inventory is changing.
        scan.names = list_names(&dir, DISCOVERY_DIRECTORY_ENTRIES, deadline)?
            .ok_or(ErrorCode::StaleRevision)?;
        let candidates = primary_candidates(&dir, &scan.names)?;
        let mut cwd_checks = CwdChecks::new(self.cwd);
        let mut omitted = false;
        for (session_id, path) in candidates {
            budget.check_deadline()?;
            let visit = self.visit(&session_id, &path, SESSION_LIMITS);
            let entry = match visit.read {
                Read::Log(log) => {
                    budget.charge(log.bytes, as_u64(log.lines))?;
                    if !visit.meta.is_some_and(|m| m.matches(&log)) {
                        return Err(ErrorCode::StaleRevision);
                    }
                    self.entry(&session_id, &log, visit.leases, &mut cwd_checks, deadline)?
                }
                // Listed a moment ago, gone now: the inventory is changing.
                Read::Gone => return Err(ErrorCode::StaleRevision),
                Read::OverLimit(_) => return Err(ErrorCode::DiscoveryLimit),
                Read::Invalid((bytes, lines)) => {
                    budget.charge(bytes, lines)?;
                    omitted = true;
                    None
                }
            };
            scan.files.push(FileState {
                session_id,
                meta: visit.meta,
                leases: visit.leases,
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
        if list_names(&dir, DISCOVERY_DIRECTORY_ENTRIES, deadline)?.as_ref() != Some(&scan.names) {
            return Err(ErrorCode::StaleRevision);
        }
        if omitted {
            scan.notices
                .push(NOTICE_SESSIONS_OMITTED_INVALID.to_owned());
        }
        Ok(scan)
    }

    /// Reads one `session.discover` batch: the primary logs after `after`, in order,
    /// until the folder ends or the first of `limit` entries and `bounds` is reached.
    ///
    /// The first log of a batch is read under its own bound alone and without the
    /// deadline, and fits an empty page, so every call moves its pass on. A log read
    /// but not kept (no room left, the deadline) is not visited: the next call reads it
    /// again.
    pub(super) fn batch(
        &self,
        after: &str,
        limit: usize,
        bounds: DiscoverBounds,
    ) -> Result<Batch, ErrorCode> {
        let mut batch = Batch {
            entries: Vec::new(),
            last: after.to_owned(),
            complete: true,
            invalid: false,
            over_limit: false,
        };
        let Some(dir) = self.folder()? else {
            return Ok(batch);
        };
        // Listing is bounded by the name count alone: a batch that ran out of time
        // before its first log could not move the pass on.
        let Some(names) = list_names(&dir, bounds.directory_entries, None)? else {
            // Removed since it was inspected: nothing is stored any more.
            return Ok(batch);
        };
        let candidates = primary_candidates(&dir, &names)?;
        let mut budget = Budget::new(bounds.bytes, bounds.lines, bounds.scan_ms);
        // The longest cursor and both notices make the envelope as long as it can get.
        let envelope = SessionDiscoverResult {
            sessions: Vec::new(),
            next_cursor: Some("c".repeat(ID_BYTES)),
            complete: false,
            provisional: true,
            notices: vec![
                NOTICE_SESSIONS_OMITTED_INVALID.to_owned(),
                NOTICE_SESSIONS_OMITTED_OVER_LIMIT.to_owned(),
            ],
        };
        let mut page = PageBytes::new(&envelope, bounds.page_bytes, ErrorCode::DiscoveryLimit)?;
        let mut cwd_checks = CwdChecks::new(self.cwd);
        let after_cursor = candidates.into_iter().filter(|(id, _)| id.as_str() > after);
        for (visited, (session_id, path)) in after_cursor.enumerate() {
            let first = visited == 0;
            if !first
                && (batch.entries.len() == limit
                    || visited == bounds.files
                    || budget.exhausted()
                    || budget.expired())
            {
                batch.complete = false;
                break;
            }
            let (limits, deadline) = if first {
                (SESSION_LIMITS, None)
            } else {
                (budget.read_limits(), Some(budget.deadline))
            };
            let visit = self.visit(&session_id, &path, limits);
            match visit.read {
                Read::Log(log) => {
                    budget.spend(log.bytes, as_u64(log.lines));
                    let kept = match self.entry(
                        &session_id,
                        &log,
                        visit.leases,
                        &mut cwd_checks,
                        deadline,
                    ) {
                        Ok(kept) => kept,
                        Err(code) if first => return Err(code),
                        // The deadline passed while its working directory was checked.
                        Err(_) => {
                            batch.complete = false;
                            break;
                        }
                    };
                    if let Some(entry) = kept {
                        if !page.add(&entry)? {
                            // Not even one entry fits: a bound was exceeded; never a
                            // fake empty page.
                            if batch.entries.is_empty() {
                                return Err(ErrorCode::DiscoveryLimit);
                            }
                            batch.complete = false;
                            break;
                        }
                        batch.entries.push(entry);
                    }
                }
                // Removed since the folder was listed: there is nothing to show.
                Read::Gone => {}
                // Over what the budget had left, not over its own bound.
                Read::OverLimit(_) if limits != SESSION_LIMITS => {
                    batch.complete = false;
                    break;
                }
                Read::OverLimit((bytes, lines)) => {
                    budget.spend(bytes, lines);
                    batch.over_limit = true;
                }
                Read::Invalid((bytes, lines)) => {
                    budget.spend(bytes, lines);
                    batch.invalid = true;
                }
            }
            batch.last = session_id;
        }
        Ok(batch)
    }

    /// The entry of one readable log, or `None` when it belongs to another workspace.
    pub(super) fn entry(
        &self,
        session_id: &str,
        log: &StoredLog,
        leases: [bool; 3],
        cwd_checks: &mut CwdChecks<'_>,
        deadline: Option<Instant>,
    ) -> Result<Option<SessionListEntry>, ErrorCode> {
        let mut recorded = false;
        for record in &log.records {
            if let RecordBody::SessionMeta { cwd: Some(cwd) } = &record.body
                && !cwd.is_empty()
            {
                recorded = true;
                if !cwd_checks.same_workspace(cwd, deadline)? {
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
