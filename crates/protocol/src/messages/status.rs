//! `initialize`, `status`, `shutdown` and `operation.cancel`: the child's capabilities,
//! readiness and lifecycle.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::approvals::{ApprovalScopesDescriptor, ClientToolDefinition, ClientToolsDescriptor};
use super::catalog::SelectionStatus;
use crate::error::StartupError;
use crate::limits::Limits;

/// Params of `initialize`: exactly `{"required_capabilities": [...]}`, plus
/// `client_tools` when `client.tools` is required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InitializeParams {
    /// Capabilities the client needs. At most 16 names (18 with `client.tools`, one
    /// more with `approval.scopes`),
    /// duplicates counted; each follows the name grammar. Gated capabilities work only
    /// when named here.
    pub required_capabilities: Vec<String>,
    /// The tools the client registers for this child's life; present exactly when
    /// `client.tools` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tools: Option<Vec<ClientToolDefinition>>,
}

/// Params of `operation.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationCancelParams {
    /// The request ID of the operation to cancel.
    pub request_id: String,
}

/// The result of `operation.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OperationCancelResult {
    /// Whether that request's operation was running and was asked to stop.
    pub cancellation_requested: bool,
}

/// The result of a successful `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    /// The sixteen base capabilities in the protocol's order, then negotiated extensions.
    pub capabilities: Vec<String>,
    /// Every bound of the protocol.
    pub limits: Limits,
    /// The child's status once ready.
    pub status: StatusResult,
    /// The descriptors of negotiated extensions; absent when none was negotiated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Extensions>,
}

/// The `extensions` object of an `initialize` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Extensions {
    /// The `tool.cards` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "tool.cards",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_cards: Option<crate::cards::ToolCardsDescriptor>,
    /// The `client.tools` descriptor, when negotiated.
    #[serde(
        rename = "client.tools",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_tools: Option<ClientToolsDescriptor>,
    /// The `approval.scopes` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "approval.scopes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub approval_scopes: Option<ApprovalScopesDescriptor>,
    /// The `user.questions` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "user.questions",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub user_questions: Option<super::UserQuestionsDescriptor>,
    /// The `session.usage` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "session.usage",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub session_usage: Option<super::SessionUsageDescriptor>,
    /// The `input.attachments` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "input.attachments",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub input_attachments: Option<super::InputAttachmentsDescriptor>,
    /// The `client.terminals` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "client.terminals",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_terminals: Option<super::ClientTerminalsDescriptor>,
    /// The `client.files` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "client.files",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_files: Option<super::ClientFilesDescriptor>,
    /// The `reasoning.summaries` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "reasoning.summaries",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning_summaries: Option<super::ReasoningSummariesDescriptor>,
    /// The `usage.cache_writes` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "usage.cache_writes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub usage_cache_writes: Option<super::UsageCacheWritesDescriptor>,
    /// The `approval.change_counts` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "approval.change_counts",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub approval_change_counts: Option<super::ApprovalChangeCountsDescriptor>,
    /// The `jobs.control` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "jobs.control",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub jobs_control: Option<super::JobsControlDescriptor>,
    /// The `model.cached` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "model.cached",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub model_cached: Option<super::ModelCachedDescriptor>,
    /// The `checkpoints` descriptor, schema 1, when negotiated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<super::CheckpointsDescriptor>,
    /// The `permissions.modes` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "permissions.modes",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub permission_modes: Option<super::PermissionModesDescriptor>,
    /// The `plan.todo` descriptor, schema 1, when negotiated.
    #[serde(rename = "plan.todo", default, skip_serializing_if = "Option::is_none")]
    pub plan_todo: Option<PlanTodoDescriptor>,
    /// The `tool.cards.styles` descriptor, schema 1, when negotiated.
    #[serde(
        rename = "tool.cards.styles",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_card_styles: Option<crate::cards::ToolCardStylesDescriptor>,
}

/// The `extensions["plan.todo"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanTodoDescriptor {
    /// Always 1.
    pub schema_version: u64,
}

impl PlanTodoDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> PlanTodoDescriptor {
        PlanTodoDescriptor { schema_version: 1 }
    }
}

/// The lifecycle state reported by `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeState {
    /// Initialization was admitted and startup is running.
    Starting,
    /// Ready, with no active run.
    Idle,
    /// Ready, with an active run.
    Running,
    /// Startup failed; `readiness` holds the reason. Restart to retry.
    Failed,
}

/// Where startup is, while it runs or once it ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessPhase {
    /// Startup is running.
    Initializing,
    /// Locally configured: provider selected and credential present (not remotely proven).
    Ready,
}

/// `status.readiness`: a phase, or the startup error code after a failed startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Readiness {
    /// Initializing or ready.
    Phase(ReadinessPhase),
    /// The safe startup error code.
    Failed(StartupError),
}

/// The result of `status` (and the `status` inside the `initialize` result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusResult {
    /// Lifecycle state.
    pub state: RuntimeState,
    /// Startup phase or failure code.
    pub readiness: Readiness,
    /// The effective provider; null while starting or when unsafe to show.
    pub provider: Option<String>,
    /// The effective model; null while starting or when unsafe to show.
    pub model: Option<String>,
    /// The opaque context identity digest; null while starting.
    pub context_id: Option<String>,
    /// The attached session, if any.
    pub session_id: Option<String>,
    /// The active run, if any.
    pub run_id: Option<String>,
    /// The current selection; null while starting and after a failed startup.
    #[serde(default)]
    pub selection: Option<SelectionStatus>,
}

/// The state in a `shutdown` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StoppingState {
    /// No later input is admitted.
    Stopping,
}

/// The result of `shutdown`: exactly `{"state":"stopping"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShutdownResult {
    /// Always `stopping`.
    pub state: StoppingState,
}
