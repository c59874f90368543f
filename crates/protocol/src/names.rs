//! The name grammar shared by request IDs, method names and capability names, and the
//! closed sets of methods, capabilities and events of version 1.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::ID_BYTES;

/// Whether `name` is 1 to 64 ASCII bytes from `[A-Za-z0-9._-]`.
///
/// Request IDs, method names, capability names and the opaque revision, cursor and
/// message identifiers all follow this grammar.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= ID_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether `id` follows the session ID grammar: `[A-Za-z0-9_-]+`, at most 64 bytes.
pub fn is_valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

macro_rules! closed_name_set {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident => $wire:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant ),+
        }

        impl $name {
            /// Every member, in the order the protocol lists them.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            /// The name on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $wire ),+ }
            }

            /// The member with this wire name, if there is one.
            pub fn from_wire(name: &str) -> Option<$name> {
                match name { $( $wire => Some($name::$variant), )+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_name_set! {
    /// A method of protocol version 1. The same sixteen names are the base capabilities.
    pub enum Method {
        /// Admit the child and start it.
        Initialize => "initialize",
        /// Report the child's state.
        Status => "status",
        /// Stop admitting input, cancel work, drain and exit.
        Shutdown => "shutdown",
        /// Allocate a lazy session handle.
        SessionCreate => "session.create",
        /// Attach an existing session by exact ID.
        SessionOpen => "session.open",
        /// List this workspace's sessions.
        SessionList => "session.list",
        /// Incremental discovery (gated).
        SessionDiscover => "session.discover",
        /// Page the cached model catalog.
        ModelCatalog => "model.catalog",
        /// Provider-scoped catalog reasons (gated).
        ModelCatalogStatus => "model.catalog.status",
        /// Refresh a provider's model list (gated).
        ModelRefresh => "model.refresh",
        /// Cancel a running operation (gated).
        OperationCancel => "operation.cancel",
        /// Change the attached session's selection.
        SelectionSet => "selection.set",
        /// Page a history revision.
        HistoryPage => "history.page",
        /// Start a turn.
        TurnStart => "turn.start",
        /// Cancel the active turn.
        TurnCancel => "turn.cancel",
        /// Answer an approval request.
        ApprovalAnswer => "approval.answer",
    }
}

impl Method {
    /// The four operations that work only when required by name at initialization.
    pub const GATED: [Method; 4] = [
        Method::SessionDiscover,
        Method::ModelCatalogStatus,
        Method::ModelRefresh,
        Method::OperationCancel,
    ];

    /// Whether this method answers `unsupported_capability` unless negotiated.
    pub fn is_gated(self) -> bool {
        Method::GATED.contains(&self)
    }
}

closed_name_set! {
    /// A method a negotiated extension adds. It is not a base capability: without its
    /// extension it answers `unsupported_capability`.
    pub enum ExtensionMethod {
        /// The client's one answer to a call of its tools (`client.tools`).
        ClientToolResult => "client.tool.result",
        /// The client's answer to the model's questions (`user.questions`).
        QuestionAnswer => "question.answer",
        /// Compacts an idle session's conversation now (`session.usage`).
        SessionCompact => "session.compact",
        /// The client's answer to a command it ran in its terminal (`client.terminals`).
        ClientTerminalResult => "client.terminal.result",
        /// A part of a file's text, or the end of a write (`client.files`).
        ClientFileResult => "client.file.result",
        /// A background command's newest output (`jobs.control`).
        JobOutput => "job.output",
        /// Stops a background command (`jobs.control`).
        JobStop => "job.stop",
        /// A page of one provider's cached model list (`model.cached`).
        ModelCached => "model.cached",
        /// The session's approval mode and the rules in force (`permissions.modes`).
        PermissionsList => "permissions.list",
        /// Switches the session's approval mode (`permissions.modes`).
        PermissionModeSet => "permissions.mode.set",
        /// Revokes a session rule (`permissions.modes`).
        PermissionRuleRevoke => "permissions.rule.revoke",
        /// The session's checkpoints, one a turn (`checkpoints`).
        CheckpointList => "checkpoint.list",
        /// Previews or puts back the workspace's files as a checkpoint recorded them
        /// (`checkpoints`).
        CheckpointRestore => "checkpoint.restore",
        /// A new session holding the attached one's conversation before a turn
        /// (`checkpoints`).
        SessionFork => "session.fork",
    }
}

/// Any method a client may call: a method of version 1 or one an extension adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MethodName {
    /// A method of version 1.
    Base(Method),
    /// A method of a negotiated extension.
    Extension(ExtensionMethod),
}

impl MethodName {
    /// The name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            MethodName::Base(method) => method.as_str(),
            MethodName::Extension(method) => method.as_str(),
        }
    }
}

impl std::fmt::Display for MethodName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

