//! The attached session's checkpoints (`checkpoint.list`, `checkpoint.restore`) and
//! its forks (`session.fork`), on the session worker.

use magi_protocol::ErrorCode;
use magi_protocol::limits::CHECKPOINT_LIST_ENTRIES;
use magi_protocol::messages::{
    Checkpoint, CheckpointListResult, CheckpointRestoreParams, CheckpointRestoreResult,
    SessionForkParams, SessionForkResult,
};
use magi_store::lease::{LeaseKind, acquire};
use magi_store::log::Appender;
use magi_store::records::{Record, RecordBody};

use super::Sessions;
use crate::checkpoints::{self, Store};

impl Sessions {
    /// The checkpoint store of this workspace, as the admitted settings have it.
    pub fn checkpoint_store(&self) -> Store {
        let settings = self
            .admitted
            .as_ref()
            .map(|(settings, _)| settings.checkpoints)
            .unwrap_or_default();
        Store::of(&self.home, &self.cwd).configured(settings)
    }

    /// `checkpoint.list`: the attached session's newest turns, each with whether the
    /// store holds its checkpoint.
    pub fn checkpoint_list(&self, session_id: &str) -> Result<CheckpointListResult, ErrorCode> {
        self.check_attached(session_id)?;
        let records = self.records()?;
        let turns = checkpoints::turns(&records);
        let store = self.checkpoint_store();
        let state = store.state();
        let recorded = store.recorded_turns();
        let skip = turns.len().saturating_sub(CHECKPOINT_LIST_ENTRIES);
        let checkpoints = turns
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(index, turn)| Checkpoint {
                checkpoint_id: turn.turn_id.clone(),
                turn: index as u64 + 1,
                prompt: turn.prompt.clone(),
                started_at: turn.started_at.clone(),
                available: recorded.contains(&turn.turn_id),
            })
            .collect();
        Ok(CheckpointListResult {
            checkpoints,
            truncated: skip > 0,
            store: state,
        })
    }

    /// `checkpoint.restore`: what putting the checkpoint back changes, and with
    /// `apply`, putting it back and recording what was put back for the model.
    pub fn checkpoint_restore(
        &mut self,
        params: &CheckpointRestoreParams,
    ) -> Result<CheckpointRestoreResult, ErrorCode> {
        self.check_attached(&params.session_id)?;
        let records = self.records()?;
        let turns = checkpoints::turns(&records);
        let index = turns
            .iter()
            .position(|t| t.turn_id == params.checkpoint_id)
            .ok_or(ErrorCode::CheckpointMissing)?;
        let store = self.checkpoint_store();
        if store.state() != magi_protocol::messages::CheckpointStore::Ready {
            return Err(ErrorCode::CheckpointsUnavailable);
        }
        let later: Vec<String> = turns[index..].iter().map(|t| t.turn_id.clone()).collect();
        let plan = checkpoints::plan(&store, &later, &|| false)?;
        if !params.apply {
            return Ok(checkpoints::result(
                &params.checkpoint_id,
                false,
                &plan.changes,
            ));
        }
        if !params.overwrite_changed && plan.changes.iter().any(|c| c.changed_outside) {
            return Err(ErrorCode::CheckpointConflict);
        }
        let restored = checkpoints::apply(&store, &plan, &|| false)?;
        if !restored.is_empty() {
            let record = checkpoints::restored_record(&params.checkpoint_id, index + 1, &restored);
            self.append(record)
                .map_err(|_| ErrorCode::PersistenceFailed)?;
            self.refresh()?;
        }
        if restored.len() < plan.changes.len() {
            return Err(ErrorCode::CheckpointFailed);
        }
        Ok(checkpoints::result(&params.checkpoint_id, true, &restored))
    }

    /// `session.fork`: a new session in this workspace holding the attached session's
    /// records before the turn, after its metadata and a `session_forked` record. The
    /// attached session is not changed and stays attached.
    pub fn fork(&mut self, params: &SessionForkParams) -> Result<SessionForkResult, ErrorCode> {
        self.check_attached(&params.session_id)?;
        let records = self.records()?;
        let at = records
            .iter()
            .position(|r| {
                matches!(&r.body, RecordBody::TurnStarted { turn_id } if *turn_id == params.checkpoint_id)
            })
            .ok_or(ErrorCode::CheckpointMissing)?;
        let session_id = uuid::Uuid::now_v7().to_string();
        let path = self.home.session_path(&self.cwd, &session_id);
        let _lease = acquire(&self.home.lease_path(&session_id, LeaseKind::Writer))
            .map_err(|_| ErrorCode::PersistenceFailed)?;
        let mut appender =
            Appender::open(&path, &session_id).map_err(|_| ErrorCode::PersistenceFailed)?;
        let head = [
            RecordBody::SessionMeta {
                cwd: Some(self.cwd.display().to_string()),
            },
            RecordBody::SessionForked {
                parent_session_id: params.session_id.clone(),
                checkpoint_id: params.checkpoint_id.clone(),
            },
        ]
        .into_iter()
        .map(|body| Record::now(&session_id, body));
        let copied = records[..at]
            .iter()
            .filter(|r| {
                !matches!(
                    r.body,
                    RecordBody::SessionMeta { .. } | RecordBody::SessionForked { .. }
                )
            })
            .map(|r| Record {
                v: r.v,
                session_id: session_id.clone(),
                ts: r.ts.clone(),
                body: r.body.clone(),
            });
        let all: Vec<Record> = head.chain(copied).collect();
        appender
            .append_all(&all)
            .map_err(|_| ErrorCode::PersistenceFailed)?;
        Ok(SessionForkResult {
            session_id,
            forked_from: params.session_id.clone(),
            checkpoint_id: params.checkpoint_id.clone(),
        })
    }
}
