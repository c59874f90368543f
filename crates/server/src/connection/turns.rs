//! Turns on a connection: admitting and starting one, cancelling it, and routing the
//! client's answers (approvals, client tool results) to the active run.

use std::sync::Arc;

use magi_core::approvals::Answer;
use magi_core::runner::{TurnRequest, start_turn};
use magi_core::{Sessions, TitleTiming, agent_for};
use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    APPROVAL_MESSAGE_BYTES, CLIENT_TOOL_RESULT_BYTES, TURN_ATTACHMENT_PATH_BYTES, TURN_ATTACHMENTS,
};
use magi_protocol::messages::{
    ApprovalAnswerParams, ApprovalAnswerResult, ApprovalScope, ClientToolResultParams,
    ClientToolResultResult, ResultBody, TurnCancelParams, TurnCancelResult, TurnStartParams,
    TurnStartResult,
};
use magi_protocol::names::{is_valid_name, is_valid_session_id};
use magi_protocol::text::PromptProblem;
use serde_json::value::RawValue;

use crate::output::OutputFailure;

use super::*;

impl Connection {
    /// Admits a turn: params, then the one-run rule, the attachment, the stored-read
    /// bound and the provider credential; answers with the run ID, then starts it.
    pub(super) fn turn_start(
        &mut self,
        id: &str,
        params: &RawValue,
    ) -> Result<Flow, OutputFailure> {
        match self.admit_turn(params) {
            Ok((sessions, agent, request)) => {
                magi_core::fault::turn_admitted();
                let run_id = request.run_id.clone();
                let session_id = request.session_id.clone();
                let accepted = TurnStartResult {
                    run_id: run_id.clone(),
                    accepted: true,
                };
                match start_turn(sessions, agent, request) {
                    Ok(handle) => {
                        self.output.result(id, ResultBody::TurnStart(accepted))?;
                        self.run = Some(ActiveRun {
                            session_id,
                            run_id,
                            cancel: handle.cancel,
                            closing: handle.closing,
                            approvals: handle.approvals,
                            client_calls: handle.client_calls,
                            terminals: handle.terminals,
                            questions: handle.questions,
                            files: handle.files,
                        });
                        Ok(Flow::RunStarted(RunChannels {
                            events: handle.events,
                            done: handle.done,
                        }))
                    }
                    Err((sessions, code)) => {
                        self.sessions = sessions;
                        self.output.error(Some(id), code).map(|()| Flow::Continue)
                    }
                }
            }
            Err(code) => self.output.error(Some(id), code).map(|()| Flow::Continue),
        }
    }

    fn admit_turn(
        &mut self,
        params: &RawValue,
    ) -> Result<(Box<Sessions>, magi_core::runner::Agent, TurnRequest), ErrorCode> {
        let params: TurnStartParams = parse_params(params)?;
        // The one rule front ends also use to say what was wrong (`PromptProblem`).
        let prompt_ok = PromptProblem::of(&params.prompt).is_none();
        if !prompt_ok || !is_valid_session_id(&params.session_id) {
            return Err(ErrorCode::InvalidParams);
        }
        let Init::Ready(runtime) = &self.init else {
            return Err(ErrorCode::NotInitialized);
        };
        if let Some(paths) = &params.attachments {
            // Without `input.attachments` the field is not a param of `turn.start`.
            let well_formed = self.has(Extension::InputAttachments)
                && (1..=TURN_ATTACHMENTS).contains(&paths.len())
                && paths.iter().all(|p| {
                    !p.is_empty()
                        && p.len() <= TURN_ATTACHMENT_PATH_BYTES
                        && !magi_protocol::text::has_control(p)
                });
            let images_ok = well_formed
                && paths
                    .iter()
                    .all(|p| magi_tools::check_attachment(&runtime.cwd, p).is_ok());
            if !images_ok {
                return Err(ErrorCode::InvalidParams);
            }
        }
        let sessions = match (&self.run, &self.sessions) {
            (None, Some(sessions)) => sessions,
            _ => return Err(ErrorCode::Busy),
        };
        sessions.check_attached(&params.session_id)?;
        if sessions.at_history_limit() {
            return Err(ErrorCode::HistoryLimit);
        }
        let selection = self
            .selection
            .as_ref()
            .ok_or(ErrorCode::ProviderUnavailable)?;
        let mut agent = agent_for(runtime, selection)?;
        // `bash` goes to the client's terminal only when both the client offers one
        // and the folder's settings opt in.
        agent.client_terminals =
            self.has(Extension::ClientTerminals) && runtime.settings.acp.client_terminals;
        let timing = runtime
            .invocation
            .title_timing(selection.provider.concurrent_requests);
        let sessions = self.sessions.take().ok_or(ErrorCode::Busy)?;
        let request = TurnRequest {
            session_id: params.session_id,
            run_id: uuid::Uuid::new_v4().to_string(),
            prompt: params.prompt,
            extensions: self.extensions,
            client_tools: Arc::clone(&self.client_tools),
            titles: self.turn_title_sink(
                runtime.settings.sessions.titles.asks_model() && timing != TitleTiming::Never,
            ),
            titles_beside: timing == TitleTiming::BesideTurn,
            attachments: params.attachments.unwrap_or_default(),
            permissions: self.permissions.clone(),
        };
        Ok((sessions, agent, request))
    }

