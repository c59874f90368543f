//! Session operations on a connection: admitting one onto the session worker, and
//! answering it when the worker is done or the operation is cancelled.

use magi_core::Sessions;
use magi_protocol::messages::{
    CatalogStatusParams, EmptyParams, ModelCatalogParams, ModelRefreshParams,
    OperationCancelParams, OperationCancelResult, ResultBody, SelectionSetParams,
    SessionDiscoverParams, SessionListParams,
};
use magi_protocol::names::is_valid_name;
use magi_protocol::{ErrorCode, Method};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use crate::output::OutputFailure;

use super::session_job::SessionOperation;
use super::*;

impl Connection {
    /// Admits a session operation: params first, then the one-at-a-time rule.
    pub(super) fn session_operation(
        &mut self,
        id: &str,
        method: Method,
        params: &RawValue,
    ) -> Result<Flow, OutputFailure> {
        let operation = match method {
            Method::SessionOpen => parse_params(params).and_then(|p| {
                let startup = self
                    .startup_selection()
                    .ok_or(ErrorCode::ProviderUnavailable)?;
                Ok(Some(SessionOperation::Open(p, startup)))
            }),
            // Its bounds are params too: checked before `busy`.
            Method::SessionDiscover => parse_params(params).and_then(|p: SessionDiscoverParams| {
                magi_core::discovery::check_discover_params(&p)?;
                Ok(Some(SessionOperation::Discover(p)))
            }),
            Method::ModelCatalogStatus => {
                parse_params(params).and_then(|p: CatalogStatusParams| {
                    if p.provider.as_deref().is_some_and(|p| {
                        p.is_empty() || p.len() > magi_protocol::limits::CATALOG_STRING_BYTES
                    }) {
                        return Err(ErrorCode::InvalidParams);
                    }
                    Ok(Some(SessionOperation::CatalogStatus(
                        p,
                        self.selected_provider(),
                    )))
                })
            }
            Method::ModelRefresh => parse_params(params).and_then(|p: ModelRefreshParams| {
                if p.provider.is_empty()
                    || p.provider.len() > magi_protocol::limits::CATALOG_STRING_BYTES
                {
                    return Err(ErrorCode::InvalidParams);
                }
                self.session_cancel = CancellationToken::new();
                Ok(Some(SessionOperation::Refresh(
                    p,
                    self.session_cancel.clone(),
                )))
            }),
            Method::SelectionSet => parse_params(params).and_then(|p: SelectionSetParams| {
                Sessions::check_selection_params(&p)?;
                let current = self
                    .selection
                    .clone()
                    .ok_or(ErrorCode::ProviderUnavailable)?;
                Ok(Some(SessionOperation::Select(p, current)))
            }),
            Method::HistoryPage => parse_params(params).map(|p| Some(SessionOperation::Page(p))),
            // Its bounds and pairing rules are params too: checked before `busy`.
            Method::SessionList => parse_params(params).and_then(|p: SessionListParams| {
                magi_core::discovery::check_params(&p)?;
                Ok(Some(SessionOperation::List(p)))
            }),
            Method::ModelCatalog => parse_params(params).map(|p: ModelCatalogParams| {
                Some(SessionOperation::Catalog(p, self.selected_provider()))
            }),
            _ => parse_params::<EmptyParams>(params).map(|_| None),
        };
        let operation = match operation {
            Ok(operation) => operation,
            Err(code) => return self.output.error(Some(id), code).map(|()| Flow::Continue),
        };
        let Some(mut sessions) = self.sessions.take() else {
            return self
                .output
                .error(Some(id), ErrorCode::Busy)
                .map(|()| Flow::Continue);
        };
        let Some(operation) = operation else {
            // `session.create` touches no file: it is answered at once.
            let result = sessions.create();
            self.attached = Some(result.session_id.clone());
            self.permissions.attached(self.attached.as_deref());
            // A new attachment starts from the startup selection, with a fresh revision.
            if let Some(startup) = self.startup_selection() {
                self.selection = Some(startup);
            }
            self.sessions = Some(sessions);
            return self
                .output
                .result(id, ResultBody::Session(result))
                .map(|()| Flow::Continue);
        };
        self.session_request = Some(id.to_owned());
        Ok(Flow::SessionWork(Box::new(SessionJob {
            sessions,
            operation,
        })))
    }
    /// Takes the session worker's result back and answers its request.
    pub(crate) fn finish_session_work(&mut self, done: SessionDone) -> Result<(), OutputFailure> {
        self.attached = done.sessions.attached().map(str::to_owned);
        // Another session starts in the default mode with its own rules.
        self.permissions.attached(self.attached.as_deref());
        self.sessions = Some(done.sessions);
        if let Some(selection) = done.selection {
            self.selection = Some(selection);
        }
        self.record_pending_title();
        match self.session_request.take() {
            Some(id) => match done.answer {
                Ok(result) => self.output.result(&id, result),
                Err(code) => self.output.error(Some(&id), code),
            },
            None => Ok(()),
        }
    }

    /// `operation.cancel`: asks the session operation started by `request_id` to stop.
    /// Answered here, on the protocol loop, never `busy`.
    pub(super) fn operation_cancel(
        &mut self,
        params: &OperationCancelParams,
    ) -> Result<OperationCancelResult, ErrorCode> {
        if !is_valid_name(&params.request_id) {
            return Err(ErrorCode::InvalidParams);
        }
        let running = self.session_request.as_deref() == Some(params.request_id.as_str());
        if running {
            self.session_cancel.cancel();
        }
        Ok(OperationCancelResult {
            cancellation_requested: running,
        })
    }
    /// Answers a running session operation with `operation_cancelled`.
    pub(crate) fn cancel_session_work(&mut self) -> Result<(), OutputFailure> {
        self.session_cancel.cancel();
        match self.session_request.take() {
            Some(id) => self.output.error(Some(&id), ErrorCode::OperationCancelled),
            None => Ok(()),
        }
    }
}
