//! `checkpoint.list`, `checkpoint.restore` and `session.fork` (the `checkpoints`
//! extension): admitted like `session.open` (initialization, negotiation, params, then
//! `busy` while a run or another session operation holds the sessions) and run on the
//! session worker, since they read the log and run `git`.

use magi_protocol::ErrorCode;
use magi_protocol::messages::{CheckpointListParams, CheckpointRestoreParams, SessionForkParams};
use magi_protocol::names::{ExtensionMethod, is_valid_session_id};
use serde_json::value::RawValue;

use crate::output::OutputFailure;

use super::session_job::SessionOperation;
use super::*;

impl Connection {
    /// Answers `method` when it is one of the extension's, else `None`.
    pub(super) fn checkpoint_operation(
        &mut self,
        id: &str,
        method: &str,
        params: &RawValue,
    ) -> Option<Result<Flow, OutputFailure>> {
        let method = ExtensionMethod::from_wire(method)?;
        let admitted = match method {
            ExtensionMethod::CheckpointList => self.admit_checkpoint(params, |p| {
                let p: CheckpointListParams = p;
                is_valid_session_id(&p.session_id).then_some(SessionOperation::CheckpointList(p))
            }),
            ExtensionMethod::CheckpointRestore => self.admit_checkpoint(params, |p| {
                let p: CheckpointRestoreParams = p;
                (is_valid_session_id(&p.session_id) && is_valid_session_id(&p.checkpoint_id))
                    .then_some(SessionOperation::CheckpointRestore(p))
            }),
            ExtensionMethod::SessionFork => self.admit_checkpoint(params, |p| {
                let p: SessionForkParams = p;
                (is_valid_session_id(&p.session_id) && is_valid_session_id(&p.checkpoint_id))
                    .then_some(SessionOperation::SessionFork(p))
            }),
            _ => return None,
        };
        Some(match admitted {
            Ok((sessions, operation)) => {
                self.session_request = Some(id.to_owned());
                Ok(Flow::SessionWork(Box::new(SessionJob {
                    sessions,
                    operation,
                })))
            }
            Err(code) => self.output.error(Some(id), code).map(|()| Flow::Continue),
        })
    }

    /// Initialization and negotiation, then params (exact fields, the ID grammars),
    /// then the sessions (`busy` while a run or another operation holds them).
    fn admit_checkpoint<P: DeserializeOwned>(
        &mut self,
        params: &RawValue,
        operation: impl FnOnce(P) -> Option<SessionOperation>,
    ) -> Result<(Box<Sessions>, SessionOperation), ErrorCode> {
        self.ready_for(self.has(Extension::Checkpoints))?;
        let params: P = parse_params(params)?;
        let operation = operation(params).ok_or(ErrorCode::InvalidParams)?;
        let sessions = self.sessions.take().ok_or(ErrorCode::Busy)?;
        Ok((sessions, operation))
    }
}
