//! One child's protocol state: request identity, initialization, negotiation, and the
//! answer to each admitted frame.
//!
//! Every frame is answered here, synchronously and in arrival order. Work that takes
//! time (startup) is handed back to the serve loop as a [`Flow`] so that reading never
//! waits for it.

use std::sync::Arc;

use magi_core::approvals::ApprovalGate;
use magi_core::client_tools::{ClientTool, ClientToolGate};
use magi_core::runner::{TurnRequest, start_turn};
use magi_core::selection::ActiveSelection;
use magi_core::{CancelFlag, Runtime, Sessions, StartupFailure, StartupRequest, agent_for};
use magi_protocol::cards;
use magi_protocol::limits::{
    CLIENT_TOOL_ARGUMENTS_BYTES, CLIENT_TOOL_DESCRIPTION_BYTES, CLIENT_TOOL_MAX_TIMEOUT_MS,
    CLIENT_TOOL_RESULT_BYTES, CLIENT_TOOL_SCHEMA_BYTES, CLIENT_TOOLS, Limits, PROMPT_BYTES,
    REQUIRED_CAPABILITY_NAMES, REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS,
};
use magi_protocol::messages::{
    ApprovalAnswerParams, ApprovalAnswerResult, CatalogStatusParams, ClientToolDefinition,
    ClientToolResultParams, ClientToolResultResult, ClientToolsDescriptor, EmptyParams, Event,
    Extensions, HistoryPageParams, InitializeParams, InitializeResult, ModelCatalogParams,
    ModelRefreshParams, OperationCancelParams, OperationCancelResult, Readiness, ReadinessPhase,
    ResultBody, RuntimeState, SelectionSetParams, SessionDiscoverParams, SessionListParams,
    SessionOpenParams, ShutdownResult, StatusResult, StoppingState, TurnCancelParams,
    TurnCancelResult, TurnStartParams, TurnStartResult,
};
use magi_protocol::names::{base_capabilities, is_valid_name, is_valid_session_id};
use magi_protocol::request::{Envelope, parse_envelope};
use magi_protocol::{ErrorCode, Method, StartupError};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::admission::{IdAdmission, IdRegistry};
use crate::output::{Output, OutputFailure};

/// What the serve loop does after a frame was answered.
#[derive(Debug)]
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// Initialization was admitted: run startup on its worker, with the names of the
    /// tools the client registered.
    StartStartup(StartupRequest, Vec<String>, CancelFlag),
    /// The connection closes (mismatch, request limit): stop reading, drain, exit.
    Close,
    /// `shutdown` was accepted: admit nothing more, drain, clean up, exit.
    Shutdown,
    /// A session operation was admitted: run it on the session worker.
    SessionWork(Box<SessionJob>),
    /// A turn was admitted and its thread started: forward its events.
    RunStarted(RunChannels),
}

/// What the serve loop polls of a running turn.
#[derive(Debug)]
pub(crate) struct RunChannels {
    /// The run's events; closed after `run.finished`.
    pub(crate) events: mpsc::Receiver<Event>,
    /// The sessions, back when the run's thread ends.
    pub(crate) done: oneshot::Receiver<Box<Sessions>>,
}

/// The active run, as `turn.cancel` and `status` need it.
struct ActiveRun {
    session_id: String,
    run_id: String,
    cancel: CancellationToken,
    approvals: ApprovalGate,
    client_calls: ClientToolGate,
}

/// A session operation and the sessions it works on, moved to the worker.
#[derive(Debug)]
pub(crate) struct SessionJob {
    sessions: Box<Sessions>,
    operation: SessionOperation,
}

