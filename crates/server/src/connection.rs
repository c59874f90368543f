//! One child's protocol state: request identity, initialization, negotiation, and the
//! answer to each admitted frame.
//!
//! Every frame is answered here, synchronously and in arrival order. Work that takes
//! time (startup) is handed back to the serve loop as a [`Flow`] so that reading never
//! waits for it.

use std::sync::Arc;

use magi_core::approvals::ApprovalGate;
use magi_core::client_tools::{ClientTool, ClientToolGate};
use magi_core::selection::ActiveSelection;
use magi_core::{CancelFlag, Runtime, Sessions, StartupFailure, StartupRequest};
use magi_protocol::extensions::ExtensionSet;
use magi_protocol::messages::{
    ApprovalAnswerParams, EmptyParams, Event, OperationCancelParams, Readiness, ReadinessPhase,
    ResultBody, RuntimeState, ShutdownResult, StatusResult, StoppingState, TurnCancelParams,
};
use magi_protocol::names::ExtensionMethod;
use magi_protocol::request::{Envelope, parse_envelope};
use magi_protocol::{ErrorCode, Extension, Method};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::admission::{IdAdmission, IdRegistry};
use crate::output::{Output, OutputFailure};

mod cached;
mod checkpoints;
mod compact;
mod files;
mod initialize;
mod jobs;
mod negotiation;
mod permissions;
mod questions;
mod session_job;
mod session_work;
mod terminals;
mod titles;
mod turns;

use compact::SESSION_COMPACT_METHOD;
use negotiation::CLIENT_TOOL_RESULT_METHOD;
use questions::QUESTION_ANSWER_METHOD;
pub(crate) use session_job::{SessionDone, SessionJob};
use terminals::CLIENT_TERMINAL_RESULT_METHOD;

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
    /// Tells the run the backend is ending (shutdown, EOF, a lost output).
    closing: CancellationToken,
    approvals: ApprovalGate,
    client_calls: ClientToolGate,
    terminals: magi_core::client_terminals::TerminalGate,
    questions: magi_core::questions::QuestionGate,
    files: magi_core::client_files::ClientFileGate,
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
    /// The extensions the client required.
    extensions: ExtensionSet,
    /// The attached session's approval mode and rules, shared with its runs.
    permissions: magi_core::runner::RuleBook,
    /// The tools the client registered (`client.tools`).
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
    /// Where turns send the titles they obtain (`titles`); `None` once cleanup began.
    title_sink: Option<magi_core::runner::TitleSink>,
    /// A title that arrived while the sessions were held elsewhere.
    pending_title: Option<magi_core::runner::TitleOutcome>,
}

impl Connection {
    pub(crate) fn new(output: Arc<Output>, startup: StartupRequest) -> Connection {
        Connection {
            output,
            ids: IdRegistry::default(),
            init: Init::Unadmitted,
            negotiated: Vec::new(),
            extensions: ExtensionSet::EMPTY,
            permissions: magi_core::runner::RuleBook::default(),
            client_tools: Arc::default(),
            selection: None,
            startup,
            sessions: None,
            session_request: None,
            session_cancel: CancellationToken::new(),
            attached: None,
            run: None,
            title_sink: None,
            pending_title: None,
        }
    }

    /// Whether the client required `extension` at `initialize`.
    fn has(&self, extension: Extension) -> bool {
        self.extensions.contains(extension)
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
        if envelope.method == files::CLIENT_FILE_RESULT_METHOD {
            let answer = self.client_file_result(envelope.params);
            match answer {
                Ok(result) => self.output.result(id, result)?,
                Err(code) => self.output.error(Some(id), code)?,
            }
            return Ok(Flow::Continue);
        }
        if envelope.method == CLIENT_TERMINAL_RESULT_METHOD {
            let answer = self.client_terminal_result(envelope.params);
            match answer {
                Ok(result) => self.output.result(id, result)?,
                Err(code) => self.output.error(Some(id), code)?,
            }
            return Ok(Flow::Continue);
        }
        if envelope.method == QUESTION_ANSWER_METHOD {
            let answer = self.question_answer(envelope.params);
            match answer {
                Ok(result) => self.output.result(id, result)?,
                Err(code) => self.output.error(Some(id), code)?,
            }
            return Ok(Flow::Continue);
        }
        if envelope.method == SESSION_COMPACT_METHOD {
            return self.session_compact(id, envelope.params);
        }
        if let Some(answer) = self.job_control(&envelope.method, envelope.params) {
            match answer {
                Ok(result) => self.output.result(id, result)?,
                Err(code) => self.output.error(Some(id), code)?,
            }
            return Ok(Flow::Continue);
        }
        if envelope.method == ExtensionMethod::ModelCached.as_str() {
            return self.list_cached_models(id, envelope.params);
        }
        if let Some(flow) = self.permissions(id, &envelope.method, envelope.params) {
            return flow;
        }
        if let Some(flow) = self.checkpoint_operation(id, &envelope.method, envelope.params) {
            return flow;
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
                    .and_then(|params| self.approval_answer(params))
            }
            other => Err(self.unavailable_method(other)),
        };
        match answer {
            Ok(result) => self.output.result(id, result)?,
            Err(code) => self.output.error(Some(id), code)?,
        }
        Ok(Flow::Continue)
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

    /// Ok when startup succeeded and the client agreed to the extension a method belongs
    /// to (`negotiated`); otherwise the method's answer, with no effect.
    fn ready_for(&self, negotiated: bool) -> Result<(), ErrorCode> {
        match &self.init {
            Init::Unadmitted | Init::Starting { .. } => Err(ErrorCode::NotInitialized),
            Init::Failed(failure) => Err(failure.error.code()),
            Init::Ready(_) if !negotiated => Err(ErrorCode::UnsupportedCapability),
            Init::Ready(_) => Ok(()),
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
