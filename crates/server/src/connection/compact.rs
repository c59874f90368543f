//! `session.compact` (`session.usage`): admitted like a session operation and run on the
//! session worker, so a run or another session operation in progress makes it `busy`.

use magi_core::agent_for;
use magi_protocol::ErrorCode;
use magi_protocol::messages::SessionCompactParams;
use magi_protocol::names::is_valid_session_id;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::output::OutputFailure;

use super::session_job::{CompactJob, SessionOperation};
use super::*;

/// The method `session.usage` adds.
pub(super) const SESSION_COMPACT_METHOD: &str = "session.compact";

impl Connection {
    /// Admits `session.compact`: initialization and negotiation, then params, then the
    /// one-at-a-time rule (`busy`), then the attachment on the worker.
    pub(super) fn session_compact(
        &mut self,
        id: &str,
        params: &RawValue,
    ) -> Result<Flow, OutputFailure> {
        match self.admit_compact(params) {
            Ok((sessions, job)) => {
                self.session_request = Some(id.to_owned());
                Ok(Flow::SessionWork(Box::new(SessionJob {
                    sessions,
                    operation: SessionOperation::Compact(Box::new(job)),
                })))
            }
            Err(code) => self.output.error(Some(id), code).map(|()| Flow::Continue),
        }
    }

    fn admit_compact(
        &mut self,
        params: &RawValue,
    ) -> Result<(Box<Sessions>, CompactJob), ErrorCode> {
        let runtime = match &self.init {
            Init::Unadmitted | Init::Starting { .. } => return Err(ErrorCode::NotInitialized),
            Init::Failed(failure) => return Err(failure.error.code()),
            Init::Ready(_) if !self.has(Extension::SessionUsage) => {
                return Err(ErrorCode::UnsupportedCapability);
            }
            Init::Ready(runtime) => runtime,
        };
        let params: SessionCompactParams = parse_params(params)?;
        if !is_valid_session_id(&params.session_id) {
            return Err(ErrorCode::InvalidParams);
        }
        if self.run.is_some() || self.sessions.is_none() {
            return Err(ErrorCode::Busy);
        }
        let selection = self
            .selection
            .as_ref()
            .ok_or(ErrorCode::ProviderUnavailable)?;
        let agent = agent_for(runtime, selection)?;
        let sessions = self.sessions.take().ok_or(ErrorCode::Busy)?;
        self.session_cancel = CancellationToken::new();
        let job = CompactJob {
            params,
            agent,
            cancel: self.session_cancel.clone(),
        };
        Ok((sessions, job))
    }
}
