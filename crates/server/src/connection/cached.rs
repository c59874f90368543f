//! `model.cached` (its own extension): admitted like `model.catalog` and run on the
//! session worker, so a run or another session operation in progress makes it `busy`.

use magi_core::catalog::check_cached_params;
use magi_protocol::ErrorCode;
use magi_protocol::messages::ModelCachedParams;
use serde_json::value::RawValue;

use crate::output::OutputFailure;

use super::session_job::SessionOperation;
use super::*;

impl Connection {
    /// Admits `model.cached`: initialization and negotiation, then params, then the
    /// one-at-a-time rule (`busy`); whether the provider is known and the cursor still
    /// current is answered on the worker.
    pub(super) fn list_cached_models(
        &mut self,
        id: &str,
        params: &RawValue,
    ) -> Result<Flow, OutputFailure> {
        match self.admit_cached(params) {
            Ok((sessions, params)) => {
                self.session_request = Some(id.to_owned());
                Ok(Flow::SessionWork(Box::new(SessionJob {
                    sessions,
                    operation: SessionOperation::Cached(params),
                })))
            }
            Err(code) => self.output.error(Some(id), code).map(|()| Flow::Continue),
        }
    }

    fn admit_cached(
        &mut self,
        params: &RawValue,
    ) -> Result<(Box<Sessions>, ModelCachedParams), ErrorCode> {
        self.ready_for(self.has(Extension::ModelCached))?;
        let params: ModelCachedParams = parse_params(params)?;
        check_cached_params(&params)?;
        let sessions = self.sessions.take().ok_or(ErrorCode::Busy)?;
        Ok((sessions, params))
    }
}