#[derive(Debug)]
enum SessionOperation {
    /// `session.open`, with the startup selection an unavailable saved one falls back to.
    Open(SessionOpenParams, ActiveSelection),
    /// `selection.set`, with the current selection.
    Select(SelectionSetParams, ActiveSelection),
    /// `model.refresh`, stopped when the token is cancelled.
    Refresh(ModelRefreshParams, CancellationToken),
    /// `session.discover`.
    Discover(SessionDiscoverParams),
    /// `model.catalog.status`, with the current selection's provider.
    CatalogStatus(CatalogStatusParams, String),
    Page(HistoryPageParams),
    List(SessionListParams),
    /// `model.catalog`, with the current selection's provider.
    Catalog(ModelCatalogParams, String),
}

/// What the session worker hands back: the sessions, and the answer.
#[derive(Debug)]
pub(crate) struct SessionDone {
    sessions: Box<Sessions>,
    answer: Result<ResultBody, ErrorCode>,
    /// The selection the operation established, if it changed it.
    selection: Option<ActiveSelection>,
}

impl SessionJob {
    /// Runs the operation; may block on the filesystem.
    pub(crate) fn run(mut self) -> SessionDone {
        let mut selection = None;
        let answer = match &self.operation {
            SessionOperation::Open(params, startup) => {
                self.sessions.open(&params.session_id).map(|mut result| {
                    // Every successful attachment gets a fresh selection revision.
                    let (restored, notice) = self.sessions.restored_selection(startup);
                    result.notices.extend(notice.map(str::to_owned));
                    selection = Some(restored);
                    ResultBody::Session(result)
                })
            }
            SessionOperation::Discover(params) => self
                .sessions
                .discover(params)
                .map(ResultBody::SessionDiscover),
            SessionOperation::CatalogStatus(params, provider) => self
                .sessions
                .catalog_status(params, provider)
                .map(ResultBody::CatalogStatus),
            SessionOperation::Refresh(params, cancel) => self
                .sessions
                .refresh_models(params, cancel)
                .map(ResultBody::ModelRefresh),
            SessionOperation::Select(params, current) => {
                self.sessions
                    .select(params, current)
                    .map(|(result, chosen)| {
                        selection = Some(chosen);
                        ResultBody::SelectionSet(Box::new(result))
                    })
            }
            SessionOperation::Page(params) => {
                self.sessions.page(params).map(ResultBody::HistoryPage)
            }
            SessionOperation::List(params) => {
                self.sessions.list(params).map(ResultBody::SessionList)
            }
            SessionOperation::Catalog(params, provider) => self
                .sessions
                .catalog_page(params, provider)
                .map(|result| ResultBody::ModelCatalog(Box::new(result))),
        };
        SessionDone {
            sessions: self.sessions,
            answer,
            selection,
        }
    }
}

/// Where initialization is.
enum Init {
    /// No initialization was admitted yet; a failed preflight leaves it here.
    Unadmitted,
    /// Startup runs; `request_id` is the `initialize` waiting for it.
    Starting {
        request_id: String,
        cancel: CancelFlag,
    },
    /// Startup succeeded.
    Ready(Box<Runtime>),
    /// Startup failed; restart to retry.
    Failed(StartupFailure),
}

/// The protocol state of one child.
pub(crate) struct Connection {
    output: Arc<Output>,
    ids: IdRegistry,
    init: Init,
    /// Gated methods the client required at initialization.
    negotiated: Vec<Method>,
    /// Whether the client required the `tool.cards` extension.
    tool_cards: bool,
    /// Whether the client required `client.tools`, and the tools it registered.
    client_tools_negotiated: bool,
    client_tools: Arc<Vec<ClientTool>>,
    /// The current selection, once startup succeeded: what `status` reports (the last
    /// completed one, even while a worker holds the sessions) and turns use.
    selection: Option<ActiveSelection>,
    startup: StartupRequest,
    /// The child's sessions while no operation holds them.
    sessions: Option<Box<Sessions>>,
    /// The request whose session operation runs on the worker.
    session_request: Option<String>,
    /// Stops the running session operation where it can stop (a refresh's fetch).
    session_cancel: CancellationToken,
    /// The last completed attachment, which `status` reports even during an operation.
    attached: Option<String>,
    /// The turn running now, until its thread ended and its events were drained.
    run: Option<ActiveRun>,
}

