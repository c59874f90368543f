//! Turns and their events: `turn.start`, `turn.cancel` and the data of each run event.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::approvals::{ApprovalRequested, ClientToolCall, ClientToolCancel};
use crate::error::ErrorCode;

/// Params of `turn.start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnStartParams {
    /// The attached session.
    pub session_id: String,
    /// The prompt: non-blank, at most 16,384 UTF-8 bytes.
    pub prompt: String,
    /// Images given with the prompt, as workspace paths (`input.attachments` only):
    /// 1 to 8 paths of at most 1,024 bytes each, each a PNG, JPEG, GIF or WebP file
    /// inside the workspace within `view_image`'s bounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<String>>,
}

/// The `extensions["input.attachments"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputAttachmentsDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// Most paths in one `turn.start`'s `attachments`.
    pub attachments: u64,
}

impl InputAttachmentsDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> InputAttachmentsDescriptor {
        InputAttachmentsDescriptor {
            schema_version: 1,
            attachments: crate::limits::TURN_ATTACHMENTS as u64,
        }
    }
}

/// Params of `turn.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnCancelParams {
    /// The attached session.
    pub session_id: String,
    /// The active run.
    pub run_id: String,
}

/// The result of `turn.start`: admission only, not persistence or success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStartResult {
    /// The run's UUID.
    pub run_id: String,
    /// Always true.
    pub accepted: bool,
}

/// The result of `turn.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnCancelResult {
    /// Always true; the terminal event follows cleanup.
    pub cancellation_requested: bool,
}

/// Data of `input.persisted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputPersisted {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The persisted input's message ID within `revision`.
    pub message_id: String,
    /// Always true.
    pub durable: bool,
    /// The history revision of the acknowledgement.
    pub revision: String,
}

/// Data of `message.delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageDelta {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The assistant segment.
    pub message_id: String,
    /// Delta part number, from 0, increasing per message; a gap means a dropped delta.
    pub part: u64,
    /// Redacted text to append.
    pub text: String,
}

/// Data of `message.reconcile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MessageReconcile {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The assistant segment.
    pub message_id: String,
    /// Reconciliation part number, from 0.
    pub part: u64,
    /// Authoritative text of this part.
    pub text: String,
    /// Whether this part completes the reconciliation.
    pub last_part: bool,
    /// Whether the segment itself is partial (failed or cancelled).
    pub partial: bool,
}

/// What an activity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActivityKind {
    /// A tool call.
    Tool,
    /// A subagent.
    Subagent,
    /// A compaction.
    Compaction,
}

/// Where an activity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActivityState {
    /// Started.
    Started,
    /// Completed.
    Completed,
    /// Failed.
    Failed,
}

/// Data of `activity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Activity {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The activity, run-scoped.
    pub activity_id: String,
    /// What it is.
    pub kind: ActivityKind,
    /// Where it is.
    pub state: ActivityState,
    /// Its name (a tool name, a profile name).
    pub name: String,
    /// A safe summary, at most 1024 UTF-8 bytes; never raw params or results.
    pub summary: String,
}

/// The `diagnostic` code of a reply the model cut at its output token limit (Chat
/// `finish_reason: "length"`, Responses `incomplete`, Anthropic `max_tokens`). The run
/// may still end `completed`; a front end must not present the reply as whole.
pub const DIAGNOSTIC_REPLY_TRUNCATED: &str = "reply_truncated";
/// The `diagnostic` code of a reply the provider refused (Anthropic `stop_reason:
/// "refusal"`, an OpenAI `refusal` part or delta, a `content_filter` end). The refusal's
/// words, if any, are the reply; the run ends `completed`, and a front end says the
/// provider refused rather than present the reply as an answer.
pub const DIAGNOSTIC_REPLY_REFUSED: &str = "reply_refused";
/// The `diagnostic` code of a model request about to be retried; its summary says why,
/// the wait and the attempt ("retrying in 2s (2/5)").
pub const DIAGNOSTIC_PROVIDER_RETRYING: &str = "provider_retrying";
/// The `diagnostic` code of a turn stopped at `[turns] max_steps` model round trips
/// (the run ends `failed`, `execution_failed`).
pub const DIAGNOSTIC_STEP_LIMIT: &str = "step_limit";
/// The `diagnostic` code of a turn stopped because the model kept making the same calls
/// with the same arguments and getting the same results (the run ends `failed`,
/// `execution_failed`).
pub const DIAGNOSTIC_LOOP_DETECTED: &str = "loop_detected";
/// The `diagnostic` code of a conversation that does not fit the model's context window
/// even after compaction; the run ends `failed` (`execution_failed`) rather than send a
/// request the model cannot take or silently cut the conversation.
pub const DIAGNOSTIC_CONTEXT_EXCEEDED: &str = "context_exceeded";
/// The `diagnostic` code of a turn whose attached images (`input.attachments`) cannot be
/// given to the model: it takes no images, or a file no longer decodes. The run ends
/// `failed` (`execution_failed`) with nothing recorded.
pub const DIAGNOSTIC_ATTACHMENT_FAILED: &str = "attachment_failed";
/// The `diagnostic` code of a turn whose workspace state could not be recorded before
/// it began (no `git` program, over the snapshot bounds, a store that failed), sent
/// only under `checkpoints`: the turn cannot be undone. Its summary says why and what
/// to do. The work goes on.
pub const DIAGNOSTIC_CHECKPOINT_NOT_RECORDED: &str = "checkpoint_not_recorded";
/// The `diagnostic` code of a checkpoint store git could not read, rebuilt empty, sent
/// only under `checkpoints`: earlier checkpoints of the workspace are gone. The work
/// goes on.
pub const DIAGNOSTIC_CHECKPOINT_STORE_REBUILT: &str = "checkpoint_store_rebuilt";
/// The `diagnostic` code of a hook (`docs/hooks.md`) that failed, timed out, could not
/// start or said something the backend could not take; its summary names the hook and
/// why. The work goes on.
pub const DIAGNOSTIC_HOOK_FAILED: &str = "hook_failed";
/// The `diagnostic` code of a `user_prompt_submit` hook that refused the turn; its
/// summary is the hook's reason. The run ends `failed` (`execution_failed`) with nothing
/// recorded.
pub const DIAGNOSTIC_HOOK_BLOCKED: &str = "hook_blocked";

