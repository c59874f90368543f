//! The closed set of error codes of version 1.
//!
//! An error on the wire is exactly `{"code": "<code>"}`: it never carries submitted text,
//! paths or underlying exceptions. Clients fail closed on a code not in this set.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

macro_rules! error_codes {
    ($( $(#[$vmeta:meta])* $variant:ident => $wire:literal ),+ $(,)?) => {
        /// An error code of protocol version 1.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        pub enum ErrorCode {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant ),+
        }

        impl ErrorCode {
            /// Every code, in the order the protocol lists them.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant ),+ ];

            /// The code on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $wire ),+ }
            }

            /// The code with this wire name, if there is one.
            pub fn from_wire(code: &str) -> Option<ErrorCode> {
                match code { $( $wire => Some(ErrorCode::$variant), )+ _ => None }
            }
        }
    };
}

error_codes! {
    /// Depth or framing structure (empty line, nesting over the bound).
    InvalidFrame => "invalid_frame",
    /// JSON, UTF-8, envelope or identity error.
    InvalidRequest => "invalid_request",
    /// Params with unknown, missing, duplicate or mistyped fields, or out-of-range values.
    InvalidParams => "invalid_params",
    /// Another protocol name or version; the child closes after answering.
    ProtocolMismatch => "protocol_mismatch",
    /// A well-formed method name that version 1 does not have.
    UnsupportedMethod => "unsupported_method",
    /// A capability that is unknown, or a gated one that was not negotiated.
    UnsupportedCapability => "unsupported_capability",
    /// The method needs an admitted, completed initialization.
    NotInitialized => "not_initialized",
    /// Initialization was already admitted in this child.
    AlreadyInitialized => "already_initialized",
    /// The request ID was used before in this child.
    DuplicateId => "duplicate_id",
    /// The child's request ID lifetime is exhausted; it closes after answering.
    RequestLimit => "request_limit",
    /// An input frame reached byte 65,537; the child closes after answering.
    FrameTooLarge => "frame_too_large",
    /// Input ended inside a frame.
    IncompleteFrame => "incomplete_frame",
    /// Settings could not be read or are invalid.
    ConfigurationInvalid => "configuration_invalid",
    /// The selected provider is not configured or has no usable credential.
    ProviderUnavailable => "provider_unavailable",
    /// An agent profile is invalid.
    ProfileInvalid => "profile_invalid",
    /// An enabled MCP server could not start.
    McpUnavailable => "mcp_unavailable",
    /// Startup was cancelled by shutdown or end of input.
    StartupCancelled => "startup_cancelled",
    /// Startup failed for another reason.
    StartupFailed => "startup_failed",
    /// Another operation or run owns the worker.
    Busy => "busy",
    /// The session ID is not the attached session.
    StaleSession => "stale_session",
    /// No session is attached, or the session does not exist.
    SessionMissing => "session_missing",
    /// Another child owns the session.
    SessionBusy => "session_busy",
    /// The session file is unsafe, unreadable or malformed.
    SessionInvalid => "session_invalid",
    /// The session belongs to another working directory.
    CwdMismatch => "cwd_mismatch",
    /// The session is over the stored-read or snapshot budget.
    HistoryLimit => "history_limit",
    /// The revision or cursor is no longer valid.
    StaleRevision => "stale_revision",
    /// Content exceeded its bound.
    ContentLimit => "content_limit",
    /// The operation was cancelled.
    OperationCancelled => "operation_cancelled",
    /// Discovery exceeded one of its bounds.
    DiscoveryLimit => "discovery_limit",
    /// The session store cannot be listed safely.
    DiscoveryUnavailable => "discovery_unavailable",
    /// Catalog work exceeded one of its bounds.
    CatalogLimit => "catalog_limit",
    /// A catalog cache is unsafe or unreadable.
    CatalogUnavailable => "catalog_unavailable",
    /// The catalog revision is no longer valid.
    StaleCatalog => "stale_catalog",
    /// The selection revision is no longer valid.
    StaleSelection => "stale_selection",
    /// The provider or model is not a selectable choice.
    SelectionInvalid => "selection_invalid",
    /// The requested effort is not supported by the model.
    EffortUnsupported => "effort_unsupported",
    /// A durable append failed.
    PersistenceFailed => "persistence_failed",
    /// The run ID is not the active run.
    StaleRun => "stale_run",
    /// The approval is unknown, expired or answered.
    StaleApproval => "stale_approval",
    /// The question is unknown, expired or answered (`user.questions`).
    StaleQuestion => "stale_question",
    /// The run failed while executing.
    ExecutionFailed => "execution_failed",
    /// Critical run events could not be delivered.
    OutputUnavailable => "output_unavailable",
    /// No checkpoint of that turn can be restored: the session has no such turn, or its
    /// state was not recorded or is gone (`checkpoints`).
    CheckpointMissing => "checkpoint_missing",
    /// The restore would overwrite files changed since outside the session's turns, and
    /// overwriting them was not asked for (`checkpoints`).
    CheckpointConflict => "checkpoint_conflict",
    /// The checkpoint store cannot be used: no `git` program, or a store that cannot be
    /// read, written or rebuilt (`checkpoints`).
    CheckpointsUnavailable => "checkpoints_unavailable",
    /// A restore could not put every file back; what it did put back is recorded
    /// (`checkpoints`).
    CheckpointFailed => "checkpoint_failed",
}

/// A code a failed startup can end with; `status` then reports it as `readiness`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartupError {
    /// Settings could not be read or are invalid.
    ConfigurationInvalid,
    /// The selected provider is not configured or has no usable credential.
    ProviderUnavailable,
    /// An agent profile is invalid.
    ProfileInvalid,
    /// An enabled MCP server could not start.
    McpUnavailable,
    /// Startup was cancelled by shutdown or end of input.
    StartupCancelled,
    /// Startup failed for another reason.
    StartupFailed,
}

impl StartupError {
    /// The matching wire error code.
    pub const fn code(self) -> ErrorCode {
        match self {
            StartupError::ConfigurationInvalid => ErrorCode::ConfigurationInvalid,
            StartupError::ProviderUnavailable => ErrorCode::ProviderUnavailable,
            StartupError::ProfileInvalid => ErrorCode::ProfileInvalid,
            StartupError::McpUnavailable => ErrorCode::McpUnavailable,
            StartupError::StartupCancelled => ErrorCode::StartupCancelled,
            StartupError::StartupFailed => ErrorCode::StartupFailed,
        }
    }
}

/// The body of an error response: exactly `{"code": …}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    /// What went wrong.
    pub code: ErrorCode,
}
