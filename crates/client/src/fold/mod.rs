//! The transcript fold: a pure function from run events, the client's own actions and
//! history pages to what a client shows. No I/O, no clock, no runtime: the same inputs
//! in the same order always give the same [`Transcript`], so a state folded from a
//! prefix and then the rest equals the state folded from the start. The contract is
//! in `docs/client-fold.md`.
//!
//! A long-lived client (the terminal UI) also watches its child's request IDs: a child
//! accepts 4,096 in its life ([`crate::Backend::ids_remaining`]). Before starting a
//! turn it checks that at least [`TURN_ID_RESERVE`] remain; if not, it shuts the child
//! down, spawns a fresh one, initializes it, opens the session again
//! ([`Transcript::durable_session`] is the only ID it may open) and folds
//! [`FoldInput::SessionAttached`] and the new revision's pages into the same
//! `Transcript`, which replace what it showed.

mod events;
mod history;
mod items;
mod message;
#[cfg(test)]
mod tests;

use std::collections::HashMap;

use magi_protocol::ErrorCode;
use magi_protocol::messages::{Event, HistoryPageResult, SessionResult};

pub use history::HistoryMessage;
pub use items::{
    ActivityDisplay, ActivityItem, Approval, ApprovalState, CardView, DiagnosticItem, Item, Prompt,
    PromptId, PromptState, Role, Run, RunEnd, RunState, describe_approval,
};
pub use message::{Message, MessageState};

use history::PageLoad;

/// Request IDs a client keeps in hand before starting a turn on a child: `turn.start`,
/// a `turn.cancel`, approval answers, the pages of the resulting revision (at most
/// 8 MiB of projection in 32 KiB pages, 257 pages) and `shutdown`, with room to spare.
/// Below it, relaunch and reopen first.
pub const TURN_ID_RESERVE: usize = 512;

/// The code of the diagnostic a client's fold adds when its backend ended
/// ([`FoldInput::BackendEnded`]); no backend sends it.
pub const BACKEND_ENDED: &str = "backend_ended";

/// One thing that happened, in the order the client learned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FoldInput {
    /// A run event, in `seq` order. Fold a run's events after its [`Self::TurnAccepted`]
    /// (the admission response precedes them on the wire).
    Event(Event),
    /// The client is sending `turn.start` with this prompt: shown at once, anchored
    /// after the last entry.
    PromptSubmitted {
        /// The client's ID for it.
        id: PromptId,
        /// The prompt text.
        text: String,
    },
    /// `turn.start` for that prompt was admitted as this run.
    TurnAccepted {
        /// The prompt.
        id: PromptId,
        /// The admitted run.
        run_id: String,
    },
    /// `turn.start` for that prompt was answered with an error: nothing was admitted.
    TurnRejected {
        /// The prompt.
        id: PromptId,
        /// The error code answered.
        code: ErrorCode,
    },
    /// The client answered an approval request (sent `approval.answer`).
    ApprovalAnswered {
        /// The run.
        run_id: String,
        /// The approval.
        approval_id: String,
        /// The answer.
        allow: bool,
    },
    /// The transport to the child was lost (output closed, a violation, a write
    /// failed, the child died) before everything settled.
    Disconnected,
    /// The child ended, and the client knows how (`BackendEnd::describe`): folded as
    /// [`FoldInput::Disconnected`], and the sentence that tells it stays in the
    /// transcript as a diagnostic of code [`BACKEND_ENDED`], where the person looks.
    BackendEnded {
        /// How it ended, and what the person may do about it.
        said: String,
    },
    /// `session.create` or `session.open` answered: the session now attached.
    SessionAttached(SessionResult),
    /// A `history.page` result. Pages of one revision are collected until the last one
    /// (`next_cursor` null), which replaces the shown entries.
    HistoryPage(HistoryPageResult),
}

/// The attached session, as far as this client knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session ID.
    pub session_id: String,
    /// Whether it is known durable (`durable:true` at attachment, or an input was
    /// persisted): only a durable ID may be reopened in a fresh child.
    pub durable: bool,
}

/// The history revision whose pages replace the live entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryDue {
    /// The session.
    pub session_id: String,
    /// The revision to page; `None` means reopen the session to obtain history.
    pub revision: Option<String>,
}

/// The history projection shown, once pages replaced the live entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryShown {
    /// The session.
    pub session_id: String,
    /// The revision shown.
    pub revision: String,
    /// Whether the backend marked the projection complete (its last page's flag).
    pub complete: bool,
}

