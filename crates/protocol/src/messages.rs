//! Params, results and event data of the implemented methods and of run events, one
//! protocol area a child module; every type is re-exported here.

mod approvals;
mod catalog;
mod checkpoints;
mod files;
mod jobs;
mod permissions;
mod questions;
mod reasoning;
mod sessions;
mod status;
mod terminals;
mod turns;
mod usage;

/// Results and event data tolerate fields a later backend adds; params do not.
#[cfg(test)]
mod tests;

pub use approvals::*;
pub use catalog::*;
pub use checkpoints::*;
pub use files::*;
pub use jobs::*;
pub use permissions::*;
pub use questions::*;
pub use reasoning::*;
pub use sessions::*;
pub use status::*;
pub use terminals::*;
pub use turns::*;
pub use usage::*;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params that must be exactly `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmptyParams {}

/// An optional field that is present must hold a value: `null` is not one (omission
/// is how a client leaves it out).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// A field that a negotiated extension makes present, possibly null.
use crate::fields::present_nullable as nullable;

/// A request's method and params, tagged as the envelope carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum Call {
    /// `initialize`.
    #[serde(rename = "initialize")]
    Initialize(InitializeParams),
    /// `status`.
    #[serde(rename = "status")]
    Status(EmptyParams),
    /// `shutdown`.
    #[serde(rename = "shutdown")]
    Shutdown(EmptyParams),
    /// `session.create`.
    #[serde(rename = "session.create")]
    SessionCreate(EmptyParams),
    /// `session.open`.
    #[serde(rename = "session.open")]
    SessionOpen(SessionOpenParams),
    /// `session.list`.
    #[serde(rename = "session.list")]
    SessionList(SessionListParams),
    /// `history.page`.
    #[serde(rename = "history.page")]
    HistoryPage(HistoryPageParams),
    /// `turn.start`.
    #[serde(rename = "turn.start")]
    TurnStart(TurnStartParams),
    /// `turn.cancel`.
    #[serde(rename = "turn.cancel")]
    TurnCancel(TurnCancelParams),
    /// `approval.answer`.
    #[serde(rename = "approval.answer")]
    ApprovalAnswer(ApprovalAnswerParams),
}

/// Any method's result. Results are told apart by the request they answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ResultBody {
    /// `initialize`.
    Initialize(Box<InitializeResult>),
    /// `status`.
    Status(Box<StatusResult>),
    /// `shutdown`.
    Shutdown(ShutdownResult),
    /// `session.create`, `session.open`.
    Session(SessionResult),
    /// `history.page`.
    HistoryPage(HistoryPageResult),
    /// `turn.start`.
    TurnStart(TurnStartResult),
    /// `turn.cancel`.
    TurnCancel(TurnCancelResult),
    /// `approval.answer`.
    ApprovalAnswer(ApprovalAnswerResult),
    /// `session.list`.
    SessionList(SessionListResult),
    /// `model.catalog`.
    ModelCatalog(Box<ModelCatalogResult>),
    /// `selection.set`.
    SelectionSet(Box<SelectionSetResult>),
    /// `model.refresh`.
    ModelRefresh(ModelRefreshResult),
    /// `session.discover`.
    SessionDiscover(SessionDiscoverResult),
    /// `model.catalog.status`.
    CatalogStatus(CatalogStatusResult),
    /// `operation.cancel`.
    OperationCancel(OperationCancelResult),
    /// `client.tool.result`.
    ClientToolResult(ClientToolResultResult),
    /// `question.answer`.
    QuestionAnswer(QuestionAnswerResult),
    /// `session.compact`.
    SessionCompact(SessionCompactResult),
    /// `client.file.result`.
    ClientFileResult(ClientFileResultResult),
    /// `job.output`.
    JobOutput(JobOutputResult),
    /// `job.stop`.
    JobStop(JobStopResult),
    /// `model.cached`.
    ModelCached(ModelCachedResult),
    /// `permissions.list`.
    PermissionsList(PermissionsListResult),
    /// `permissions.mode.set`.
    PermissionModeSet(PermissionModeSetResult),
    /// `permissions.rule.revoke`.
    PermissionRuleRevoke(PermissionRuleRevokeResult),
    /// `checkpoint.list`.
    CheckpointList(CheckpointListResult),
    /// `checkpoint.restore`.
    CheckpointRestore(CheckpointRestoreResult),
    /// `session.fork`.
    SessionFork(SessionForkResult),
}
