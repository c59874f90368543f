//! The run's output: its events and the budgets of what it shows, shared by the turn and
//! its subagents.
//!
//! Deltas are best effort and dropped when the channel is full (their part numbers keep
//! counting, so the client sees the gap); every other event is critical and waits for
//! room at most [`CRITICAL_EVENT_WAIT_MS`]. A critical event that cannot be delivered
//! marks the output lost and cancels the run, which then ends `output_unavailable`.
//! Everything the run sends passes [`Output::safe`].

use std::time::Duration;

use magi_protocol::Extension;
use magi_protocol::cards::{Card, Origin, STYLE_SPANS_PER_BLOCK, StyleSpan, ToolCardEvent};
use magi_protocol::extensions::ExtensionSet;
use magi_protocol::limits::{
    APPROVAL_SUBJECT_BYTES, CRITICAL_EVENT_WAIT_MS, LIVE_CHUNK_BYTES, SUMMARY_BYTES,
};
use magi_protocol::messages::{
    Activity, ActivityKind, ActivityState, ApprovalRequested, Diagnostic, Event, MessageDelta,
    MessageReconcile, ProposedChange, ReasoningDelta, SessionTitled,
};
use magi_protocol::text::{Styler, redact_values, sanitize};
use magi_store::records::TranscriptStyles as TranscriptStyleSpans;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::live_cards::{LiveCards, Snapshot};
use super::text::chunks;
use crate::cards::{CardSource, TranscriptStyles, project};

/// What an approval request shows with `approval.scopes`, before it is made safe.
pub(super) struct ApprovalDetails {
    /// The command line, path or URL the call acts on.
    pub(super) subject: Option<String>,
    /// The session rule an answer "for this session" adds.
    pub(super) suggested_rule: Option<String>,
    /// The change a `write` or `edit` would make.
    pub(super) proposed_change: Option<magi_tools::AppliedPreview>,
}

/// The run's events and what it has spent of its budgets.
pub(super) struct Output {
    events: mpsc::Sender<Event>,
    session_id: String,
    run_id: String,
    /// Cancels the run: the client's cancel, a lost output or an exceeded bound.
    pub(super) cancel: CancellationToken,
    /// The backend is ending (shutdown, EOF): the `turn_end` hooks of a cancelled run
    /// stop at once. A lost output ends the backend too, so it sets this as well.
    pub(super) closing: CancellationToken,
    /// The backend's credential values, redacted from everything the run sends.
    secrets: Vec<String>,
    /// The extensions the client negotiated (see `TurnRequest::extensions`): with
    /// `approval.scopes` approval requests carry their details, with `session.usage`
    /// each model request of the session's agent is told as `usage.updated`, with
    /// `client.files` the file tools go through the client, with
    /// `reasoning.summaries` the session agent's summaries stream as
    /// `reasoning.delta`, and with `tool.cards.styles` (and `tool.cards`) text blocks
    /// carry the colour of their lines.
    extensions: ExtensionSet,
    /// Reasoning summaries streamed so far: the next one's ID is `s<n>`.
    pub(super) summaries_streamed: u64,
    /// A critical event could not be delivered.
    lost: bool,
    /// Bytes of model text received, against `RUN_CONTENT_BYTES`.
    pub(super) content_bytes: usize,
    /// Assistant segments recorded, against `RUN_CONTENT_SEGMENTS`.
    pub(super) segments: usize,
    /// Activities started, against `RUN_ACTIVITIES`.
    pub(super) activities: usize,
    /// The run's live cards.
    cards: LiveCards,
    /// The clock of the Code Mode script whose nested calls are running, if one is:
    /// it is held while one of them waits for a person to answer an approval.
    pub(super) script_clock: Option<std::sync::Arc<magi_tools::code_mode::ScriptClock>>,
}

impl Output {
    /// The output of run `run_id` of session `session_id` to a client that negotiated
    /// `extensions`, with cards when they hold `tool.cards`.
    pub(super) fn new(
        events: mpsc::Sender<Event>,
        session_id: String,
        run_id: String,
        cancel: CancellationToken,
        secrets: Vec<String>,
        extensions: ExtensionSet,
    ) -> Output {
        Output {
            events,
            session_id,
            run_id,
            cancel,
            closing: CancellationToken::new(),
            secrets,
            lost: false,
            content_bytes: 0,
            segments: 0,
            activities: 0,
            cards: LiveCards::new(extensions.contains(Extension::ToolCards)),
            extensions,
            summaries_streamed: 0,
            script_clock: None,
        }
    }