/// The `diagnostic` code of a bug the backend contained: a panic on the run's thread.
/// Its summary names where it happened (file and line) and the crash report it left,
/// never the panic's arguments; the run ends `failed` (`execution_failed`) and the
/// backend goes on serving.
pub const DIAGNOSTIC_INTERNAL_ERROR: &str = "internal_error";

/// Data of `diagnostic`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// What kind of diagnostic this is.
    pub code: String,
    /// A redacted summary, at most 1024 UTF-8 bytes.
    pub summary: String,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// The model stopped on its own.
    Completed,
    /// Cancelled by the client, shutdown or end of input.
    Cancelled,
    /// Failed.
    Failed,
}

/// What of the run reached durable history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Persistence {
    /// Everything required was appended.
    Durable,
    /// The input was appended, something later was not.
    Degraded,
    /// Nothing was appended.
    NotStarted,
}

/// Data of `run.finished`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunFinished {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// How the run ended.
    pub outcome: RunOutcome,
    /// What reached durable history.
    pub persistence: Persistence,
    /// The history revision to page next; null means reopen to obtain history.
    pub revision: Option<String>,
    /// Why the run failed, if it did.
    pub error_code: Option<ErrorCode>,
}

/// A run event: its name and data, tagged as the event frame carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", content = "data")]
pub enum Event {
    /// `input.persisted`.
    #[serde(rename = "input.persisted")]
    InputPersisted(InputPersisted),
    /// `message.delta`.
    #[serde(rename = "message.delta")]
    MessageDelta(MessageDelta),
    /// `message.reconcile`.
    #[serde(rename = "message.reconcile")]
    MessageReconcile(MessageReconcile),
    /// `activity`.
    #[serde(rename = "activity")]
    Activity(Activity),
    /// `approval.requested`.
    #[serde(rename = "approval.requested")]
    ApprovalRequested(ApprovalRequested),
    /// `diagnostic`.
    #[serde(rename = "diagnostic")]
    Diagnostic(Diagnostic),
    /// `run.finished`.
    #[serde(rename = "run.finished")]
    RunFinished(RunFinished),
    /// `tool.card`, only with `tool.cards` negotiated.
    #[serde(rename = "tool.card")]
    ToolCard(Box<crate::cards::ToolCardEvent>),
    /// `client.tool.call`, only with `client.tools` negotiated.
    #[serde(rename = "client.tool.call")]
    ClientToolCall(Box<ClientToolCall>),
    /// `client.tool.cancel`, only with `client.tools` negotiated.
    #[serde(rename = "client.tool.cancel")]
    ClientToolCancel(ClientToolCancel),
    /// `question.asked`, only with `user.questions` negotiated.
    #[serde(rename = "question.asked")]
    QuestionAsked(Box<super::QuestionAsked>),
    /// `usage.updated`, only with `session.usage` negotiated.
    #[serde(rename = "usage.updated")]
    UsageUpdated(super::UsageUpdated),
    /// `session.titled`, only with `session.usage` negotiated.
    #[serde(rename = "session.titled")]
    SessionTitled(super::SessionTitled),
    /// `client.terminal.run`, only with `client.terminals` negotiated.
    #[serde(rename = "client.terminal.run")]
    ClientTerminalRun(Box<super::ClientTerminalRun>),
    /// `client.terminal.cancel`, only with `client.terminals` negotiated.
    #[serde(rename = "client.terminal.cancel")]
    ClientTerminalCancel(super::ClientTerminalCancel),
    /// `client.file.read`, only with `client.files` negotiated.
    #[serde(rename = "client.file.read")]
    ClientFileRead(Box<super::ClientFileRead>),
    /// `client.file.write`, only with `client.files` negotiated.
    #[serde(rename = "client.file.write")]
    ClientFileWrite(Box<super::ClientFileWrite>),
    /// `client.file.cancel`, only with `client.files` negotiated.
    #[serde(rename = "client.file.cancel")]
    ClientFileCancel(super::ClientFileCancel),
    /// `reasoning.delta`, only with `reasoning.summaries` negotiated.
    #[serde(rename = "reasoning.delta")]
    ReasoningDelta(super::ReasoningDelta),
}