/// Identity of a live entry, for finding it again; IDs are run-scoped, so the run
/// is part of the key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Prompt(PromptId),
    Message(String, String),
    Activity(String, String),
    Approval(String, String),
}

/// Which entry an item is and which version of it, so a client that keeps what it
/// drew of an entry draws it again only when its stamp changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    /// The entry's identity: kept while the entry stays in the transcript (also when
    /// entries before it leave), never reused; history replacing the entries gives
    /// every new entry a new one.
    pub id: u64,
    /// Changes whenever the entry may have changed; never reused either, so a
    /// revision alone names one version of one entry.
    pub revision: u64,
}

/// The folded transcript. Build it with [`Transcript::default`] and [`Transcript::apply`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    session: Option<SessionInfo>,
    items: Vec<Item>,
    /// Each item's stamp, at the same index as the item.
    stamps: Vec<Stamp>,
    /// The last stamp number given out (ids and revisions share it).
    clock: u64,
    /// Where each live entry sits in `items`; rebuilt whenever entries move.
    index: HashMap<Key, usize>,
    runs: Vec<Run>,
    restored_prompt: Option<String>,
    last_rejection: Option<ErrorCode>,
    history_due: Option<HistoryDue>,
    history: Option<HistoryShown>,
    /// Live diagnostics of this session's runs, which the backend never stores, each
    /// with the number of history messages before it: history replacing the live
    /// projection keeps them where they were.
    kept_diagnostics: Vec<(usize, DiagnosticItem)>,
    loading: Option<PageLoad>,
    transport_lost: bool,
}

impl Transcript {
    /// Folds one input.
    pub fn apply(&mut self, input: FoldInput) {
        match input {
            FoldInput::Event(event) => self.event(event),
            FoldInput::PromptSubmitted { id, text } => self.submitted(id, text),
            FoldInput::TurnAccepted { id, run_id } => self.accepted(id, &run_id),
            FoldInput::TurnRejected { id, code } => {
                self.last_rejection = Some(code);
                if let Some(Item::Prompt(p)) = self.get(&Key::Prompt(id))
                    && p.state == PromptState::Submitted
                {
                    self.restore(&Key::Prompt(id));
                }
            }
            FoldInput::ApprovalAnswered {
                run_id,
                approval_id,
                allow,
            } => {
                if let Some(Item::Approval(a)) = self.get_mut(&Key::Approval(run_id, approval_id))
                    && a.state == ApprovalState::Pending
                {
                    a.state = ApprovalState::Answered { allow };
                }
            }
            FoldInput::Disconnected => self.disconnected(),
            FoldInput::BackendEnded { said } => {
                self.disconnected();
                self.push_unkeyed(Item::Diagnostic(DiagnosticItem {
                    run_id: String::new(),
                    code: BACKEND_ENDED.to_owned(),
                    summary: said,
                }));
            }
            FoldInput::SessionAttached(result) => self.attached(result),
            FoldInput::HistoryPage(page) => {
                if let Some((load, complete)) = PageLoad::fold(&mut self.loading, &page) {
                    self.replace_with_history(load, complete);
                }
            }
        }
    }

    /// Folds every input in order.
    pub fn apply_all(&mut self, inputs: impl IntoIterator<Item = FoldInput>) {
        for input in inputs {
            self.apply(input);
        }
    }

    /// The entries, in display order.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Each entry's [`Stamp`], at the same index as in [`Self::items`].
    pub fn stamps(&self) -> &[Stamp] {
        &self.stamps
    }

    /// The runs seen, in the order they were first learned.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// A prompt handed back to the composer (rejected, never persisted, or uncertain
    /// after a lost transport); several are joined by a blank line. Never resubmitted
    /// by the fold: the user decides.
    pub fn restored_prompt(&self) -> Option<&str> {
        self.restored_prompt.as_deref()
    }

    /// Takes the restored prompt once the composer holds it (a consumer action; the
    /// fold itself never clears it).
    pub fn take_restored_prompt(&mut self) -> Option<String> {
        self.restored_prompt.take()
    }

    /// The error code of the last rejected `turn.start`.
    pub fn last_rejection(&self) -> Option<ErrorCode> {
        self.last_rejection
    }

    /// The attached session.
    pub fn session(&self) -> Option<&SessionInfo> {
        self.session.as_ref()
    }

