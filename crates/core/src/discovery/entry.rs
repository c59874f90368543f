//! What a listing entry shows of a log: its title, when it was last updated, and
//! whether it belongs to this working directory.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Instant, SystemTime};

use magi_protocol::ErrorCode;
use magi_protocol::limits::{DISCOVERY_TITLE_BYTES, TITLE_CHARS};
use magi_protocol::text::{has_control, is_secret_like, sanitize};
use magi_store::log::StoredLog;
use magi_store::records::RecordBody;

use super::budget::before;

/// The same-workspace rule of `session.open`, with each recorded path canonicalized
/// once per scan.
pub(super) struct CwdChecks<'a> {
    canonical_cwd: &'a Path,
    known: HashMap<String, bool>,
}

impl<'a> CwdChecks<'a> {
    pub(super) fn new(canonical_cwd: &'a Path) -> CwdChecks<'a> {
        CwdChecks {
            canonical_cwd,
            known: HashMap::new(),
        }
    }

    /// Whether a recorded working directory is absolute and canonicalizes to the
    /// child's. A recorded path that no longer exists does not.
    pub(super) fn same_workspace(
        &mut self,
        recorded: &str,
        deadline: Option<Instant>,
    ) -> Result<bool, ErrorCode> {
        if let Some(&same) = self.known.get(recorded) {
            return Ok(same);
        }
        before(deadline)?;
        let path = Path::new(recorded);
        let same = path.is_absolute() && path.canonicalize().is_ok_and(|c| c == self.canonical_cwd);
        self.known.insert(recorded.to_owned(), same);
        Ok(same)
    }
}

/// The title of the last record that sets one (`title`, or `compaction` with a title),
/// if it is safe to show.
pub(super) fn title(log: &StoredLog) -> Option<String> {
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
pub(crate) fn safe_title(raw: &str) -> Option<String> {
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
pub(super) fn updated_at(log: &StoredLog) -> Option<String> {
    let latest: SystemTime = log
        .records
        .iter()
        .filter_map(|r| humantime::parse_rfc3339(&r.ts).ok())
        .max()?;
    Some(humantime::format_rfc3339_millis(latest).to_string())
}