    pub(super) fn turn_cancel(
        &self,
        params: &TurnCancelParams,
    ) -> Result<TurnCancelResult, ErrorCode> {
        let run = self
            .active_run(&params.session_id, &params.run_id)?
            .ok_or(ErrorCode::StaleRun)?;
        run.cancel.cancel();
        Ok(TurnCancelResult {
            cancellation_requested: true,
        })
    }

    /// Records the one winning answer of the active run's pending approval; an answer
    /// for another run, another approval, a settled or expired one is stale. The fields
    /// of `approval.scopes` are params only when it was negotiated.
    pub(super) fn approval_answer(
        &self,
        params: ApprovalAnswerParams,
    ) -> Result<ResultBody, ErrorCode> {
        let answer = check_answer(&params, self.has(Extension::ApprovalScopes))?;
        let run = self.active_run(&params.session_id, &params.run_id)?;
        if !is_valid_name(&params.approval_id) {
            return Err(ErrorCode::InvalidParams);
        }
        let recorded = run.is_some_and(|run| run.approvals.answer(&params.approval_id, answer));
        if recorded {
            Ok(ResultBody::ApprovalAnswer(ApprovalAnswerResult {
                recorded: true,
            }))
        } else {
            Err(ErrorCode::StaleApproval)
        }
    }

    /// `client.tool.result`: the client's one answer to a call of its tools. Refused
    /// without effect when `client.tools` was not negotiated.
    pub(super) fn client_tool_result(&self, params: &RawValue) -> Result<ResultBody, ErrorCode> {
        self.ready_for(self.has(Extension::ClientTools))?;
        let params: ClientToolResultParams = parse_params(params)?;
        if !is_valid_name(&params.call_id) || params.content.len() > CLIENT_TOOL_RESULT_BYTES {
            return Err(ErrorCode::InvalidParams);
        }
        let recorded = self
            .active_run(&params.session_id, &params.run_id)?
            .is_some_and(|run| {
                run.client_calls
                    .answer(&params.call_id, (params.outcome, params.content.clone()))
            });
        if recorded {
            Ok(ResultBody::ClientToolResult(ClientToolResultResult {
                recorded: true,
            }))
        } else {
            // Not a call of the active run that waits for an answer.
            Err(ErrorCode::StaleRun)
        }
    }

