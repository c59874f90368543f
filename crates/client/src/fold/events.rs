//! The fold's rules for run events, a lost transport, attachment and history
//! replacement.

use magi_protocol::messages::{
    Activity, ActivityState, DIAGNOSTIC_PROVIDER_RETRYING, Event, RunFinished, SessionResult,
};

use super::history::PageLoad;
use super::items::{
    ActivityDisplay, ActivityItem, Approval, ApprovalState, CardView, DiagnosticItem, Item,
    PromptState, RunEnd, RunState,
};
use super::message::Message;
use super::{HistoryDue, HistoryShown, Key, SessionInfo, Transcript};

impl Transcript {
    /// Folds one run event.
    pub(super) fn event(&mut self, event: Event) {
        match event {
            Event::InputPersisted(e) => {
                let run = self.run_mut(&e.run_id);
                if run.input.is_none() {
                    run.input = Some((e.message_id.clone(), e.revision.clone()));
                }
                let prompt = run.prompt;
                // Persisted input makes the session durable: the ID may now be reopened.
                match &mut self.session {
                    Some(s) if s.session_id == e.session_id => s.durable = true,
                    _ => {
                        self.session = Some(SessionInfo {
                            session_id: e.session_id.clone(),
                            durable: true,
                        });
                    }
                }
                // The entry retires in place: its anchor never moves.
                if let Some(id) = prompt
                    && let Some(Item::Prompt(p)) = self.get_mut(&Key::Prompt(id))
                    && matches!(p.state, PromptState::Accepted { .. })
                {
                    p.state = PromptState::Persisted {
                        run_id: e.run_id,
                        message_id: e.message_id,
                        revision: e.revision,
                    };
                }
            }
            Event::MessageDelta(e) => {
                if let Some(m) = self.message(&e.run_id, &e.message_id) {
                    m.delta(e.part, &e.text);
                }
            }
            Event::MessageReconcile(e) => {
                if let Some(m) = self.message(&e.run_id, &e.message_id) {
                    m.reconcile(e.part, &e.text, e.last_part, e.partial);
                }
            }
            Event::Activity(e) => self.activity(e),
            Event::ApprovalRequested(e) => {
                let key = Key::Approval(e.run_id.clone(), e.approval_id.clone());
                if !self.index.contains_key(&key) {
                    let approval = Approval {
                        run_id: e.run_id,
                        approval_id: e.approval_id,
                        summary: e.summary,
                        // Absent (no extension) and null read the same: nothing to show.
                        subject: e.subject.flatten(),
                        suggested_rule: e.suggested_rule.flatten(),
                        proposed_change: e.proposed_change.flatten(),
                        expires_in_ms: e.expires_in_ms,
                        state: ApprovalState::Pending,
                    };
                    self.push(key, Item::Approval(approval));
                }
            }
            Event::Diagnostic(e) => self.push_unkeyed(Item::Diagnostic(DiagnosticItem {
                run_id: e.run_id,
                code: e.code,
                summary: e.summary,
            })),
            Event::RunFinished(e) => self.finished(e),
            Event::ToolCard(e) => self.card(*e),
            // A client tool call is the client's own work, not a transcript item: the
            // activity it belongs to is folded from its own events. A question is the
            // client's to ask; its call's activity and card show it in the transcript.
            Event::ClientToolCall(_)
            | Event::ClientToolCancel(_)
            | Event::QuestionAsked(_)
            | Event::UsageUpdated(_)
            | Event::SessionTitled(_)
            | Event::ClientTerminalRun(_)
            | Event::ClientTerminalCancel(_)
            | Event::ClientFileRead(_)
            | Event::ClientFileWrite(_)
            | Event::ClientFileCancel(_)
            | Event::ReasoningDelta(_) => {}
        }
    }

    /// The live segment, created at the end of the transcript on its first event.
    fn message(&mut self, run_id: &str, message_id: &str) -> Option<&mut Message> {
        let key = Key::Message(run_id.to_owned(), message_id.to_owned());
        if !self.index.contains_key(&key) {
            self.push(key.clone(), Item::Message(Message::new(run_id, message_id)));
        }
        match self.get_mut(&key) {
            Some(Item::Message(m)) => Some(m),
            _ => None,
        }
    }

