//! The run's events: best-effort deltas, and critical events that wait for room at
//! most [`CRITICAL_EVENT_WAIT_MS`] and cancel the run when they cannot be delivered.

use std::time::Duration;

use magi_protocol::limits::{CRITICAL_EVENT_WAIT_MS, LIVE_CHUNK_BYTES};
use magi_protocol::messages::{
    Activity, ActivityKind, ActivityState, ApprovalRequested, Diagnostic, Event, MessageDelta,
    MessageReconcile,
};

use super::Turn;
use super::conversation::chunks;

impl Turn {
    /// Sends a delta if there is room; a dropped delta leaves a gap in the parts.
    pub(super) fn delta(&self, message_id: &str, part: u64, text: &str) {
        let _ = self.events.try_send(Event::MessageDelta(MessageDelta {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            message_id: message_id.to_owned(),
            part,
            text: text.to_owned(),
        }));
    }

    pub(super) async fn reconcile(&mut self, message_id: &str, text: &str, partial: bool) {
        let text = self.safe(text);
        let parts = chunks(&text, LIVE_CHUNK_BYTES);
        let last = parts.len() - 1;
        for (part, chunk) in parts.into_iter().enumerate() {
            let event = Event::MessageReconcile(MessageReconcile {
                session_id: self.request.session_id.clone(),
                run_id: self.request.run_id.clone(),
                message_id: message_id.to_owned(),
                part: part as u64,
                text: chunk.to_owned(),
                last_part: part == last,
                partial,
            });
            self.critical(event).await;
        }
    }

    /// A tool call's activity: kind `subagent` for a `task` call, `tool` for the others.
    pub(super) async fn activity(
        &mut self,
        activity_id: &str,
        name: &str,
        state: ActivityState,
        summary: &str,
    ) {
        let kind = if name == magi_config::TASK_TOOL {
            ActivityKind::Subagent
        } else {
            ActivityKind::Tool
        };
        self.activity_of(kind, activity_id, name, state, summary)
            .await;
    }

    /// An activity of any kind.
    pub(super) async fn activity_of(
        &mut self,
        kind: ActivityKind,
        activity_id: &str,
        name: &str,
        state: ActivityState,
        summary: &str,
    ) {
        let event = Event::Activity(Activity {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            activity_id: activity_id.to_owned(),
            kind,
            state,
            name: name.to_owned(),
            summary: summary.to_owned(),
        });
        self.critical(event).await;
    }

    pub(super) async fn approval_requested(
        &mut self,
        approval_id: &str,
        summary: &str,
        expires_in_ms: u64,
    ) {
        let event = Event::ApprovalRequested(ApprovalRequested {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            approval_id: approval_id.to_owned(),
            summary: summary.to_owned(),
            expires_in_ms,
        });
        self.critical(event).await;
    }

    pub(super) async fn diagnostic(&mut self, code: &str, summary: &str) {
        let event = Event::Diagnostic(Diagnostic {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            code: code.to_owned(),
            summary: summary.to_owned(),
        });
        self.critical(event).await;
    }

    /// Sends a critical event, waiting at most the critical bound; on failure the run is
    /// cancelled and ends with `output_unavailable`.
    pub(super) async fn critical(&mut self, event: Event) {
        if self.output_lost {
            return;
        }
        let wait = Duration::from_millis(CRITICAL_EVENT_WAIT_MS);
        if self.events.send_timeout(event, wait).await.is_err() {
            self.output_lost = true;
            self.cancel.cancel();
        }
    }
}
