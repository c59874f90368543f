//! `permissions.list`, `permissions.mode.set` and `permissions.rule.revoke`
//! (`permissions.modes`). While a run works they are answered at once on the protocol
//! loop from the session's shared permission state, and the run's journal records the
//! change; between turns they run on the session worker, which records it (synced)
//! before the answer, so another session operation in progress makes them `busy`.

use magi_core::permission_modes::{PermissionChange, settings_mode, wire_mode};
use magi_protocol::ErrorCode;
use magi_protocol::limits::PERMISSION_RULE_BYTES;
use magi_protocol::messages::{
    PermissionModeSetParams, PermissionModeSetResult, PermissionRuleRevokeParams,
    PermissionRuleRevokeResult, PermissionsListParams, ResultBody,
};
use magi_protocol::names::{ExtensionMethod, is_valid_session_id};
use serde_json::value::RawValue;

use crate::output::OutputFailure;

use super::session_job::{PermissionsJob, SessionOperation};
use super::*;

impl Connection {
    /// Answers a method of `permissions.modes`; `None` for any other method.
    pub(super) fn permissions(
        &mut self,
        id: &str,
        method: &str,
        params: &RawValue,
    ) -> Option<Result<Flow, OutputFailure>> {
        let admitted = if method == ExtensionMethod::PermissionsList.as_str() {
            self.admit_permissions(params, |p: PermissionsListParams| {
                Ok((p.session_id, PermissionChange::List))
            })
        } else if method == ExtensionMethod::PermissionModeSet.as_str() {
            self.admit_permissions(params, |p: PermissionModeSetParams| {
                Ok((
                    p.session_id,
                    PermissionChange::SetMode(settings_mode(p.mode)),
                ))
            })
        } else if method == ExtensionMethod::PermissionRuleRevoke.as_str() {
            self.admit_permissions(params, |p: PermissionRuleRevokeParams| {
                let well_formed = !p.rule.is_empty()
                    && p.rule.len() <= PERMISSION_RULE_BYTES
                    && !magi_protocol::text::has_control(&p.rule);
                if !well_formed {
                    return Err(ErrorCode::InvalidParams);
                }
                Ok((p.session_id, PermissionChange::Revoke(p.rule)))
            })
        } else {
            return None;
        };
        Some(match admitted {
            Ok((session_id, change)) => self.change_permissions(id, session_id, change),
            Err(code) => self.output.error(Some(id), code).map(|()| Flow::Continue),
        })
    }

    /// Initialization and negotiation, then params (the session ID's grammar among
    /// them).
    fn admit_permissions<P: serde::de::DeserializeOwned>(
        &self,
        params: &RawValue,
        check: impl FnOnce(P) -> Result<(String, PermissionChange), ErrorCode>,
    ) -> Result<(String, PermissionChange), ErrorCode> {
        self.ready_for(self.has(Extension::PermissionModes))?;
        let (session_id, change) = check(parse_params(params)?)?;
        if !is_valid_session_id(&session_id) {
            return Err(ErrorCode::InvalidParams);
        }
        Ok((session_id, change))
    }

    /// Makes an admitted change: at once while a run works, else on the worker.
    fn change_permissions(
        &mut self,
        id: &str,
        session_id: String,
        change: PermissionChange,
    ) -> Result<Flow, OutputFailure> {
        let Init::Ready(runtime) = &self.init else {
            return self
                .output
                .error(Some(id), ErrorCode::NotInitialized)
                .map(|()| Flow::Continue);
        };
        let settings = runtime.settings.permissions.clone();
        if let Some(run) = &self.run {
            let answer = match &self.attached {
                None => Err(ErrorCode::SessionMissing),
                Some(attached) if *attached != session_id => Err(ErrorCode::StaleSession),
                Some(_) => during_run(
                    &self.permissions,
                    &settings,
                    &session_id,
                    &run.run_id,
                    change,
                ),
            };
            return match answer {
                Ok(result) => self.output.result(id, result).map(|()| Flow::Continue),
                Err(code) => self.output.error(Some(id), code).map(|()| Flow::Continue),
            };
        }
        let Some(sessions) = self.sessions.take() else {
            return self
                .output
                .error(Some(id), ErrorCode::Busy)
                .map(|()| Flow::Continue);
        };
        self.session_request = Some(id.to_owned());
        Ok(Flow::SessionWork(Box::new(SessionJob {
            sessions,
            operation: SessionOperation::Permissions(Box::new(PermissionsJob {
                session_id,
                change,
                settings,
                book: self.permissions.clone(),
            })),
        })))
    }
}

/// A change while run `run_id` works: in force for the next call that asks, recorded
/// by the run.
fn during_run(
    book: &magi_core::runner::RuleBook,
    settings: &magi_core::permission_modes::PermissionSettings,
    session_id: &str,
    run_id: &str,
    change: PermissionChange,
) -> Result<ResultBody, ErrorCode> {
    Ok(match change {
        PermissionChange::List => ResultBody::PermissionsList(magi_core::permission_modes::list(
            settings, book, session_id,
        )),
        PermissionChange::SetMode(mode) => {
            let previous = book.set_mode(mode, Some(run_id));
            ResultBody::PermissionModeSet(PermissionModeSetResult {
                mode: wire_mode(mode),
                previous: wire_mode(previous),
            })
        }
        PermissionChange::Revoke(rule) => {
            if !book.revoke(&rule, Some(run_id)) {
                return Err(ErrorCode::InvalidParams);
            }
            ResultBody::PermissionRuleRevoke(PermissionRuleRevokeResult { revoked: true })
        }
    })
}