    /// Folds an `activity`: accepted at any state, then moving only forward.
    /// Folds a card snapshot onto its activity: a higher revision replaces, an equal
    /// identical one changes nothing, anything else makes the card unknown for good.
    fn card(&mut self, e: magi_protocol::cards::ToolCardEvent) {
        let key = Key::Activity(e.run_id.clone(), e.activity_id.clone());
        let Some(Item::Activity(activity)) = self.get_mut(&key) else {
            // A card enhances an activity the client has; alone it shows nothing.
            return;
        };
        activity.card = match std::mem::take(&mut activity.card) {
            CardView::None => CardView::Card(Box::new(e.card)),
            CardView::Card(current) if e.card.revision > current.revision => {
                CardView::Card(Box::new(e.card))
            }
            CardView::Card(current)
                if e.card.revision == current.revision && *current == e.card =>
            {
                CardView::Card(current)
            }
            CardView::Card(_) | CardView::Unknown => CardView::Unknown,
        };
    }

    fn activity(&mut self, e: Activity) {
        let state = match e.state {
            ActivityState::Started => ActivityDisplay::Started,
            ActivityState::Completed => ActivityDisplay::Completed,
            ActivityState::Failed => ActivityDisplay::Failed,
        };
        let key = Key::Activity(e.run_id.clone(), e.activity_id.clone());
        match self.get_mut(&key) {
            Some(Item::Activity(a)) => {
                // Only Started moves, and only to a terminal: never backwards, and an
                // unknown activity stays unknown.
                if a.state == ActivityDisplay::Started && state != ActivityDisplay::Started {
                    a.state = state;
                    a.name = e.name;
                    a.summary = e.summary;
                }
            }
            Some(_) => {}
            None => {
                let item = ActivityItem {
                    run_id: e.run_id,
                    activity_id: e.activity_id,
                    kind: e.kind,
                    name: e.name,
                    summary: e.summary,
                    state,
                    card: CardView::None,
                };
                self.push(key, Item::Activity(item));
            }
        }
    }

    /// Folds `run.finished`: records the end, settles what the run left open, hands a
    /// never-persisted prompt back, and names the revision to page.
    fn finished(&mut self, e: RunFinished) {
        let run = self.run_mut(&e.run_id);
        if run.state != RunState::Running {
            // Once per run; after a lost transport its outcome stays unknown.
            return;
        }
        run.state = RunState::Finished(RunEnd {
            outcome: e.outcome,
            persistence: e.persistence,
            revision: e.revision.clone(),
            error_code: e.error_code,
        });
        let unpersisted = run.input.is_none().then_some(run.prompt).flatten();
        let mut changed = Vec::new();
        for (at, item) in self.items.iter_mut().enumerate() {
            match item {
                // A terminal follows required reconciliation: a segment still open
                // now never got its authoritative text.
                Item::Message(m) if m.run_id == e.run_id && !m.is_settled() => {
                    m.mark_unknown();
                    changed.push(at);
                }
                Item::Activity(a)
                    if a.run_id == e.run_id && a.state == ActivityDisplay::Started =>
                {
                    a.state = ActivityDisplay::Unknown;
                    changed.push(at);
                }
                Item::Approval(a) if a.run_id == e.run_id && a.state == ApprovalState::Pending => {
                    // The backend denies an unanswered approval on expiry or cancel.
                    a.state = ApprovalState::Lapsed;
                    changed.push(at);
                }
                _ => {}
            }
        }
        for at in changed {
            self.touch(at);
        }
        if let Some(id) = unpersisted {
            self.restore(&Key::Prompt(id));
        }
        self.history_due = Some(HistoryDue {
            session_id: e.session_id,
            revision: e.revision,
        });
    }

