//! Where an agent's records go, and the workspace its tools act in.
//!
//! The session's own agent records to the session log; a subagent to its own history,
//! the `task.jsonl` of its `task` call. A record that cannot be appended after the
//! turn's input degrades the run's persistence; the journal remembers it.
//!
//! It also carries what the agent asked of its own session through `magi_control`
//! (compaction before its next request, a title it recorded): the journal is the one
//! value that lives across an agent's round trips and reaches both its calls and its
//! requests.

use std::path::{Path, PathBuf};

use magi_protocol::ErrorCode;
use magi_store::log::Appender;
use magi_store::records::{Record, RecordBody};

use crate::sessions::Sessions;

/// Where records go.
enum Sink<'s> {
    /// The attached session's log.
    Session(&'s mut Sessions),
    /// A subagent's history, under its own session ID.
    Task { log: Appender, history: String },
}

/// An agent's journal.
pub(super) struct Journal<'s> {
    sink: Sink<'s>,
    /// A record could not be appended.
    degraded: bool,
    /// The agent asked, with `magi_control`, to compact before its next request.
    compaction_requested: bool,
    /// The agent recorded the session's title with `magi_control`.
    titled: bool,
    /// The newest title recorded during the turn by any means: `magi_control`, or a
    /// compaction's summary.
    last_title: Option<String>,
}

impl<'s> Journal<'s> {
    /// The journal of the session's own agent.
    pub(super) fn session(sessions: &'s mut Sessions) -> Journal<'s> {
        Journal {
            sink: Sink::Session(sessions),
            degraded: false,
            compaction_requested: false,
            titled: false,
            last_title: None,
        }
    }

    /// A subagent's journal: `log`, holding history `history`.
    pub(super) fn task(log: Appender, history: String) -> Journal<'s> {
        Journal {
            sink: Sink::Task { log, history },
            degraded: false,
            compaction_requested: false,
            titled: false,
            last_title: None,
        }
    }

    /// Whether this is the session's own journal (its log), not a subagent's.
    pub(super) fn is_session(&self) -> bool {
        matches!(self.sink, Sink::Session(_))
    }

    /// Appends a record; a failure degrades persistence.
    pub(super) fn append(&mut self, body: RecordBody) {
        let _ = self.append_all(vec![body]);
    }

    /// Appends records together; a failure degrades persistence. Returns whether they
    /// were appended.
    pub(super) fn append_all(&mut self, bodies: Vec<RecordBody>) -> bool {
        let title = bodies.iter().rev().find_map(|body| match body {
            RecordBody::Title { title }
            | RecordBody::Compaction {
                title: Some(title), ..
            } => Some(title.clone()),
            _ => None,
        });
        let appended = match &mut self.sink {
            Sink::Session(sessions) => sessions.append_all(bodies).is_ok(),
            Sink::Task { log, history } => {
                let records: Vec<Record> = bodies
                    .into_iter()
                    .map(|body| Record::now(history, body))
                    .collect();
                log.append_all(&records).is_ok()
            }
        };
        self.degraded |= !appended;
        if appended && title.is_some() {
            self.last_title = title;
        }
        appended
    }

    /// The session log's records, for the session's own journal; none for a
    /// subagent's.
    pub(super) fn session_records(&self) -> Option<Result<Vec<Record>, ErrorCode>> {
        match &self.sink {
            Sink::Session(sessions) => Some(sessions.records()),
            Sink::Task { .. } => None,
        }
    }

    /// Asks for compaction before the agent's next model request; false when it was
    /// asked already and not yet done.
    pub(super) fn request_compaction(&mut self) -> bool {
        !std::mem::replace(&mut self.compaction_requested, true)
    }

    /// Takes the compaction request, if one is pending.
    pub(super) fn take_compaction_request(&mut self) -> bool {
        std::mem::take(&mut self.compaction_requested)
    }

    /// Appends the session's title; notes it, so no model title replaces it after the
    /// turn. Returns whether it was appended.
    pub(super) fn record_title(&mut self, title: String) -> bool {
        let appended = self.append_all(vec![RecordBody::Title { title }]);
        self.titled |= appended;
        appended
    }

    /// Whether the agent recorded the session's title during the turn.
    pub(super) fn titled(&self) -> bool {
        self.titled
    }

    /// The newest title recorded during the turn (the agent's, or a compaction's).
    pub(super) fn last_title(&self) -> Option<&str> {
        self.last_title.as_deref()
    }

    /// Marks the journal degraded: records that belong to it were lost elsewhere.
    pub(super) fn degrade(&mut self) {
        self.degraded = true;
    }

    /// Whether a record could not be appended.
    pub(super) fn degraded(&self) -> bool {
        self.degraded
    }
}

/// The workspace of a turn: the directory its tools act in and the session's assets.
#[derive(Debug, Clone)]
pub(super) struct Workspace {
    /// The working directory.
    pub(super) cwd: PathBuf,
    /// The attached session's assets folder, if a session is attached.
    pub(super) conversation: Option<PathBuf>,
}

impl Workspace {
    /// The workspace of the attached session.
    pub(super) fn of(sessions: &Sessions) -> Workspace {
        Workspace {
            cwd: sessions.cwd().to_owned(),
            conversation: sessions.conversation_dir(),
        }
    }

    /// The working directory.
    pub(super) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The folder of call `call_id`'s assets.
    pub(super) fn tool_assets_dir(&self, call_id: &str) -> Option<PathBuf> {
        Some(crate::sessions::call_assets_dir(
            self.conversation.as_deref()?,
            call_id,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_journal_records_under_its_history_until_degraded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("task.jsonl");
        let log = Appender::open(&path, "history-1").unwrap();
        let mut journal = Journal::task(log, "history-1".into());
        assert!(journal.append_all(vec![RecordBody::TurnStarted {
            turn_id: "task-1".into()
        }]));
        assert!(!journal.degraded());
        let stored =
            magi_store::log::read_log(&path, "history-1", magi_store::log::ReadLimits::STORED)
                .unwrap();
        assert_eq!(stored.records.len(), 1);
        assert_eq!(stored.records[0].session_id, "history-1");
        journal.degrade();
        assert!(journal.degraded());
    }
}
