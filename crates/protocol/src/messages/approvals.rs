//! Approvals and the client's tools: `approval.answer`, `approval.requested`, and the
//! tools a client defines, is called for and answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{nullable, present};

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

/// Params of `approval.answer`: exactly the four base fields, plus the optional
/// `scope`, `message` and `unavailable` when `approval.scopes` was negotiated (without
/// it any of them is `invalid_params`).
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
    /// With `approval.scopes`: whether the answer covers this call only (`once`, the
    /// default) or, through the request's `suggested_rule`, the rest of the session.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub scope: Option<ApprovalScope>,
    /// With `approval.scopes`: what the person said with a denial, given to the model;
    /// at most 1,024 UTF-8 bytes, only with `allow: false`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(length(max = 1024))]
    pub message: Option<String>,
    /// With `approval.scopes`: always `true` when present: the client cannot ask
    /// anyone, so the call is denied as `denied; approval unavailable`. Only with
    /// `allow: false`, no `message` and no `session` scope.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub unavailable: Option<bool>,
}

impl ApprovalAnswerParams {
    /// A plain answer of version 1: allow or deny this one call.
    pub fn once(session_id: &str, run_id: &str, approval_id: &str, allow: bool) -> Self {
        ApprovalAnswerParams {
            session_id: session_id.to_owned(),
            run_id: run_id.to_owned(),
            approval_id: approval_id.to_owned(),
            allow,
            scope: None,
            message: None,
            unavailable: None,
        }
    }

    /// Whether any field of `approval.scopes` is present.
    pub fn uses_scopes(&self) -> bool {
        self.scope.is_some() || self.message.is_some() || self.unavailable.is_some()
    }
}

/// How far an answer reaches (`approval.scopes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call only.
    Once,
    /// This call, and for the rest of the session every call its suggested rule covers.
    Session,
}

/// The `extensions["approval.scopes"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalScopesDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// The scopes an answer may name, narrowest first: `once`, `session`.
    pub scopes: Vec<ApprovalScope>,
    /// Most UTF-8 bytes of an answer's `message`.
    pub message_bytes: u64,
}

impl ApprovalScopesDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> ApprovalScopesDescriptor {
        ApprovalScopesDescriptor {
            schema_version: 1,
            scopes: vec![ApprovalScope::Once, ApprovalScope::Session],
            message_bytes: crate::limits::APPROVAL_MESSAGE_BYTES as u64,
        }
    }
}

/// The change a `write` or `edit` call would make, shown with its approval
/// (`approval.scopes`): a unified diff of the file as it is and as the call would
/// leave it, sanitized, redacted and bounded like an applied preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposedChange {
    /// The diff; `---`/`+++` headers name the path relative to the working directory.
    pub diff: String,
    /// Whether lines were cut or left out.
    pub truncated: bool,
    /// Lines the whole change adds, however many the diff kept: present exactly when
    /// `approval.change_counts` was negotiated.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub added: Option<u64>,
    /// Lines the whole change removes: present exactly when `approval.change_counts`
    /// was negotiated.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub removed: Option<u64>,
}

impl ProposedChange {
    /// `+N −M`: the lines the whole change adds and removes, when the counts came
    /// (`approval.change_counts`).
    pub fn counts_words(&self) -> Option<String> {
        Some(change_counts_words(self.added?, self.removed?))
    }
}

/// `+N −M` (a minus sign, U+2212): how a change's added and removed line counts are
/// written, on change cards and approvals alike.
pub fn change_counts_words(added: u64, removed: u64) -> String {
    format!("+{added} \u{2212}{removed}")
}

/// The `extensions["approval.change_counts"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalChangeCountsDescriptor {
    /// Always 1.
    pub schema_version: u64,
}

impl ApprovalChangeCountsDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> ApprovalChangeCountsDescriptor {
        ApprovalChangeCountsDescriptor { schema_version: 1 }
    }
}

/// The result of `approval.answer`: the one winning reply was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalAnswerResult {
    /// Always true.
    pub recorded: bool,
}

/// Data of `approval.requested`. The last three fields are present exactly when
/// `approval.scopes` was negotiated (each may then be null).
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
    /// What the call acts on: the command line of `bash` and `async_bash`, the path of
    /// a file tool (relative to the working directory when inside it), the URL of
    /// `web_fetch`; control characters stripped, secret-like values redacted, at most
    /// 1,024 UTF-8 bytes; null when the call has none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    pub subject: Option<Option<String>>,
    /// The session rule, in the settings' permission rule syntax, that an answer with
    /// `scope: "session"` adds; null when none is offered (the answer then covers this
    /// call only).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    pub suggested_rule: Option<Option<String>>,
    /// The change a `write` or `edit` call would make; null for other calls and when
    /// it cannot be worked out (the file unreadable, the edit not applicable).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Option::is_none"
    )]
    pub proposed_change: Option<Option<ProposedChange>>,
}