    /// Folds a lost transport: nothing open is invented finished, and no prompt whose
    /// admission is uncertain stays shown as if it were (nor is it resubmitted).
    pub(super) fn disconnected(&mut self) {
        self.transport_lost = true;
        // Revisions and cursors are scoped to the child that issued them.
        self.loading = None;
        for run in &mut self.runs {
            if run.state == RunState::Running {
                run.state = RunState::Unknown;
            }
        }
        let mut uncertain = Vec::new();
        let mut changed = Vec::new();
        for (at, item) in self.items.iter_mut().enumerate() {
            match item {
                Item::Message(m) if !m.is_settled() => {
                    m.mark_unknown();
                    changed.push(at);
                }
                Item::Activity(a) if a.state == ActivityDisplay::Started => {
                    a.state = ActivityDisplay::Unknown;
                    changed.push(at);
                }
                Item::Approval(a) if a.state == ApprovalState::Pending => {
                    a.state = ApprovalState::Unknown;
                    changed.push(at);
                }
                Item::Prompt(p) if !matches!(p.state, PromptState::Persisted { .. }) => {
                    uncertain.push(p.id);
                }
                _ => {}
            }
        }
        for at in changed {
            self.touch(at);
        }
        for id in uncertain {
            self.restore(&Key::Prompt(id));
        }
    }

    /// Folds an attachment: another session starts an empty transcript; the same
    /// session (a reopen in a fresh child) keeps what is shown until its pages arrive.
    pub(super) fn attached(&mut self, result: SessionResult) {
        let same = self
            .session
            .as_ref()
            .is_some_and(|s| s.session_id == result.session_id);
        if !same {
            let prompts: Vec<Key> = self
                .items
                .iter()
                .filter_map(|item| match item {
                    Item::Prompt(p) if !matches!(p.state, PromptState::Persisted { .. }) => {
                        Some(Key::Prompt(p.id))
                    }
                    _ => None,
                })
                .collect();
            for key in &prompts {
                self.restore(key);
            }
            self.items.clear();
            self.stamps.clear();
            self.index.clear();
            self.runs.clear();
            self.history = None;
            self.history_due = None;
            self.kept_diagnostics.clear();
        }
        let durable = result.durable || (same && self.durable_session().is_some());
        self.session = Some(SessionInfo {
            session_id: result.session_id,
            durable,
        });
        self.loading = None;
        self.transport_lost = false;
    }

    /// Shows a finished page load in place of the entries: live entries and older
    /// history go; prompts not yet persisted stay, re-anchored after the history.
    pub(super) fn replace_with_history(&mut self, load: PageLoad, complete: bool) {
        // Pending prompts keep their stamps: they are the same entries, moved.
        let mut pending = Vec::new();
        let mut fresh = Vec::new();
        for (item, stamp) in self.items.drain(..).zip(self.stamps.drain(..)) {
            match item {
                Item::Prompt(p) if !matches!(p.state, PromptState::Persisted { .. }) => {
                    pending.push((Item::Prompt(p), stamp));
                }
                // A retry is news while it happens, not part of the record.
                Item::Diagnostic(d)
                    if d.code != DIAGNOSTIC_PROVIDER_RETRYING
                        && !self.kept_diagnostics.iter().any(|(_, kept)| *kept == d) =>
                {
                    fresh.push(d);
                }
                _ => {}
            }
        }
        let same_session = self
            .history
            .as_ref()
            .is_none_or(|shown| shown.session_id == load.session_id);
        if !same_session {
            self.kept_diagnostics.clear();
        }
        let messages = load.items.len();
        self.kept_diagnostics
            .extend(fresh.into_iter().map(|d| (messages, d)));
        let mut kept = self.kept_diagnostics.iter().peekable();
        let mut shown = Vec::with_capacity(messages + self.kept_diagnostics.len());
        for (before, message) in load.items.into_iter().enumerate() {
            while let Some((_, d)) = kept.next_if(|(at, _)| *at <= before) {
                shown.push(Item::Diagnostic(d.clone()));
            }
            shown.push(Item::History(message));
        }
        shown.extend(kept.map(|(_, d)| Item::Diagnostic(d.clone())));
        for item in shown {
            self.push_unkeyed(item);
        }
        for (item, stamp) in pending {
            self.items.push(item);
            self.stamps.push(stamp);
        }
        self.reindex();
        let due = self.history_due.as_ref().is_some_and(|due| {
            due.session_id == load.session_id
                && due.revision.as_ref().is_none_or(|r| *r == load.revision)
        });
        if due {
            self.history_due = None;
        }
        self.history = Some(HistoryShown {
            session_id: load.session_id,
            revision: load.revision,
            complete,
        });
    }
}