    /// The active run a request about a run names: first the grammar of the identity
    /// (`invalid_params`), then the attachment it names (`session_missing`,
    /// `stale_session`); none when no run is active or the active one is another (the
    /// caller answers with its own stale error).
    pub(super) fn active_run(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<Option<&ActiveRun>, ErrorCode> {
        if !is_valid_session_id(session_id) || !is_valid_name(run_id) {
            return Err(ErrorCode::InvalidParams);
        }
        match &self.attached {
            None => return Err(ErrorCode::SessionMissing),
            Some(attached) if attached != session_id => return Err(ErrorCode::StaleSession),
            Some(_) => {}
        }
        Ok(self
            .run
            .as_ref()
            .filter(|run| run.session_id == session_id && run.run_id == run_id))
    }

    /// A run's event as this client negotiated it: `usage.updated` carries the tokens
    /// written to the prompt cache only with `usage.cache_writes`, its field set
    /// otherwise exactly `session.usage`'s; an approval's proposed change carries its
    /// line counts only with `approval.change_counts`.
    pub(crate) fn outgoing(&self, event: Event) -> Event {
        match event {
            Event::UsageUpdated(mut usage) => {
                if !self.has(Extension::UsageCacheWrites) {
                    usage.cache_write_tokens = None;
                }
                Event::UsageUpdated(usage)
            }
            Event::ApprovalRequested(mut request) => {
                if !self.has(Extension::ApprovalChangeCounts)
                    && let Some(Some(change)) = request.proposed_change.as_mut()
                {
                    change.added = None;
                    change.removed = None;
                }
                Event::ApprovalRequested(request)
            }
            other => other,
        }
    }

    /// The run's terminal event arrived: takes back the sessions its thread handed over
    /// before sending it, so the child is idle when the client sees `run.finished`;
    /// tells the event; then records a title that came back while the run still held
    /// the sessions, so that its `session.titled` follows `run.finished`, as the
    /// extension says, however the title and the event raced to the protocol loop.
    pub(crate) fn end_run(
        &mut self,
        sessions: Option<Box<Sessions>>,
        finished: Event,
    ) -> Result<(), OutputFailure> {
        self.take_back(sessions);
        self.output.event(self.outgoing(finished))?;
        self.record_pending_title();
        Ok(())
    }

    /// Takes the sessions back from a run whose thread ended without its terminal event
    /// (it died, or the output was lost), and records a title waiting for them.
    pub(crate) fn finish_run(&mut self, sessions: Option<Box<Sessions>>) {
        self.take_back(sessions);
        self.record_pending_title();
    }

    fn take_back(&mut self, sessions: Option<Box<Sessions>>) {
        if let Some(sessions) = sessions {
            self.attached = sessions.attached().map(str::to_owned);
            self.permissions.attached(self.attached.as_deref());
            self.sessions = Some(sessions);
        }
        self.run = None;
    }

    /// The connected MCP servers, once startup succeeded.
    pub(crate) fn mcp(&self) -> Option<Arc<magi_core::mcp::McpHub>> {
        match &self.init {
            Init::Ready(runtime) => Some(Arc::clone(&runtime.mcp)),
            _ => None,
        }
    }

    /// Cancels the active run (shutdown, EOF) and tells it the backend is ending, so
    /// nothing it runs after a cancel (a `turn_end` hook) outlives the closing
    /// deadline; its terminal event still follows.
    pub(crate) fn cancel_run(&self) {
        if let Some(run) = &self.run {
            run.closing.cancel();
            run.cancel.cancel();
        }
    }
}

/// The answer `params` give, checked: without `approval.scopes` any of its fields is
/// `invalid_params`, as an unknown field is in version 1; with it, a `message` is at
/// most 1,024 bytes and comes with a denial only, and `unavailable` is `true` and
/// comes with a plain denial only (no message, no session scope).
fn check_answer(params: &ApprovalAnswerParams, negotiated: bool) -> Result<Answer, ErrorCode> {
    if params.uses_scopes() && !negotiated {
        return Err(ErrorCode::InvalidParams);
    }
    let for_session = params.scope == Some(ApprovalScope::Session);
    let unavailable = params.unavailable.is_some();
    let message_ok = params
        .message
        .as_ref()
        .is_none_or(|m| !params.allow && m.len() <= APPROVAL_MESSAGE_BYTES);
    let unavailable_ok = match params.unavailable {
        None => true,
        Some(true) => !params.allow && params.message.is_none() && !for_session,
        Some(false) => false,
    };
    if !(message_ok && unavailable_ok) {
        return Err(ErrorCode::InvalidParams);
    }
    Ok(Answer {
        allow: params.allow,
        for_session,
        message: params.message.clone(),
        unavailable,
    })
}
