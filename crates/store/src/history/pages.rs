//! Cutting a projection into `history.page` pages.

use magi_protocol::limits::{HISTORY_PAGE_BYTES, HISTORY_PAGE_ENTRIES};
use magi_protocol::messages::HistoryPageResult;

use super::{Projection, entry_bytes};

/// Cuts the page starting at entry `start`: at most 100 entries and a serialized result
/// of at most 32,768 bytes. `cursor_for` names the cursor of a following page. Returns
/// the page and, when entries remain, the index the next page starts at.
pub fn page(
    projection: &Projection,
    session_id: &str,
    revision: &str,
    start: usize,
    cursor_for: impl Fn(usize) -> String,
) -> (HistoryPageResult, Option<usize>) {
    let mut result = HistoryPageResult {
        session_id: session_id.to_owned(),
        revision: revision.to_owned(),
        entries: Vec::new(),
        next_cursor: Some(cursor_for(projection.entries.len())),
        complete: false,
    };
    let mut size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
    let mut end = start;
    for entry in projection.entries.iter().skip(start) {
        let added = entry_bytes(entry) + usize::from(end > start);
        if end - start == HISTORY_PAGE_ENTRIES || size + added > HISTORY_PAGE_BYTES {
            break;
        }
        size += added;
        end += 1;
    }
    result.entries = projection
        .entries
        .get(start..end)
        .unwrap_or_default()
        .to_vec();
    let next = (end < projection.entries.len()).then_some(end);
    result.next_cursor = next.map(&cursor_for);
    result.complete = next.is_none() && projection.complete;
    (result, next)
}