    /// Whether the client negotiated `extension`.
    pub(super) fn has(&self, extension: Extension) -> bool {
        self.extensions.contains(extension)
    }

    /// Whether card text blocks carry their styles: `tool.cards.styles` with
    /// `tool.cards`, which alone carries them.
    pub(super) fn card_styles(&self) -> bool {
        self.extensions.card_styles()
    }

    /// Whether the client negotiated `tool.cards`: calls show live cards.
    pub(super) fn cards_enabled(&self) -> bool {
        self.cards.enabled
    }

    /// The session the run belongs to.
    pub(super) fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The run's ID.
    pub(super) fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Where the run's events go, for a call's thread to send its own (`client.files`).
    pub(super) fn events(&self) -> mpsc::Sender<Event> {
        self.events.clone()
    }

    /// Whether a critical event could not be delivered.
    pub(super) fn lost(&self) -> bool {
        self.lost
    }

    /// The identity of the run's next activity: `<prefix>-<n>`.
    pub(super) fn next_activity_id(&mut self, prefix: &str) -> String {
        self.activities += 1;
        format!("{prefix}-{}", self.activities)
    }

    /// Lines of a call's output as its card shows them: each made safe like
    /// [`Output::safe`], and the colour they were printed in, as spans of the lines
    /// joined by line feeds; none when there are more than a text block may list. A
    /// line a redaction changed keeps no colour: its spans would cover what was taken
    /// out.
    pub(super) fn safe_lines(&self, raw: &[String]) -> (Vec<String>, TranscriptStyleSpans) {
        let mut styler = Styler::default();
        let mut lines = Vec::with_capacity(raw.len());
        let mut spans = Vec::new();
        let mut offset = 0u64;
        for line in raw {
            let (plain, line_spans) = styler.read(line);
            let safe = self.safe(&plain);
            if safe == plain {
                spans.extend(line_spans.into_iter().map(|span| StyleSpan {
                    start: span.start + offset,
                    end: span.end + offset,
                    ..span
                }));
            }
            offset += safe.len() as u64 + 1;
            lines.push(safe);
        }
        let styles = (spans.len() <= STYLE_SPANS_PER_BLOCK).then_some(spans);
        (lines, styles)
    }

    /// Text as it may leave the run: controls stripped, secret-like tokens and the
    /// backend's own credential values redacted.
    pub(super) fn safe(&self, text: &str) -> String {
        redact_values(&sanitize(text), &self.secrets)
    }

    /// `text` with the backend's credential values redacted and nothing else changed:
    /// what the model and the log may hold of a reply or a tool result.
    pub(super) fn without_credentials(&self, text: &str) -> String {
        redact_values(text, &self.secrets)
    }

    /// Sends a delta if there is room; a dropped delta leaves a gap in the parts.
    pub(super) fn delta(&self, message_id: &str, part: u64, text: &str) {
        let _ = self.events.try_send(Event::MessageDelta(MessageDelta {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            message_id: message_id.to_owned(),
            part,
            text: text.to_owned(),
        }));
    }

    /// Sends a reasoning summary's delta if there is room, like [`Output::delta`].
    pub(super) fn reasoning_delta(&self, summary_id: &str, part: u64, text: &str) {
        let _ = self.events.try_send(Event::ReasoningDelta(ReasoningDelta {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            summary_id: summary_id.to_owned(),
            part,
            text: text.to_owned(),
        }));
    }

