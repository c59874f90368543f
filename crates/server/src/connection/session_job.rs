//! A session operation moved to the session worker, and what the worker hands back.

use magi_core::Sessions;
use magi_core::runner::Agent;
use magi_core::selection::ActiveSelection;
use magi_protocol::ErrorCode;
use magi_protocol::messages::SessionCompactParams;
use magi_protocol::messages::{
    CatalogStatusParams, HistoryPageParams, ModelCachedParams, ModelCatalogParams,
    ModelRefreshParams, ResultBody, SelectionSetParams, SessionDiscoverParams, SessionListParams,
    SessionOpenParams,
};
use magi_protocol::messages::{CheckpointListParams, CheckpointRestoreParams, SessionForkParams};
use tokio_util::sync::CancellationToken;

/// A session operation and the sessions it works on, moved to the worker.
#[derive(Debug)]
pub(crate) struct SessionJob {
    pub(super) sessions: Box<Sessions>,
    pub(super) operation: SessionOperation,
}

#[derive(Debug)]
pub(super) enum SessionOperation {
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
    /// `model.cached`.
    Cached(ModelCachedParams),
    /// `session.compact`, with the agent of the current selection.
    Compact(Box<CompactJob>),
    /// `checkpoint.list`.
    CheckpointList(CheckpointListParams),
    /// `checkpoint.restore`.
    CheckpointRestore(CheckpointRestoreParams),
    /// `session.fork`.
    SessionFork(SessionForkParams),
    /// A method of `permissions.modes` between turns.
    Permissions(Box<PermissionsJob>),
}

/// A change of `permissions.modes` between turns, with the state it changes.
#[derive(Debug)]
pub(crate) struct PermissionsJob {
    pub(super) session_id: String,
    pub(super) change: magi_core::permission_modes::PermissionChange,
    pub(super) settings: magi_core::permission_modes::PermissionSettings,
    pub(super) book: magi_core::runner::RuleBook,
}

/// What the worker needs to compact: the agent of the current selection.
pub(crate) struct CompactJob {
    pub(super) params: SessionCompactParams,
    pub(super) agent: Agent,
    pub(super) cancel: CancellationToken,
}

impl std::fmt::Debug for CompactJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactJob")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// What the session worker hands back: the sessions, and the answer.
#[derive(Debug)]
pub(crate) struct SessionDone {
    pub(super) sessions: Box<Sessions>,
    pub(super) answer: Result<ResultBody, ErrorCode>,
    /// The selection the operation established, if it changed it.
    pub(super) selection: Option<ActiveSelection>,
}

impl SessionJob {
    /// Runs the operation; may block on the filesystem. A panic in it is contained: the
    /// operation answers `execution_failed`, the sessions come back as the operation
    /// left them, and the child goes on (the crash report says where it happened).
    pub(crate) fn run(mut self) -> SessionDone {
        let mut selection = None;
        let (sessions, operation) = (&mut self.sessions, &self.operation);
        let answer = magi_crash::contain(|| {
            magi_core::fault::session_work_started();
            answer(sessions, operation, &mut selection)
        })
        .unwrap_or(Err(ErrorCode::ExecutionFailed));
        SessionDone {
            sessions: self.sessions,
            answer,
            selection,
        }
    }
}

/// Answers `operation` on `sessions`, setting `selection` when it establishes one.
fn answer(
    sessions: &mut Sessions,
    operation: &SessionOperation,
    selection: &mut Option<ActiveSelection>,
) -> Result<ResultBody, ErrorCode> {
    match operation {
        SessionOperation::Open(params, startup) => {
            sessions.open(&params.session_id).map(|mut result| {
                // Every successful attachment gets a fresh selection revision.
                let (restored, notice) = sessions.restored_selection(startup);
                result.notices.extend(notice.map(str::to_owned));
                *selection = Some(restored);
                ResultBody::Session(result)
            })
        }
        SessionOperation::Discover(params) => {
            sessions.discover(params).map(ResultBody::SessionDiscover)
        }
        SessionOperation::CatalogStatus(params, provider) => sessions
            .catalog_status(params, provider)
            .map(ResultBody::CatalogStatus),
        SessionOperation::Refresh(params, cancel) => sessions
            .refresh_models(params, cancel)
            .map(ResultBody::ModelRefresh),
        SessionOperation::Select(params, current) => {
            sessions.select(params, current).map(|(result, chosen)| {
                *selection = Some(chosen);
                ResultBody::SelectionSet(Box::new(result))
            })
        }
        SessionOperation::Page(params) => sessions.page(params).map(ResultBody::HistoryPage),
        SessionOperation::List(params) => sessions.list(params).map(ResultBody::SessionList),
        SessionOperation::Catalog(params, provider) => sessions
            .catalog_page(params, provider)
            .map(|result| ResultBody::ModelCatalog(Box::new(result))),
        SessionOperation::Cached(params) => {
            sessions.cached_models(params).map(ResultBody::ModelCached)
        }
        SessionOperation::Compact(job) => magi_core::runner::compact_session(
            sessions,
            job.agent.clone(),
            &job.params.session_id,
            &job.cancel,
        )
        .map(ResultBody::SessionCompact),
        SessionOperation::Permissions(job) => magi_core::permission_modes::change_between_turns(
            sessions,
            &job.book,
            &job.settings,
            &job.session_id,
            job.change.clone(),
        ),
        SessionOperation::CheckpointList(params) => sessions
            .checkpoint_list(&params.session_id)
            .map(ResultBody::CheckpointList),
        SessionOperation::CheckpointRestore(params) => sessions
            .checkpoint_restore(params)
            .map(ResultBody::CheckpointRestore),
        SessionOperation::SessionFork(params) => sessions.fork(params).map(ResultBody::SessionFork),
    }
}
