//! The entries of a folded transcript and the display states each can be in.

use magi_protocol::ErrorCode;
use magi_protocol::messages::{ActivityKind, EntryKind, Persistence, ProposedChange, RunOutcome};

use super::history::HistoryMessage;
use super::message::{Message, MessageState};

/// The client's own ID for a prompt it submitted, chosen before `turn.start` is sent,
/// so the optimistic entry can be found again whatever the backend answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PromptId(pub u64);

/// Where a submitted prompt is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptState {
    /// Sent; `turn.start` has not been answered.
    Submitted,
    /// `turn.start` admitted it as this run; not yet persisted.
    Accepted {
        /// The run admitted.
        run_id: String,
    },
    /// `input.persisted` acknowledged it: it is durable history.
    Persisted {
        /// The run.
        run_id: String,
        /// Its message ID within `revision`.
        message_id: String,
        /// The acknowledgement's history revision (not the one to page: see
        /// [`super::Transcript::history_due`]).
        revision: String,
    },
}

/// The user's prompt, shown from submission at the place it was submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The client's ID for it.
    pub id: PromptId,
    /// The prompt text.
    pub text: String,
    /// Where it is.
    pub state: PromptState,
}

/// Where an activity is. Moves only forward: `Started` to a terminal or `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivityDisplay {
    /// Started, not yet settled.
    Started,
    /// Completed.
    Completed,
    /// Failed.
    Failed,
    /// Started, and its end was never learned (transport lost, or its run ended
    /// without settling it live); never shown as finished.
    Unknown,
}

/// A tool call, subagent or compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityItem {
    /// The run.
    pub run_id: String,
    /// The run-scoped activity ID.
    pub activity_id: String,
    /// What it is.
    pub kind: ActivityKind,
    /// Its name.
    pub name: String,
    /// Its latest safe summary.
    pub summary: String,
    /// Where it is.
    pub state: ActivityDisplay,
    /// Its live tool card (`tool.cards`).
    pub card: CardView,
}

/// The tool card an activity shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CardView {
    /// No card arrived.
    #[default]
    None,
    /// The latest snapshot: only a higher revision replaces it.
    Card(Box<magi_protocol::cards::Card>),
    /// A snapshot broke the revision rule (a lower revision, or an equal one with other
    /// content): the card is unknown from then on, and no older state is applied.
    Unknown,
}

/// Where an approval request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalState {
    /// Waiting for this client's answer.
    Pending,
    /// This client answered it.
    Answered {
        /// The answer sent.
        allow: bool,
    },
    /// Its run ended before an answer: the backend denied it (expiry or cancel).
    Lapsed,
    /// Pending when the transport was lost; the backend denies it on disconnect, but
    /// this client cannot confirm it.
    Unknown,
}

/// A request for the user's approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The run.
    pub run_id: String,
    /// The run-scoped approval ID.
    pub approval_id: String,
    /// The safe summary.
    pub summary: String,
    /// What the call acts on (its command line, path or URL, redacted by the
    /// backend), with `approval.scopes`; `None` without the extension or when the call
    /// has none.
    pub subject: Option<String>,
    /// The session rule an answer with `scope: "session"` would add, with
    /// `approval.scopes`; `None` without the extension or when none is offered (such
    /// an answer then covers this call only).
    pub suggested_rule: Option<String>,
    /// The change a `write` or `edit` call would make (a unified diff), with
    /// `approval.scopes`; `None` without the extension, for other calls, and when the
    /// backend could not work it out.
    pub proposed_change: Option<ProposedChange>,
    /// Time left at the request; the fold has no clock and never expires it itself.
    pub expires_in_ms: u64,
    /// Where it is.
    pub state: ApprovalState,
}

impl Approval {
    /// The call in one line, as [`describe_approval`] puts it.
    pub fn description(&self) -> String {
        describe_approval(&self.summary, self.subject.as_deref())
    }
}

/// An approval's call in one line: its summary, followed by its subject when the
/// summary does not already hold it, so a person sees the command, path or URL.
pub fn describe_approval(summary: &str, subject: Option<&str>) -> String {
    match subject {
        Some(subject) if !summary.contains(subject) => format!("{summary}: {subject}"),
        _ => summary.to_owned(),
    }
}