impl Connection {
    pub(crate) fn new(output: Arc<Output>, startup: StartupRequest) -> Connection {
        Connection {
            output,
            ids: IdRegistry::default(),
            init: Init::Unadmitted,
            negotiated: Vec::new(),
            tool_cards: false,
            client_tools_negotiated: false,
            client_tools: Arc::default(),
            selection: None,
            startup,
            sessions: None,
            session_request: None,
            session_cancel: CancellationToken::new(),
            attached: None,
            run: None,
        }
    }

    /// Answers one frame (without its LF).
    pub(crate) fn handle_frame(&mut self, frame: &[u8]) -> Result<Flow, OutputFailure> {
        match parse_envelope(frame) {
            Err(rejection) => {
                let admission = rejection.id.as_deref().map(|id| self.ids.admit(id));
                self.output.error(rejection.id.as_deref(), rejection.code)?;
                let closes = rejection.code == ErrorCode::ProtocolMismatch
                    || admission == Some(IdAdmission::LimitReached);
                Ok(if closes { Flow::Close } else { Flow::Continue })
            }
            Ok(envelope) => match self.ids.admit(&envelope.id) {
                IdAdmission::New => self.dispatch(&envelope),
                IdAdmission::Duplicate => {
                    self.output
                        .error(Some(&envelope.id), ErrorCode::DuplicateId)?;
                    Ok(Flow::Continue)
                }
                IdAdmission::LimitReached => {
                    self.output
                        .error(Some(&envelope.id), ErrorCode::RequestLimit)?;
                    Ok(Flow::Close)
                }
            },
        }
    }

    fn dispatch(&mut self, envelope: &Envelope<'_>) -> Result<Flow, OutputFailure> {
        let id = envelope.id.as_str();
        if envelope.method == CLIENT_TOOL_RESULT_METHOD {
            let answer = self.client_tool_result(envelope.params);
            match answer {
                Ok(result) => self.output.result(id, result)?,
                Err(code) => self.output.error(Some(id), code)?,
            }
            return Ok(Flow::Continue);
        }
        let Some(method) = Method::from_wire(&envelope.method) else {
            self.output.error(Some(id), ErrorCode::UnsupportedMethod)?;
            return Ok(Flow::Continue);
        };
        let answer = match method {
            Method::Shutdown => {
                return match parse_params::<EmptyParams>(envelope.params) {
                    Ok(_) => {
                        let stopping = ShutdownResult {
                            state: StoppingState::Stopping,
                        };
                        self.output.result(id, ResultBody::Shutdown(stopping))?;
                        Ok(Flow::Shutdown)
                    }
                    Err(code) => self.output.error(Some(id), code).map(|()| Flow::Continue),
                };
            }
            Method::Initialize => return self.initialize(id, envelope.params),
            Method::Status => match &self.init {
                Init::Unadmitted => Err(ErrorCode::NotInitialized),
                _ => parse_params::<EmptyParams>(envelope.params)
                    .map(|_| ResultBody::Status(Box::new(self.status()))),
            },
            Method::SessionCreate
            | Method::SessionOpen
            | Method::SessionList
            | Method::HistoryPage
            | Method::ModelCatalog
            | Method::SelectionSet
                if matches!(self.init, Init::Ready(_)) =>
            {
                return self.session_operation(id, method, envelope.params);
            }
            Method::ModelRefresh | Method::ModelCatalogStatus
                if matches!(self.init, Init::Ready(_)) && self.negotiated.contains(&method) =>
            {
                return self.session_operation(id, method, envelope.params);
            }
            Method::OperationCancel
                if matches!(self.init, Init::Ready(_))
                    && self.negotiated.contains(&Method::OperationCancel) =>
            {
                parse_params::<OperationCancelParams>(envelope.params)
                    .and_then(|params| self.operation_cancel(&params))
                    .map(ResultBody::OperationCancel)
            }
            Method::SessionDiscover
                if matches!(self.init, Init::Ready(_))
                    && self.negotiated.contains(&Method::SessionDiscover) =>
            {
                return self.session_operation(id, method, envelope.params);
            }
            Method::TurnStart if matches!(self.init, Init::Ready(_)) => {
                return self.turn_start(id, envelope.params);
            }
            Method::TurnCancel if matches!(self.init, Init::Ready(_)) => {
                parse_params::<TurnCancelParams>(envelope.params)
                    .and_then(|params| self.turn_cancel(&params))
                    .map(ResultBody::TurnCancel)
            }
            Method::ApprovalAnswer if matches!(self.init, Init::Ready(_)) => {
                parse_params::<ApprovalAnswerParams>(envelope.params)
                    .and_then(|params| self.approval_answer(&params))
            }
            other => Err(self.unavailable_method(other)),
        };
        match answer {
            Ok(result) => self.output.result(id, result)?,
            Err(code) => self.output.error(Some(id), code)?,
        }
        Ok(Flow::Continue)
    }

