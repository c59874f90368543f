//! Pages of a scanned snapshot, by revision and cursor: what `session.list` and
//! `model.catalog` share.
//!
//! A fresh request scans and replaces the snapshot and answers its first page; a
//! continuation names the snapshot's revision and a cursor it issued. Each page stays
//! within an entry count and a serialized byte bound, and a page into which not even
//! one entry fits is an error, never a fake empty page.

use magi_protocol::ErrorCode;
use magi_protocol::names::is_valid_name;
use serde::Serialize;

use crate::revision::Revision;

/// A paged request whose params passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageRequest {
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

/// Checks paged params beyond their shape: `limit` within 1 to `max` (`max` when
/// absent), revision and cursor both absent or both present, each following the name
/// grammar. Anything else is `invalid_params`.
pub(crate) fn check_request(
    limit: Option<u64>,
    max: usize,
    revision: Option<&String>,
    cursor: Option<&String>,
) -> Result<PageRequest, ErrorCode> {
    let limit = check_limit(limit, max)?;
    match (revision, cursor) {
        (None, None) => Ok(PageRequest::Fresh { limit }),
        (Some(revision), Some(cursor)) if is_valid_name(revision) && is_valid_name(cursor) => {
            Ok(PageRequest::Continue {
                revision: revision.clone(),
                cursor: cursor.clone(),
                limit,
            })
        }
        _ => Err(ErrorCode::InvalidParams),
    }
}

/// A page size of 1 to `max`, `max` when absent; anything else is `invalid_params`.
pub(crate) fn check_limit(limit: Option<u64>, max: usize) -> Result<usize, ErrorCode> {
    match limit {
        None => Ok(max),
        Some(limit) => usize::try_from(limit)
            .ok()
            .filter(|l| (1..=max).contains(l))
            .ok_or(ErrorCode::InvalidParams),
    }
}

/// One scan as paged, and the cursors issued for it.
#[derive(Debug)]
pub(crate) struct Snapshot<S> {
    pub(crate) revision: Revision,
    pub(crate) scan: S,
    /// Once a change is seen the snapshot stays stale until a fresh request.
    pub(crate) stale: bool,
}

impl<S> Snapshot<S> {
    /// A snapshot of `scan` under a fresh revision starting with `prefix`.
    pub(crate) fn new(prefix: char, scan: S) -> Snapshot<S> {
        Snapshot {
            revision: Revision::new(prefix),
            scan,
            stale: false,
        }
    }

    /// Where a continuation starts: the entry behind `cursor` if this snapshot is the
    /// `revision` named, is not stale and issued that cursor; otherwise `stale`.
    pub(crate) fn resume(
        &self,
        revision: &str,
        cursor: &str,
        stale: ErrorCode,
    ) -> Result<usize, ErrorCode> {
        if self.revision.id() != revision || self.stale {
            return Err(stale);
        }
        self.revision.resolve(cursor).ok_or(stale)
    }

    /// The cursor after a page ending at `end` of `len` entries, issued; `None` when
    /// the page reaches the end.
    pub(crate) fn cursor_after(&mut self, end: usize, len: usize) -> Option<String> {
        (end < len).then(|| self.revision.issue(end))
    }
}

/// Where the page starting at `start` ends: at most `limit` of `entries`, and at most
/// `max` bytes serialized inside `envelope` (the page at its longest, without entries).
/// `over` when not even one entry fits (or a value cannot be serialized).
pub(crate) fn page_end<E: Serialize, T: Serialize>(
    envelope: &E,
    entries: &[T],
    start: usize,
    limit: usize,
    max: usize,
    over: ErrorCode,
) -> Result<usize, ErrorCode> {
    let mut bytes = PageBytes::new(envelope, max, over)?;
    let mut end = start;
    for entry in entries.iter().skip(start).take(limit) {
        if !bytes.add(entry)? {
            break;
        }
        end += 1;
    }
    if end == start && start < entries.len() {
        return Err(over);
    }
    Ok(end)
}

