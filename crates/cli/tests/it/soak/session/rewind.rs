//! Going back between turns (`checkpoints`): a restore of a random earlier turn,
//! previewed then applied, or a fork before one, sometimes continued in the fork.
//! What must hold: every answer is one the extension defines for the case; a restore
//! that answered success leaves nothing to put back; the original log is unchanged by
//! a fork, and the fork holds its records before the turn.

use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    CheckpointListParams, CheckpointRestoreParams, CheckpointRestoreResult, SessionForkParams,
    SessionOpenParams,
};
use magi_protocol::methods;

use super::{Driver, Failed, log_records};
use crate::common::*;

impl Driver {
    /// Restores or forks at a random earlier turn, at random.
    pub(super) async fn rewind(&mut self, backend: &mut Backend) -> Result<(), Failed> {
        let params = CheckpointListParams {
            session_id: self.session.clone(),
        };
        let listed = match backend.call::<methods::CheckpointList>(&params).await {
            Ok(Ok(listed)) => listed,
            other => return Err(format!("checkpoint.list answered {other:?}")),
        };
        if listed.checkpoints.is_empty() {
            return Ok(());
        }
        let checkpoint = self.rewinds.pick(&listed.checkpoints).clone();
        if self.rewinds.chance(0.3) {
            self.fork(backend, &checkpoint.checkpoint_id).await
        } else {
            self.restore(backend, &checkpoint.checkpoint_id, checkpoint.available)
                .await
        }
    }

    async fn restore_call(
        &self,
        backend: &mut Backend,
        checkpoint_id: &str,
        apply: bool,
        overwrite_changed: bool,
    ) -> Result<Result<CheckpointRestoreResult, ErrorCode>, Failed> {
        let params = CheckpointRestoreParams {
            session_id: self.session.clone(),
            checkpoint_id: checkpoint_id.to_owned(),
            apply,
            overwrite_changed,
        };
        backend
            .call::<methods::CheckpointRestore>(&params)
            .await
            .map_err(|e| format!("checkpoint.restore could not be sent: {e}"))
    }

    /// A preview, then the restore itself, then a preview that must find nothing left.
    async fn restore(
        &mut self,
        backend: &mut Backend,
        checkpoint_id: &str,
        available: bool,
    ) -> Result<(), Failed> {
        let preview = match self
            .restore_call(backend, checkpoint_id, false, false)
            .await?
        {
            Ok(preview) => preview,
            Err(ErrorCode::CheckpointMissing) if !available => {
                self.story.push("restore of a turn not recorded".to_owned());
                return Ok(());
            }
            other => return Err(format!("a restore's preview answered {other:?}")),
        };
        let overwrite = self.rewinds.chance(0.5);
        self.story.push(format!(
            "restore of {} changes ({} changed outside), overwrite {overwrite}",
            preview.changes.len() as u64 + preview.more,
            preview.changed_outside
        ));
        let applied = match self
            .restore_call(backend, checkpoint_id, true, overwrite)
            .await?
        {
            Ok(applied) => applied,
            Err(ErrorCode::CheckpointConflict) if !overwrite && preview.changed_outside > 0 => {
                return Ok(());
            }
            other => return Err(format!("a restore answered {other:?} after {preview:?}")),
        };
        self.stats.restores += 1;
        // Nothing ran between the preview and the restore: it did what it showed.
        if applied.changes != preview.changes || applied.more != preview.more {
            return Err(format!(
                "the restore did {applied:?}, its preview showed {preview:?}"
            ));
        }
        let records =
            log_records(&std::fs::read(log_path(&self.env, &self.session)).unwrap_or_default());
        let told = records
            .last()
            .is_some_and(|r| r["kind"] == "checkpoint_restored");
        if told == applied.changes.is_empty() {
            return Err(format!(
                "a restore of {} changes, and the log's last record is {:?}",
                applied.changes.len(),
                records.last().map(|r| r["kind"].clone())
            ));
        }
        match self
            .restore_call(backend, checkpoint_id, false, false)
            .await?
        {
            Ok(again) if again.changes.is_empty() && again.more == 0 => Ok(()),
            other => Err(format!(
                "after a restore that answered success, a preview still finds {other:?}"
            )),
        }
    }

    /// A fork before the turn: the original log unchanged, the fork holding its
    /// records before the turn; half the time the session goes on in the fork.
    async fn fork(&mut self, backend: &mut Backend, checkpoint_id: &str) -> Result<(), Failed> {
        let original = log_path(&self.env, &self.session);
        let before = std::fs::read(&original).unwrap_or_default();
        let params = SessionForkParams {
            session_id: self.session.clone(),
            checkpoint_id: checkpoint_id.to_owned(),
        };
        let forked = match backend.call::<methods::SessionFork>(&params).await {
            Ok(Ok(forked)) => forked,
            other => return Err(format!("session.fork answered {other:?}")),
        };
        self.stats.forks += 1;
        if std::fs::read(&original).unwrap_or_default() != before {
            return Err("session.fork changed the original's log".to_owned());
        }
        let records = log_records(&before);
        let at = records
            .iter()
            .position(|r| r["kind"] == "turn_started" && r["turn_id"] == checkpoint_id)
            .ok_or_else(|| format!("the forked turn {checkpoint_id} is not in the log"))?;
        let copied: Vec<&serde_json::Value> = records[..at]
            .iter()
            .filter(|r| r["kind"] != "session_meta" && r["kind"] != "session_forked")
            .collect();
        let fork = log_records(
            &std::fs::read(log_path(&self.env, &forked.session_id)).unwrap_or_default(),
        );
        let head: Vec<&str> = fork
            .iter()
            .take(2)
            .filter_map(|r| r["kind"].as_str())
            .collect();
        let body: Vec<&serde_json::Value> = fork.iter().skip(2).collect();
        let same = body.len() == copied.len()
            && body
                .iter()
                .zip(&copied)
                .all(|(a, b)| a["kind"] == b["kind"] && a["ts"] == b["ts"]);
        if head != ["session_meta", "session_forked"]
            || fork[1]["parent_session_id"] != self.session.as_str()
            || !same
        {
            return Err(format!(
                "the fork's log is not the original's before the turn: {} records copied of {}",
                body.len(),
                copied.len()
            ));
        }
        if !self.rewinds.chance(0.5) {
            self.story.push("fork".to_owned());
            return Ok(());
        }
        let params = SessionOpenParams {
            session_id: forked.session_id.clone(),
        };
        match backend.call::<methods::SessionOpen>(&params).await {
            Ok(Ok(_)) => {}
            other => return Err(format!("the fork did not open: {other:?}")),
        }
        self.story.push("fork, continued there".to_owned());
        self.session = forked.session_id;
        self.interrupted = has_unfinished_turn(&fork);
        Ok(())
    }
}

/// Whether a turn of `records` began and has no end recorded.
fn has_unfinished_turn(records: &[serde_json::Value]) -> bool {
    let mut open = false;
    for record in records {
        match record["kind"].as_str() {
            Some("turn_started") if open => return true,
            Some("turn_started") => open = true,
            Some("turn_finished") => open = false,
            _ => {}
        }
    }
    open
}