closed_name_set! {
    /// An extension of version 1, required by its capability name at `initialize`.
    /// The order is the one `initialize` advertises them in, after the base
    /// capabilities (see [`crate::extensions`]).
    pub enum Extension {
        /// Tool cards: structured, bounded cards of every tool call.
        ToolCards => "tool.cards",
        /// Tools the client registers and runs itself.
        ClientTools => "client.tools",
        /// Approval requests with their subject, suggested rule and proposed change.
        ApprovalScopes => "approval.scopes",
        /// The model's questions to the user.
        UserQuestions => "user.questions",
        /// Token usage of a session.
        SessionUsage => "session.usage",
        /// Images given with a prompt.
        InputAttachments => "input.attachments",
        /// Files read and written through the client.
        ClientFiles => "client.files",
        /// The model's reasoning summaries.
        ReasoningSummaries => "reasoning.summaries",
        /// Commands run in the client's terminals.
        ClientTerminals => "client.terminals",
        /// Prompt-cache writes in usage figures.
        UsageCacheWrites => "usage.cache_writes",
        /// A change's size (`+N −M`) in approvals.
        ApprovalChangeCounts => "approval.change_counts",
        /// Background commands listed, read and stopped by the client.
        JobsControl => "jobs.control",
        /// The cached model list: the same name as the one method it adds
        /// ([`ExtensionMethod::ModelCached`]).
        ModelCached => "model.cached",
        /// Approval modes and the session's rules.
        PermissionModes => "permissions.modes",
        /// The model's plan as a checklist.
        PlanTodo => "plan.todo",
        /// Checkpoints of the workspace at each turn, undo and rewind.
        Checkpoints => "checkpoints",
        /// Colour and emphasis of card text, as spans beside it.
        ToolCardStyles => "tool.cards.styles",
    }
}

/// The `client.tools` extension's capability name.
pub const CLIENT_TOOLS: &str = Extension::ClientTools.as_str();
/// The `approval.scopes` extension's capability name.
pub const APPROVAL_SCOPES: &str = Extension::ApprovalScopes.as_str();
/// The `user.questions` extension's capability name.
pub const USER_QUESTIONS: &str = Extension::UserQuestions.as_str();
/// The `session.usage` extension's capability name.
pub const SESSION_USAGE: &str = Extension::SessionUsage.as_str();
/// The `client.files` extension's capability name.
pub const CLIENT_FILES: &str = Extension::ClientFiles.as_str();
/// The `input.attachments` extension's capability name.
pub const INPUT_ATTACHMENTS: &str = Extension::InputAttachments.as_str();
/// The `reasoning.summaries` extension's capability name.
pub const REASONING_SUMMARIES: &str = Extension::ReasoningSummaries.as_str();
/// The `client.terminals` extension's capability name.
pub const CLIENT_TERMINALS: &str = Extension::ClientTerminals.as_str();
/// The `usage.cache_writes` extension's capability name.
pub const USAGE_CACHE_WRITES: &str = Extension::UsageCacheWrites.as_str();
/// The `approval.change_counts` extension's capability name.
pub const APPROVAL_CHANGE_COUNTS: &str = Extension::ApprovalChangeCounts.as_str();
/// The `jobs.control` extension's capability name.
pub const JOBS_CONTROL: &str = Extension::JobsControl.as_str();
/// The `model.cached` extension's capability name.
pub const MODEL_CACHED: &str = Extension::ModelCached.as_str();
/// The `checkpoints` extension's capability name.
pub const CHECKPOINTS: &str = Extension::Checkpoints.as_str();
/// The `permissions.modes` extension's capability name.
pub const PERMISSION_MODES: &str = Extension::PermissionModes.as_str();
/// The `plan.todo` extension's capability name.
pub const PLAN_TODO: &str = Extension::PlanTodo.as_str();
/// The `tool.cards.styles` extension's capability name.
pub const TOOL_CARD_STYLES: &str = Extension::ToolCardStyles.as_str();

/// The capabilities advertised by `initialize`, in the protocol's order.
///
/// The base capabilities are the sixteen method names; negotiated extensions are
/// appended after them.
pub fn base_capabilities() -> Vec<String> {
    Method::ALL.iter().map(|m| m.as_str().to_owned()).collect()
}

closed_name_set! {
    /// The name of a run event.
    pub enum EventName {
        /// The prompt was appended durably.
        InputPersisted => "input.persisted",
        /// Best-effort text appended to an assistant segment.
        MessageDelta => "message.delta",
        /// Authoritative replacement text of an assistant segment.
        MessageReconcile => "message.reconcile",
        /// A tool, subagent or compaction activity changed state.
        Activity => "activity",
        /// The run waits for an approval.
        ApprovalRequested => "approval.requested",
        /// A redacted diagnostic.
        Diagnostic => "diagnostic",
        /// The run ended.
        RunFinished => "run.finished",
    }
}