/// A `diagnostic` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiagnosticItem {
    /// The run.
    pub run_id: String,
    /// Its code.
    pub code: String,
    /// Its redacted summary.
    pub summary: String,
}

/// One entry of the transcript, in display order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// The user's prompt, live (optimistic until persisted).
    Prompt(Prompt),
    /// A live assistant segment.
    Message(Message),
    /// A live activity.
    Activity(ActivityItem),
    /// A live approval request.
    Approval(Approval),
    /// A live diagnostic.
    Diagnostic(DiagnosticItem),
    /// A message of a history projection (after `run.finished` or a reopen).
    History(HistoryMessage),
}

/// What an entry shows, across live entries and history ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user's prompt.
    User,
    /// An assistant segment.
    Assistant,
    /// A reasoning summary (history only in this protocol build).
    ReasoningSummary,
    /// A tool call, subagent or compaction activity.
    Activity,
    /// A compaction summary (history only).
    Compaction,
    /// A diagnostic.
    Diagnostic,
    /// An approval request (live only).
    Approval,
}

impl Item {
    /// What the entry shows.
    pub fn role(&self) -> Role {
        match self {
            Item::Prompt(_) => Role::User,
            Item::Message(_) => Role::Assistant,
            Item::Activity(_) => Role::Activity,
            Item::Approval(_) => Role::Approval,
            Item::Diagnostic(_) => Role::Diagnostic,
            Item::History(h) => match h.kind {
                EntryKind::User => Role::User,
                EntryKind::Assistant => Role::Assistant,
                EntryKind::ReasoningSummary => Role::ReasoningSummary,
                EntryKind::Activity => Role::Activity,
                EntryKind::Compaction => Role::Compaction,
                EntryKind::Diagnostic => Role::Diagnostic,
            },
        }
    }

    /// The entry's main text (for an activity, its summary).
    pub fn text(&self) -> &str {
        match self {
            Item::Prompt(p) => &p.text,
            Item::Message(m) => m.text(),
            Item::Activity(a) => &a.summary,
            Item::Approval(a) => &a.summary,
            Item::Diagnostic(d) => &d.summary,
            Item::History(h) => &h.text,
        }
    }

    /// Whether the entry is settled and whole: a persisted prompt, a completely
    /// reconciled message, a settled activity, an answered or lapsed approval, a
    /// complete history message. Unknown entries are never complete.
    pub fn is_complete(&self) -> bool {
        match self {
            Item::Prompt(p) => matches!(p.state, PromptState::Persisted { .. }),
            Item::Message(m) => matches!(m.state(), MessageState::Complete { .. }),
            Item::Activity(a) => matches!(
                a.state,
                ActivityDisplay::Completed | ActivityDisplay::Failed
            ),
            Item::Approval(a) => matches!(
                a.state,
                ApprovalState::Answered { .. } | ApprovalState::Lapsed
            ),
            Item::Diagnostic(_) => true,
            Item::History(h) => h.complete,
        }
    }

    /// Whether the entry is shown as unknown: started, and its end never learned.
    pub fn is_unknown(&self) -> bool {
        match self {
            Item::Message(m) => m.state() == MessageState::Unknown,
            Item::Activity(a) => a.state == ActivityDisplay::Unknown,
            Item::Approval(a) => a.state == ApprovalState::Unknown,
            Item::Prompt(_) | Item::Diagnostic(_) | Item::History(_) => false,
        }
    }
}

/// How a run ended, as `run.finished` recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnd {
    /// How it ended.
    pub outcome: RunOutcome,
    /// What reached durable history.
    pub persistence: Persistence,
    /// The history revision to page next; `None` means reopen to obtain history.
    pub revision: Option<String>,
    /// Why it failed, if it did.
    pub error_code: Option<ErrorCode>,
}

/// Where a run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    /// Admitted, no `run.finished` yet.
    Running,
    /// `run.finished` arrived.
    Finished(RunEnd),
    /// The transport was lost before `run.finished`: its outcome is unknown until
    /// the session is reopened.
    Unknown,
}

/// A run this transcript saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The run ID.
    pub run_id: String,
    /// The prompt that started it, when this client submitted it.
    pub prompt: Option<PromptId>,
    /// The persisted input's message ID and acknowledgement revision.
    pub input: Option<(String, String)>,
    /// Where it is.
    pub state: RunState,
}
