//! Approvals and the client's tools: `approval.answer`, `approval.requested`, and the
//! tools a client defines, is called for and answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::present;

/// A tool the client executes itself, registered at `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientToolDefinition {
    /// `[a-z][a-z0-9_]*`, 1–64 bytes, not a built-in tool's name.
    pub name: String,
    /// What the model is told it does, 1–1,024 bytes.
    pub description: String,
    /// The JSON Schema of its arguments: an object schema, at most 16 KiB serialized.
    pub parameters: serde_json::Value,
    /// Milliseconds the client has to answer a call, 1–600,000; 120,000 when omitted.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "u64", range(min = 1, max = 600000))]
    pub timeout_ms: Option<u64>,
}

/// The `extensions["client.tools"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolsDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// The registered tools' names, in registration order.
    pub tools: Vec<String>,
    /// Most serialized arguments of a call, in bytes.
    pub arguments_bytes: u64,
    /// Most bytes of a result's content.
    pub result_bytes: u64,
}

/// Data of `client.tool.call`: the client is to run one of its tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolCall {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call, as `client.tool.result` names it.
    pub call_id: String,
    /// The base activity of the call.
    pub activity_id: String,
    /// The registered tool.
    pub tool: String,
    /// The arguments the model gave (a JSON object).
    pub arguments: serde_json::Value,
    /// Milliseconds the client has to answer.
    pub timeout_ms: u64,
}

/// Why a client tool call was withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientToolCancelReason {
    /// The run was cancelled.
    Cancelled,
    /// No answer came in time.
    TimedOut,
}

/// Data of `client.tool.cancel`: the call no longer takes a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolCancel {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// Why.
    pub reason: ClientToolCancelReason,
}

/// How a client tool call ended, as the client reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientToolOutcome {
    /// It did what it was asked.
    Completed,
    /// It failed; `content` says why.
    Failed,
}

/// Params of `client.tool.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientToolResultParams {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The call.
    pub call_id: String,
    /// How it ended.
    pub outcome: ClientToolOutcome,
    /// What the model is given, at most 32 KiB.
    pub content: String,
}

/// The result of `client.tool.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientToolResultResult {
    /// Always true: this was the call's one result.
    pub recorded: bool,
}

/// Params of `approval.answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalAnswerParams {
    /// The attached session.
    pub session_id: String,
    /// The active run.
    pub run_id: String,
    /// The approval being answered.
    pub approval_id: String,
    /// Whether the action is allowed.
    pub allow: bool,
}

/// The result of `approval.answer`: the one winning reply was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalAnswerResult {
    /// Always true.
    pub recorded: bool,
}

/// Data of `approval.requested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRequested {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The approval, a run-scoped UUID.
    pub approval_id: String,
    /// A safe summary, at most 1024 UTF-8 bytes.
    pub summary: String,
    /// Time left before the approval expires and is denied.
    pub expires_in_ms: u64,
}
