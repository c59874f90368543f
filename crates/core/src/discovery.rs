//! Read-only session discovery of the working directory's folder of session logs.
//!
//! `session.list` is a bounded scan kept as one snapshot per child and paged by cursor.
//! Every continuation scans again and compares what it saw with the snapshot, so a page
//! is never served from an inventory that changed under it.
//!
//! `session.discover` has no ceiling on the number of sessions: each call reads one
//! bounded batch of logs after the last session ID its cursor visited, so a pass moves
//! through any folder one batch at a time, every batch its own snapshot.
//!
//! Both only read: they never take, renew or remove a lease, never repair a log and
//! write nothing.

use std::path::Path;

use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    DISCOVER_BATCH_BYTES, DISCOVER_BATCH_FILES, DISCOVER_BATCH_LINES, DISCOVER_DIRECTORY_ENTRIES,
    DISCOVER_PAGE_BYTES, DISCOVER_SCAN_MS, DISCOVERY_PAGE_BYTES, DISCOVERY_PAGE_ENTRIES,
};
use magi_protocol::messages::{
    SessionDiscoverParams, SessionDiscoverResult, SessionListParams, SessionListResult,
};
use magi_protocol::names::is_valid_name;
use magi_store::Home;

use crate::paging::{Snapshot, check_limit, check_request, page_end};
use crate::revision::Revision;

mod budget;
mod entry;
pub(crate) use entry::safe_title;
mod folder;
mod scope;
#[cfg(test)]
mod tests;

use scope::{Scan, Scope};

/// Top-level notice: at least one log could not be trusted and was left out.
pub const NOTICE_SESSIONS_OMITTED_INVALID: &str = "sessions_omitted_invalid";

/// Top-level notice of `session.discover`: at least one log was over its own read
/// bound and was left out.
pub const NOTICE_SESSIONS_OMITTED_OVER_LIMIT: &str = "sessions_omitted_over_limit";

/// Entry notice: the session records no working directory, so it was not verified.
pub const NOTICE_CWD_UNVERIFIED: &str = "cwd_unverified";

/// A `session.list` request whose params passed every check.
pub use crate::paging::PageRequest as ListRequest;

/// Checks `session.list` params beyond their shape: `limit` 1–100, revision and
/// cursor both absent or both present, each following the name grammar. Anything else
/// is `invalid_params`. Pure, so the server can answer it before the `busy` rule.
pub fn check_params(params: &SessionListParams) -> Result<ListRequest, ErrorCode> {
    check_request(
        params.limit,
        DISCOVERY_PAGE_ENTRIES,
        params.revision.as_ref(),
        params.cursor.as_ref(),
    )
}

/// A `session.discover` request whose params passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverRequest {
    /// The cursor to continue from; `None` starts a new pass.
    pub cursor: Option<String>,
    /// Most entries in the batch.
    pub limit: usize,
}

/// Checks `session.discover` params beyond their shape: `limit` 1–100 and a cursor
/// following the name grammar, else `invalid_params`. Pure, so the server can answer
/// it before the `busy` rule.
pub fn check_discover_params(params: &SessionDiscoverParams) -> Result<DiscoverRequest, ErrorCode> {
    let limit = check_limit(params.limit, DISCOVERY_PAGE_ENTRIES)?;
    if params.cursor.as_deref().is_some_and(|c| !is_valid_name(c)) {
        return Err(ErrorCode::InvalidParams);
    }
    Ok(DiscoverRequest {
        cursor: params.cursor.clone(),
        limit,
    })
}

/// The discovery state of one child: at most one `session.list` snapshot and at most
/// one `session.discover` pass.
#[derive(Debug, Default)]
pub struct Discovery {
    snapshot: Option<Snapshot<Scan>>,
    pass: Option<Pass>,
}

/// One `session.discover` pass: its identity and, for each cursor it issued, the last
/// session ID visited before it.
///
/// A cursor is `p<32 hex>.<index>` (at most 54 bytes), so it stays opaque and within
/// the name grammar while a session ID alone may already take 64 bytes.
#[derive(Debug)]
struct Pass {
    revision: Revision,
    /// The last session ID behind each cursor, by cursor index; `""` sorts before
    /// every session ID and stands for the start of the folder.
    last_ids: Vec<String>,
}

impl Pass {
    fn new() -> Pass {
        Pass {
            revision: Revision::new('p'),
            last_ids: Vec::new(),
        }
    }