    /// The session ID a fresh child may reopen: only one known durable.
    pub fn durable_session(&self) -> Option<&str> {
        self.session
            .as_ref()
            .filter(|s| s.durable)
            .map(|s| s.session_id.as_str())
    }

    /// The revision to page after the last `run.finished`, until its pages arrived.
    pub fn history_due(&self) -> Option<&HistoryDue> {
        self.history_due.as_ref()
    }

    /// The history projection shown, if pages replaced the live entries.
    pub fn history(&self) -> Option<&HistoryShown> {
        self.history.as_ref()
    }

    /// Whether the transport was lost since the last attachment.
    pub fn transport_lost(&self) -> bool {
        self.transport_lost
    }

    /// Whether a run is admitted and not finished (nor unknown): no new prompt or
    /// history request until it finishes.
    pub fn run_active(&self) -> bool {
        self.runs.iter().any(|r| r.state == RunState::Running)
    }

    fn get(&self, key: &Key) -> Option<&Item> {
        self.index.get(key).and_then(|&i| self.items.get(i))
    }

    /// The entry to change: its revision moves on (whether or not the caller ends up
    /// changing it, which at worst costs a client one redraw).
    fn get_mut(&mut self, key: &Key) -> Option<&mut Item> {
        let at = *self.index.get(key)?;
        self.touch(at);
        self.items.get_mut(at)
    }

    /// Gives the entry at `at` a new revision.
    fn touch(&mut self, at: usize) {
        self.clock += 1;
        if let Some(stamp) = self.stamps.get_mut(at) {
            stamp.revision = self.clock;
        }
    }

    /// Appends a live entry at the end of the transcript.
    fn push(&mut self, key: Key, item: Item) {
        self.index.insert(key, self.items.len());
        self.push_unkeyed(item);
    }

    /// Appends an entry that is never looked up again, with a new stamp.
    fn push_unkeyed(&mut self, item: Item) {
        self.clock += 1;
        self.stamps.push(Stamp {
            id: self.clock,
            revision: self.clock,
        });
        self.items.push(item);
    }

    fn run_mut(&mut self, run_id: &str) -> &mut Run {
        let at = match self.runs.iter().position(|r| r.run_id == run_id) {
            Some(at) => at,
            None => {
                self.runs.push(Run {
                    run_id: run_id.to_owned(),
                    prompt: None,
                    input: None,
                    state: RunState::Running,
                });
                self.runs.len() - 1
            }
        };
        &mut self.runs[at]
    }

    fn submitted(&mut self, id: PromptId, text: String) {
        if self.index.contains_key(&Key::Prompt(id)) {
            // An ID is used once; a repeat must not render the prompt twice.
            return;
        }
        let state = PromptState::Submitted;
        self.push(Key::Prompt(id), Item::Prompt(Prompt { id, text, state }));
    }

    fn accepted(&mut self, id: PromptId, run_id: &str) {
        if let Some(Item::Prompt(p)) = self.get_mut(&Key::Prompt(id))
            && p.state == PromptState::Submitted
        {
            p.state = PromptState::Accepted {
                run_id: run_id.to_owned(),
            };
        }
        let run = self.run_mut(run_id);
        run.prompt.get_or_insert(id);
    }

    /// Removes a prompt entry and hands its text back to the composer.
    fn restore(&mut self, key: &Key) {
        let Some(at) = self.index.get(key).copied() else {
            return;
        };
        self.stamps.remove(at);
        if let Item::Prompt(p) = self.items.remove(at) {
            self.restored_prompt = Some(match self.restored_prompt.take() {
                Some(earlier) => format!("{earlier}\n\n{}", p.text),
                None => p.text,
            });
        }
        self.reindex();
    }

    /// Rebuilds the key index after entries moved.
    fn reindex(&mut self) {
        self.index = self
            .items
            .iter()
            .enumerate()
            .filter_map(|(at, item)| key_of(item).map(|key| (key, at)))
            .collect();
    }
}

/// The key a live entry is found by; history entries are not looked up.
fn key_of(item: &Item) -> Option<Key> {
    match item {
        Item::Prompt(p) => Some(Key::Prompt(p.id)),
        Item::Message(m) => Some(Key::Message(m.run_id.clone(), m.message_id.clone())),
        Item::Activity(a) => Some(Key::Activity(a.run_id.clone(), a.activity_id.clone())),
        Item::Approval(a) => Some(Key::Approval(a.run_id.clone(), a.approval_id.clone())),
        Item::Diagnostic(_) | Item::History(_) => None,
    }
}
