//! Checkpoints ([docs/checkpoints.md](../../../docs/checkpoints.md)): the workspace's
//! files as they were when each turn began and ended, kept in a git repository of the
//! backend's own per workspace (`store`, run through `git`), so a person can see what
//! putting a turn's start back would change and put it back (`restore`), and the turns
//! of a session that have one (`turns`). Files outside the workspace (`writable_roots`,
//! temporary folders) are not recorded.

mod git;
mod prune;
mod restore;
mod store;

use magi_protocol::limits::{CHECKPOINT_NOTE_PATHS, CHECKPOINT_PROMPT_BYTES};
use magi_protocol::messages::CheckpointAction;
use magi_store::records::{Record, RecordBody};

pub use prune::Pruned;
pub use restore::{Plan, Planned, apply, plan, result};
pub use store::{NotRecorded, Phase, Snapshot, Store, TreeChange};

/// One turn of a session, as its log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEntry {
    /// Its ID: the ID of the checkpoint before it.
    pub turn_id: String,
    /// When it began.
    pub started_at: String,
    /// The first line of its prompt, within [`CHECKPOINT_PROMPT_BYTES`], control
    /// characters stripped.
    pub prompt: String,
}

/// The session's turns in the order they began.
pub fn turns(records: &[Record]) -> Vec<TurnEntry> {
    let mut turns: Vec<TurnEntry> = Vec::new();
    for record in records {
        match &record.body {
            RecordBody::TurnStarted { turn_id } => turns.push(TurnEntry {
                turn_id: turn_id.clone(),
                started_at: record.ts.clone(),
                prompt: String::new(),
            }),
            RecordBody::UserInput { turn_id, text, .. } => {
                if let Some(turn) = turns.iter_mut().rev().find(|t| &t.turn_id == turn_id) {
                    turn.prompt = first_line(text);
                }
            }
            _ => {}
        }
    }
    turns
}

/// The first line of `text`, control characters stripped, cut at a character
/// boundary within [`CHECKPOINT_PROMPT_BYTES`].
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut line = magi_protocol::text::strip_controls(line.trim());
    if line.len() > CHECKPOINT_PROMPT_BYTES {
        let mut cut = CHECKPOINT_PROMPT_BYTES;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
    }
    line
}

/// The record of a restore of the checkpoint before turn number `turn` (from 1): the
/// files put back, and what the model is told of them at its next request.
pub fn restored_record(checkpoint_id: &str, turn: usize, restored: &[Planned]) -> RecordBody {
    let paths: Vec<String> = restored
        .iter()
        .take(CHECKPOINT_NOTE_PATHS)
        .map(|c| String::from_utf8_lossy(&c.path).into_owned())
        .collect();
    let more = restored.len() - paths.len();
    let mut text = format!(
        "<checkpoint_restored>\nThe person put the workspace's files back as they were \
         before turn {turn} of this conversation. What you read or changed since may no \
         longer be there: read a file again before relying on it. Files put back:\n"
    );
    for (change, path) in restored.iter().zip(&paths) {
        let what = match change.action {
            CheckpointAction::Write => "restored",
            CheckpointAction::Create => "recreated",
            CheckpointAction::Delete => "removed",
        };
        text.push_str(&format!("- {path} ({what})\n"));
    }
    if more > 0 {
        text.push_str(&format!("- and {more} more\n"));
    }
    text.push_str("</checkpoint_restored>");
    RecordBody::CheckpointRestored {
        checkpoint_id: checkpoint_id.to_owned(),
        paths,
        more: more as u64,
        text,
    }
}