    /// The last session ID behind a cursor this pass issued.
    fn resolve(&self, cursor: &str) -> Option<&str> {
        let index = self.revision.resolve(cursor)?;
        self.last_ids.get(index).map(String::as_str)
    }

    /// The cursor continuing after `last`.
    fn issue(&mut self, last: String) -> String {
        // One cursor per ID: asking for the same batch again does not grow the pass.
        let index = match self.last_ids.iter().position(|id| *id == last) {
            Some(index) => index,
            None => {
                self.last_ids.push(last);
                self.last_ids.len() - 1
            }
        };
        self.revision.issue(index)
    }
}

/// The bounds of one `session.discover` call (separate from the constants so tests
/// can reach each of them with a small folder).
#[derive(Debug, Clone, Copy)]
struct DiscoverBounds {
    directory_entries: usize,
    files: usize,
    bytes: usize,
    lines: usize,
    page_bytes: usize,
    scan_ms: u64,
}

impl DiscoverBounds {
    const V1: DiscoverBounds = DiscoverBounds {
        directory_entries: DISCOVER_DIRECTORY_ENTRIES,
        files: DISCOVER_BATCH_FILES,
        bytes: DISCOVER_BATCH_BYTES,
        lines: DISCOVER_BATCH_LINES,
        page_bytes: DISCOVER_PAGE_BYTES,
        scan_ms: DISCOVER_SCAN_MS,
    };
}

impl Snapshot<Scan> {
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
        let end = page_end(
            &envelope,
            entries,
            start,
            limit,
            DISCOVERY_PAGE_BYTES,
            ErrorCode::DiscoveryLimit,
        )?;
        let sessions = entries.get(start..end).unwrap_or_default().to_vec();
        let next_cursor = self.cursor_after(end, self.scan.entries.len());
        Ok(SessionListResult {
            revision: self.revision.id().to_owned(),
            sessions,
            complete: next_cursor.is_none(),
            next_cursor,
            notices: self.scan.notices.clone(),
        })
    }
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
                self.snapshot
                    .insert(Snapshot::new('d', scan))
                    .page(0, limit)
            }
            ListRequest::Continue {
                revision,
                cursor,
                limit,
            } => {
                let snapshot = self.snapshot.as_mut().ok_or(ErrorCode::StaleRevision)?;
                let start = snapshot.resume(&revision, &cursor, ErrorCode::StaleRevision)?;
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

    /// `session.discover` for the sessions of `cwd` (canonical) under `home`, with the
    /// scope arguments of [`Discovery::list`]: one batch of the current pass, or of a
    /// new one when the cursor is null.
    pub fn discover(
        &mut self,
        home: &Home,
        cwd: &Path,
        attached: Option<&str>,
        params: &SessionDiscoverParams,
    ) -> Result<SessionDiscoverResult, ErrorCode> {
        let scope = Scope {
            home,
            cwd,
            attached,
        };
        self.discover_within(&scope, params, DiscoverBounds::V1)
    }

    fn discover_within(
        &mut self,
        scope: &Scope<'_>,
        params: &SessionDiscoverParams,
        bounds: DiscoverBounds,
    ) -> Result<SessionDiscoverResult, ErrorCode> {
        let request = check_discover_params(params)?;
        let after = match &request.cursor {
            None => {
                // The new pass replaces the old one even if this call fails: the client
                // started over, so the old cursors are not worth keeping.
                self.pass = Some(Pass::new());
                String::new()
            }
            Some(cursor) => self
                .pass
                .as_ref()
                .and_then(|pass| pass.resolve(cursor))
                .ok_or(ErrorCode::StaleRevision)?
                .to_owned(),
        };
        let batch = scope.batch(&after, request.limit, bounds)?;
        let next_cursor = if batch.complete {
            None
        } else {
            let pass = self.pass.as_mut().ok_or(ErrorCode::StaleRevision)?;
            Some(pass.issue(batch.last))
        };
        let mut notices = Vec::new();
        if batch.invalid {
            notices.push(NOTICE_SESSIONS_OMITTED_INVALID.to_owned());
        }
        if batch.over_limit {
            notices.push(NOTICE_SESSIONS_OMITTED_OVER_LIMIT.to_owned());
        }
        Ok(SessionDiscoverResult {
            sessions: batch.entries,
            complete: next_cursor.is_none(),
            next_cursor,
            provisional: true,
            notices,
        })
    }
}