    /// Sends the whole of a recorded message, in parts, replacing its deltas.
    pub(super) async fn reconcile(&mut self, message_id: &str, text: &str, partial: bool) {
        let text = self.safe(text);
        let parts = chunks(&text, LIVE_CHUNK_BYTES);
        let last = parts.len() - 1;
        for (part, chunk) in parts.into_iter().enumerate() {
            let event = Event::MessageReconcile(MessageReconcile {
                session_id: self.session_id.clone(),
                run_id: self.run_id.clone(),
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
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            activity_id: activity_id.to_owned(),
            kind,
            state,
            name: name.to_owned(),
            summary: summary.to_owned(),
        });
        self.critical(event).await;
    }

    /// Announces an approval the run waits for, with its details when the client
    /// negotiated `approval.scopes`. The subject is made safe and bounded here, like
    /// every summary; the rule is offered only when it needed no redaction.
    pub(super) async fn approval_requested(
        &mut self,
        approval_id: &str,
        summary: &str,
        expires_in_ms: u64,
        details: Option<ApprovalDetails>,
    ) {
        let (subject, suggested_rule, proposed_change) = match details {
            Some(details) => {
                let subject = details.subject.map(|subject| {
                    let safe = sanitize(&redact_values(&subject, &self.secrets));
                    magi_tools::facts::cut(&safe, APPROVAL_SUBJECT_BYTES)
                });
                let rule = details
                    .suggested_rule
                    .filter(|rule| redact_values(rule, &self.secrets) == *rule);
                let change = details.proposed_change.map(|preview| ProposedChange {
                    diff: redact_values(&preview.diff, &self.secrets),
                    truncated: preview.truncated,
                    // Left out by the connection unless `approval.change_counts` was
                    // negotiated.
                    added: Some(preview.added),
                    removed: Some(preview.removed),
                });
                (Some(subject), Some(rule), Some(change))
            }
            None => (None, None, None),
        };
        let event = Event::ApprovalRequested(ApprovalRequested {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            approval_id: approval_id.to_owned(),
            summary: summary.to_owned(),
            expires_in_ms,
            subject,
            suggested_rule,
            proposed_change,
        });
        self.critical(event).await;
    }

    /// Tells the client something about the run: why it ends the way it does, a retry,
    /// a reply cut short. The summary is redacted and bounded like every other.
    pub(super) async fn diagnostic(&mut self, code: &str, summary: &str) {
        let event = Event::Diagnostic(Diagnostic {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            code: code.to_owned(),
            summary: super::text::bounded(&self.safe(summary), SUMMARY_BYTES),
        });
        self.critical(event).await;
    }

    /// Sends a snapshot of the card of `activity_id` projected from `source` (whose
    /// identity, origin and revision are filled in here). Returns the card as admitted
    /// by the budget, or none when cards are off or an interim snapshot did not fit.
    pub(super) async fn card(
        &mut self,
        activity_id: &str,
        snapshot: Snapshot,
        source: CardSource<'_>,
    ) -> Option<Card> {
        if !self.cards.enabled {
            return None;
        }
        let revision = self.cards.revision(activity_id);
        let source = CardSource {
            activity_id,
            origin: Origin::Live,
            revision,
            transcript_styles: if self.card_styles() {
                source.transcript_styles
            } else {
                TranscriptStyles::Off
            },
            ..source
        };
        let card = self.cards.admit(snapshot, project(&source))?;
        self.cards.advance(activity_id, revision);
        let event = Event::ToolCard(Box::new(ToolCardEvent {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            activity_id: activity_id.to_owned(),
            part: 0,
            last_part: true,
            card: card.clone(),
        }));
        self.critical(event).await;
        Some(card)
    }

    /// Ends every card still unfinished as `unknown` with its final snapshot, before a
    /// run that could not settle them ends (spec `000_…`: every admitted card is
    /// resolved before `run.finished`).
    pub(super) async fn end_unfinished_cards(&mut self) {
        for card in self.cards.unknown_endings() {
            let activity_id = card.activity_id.clone();
            let revision = card.revision;
            let Some(card) = self.cards.admit(Snapshot::Final, card) else {
                continue;
            };
            self.cards.advance(&activity_id, revision);
            let event = Event::ToolCard(Box::new(ToolCardEvent {
                session_id: self.session_id.clone(),
                run_id: self.run_id.clone(),
                activity_id,
                part: 0,
                last_part: true,
                card,
            }));
            self.critical(event).await;
        }
    }

    /// Sends a critical event, waiting at most the critical bound; on failure the run is
    /// cancelled and ends with `output_unavailable`.
    pub(super) async fn critical(&mut self, event: Event) {
        if self.lost {
            return;
        }
        let wait = Duration::from_millis(CRITICAL_EVENT_WAIT_MS);
        if self.events.send_timeout(event, wait).await.is_err() {
            self.lost = true;
            self.closing.cancel();
            self.cancel.cancel();
        }
    }

    /// Tells a client that negotiated `session.usage` the session's newly recorded
    /// title (`session.titled`).
    pub(super) async fn titled(&mut self, title: String) {
        if self.has(Extension::SessionUsage) {
            let event = Event::SessionTitled(SessionTitled {
                session_id: self.session_id().to_owned(),
                title,
            });
            self.critical(event).await;
        }
    }

    /// Sends the run's terminal event, unless the output is already lost.
    pub(super) async fn finished(&mut self, event: Event) {
        if !self.lost {
            let wait = Duration::from_millis(CRITICAL_EVENT_WAIT_MS);
            let _ = self.events.send_timeout(event, wait).await;
        }
    }
}
