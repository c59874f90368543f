//! The names in the workspace folder, and which of them are primary session logs.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use magi_protocol::ErrorCode;
use magi_protocol::names::is_valid_session_id;

use super::budget::before;

/// The name ending of a primary session log.
const PRIMARY_SUFFIX: &str = ".jsonl";

/// Every name in `dir`, sorted, or `None` when the folder is gone. More than `max`
/// iterations, or passing `deadline`, is `discovery_limit`.
pub(super) fn list_names(
    dir: &Path,
    max: usize,
    deadline: Option<Instant>,
) -> Result<Option<Vec<OsString>>, ErrorCode> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(ErrorCode::DiscoveryUnavailable),
    };
    let mut names = Vec::new();
    for entry in entries {
        if names.len() == max {
            return Err(ErrorCode::DiscoveryLimit);
        }
        before(deadline)?;
        let entry = entry.map_err(|_| ErrorCode::DiscoveryUnavailable)?;
        names.push(entry.file_name());
    }
    names.sort();
    Ok(Some(names))
}

/// The primary logs among `names`, by session ID in ascending ASCII order. A name
/// ending in `.jsonl` whose stem is no session ID is `discovery_unavailable`; any
/// other name is not a log and is ignored.
pub(super) fn primary_candidates(
    dir: &Path,
    names: &[OsString],
) -> Result<Vec<(String, PathBuf)>, ErrorCode> {
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
