//! A restore: what putting a checkpoint back would change (the preview), which of
//! those files changed outside the session's turns since, and putting them back.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;

use magi_protocol::ErrorCode;
use magi_protocol::limits::CHECKPOINT_CHANGES_BYTES;
use magi_protocol::messages::{CheckpointAction, CheckpointChange, CheckpointRestoreResult};

use super::store::{NotRecorded, Phase, Store, TreeChange};

/// One file a restore changes, with its path's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The path's bytes, relative to the workspace.
    pub path: Vec<u8>,
    /// What the restore does to it.
    pub action: CheckpointAction,
    /// It changed outside the session's turns since the checkpoint, or that cannot
    /// be told.
    pub changed_outside: bool,
}

/// What a restore of a checkpoint changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The checkpoint's tree.
    pub target: String,
    /// The changes, those changed outside the turns first, then by path.
    pub changes: Vec<Planned>,
}

/// Plans the restore of the start of `turns[0]` (the checkpoint), the session's later
/// turns following it in order: each gap between one turn's end and the next one's
/// start, and the last one's end to now, is what changed outside the turns. A gap
/// whose ends were not both recorded cannot be told: every change then counts as
/// changed outside.
pub fn plan(
    store: &Store,
    turns: &[String],
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Plan, ErrorCode> {
    let first = turns.first().ok_or(ErrorCode::CheckpointMissing)?;
    let target = store
        .tree_of(first, Phase::Start)
        .ok_or(ErrorCode::CheckpointMissing)?;
    let now = store.snapshot(cancelled).map_err(unavailable)?.tree;
    let changes = store.diff(&now, &target, cancelled).map_err(unavailable)?;
    let mut outside: HashSet<Vec<u8>> = HashSet::new();
    let mut unknown = false;
    let mut ends = turns
        .iter()
        .map(|turn| {
            (
                store.tree_of(turn, Phase::Start),
                store.tree_of(turn, Phase::End),
            )
        })
        .collect::<Vec<_>>();
    // The last gap ends now.
    ends.push((Some(now.clone()), None));
    for pair in ends.windows(2) {
        match (&pair[0].1, &pair[1].0) {
            (Some(end), Some(next)) => {
                for change in store.diff(end, next, cancelled).map_err(unavailable)? {
                    outside.insert(change.path);
                }
            }
            _ => unknown = true,
        }
    }
    let mut changes: Vec<Planned> = changes
        .into_iter()
        .map(|TreeChange { status, path }| Planned {
            action: match status {
                // Only in the checkpoint: gone since.
                b'A' => CheckpointAction::Create,
                // Only now: new since.
                b'D' => CheckpointAction::Delete,
                _ => CheckpointAction::Write,
            },
            changed_outside: unknown || outside.contains(&path),
            path,
        })
        .collect();
    changes.sort_by(|a, b| {
        b.changed_outside
            .cmp(&a.changed_outside)
            .then_with(|| a.path.cmp(&b.path))
    });
    Ok(Plan { target, changes })
}

/// Puts the plan's files back: written from the checkpoint's tree, or removed. Returns
/// the changes that hold afterwards (the workspace read again), in the plan's order.
pub fn apply(
    store: &Store,
    plan: &Plan,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<Planned>, ErrorCode> {
    let written: Vec<&[u8]> = plan
        .changes
        .iter()
        .filter(|c| c.action != CheckpointAction::Delete)
        .map(|c| c.path.as_slice())
        .collect();
    // A failure here leaves some files put back and others not: what holds is read
    // again below either way.
    let _ = store.check_out(&plan.target, &written, cancelled);
    for change in &plan.changes {
        if change.action == CheckpointAction::Delete {
            let full = store.cwd().join(std::ffi::OsStr::from_bytes(&change.path));
            let _ = std::fs::remove_file(full);
        }
    }
    let now = store.snapshot(cancelled).map_err(unavailable)?.tree;
    let left: HashSet<Vec<u8>> = store
        .diff(&now, &plan.target, cancelled)
        .map_err(unavailable)?
        .into_iter()
        .map(|c| c.path)
        .collect();
    Ok(plan
        .changes
        .iter()
        .filter(|c| !left.contains(&c.path))
        .cloned()
        .collect())
}

/// The wire result of a plan (or of the changes a restore made): the changes within
/// [`CHECKPOINT_CHANGES_BYTES`], the rest counted.
pub fn result(checkpoint_id: &str, applied: bool, changes: &[Planned]) -> CheckpointRestoreResult {
    let mut listed = Vec::new();
    let mut bytes = 0_usize;
    for change in changes {
        let shown = CheckpointChange {
            path: String::from_utf8_lossy(&change.path).into_owned(),
            action: change.action,
            changed_outside: change.changed_outside,
        };
        let size = serde_json::to_string(&shown).map_or(usize::MAX, |s| s.len() + 1);
        if bytes + size > CHECKPOINT_CHANGES_BYTES {
            break;
        }
        bytes += size;
        listed.push(shown);
    }
    CheckpointRestoreResult {
        checkpoint_id: checkpoint_id.to_owned(),
        applied,
        more: (changes.len() - listed.len()) as u64,
        changed_outside: changes.iter().filter(|c| c.changed_outside).count() as u64,
        changes: listed,
    }
}

/// A store that cannot take a snapshot cannot preview or restore.
fn unavailable(why: NotRecorded) -> ErrorCode {
    match why {
        NotRecorded::Cancelled => ErrorCode::OperationCancelled,
        _ => ErrorCode::CheckpointsUnavailable,
    }
}