/// The serialized size of a page as entries join it: the envelope at its longest,
/// then each entry with its separator.
pub(crate) struct PageBytes {
    used: usize,
    entries: usize,
    max: usize,
    over: ErrorCode,
}

impl PageBytes {
    /// A page of at most `max` bytes around `envelope`; a value that cannot be
    /// serialized is `over`.
    pub(crate) fn new<T: Serialize>(
        envelope: &T,
        max: usize,
        over: ErrorCode,
    ) -> Result<PageBytes, ErrorCode> {
        Ok(PageBytes {
            used: serialized_len(envelope, over)?,
            entries: 0,
            max,
            over,
        })
    }

    /// Counts `entry` in if the page still has room for it; `false` leaves it out.
    pub(crate) fn add<T: Serialize>(&mut self, entry: &T) -> Result<bool, ErrorCode> {
        let separator = usize::from(self.entries > 0);
        let grown = self.used + separator + serialized_len(entry, self.over)?;
        if grown > self.max {
            return Ok(false);
        }
        self.used = grown;
        self.entries += 1;
        Ok(true)
    }
}

/// The length of `value` as JSON; `over` if it cannot be serialized.
pub(crate) fn serialized_len<T: Serialize>(value: &T, over: ErrorCode) -> Result<usize, ErrorCode> {
    serde_json::to_vec(value).map(|v| v.len()).map_err(|_| over)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        let name = Some("r1".to_owned());
        assert_eq!(
            check_request(None, 100, None, None),
            Ok(PageRequest::Fresh { limit: 100 })
        );
        assert_eq!(
            check_request(Some(0), 100, None, None),
            Err(ErrorCode::InvalidParams)
        );
        assert_eq!(
            check_request(Some(101), 100, None, None),
            Err(ErrorCode::InvalidParams)
        );
        assert_eq!(
            check_request(Some(3), 100, name.as_ref(), None),
            Err(ErrorCode::InvalidParams)
        );
        assert_eq!(
            check_request(Some(3), 100, name.as_ref(), name.as_ref()),
            Ok(PageRequest::Continue {
                revision: "r1".into(),
                cursor: "r1".into(),
                limit: 3
            })
        );
    }

    #[test]
    fn pages_end_at_the_byte_bound_and_refuse_when_nothing_fits() {
        let entries = ["aaaa", "bbbb", "cccc"];
        // `[]` is 2 bytes; each entry 6, plus a comma after the first.
        assert_eq!(
            page_end(&[0u8; 0], &entries, 0, 3, 15, ErrorCode::CatalogLimit),
            Ok(2)
        );
        assert_eq!(
            page_end(&[0u8; 0], &entries, 2, 3, 15, ErrorCode::CatalogLimit),
            Ok(3)
        );
        assert_eq!(
            page_end(&[0u8; 0], &entries, 0, 1, 100, ErrorCode::CatalogLimit),
            Ok(1)
        );
        assert_eq!(
            page_end(&[0u8; 0], &entries, 0, 3, 7, ErrorCode::CatalogLimit),
            Err(ErrorCode::CatalogLimit)
        );
        assert_eq!(
            page_end(&[0u8; 0], &entries, 3, 3, 7, ErrorCode::CatalogLimit),
            Ok(3)
        );
    }

    #[test]
    fn a_continuation_resumes_only_its_own_snapshot() {
        let mut snapshot = Snapshot::new('t', ());
        let cursor = snapshot.cursor_after(2, 5).unwrap();
        assert_eq!(snapshot.cursor_after(5, 5), None);
        let revision = snapshot.revision.id().to_owned();
        assert_eq!(
            snapshot.resume(&revision, &cursor, ErrorCode::StaleRevision),
            Ok(2)
        );
        assert_eq!(
            snapshot.resume("t0", &cursor, ErrorCode::StaleRevision),
            Err(ErrorCode::StaleRevision)
        );
        snapshot.stale = true;
        assert_eq!(
            snapshot.resume(&revision, &cursor, ErrorCode::StaleCatalog),
            Err(ErrorCode::StaleCatalog)
        );
    }
}