    /// Admits a session operation: params first, then the one-at-a-time rule.
    fn session_operation(
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

    /// Admits a turn: params, then the one-run rule, the attachment, the stored-read
    /// bound and the provider credential; answers with the run ID, then starts it.
    fn turn_start(&mut self, id: &str, params: &RawValue) -> Result<Flow, OutputFailure> {
        match self.admit_turn(params) {
            Ok((sessions, agent, request)) => {
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
                            approvals: handle.approvals,
                            client_calls: handle.client_calls,
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
        let prompt_ok = !params.prompt.trim().is_empty() && params.prompt.len() <= PROMPT_BYTES;
        if !prompt_ok || !is_valid_session_id(&params.session_id) {
            return Err(ErrorCode::InvalidParams);
        }
        let Init::Ready(runtime) = &self.init else {
            return Err(ErrorCode::NotInitialized);
        };
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
        let agent = agent_for(runtime, selection)?;
        let sessions = self.sessions.take().ok_or(ErrorCode::Busy)?;
        let request = TurnRequest {
            session_id: params.session_id,
            run_id: uuid::Uuid::new_v4().to_string(),
            prompt: params.prompt,
            tool_cards: self.tool_cards,
            client_tools: Arc::clone(&self.client_tools),
        };
        Ok((sessions, agent, request))
    }

    fn turn_cancel(&self, params: &TurnCancelParams) -> Result<TurnCancelResult, ErrorCode> {
        self.check_run_identity(&params.session_id, &params.run_id)?;
        let run = self.run.as_ref().ok_or(ErrorCode::StaleRun)?;
        if run.session_id != params.session_id || run.run_id != params.run_id {
            return Err(ErrorCode::StaleRun);
        }
        run.cancel.cancel();
        Ok(TurnCancelResult {
            cancellation_requested: true,
        })
    }

    /// Records the one winning answer of the active run's pending approval; an answer
    /// for another run, another approval, a settled or expired one is stale.
    fn approval_answer(&self, params: &ApprovalAnswerParams) -> Result<ResultBody, ErrorCode> {
        self.check_run_identity(&params.session_id, &params.run_id)?;
        if !is_valid_name(&params.approval_id) {
            return Err(ErrorCode::InvalidParams);
        }
        let recorded = self.run.as_ref().is_some_and(|run| {
            run.session_id == params.session_id
                && run.run_id == params.run_id
                && run.approvals.answer(&params.approval_id, params.allow)
        });
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
    fn client_tool_result(&self, params: &RawValue) -> Result<ResultBody, ErrorCode> {
        match &self.init {
            Init::Unadmitted | Init::Starting { .. } => return Err(ErrorCode::NotInitialized),
            Init::Failed(failure) => return Err(failure.error.code()),
            Init::Ready(_) if !self.client_tools_negotiated => {
                return Err(ErrorCode::UnsupportedCapability);
            }
            Init::Ready(_) => {}
        }
        let params: ClientToolResultParams = parse_params(params)?;
        if !is_valid_name(&params.call_id) || params.content.len() > CLIENT_TOOL_RESULT_BYTES {
            return Err(ErrorCode::InvalidParams);
        }
        self.check_run_identity(&params.session_id, &params.run_id)?;
        let recorded = self.run.as_ref().is_some_and(|run| {
            run.session_id == params.session_id
                && run.run_id == params.run_id
                && run
                    .client_calls
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

    /// Grammar of a run's identity, then the attachment it names.
    fn check_run_identity(&self, session_id: &str, run_id: &str) -> Result<(), ErrorCode> {
        if !is_valid_session_id(session_id) || !is_valid_name(run_id) {
            return Err(ErrorCode::InvalidParams);
        }
        match &self.attached {
            None => Err(ErrorCode::SessionMissing),
            Some(attached) if attached != session_id => Err(ErrorCode::StaleSession),
            Some(_) => Ok(()),
        }
    }

    /// Takes the sessions back from a run whose thread ended and whose events drained.
    pub(crate) fn finish_run(&mut self, sessions: Option<Box<Sessions>>) {
        if let Some(sessions) = sessions {
            self.attached = sessions.attached().map(str::to_owned);
            self.sessions = Some(sessions);
        }
        self.run = None;
    }

    /// Cancels the active run (shutdown, EOF); its terminal event still follows.
    /// The connected MCP servers, once startup succeeded.
    pub(crate) fn mcp(&self) -> Option<Arc<magi_core::mcp::McpHub>> {
        match &self.init {
            Init::Ready(runtime) => Some(Arc::clone(&runtime.mcp)),
            _ => None,
        }
    }

    pub(crate) fn cancel_run(&self) {
        if let Some(run) = &self.run {
            run.cancel.cancel();
        }
    }

    /// Takes the session worker's result back and answers its request.
    pub(crate) fn finish_session_work(&mut self, done: SessionDone) -> Result<(), OutputFailure> {
        self.attached = done.sessions.attached().map(str::to_owned);
        self.sessions = Some(done.sessions);
        if let Some(selection) = done.selection {
            self.selection = Some(selection);
        }
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
    fn operation_cancel(
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

    /// The current selection's provider, which catalog scans always count as
    /// relevant.
    fn selected_provider(&self) -> String {
        self.selection
            .as_ref()
            .map(|s| s.provider.name.clone())
            .unwrap_or_default()
    }

    /// The selection startup admitted, with a fresh revision; none before startup
    /// succeeded.
    fn startup_selection(&self) -> Option<ActiveSelection> {
        match &self.init {
            Init::Ready(runtime) => Some(ActiveSelection::from_runtime(runtime)),
            _ => None,
        }
    }

    /// Answers a running session operation with `operation_cancelled`.
    pub(crate) fn cancel_session_work(&mut self) -> Result<(), OutputFailure> {
        self.session_cancel.cancel();
        match self.session_request.take() {
            Some(id) => self.output.error(Some(&id), ErrorCode::OperationCancelled),
            None => Ok(()),
        }
    }

    /// The answer to a method that needs a ready child and is not served yet.
    fn unavailable_method(&self, method: Method) -> ErrorCode {
        match &self.init {
            Init::Unadmitted | Init::Starting { .. } => ErrorCode::NotInitialized,
            Init::Failed(failure) => failure.error.code(),
            Init::Ready(_) if method.is_gated() && !self.negotiated.contains(&method) => {
                ErrorCode::UnsupportedCapability
            }
            // Later capabilities implement the remaining methods; until then a ready
            // child refuses them without effect.
            Init::Ready(_) => ErrorCode::UnsupportedMethod,
        }
    }

    fn initialize(&mut self, id: &str, params: &RawValue) -> Result<Flow, OutputFailure> {
        if !matches!(self.init, Init::Unadmitted) {
            self.output.error(Some(id), ErrorCode::AlreadyInitialized)?;
            return Ok(Flow::Continue);
        }
        let required = match preflight_capabilities(params) {
            Ok(required) => required,
            Err(code) => {
                self.output.error(Some(id), code)?;
                return Ok(Flow::Continue);
            }
        };
        self.tool_cards = required.tool_cards;
        self.client_tools_negotiated = required.client_tools.is_some();
        self.client_tools = Arc::new(required.client_tools.unwrap_or_default());
        self.negotiated = required
            .methods
            .into_iter()
            .filter(|m| m.is_gated())
            .collect();
        let cancel = CancelFlag::default();
        self.init = Init::Starting {
            request_id: id.to_owned(),
            cancel: cancel.clone(),
        };
        let client_tools = self.client_tools.iter().map(|t| t.name.clone()).collect();
        Ok(Flow::StartStartup(
            self.startup.clone(),
            client_tools,
            cancel,
        ))
    }

    /// Records the startup worker's outcome and answers the waiting `initialize`.
    pub(crate) fn finish_startup(
        &mut self,
        outcome: Result<Box<Runtime>, StartupFailure>,
    ) -> Result<(), OutputFailure> {
        let Init::Starting { request_id, .. } = &self.init else {
            return Ok(());
        };
        let request_id = request_id.clone();
        match outcome {
            Ok(runtime) => {
                self.sessions = Some(Box::new(
                    Sessions::new(runtime.home.clone(), runtime.cwd.clone())
                        .with_tool_cards(self.tool_cards)
                        .with_admitted(runtime.settings.clone(), runtime.env.clone()),
                ));
                self.selection = Some(ActiveSelection::from_runtime(&runtime));
                self.init = Init::Ready(runtime);
                let mut capabilities = base_capabilities();
                let mut extensions = None;
                if self.tool_cards || self.client_tools_negotiated {
                    let mut negotiated = Extensions {
                        tool_cards: None,
                        client_tools: None,
                    };
                    if self.tool_cards {
                        capabilities.push(cards::CAPABILITY.to_owned());
                        negotiated.tool_cards = Some(cards::ToolCardsDescriptor::schema_1());
                    }
                    if self.client_tools_negotiated {
                        capabilities.push(CLIENT_TOOLS_CAPABILITY.to_owned());
                        negotiated.client_tools = Some(ClientToolsDescriptor {
                            schema_version: 1,
                            tools: self.client_tools.iter().map(|t| t.name.clone()).collect(),
                            arguments_bytes: CLIENT_TOOL_ARGUMENTS_BYTES as u64,
                            result_bytes: CLIENT_TOOL_RESULT_BYTES as u64,
                        });
                    }
                    extensions = Some(negotiated);
                }
                let result = InitializeResult {
                    capabilities,
                    limits: Limits::V1,
                    status: self.status(),
                    extensions,
                };
                self.output
                    .result(&request_id, ResultBody::Initialize(Box::new(result)))
            }
            Err(failure) => {
                let code = failure.error.code();
                self.init = Init::Failed(failure);
                self.output.error(Some(&request_id), code)
            }
        }
    }

    /// Cancels a running startup and answers its `initialize` with `startup_cancelled`.
    pub(crate) fn cancel_startup(&mut self) -> Result<(), OutputFailure> {
        if let Init::Starting { cancel, .. } = &self.init {
            cancel.cancel();
            self.finish_startup(Err(StartupFailure::new(StartupError::StartupCancelled)))?;
        }
        Ok(())
    }

    fn status(&self) -> StatusResult {
        let (state, readiness, provider, model, context_id) = match &self.init {
            Init::Unadmitted | Init::Starting { .. } => (
                RuntimeState::Starting,
                Readiness::Phase(ReadinessPhase::Initializing),
                None,
                None,
                None,
            ),
            Init::Ready(runtime) => {
                let current = self.selection.as_ref().map(ActiveSelection::status);
                (
                    RuntimeState::Idle,
                    Readiness::Phase(ReadinessPhase::Ready),
                    current
                        .as_ref()
                        .map_or_else(|| runtime.display_provider(), |s| s.provider.clone()),
                    current
                        .as_ref()
                        .map_or_else(|| runtime.display_model(), |s| s.model.clone()),
                    Some(runtime.context_id.clone()),
                )
            }
            Init::Failed(failure) => (
                RuntimeState::Failed,
                Readiness::Failed(failure.error),
                failure.provider.clone(),
                failure.model.clone(),
                failure.context_id.clone(),
            ),
        };
        let (state, run_id) = match (&self.run, state) {
            (Some(run), RuntimeState::Idle) => (RuntimeState::Running, Some(run.run_id.clone())),
            (_, state) => (state, None),
        };
        StatusResult {
            state,
            readiness,
            provider,
            model,
            context_id,
            session_id: self.attached.clone(),
            run_id,
            selection: match &self.init {
                Init::Ready(_) => self.selection.as_ref().map(ActiveSelection::status),
                _ => None,
            },
        }
    }
}

/// Deserializes params strictly: unknown, missing, duplicate or mistyped fields are
/// `invalid_params`.
fn parse_params<T: DeserializeOwned>(params: &RawValue) -> Result<T, ErrorCode> {
    serde_json::from_str(params.get()).map_err(|_| ErrorCode::InvalidParams)
}

/// What `initialize` negotiated.
#[derive(Debug, PartialEq, Eq)]
struct Negotiation {
    /// The methods required.
    methods: Vec<Method>,
    /// Whether `tool.cards` was required.
    tool_cards: bool,
    /// The client's tools, when `client.tools` was required.
    client_tools: Option<Vec<ClientTool>>,
}

/// The method a client answers its tools' calls with.
const CLIENT_TOOL_RESULT_METHOD: &str = "client.tool.result";
/// The `client.tools` capability name.
const CLIENT_TOOLS_CAPABILITY: &str = "client.tools";

/// Whether a capability name is known: a method, or an extension this build has.
fn is_known_capability(name: &str) -> bool {
    Method::from_wire(name).is_some()
        || name == cards::CAPABILITY
        || name == CLIENT_TOOLS_CAPABILITY
}

/// Checks the tools a client registers: 1 to 16 of them, names `[a-z][a-z0-9_]*` of at
/// most 64 bytes, unique and none a built-in tool's, descriptions of 1 to 1,024 bytes
/// without control characters, object schemas of at most 16 KiB, timeouts of 1 to
/// 600,000 ms.
fn check_client_tools(tools: &[ClientToolDefinition]) -> Result<Vec<ClientTool>, ErrorCode> {
    let name_ok = |name: &str| {
        name.len() <= 64
            && name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    let mut names = std::collections::HashSet::new();
    let valid = !tools.is_empty()
        && tools.len() <= CLIENT_TOOLS
        && tools.iter().all(|tool| {
            let schema_bytes = serde_json::to_vec(&tool.parameters).map_or(usize::MAX, |v| v.len());
            name_ok(&tool.name)
                && !magi_core::is_built_in_tool(&tool.name)
                && names.insert(tool.name.as_str())
                && !tool.description.is_empty()
                && tool.description.len() <= CLIENT_TOOL_DESCRIPTION_BYTES
                && !magi_protocol::text::has_control(&tool.description)
                && tool.parameters.get("type").and_then(|t| t.as_str()) == Some("object")
                && schema_bytes <= CLIENT_TOOL_SCHEMA_BYTES
                && tool
                    .timeout_ms
                    .is_none_or(|t| (1..=CLIENT_TOOL_MAX_TIMEOUT_MS).contains(&t))
        });
    if valid {
        Ok(tools.iter().map(ClientTool::from_definition).collect())
    } else {
        Err(ErrorCode::InvalidParams)
    }
}

/// Validates `required_capabilities` before any effect. A well-formed name this backend
/// does not have is `unsupported_capability` (negotiation outranks params); too many
/// names, a name off the grammar or malformed params is `invalid_params`.
fn preflight_capabilities(params: &RawValue) -> Result<Negotiation, ErrorCode> {
    #[derive(serde::Deserialize)]
    struct Names {
        required_capabilities: Vec<serde_json::Value>,
    }
    if let Ok(names) = serde_json::from_str::<Names>(params.get()) {
        let unknown = names.required_capabilities.iter().any(|name| {
            name.as_str()
                .is_some_and(|n| is_valid_name(n) && !is_known_capability(n))
        });
        if unknown {
            return Err(ErrorCode::UnsupportedCapability);
        }
    }
    let params: InitializeParams = parse_params(params)?;
    let names = &params.required_capabilities;
    let wants_tools = names.iter().any(|n| n == CLIENT_TOOLS_CAPABILITY);
    let most = if wants_tools {
        REQUIRED_CAPABILITY_NAMES_WITH_CLIENT_TOOLS
    } else {
        REQUIRED_CAPABILITY_NAMES
    };
    if names.len() > most || !names.iter().all(|n| is_valid_name(n)) {
        return Err(ErrorCode::InvalidParams);
    }
    // `client_tools` comes exactly with the capability that registers them.
    let client_tools = match (wants_tools, &params.client_tools) {
        (true, Some(tools)) => Some(check_client_tools(tools)?),
        (false, None) => None,
        _ => return Err(ErrorCode::InvalidParams),
    };
    Ok(Negotiation {
        methods: names.iter().filter_map(|n| Method::from_wire(n)).collect(),
        tool_cards: names.iter().any(|n| n == cards::CAPABILITY),
        client_tools,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preflight(params: &str) -> Result<Vec<Method>, ErrorCode> {
        let raw: Box<RawValue> = serde_json::from_str(params).unwrap();
        preflight_capabilities(&raw).map(|n| n.methods)
    }

    #[test]
    fn capability_preflight() {
        use ErrorCode::*;
        assert_eq!(preflight(r#"{"required_capabilities":[]}"#), Ok(vec![]));
        assert_eq!(
            preflight(r#"{"required_capabilities":["status","session.discover"]}"#),
            Ok(vec![Method::Status, Method::SessionDiscover])
        );
        let sixteen: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
        let params =
            |names: &[&str]| serde_json::json!({ "required_capabilities": names }).to_string();
        assert_eq!(preflight(&params(&sixteen)).map(|m| m.len()), Ok(16));
        let seventeen = [&sixteen[..], &["status"]].concat();
        assert_eq!(preflight(&params(&seventeen)), Err(InvalidParams));
        let raw: Box<RawValue> = serde_json::from_str(&params(&["status", "tool.cards"])).unwrap();
        assert_eq!(
            preflight_capabilities(&raw),
            Ok(Negotiation {
                methods: vec![Method::Status],
                tool_cards: true,
                client_tools: None,
            })
        );
        // `client.tools` needs its tools, and tools need the capability.
        assert_eq!(preflight(&params(&["client.tools"])), Err(InvalidParams));
        assert_eq!(
            preflight(&params(&["status", "bad name"])),
            Err(InvalidParams)
        );
        assert_eq!(
            preflight(&params(&["bad name", "unknown.cap"])),
            Err(UnsupportedCapability)
        );
        let many_unknown = [&seventeen[..], &["unknown"]].concat();
        assert_eq!(
            preflight(&params(&many_unknown)),
            Err(UnsupportedCapability)
        );
        for bad in [
            r#"{}"#,
            r#"{"required_capabilities":null}"#,
            r#"{"required_capabilities":"status"}"#,
            r#"{"required_capabilities":[1]}"#,
            r#"{"required_capabilities":[],"x":1}"#,
            r#"{"required_capabilities":[],"required_capabilities":[]}"#,
        ] {
            assert_eq!(preflight(bad), Err(InvalidParams), "{bad}");
        }
    }
}
