//! One prompt turn: `turn.start`, then the run's events as ACP updates until
//! `run.finished` answers the prompt with its stop reason.
//!
//! Text streams as `agent_message_chunk` from the deltas; when a delta was dropped the
//! rest of the reconciled text follows once, so nothing is sent twice. A provider's
//! reasoning summaries stream as `agent_thought_chunk` from `reasoning.delta`. Tool cards are
//! `tool_call` (the first snapshot) and `tool_call_update` (each later one); a finished
//! plan's card (`todo`) is followed by the `plan` it holds.

use std::collections::{HashMap, HashSet};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Error, PromptResponse, SessionInfoUpdate, SessionUpdate,
    StopReason, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityKind, ActivityState, DIAGNOSTIC_REPLY_REFUSED, DIAGNOSTIC_REPLY_TRUNCATED, Event,
    RunOutcome, SessionCompactParams, TurnStartParams,
};
use magi_protocol::methods;
use serde_json::json;
use tokio::sync::oneshot;

use super::Session;
use crate::prompt::TurnInput;
use crate::tool_calls;

/// The turn in progress.
pub(crate) struct Turn {
    pub(super) run_id: String,
    reply: oneshot::Sender<Result<PromptResponse, Error>>,
    /// Set once `session/cancel` asked for the run's end.
    pub(super) cancelled: bool,
    /// Text sent so far, by assistant message.
    messages: HashMap<String, Message>,
    /// The next delta part of each reasoning summary streamed, or `None` once one went
    /// missing: the rest of that summary is not sent (it is whole in the history, which
    /// `session/load` replays).
    thoughts: HashMap<String, Option<u64>>,
    /// The tool calls announced to the client.
    pub(super) announced: HashSet<String>,
    /// The tool call started last: the one an approval is about (the runtime asks
    /// before it runs a call, right after starting its activity).
    pub(super) last_call: Option<String>,
    /// Whether the model's output limit cut the reply.
    truncated: bool,
    /// Whether the provider refused the request.
    refused: bool,
    /// The last diagnostic, told with a failure.
    diagnostic: Option<String>,
    /// Files written for the prompt's images, removed when the turn ends.
    scratch: Vec<std::path::PathBuf>,
}

/// What was sent of one assistant message.
#[derive(Default)]
struct Message {
    sent: String,
    next_part: u64,
    /// Set once a delta went missing: the rest waits for the reconciled text.
    gap: bool,
    reconciled: String,
}

impl Turn {
    /// The turn's end without `run.finished`: the prompt gets an error.
    pub(super) fn fail(self, why: &str) {
        self.remove_scratch();
        let _ = self
            .reply
            .send(Err(Error::internal_error().data(json!(why))));
    }

    fn remove_scratch(&self) {
        for path in &self.scratch {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Session {
    /// `session/prompt`: starts the turn, or answers at once why it cannot.
    pub(super) async fn prompt(
        &mut self,
        input: TurnInput,
        reply: oneshot::Sender<Result<PromptResponse, Error>>,
    ) {
        if self.turn.is_some() {
            let _ = reply.send(Err(Error::invalid_request().data(json!(
                "a prompt is already running in this session; cancel it or wait for its end"
            ))));
            return;
        }
        if input.text.trim() == "/compact" && input.images.is_empty() {
            let result = self.compact().await;
            let _ = reply.send(result);
            return;
        }
        let (attachments, scratch) = match input.write_images(&self.cwd) {
            Ok(written) => written,
            Err(why) => {
                let _ = reply.send(Err(Error::internal_error().data(json!(why))));
                return;
            }
        };
        let params = TurnStartParams {
            session_id: self.backend_id.clone(),
            prompt: input.text,
            attachments,
        };
        let started = match self.backend.call::<methods::TurnStart>(&params).await {
            Ok(Ok(started)) => started,
            Ok(Err(code)) => {
                for path in &scratch {
                    let _ = std::fs::remove_file(path);
                }
                let _ = reply.send(Err(refused(code)));
                return;
            }
            Err(e) => {
                for path in &scratch {
                    let _ = std::fs::remove_file(path);
                }
                // The backend went away with the prompt: how is said, and the next
                // prompt starts a fresh one.
                let said = match e {
                    magi_client::ClientError::Closed => {
                        let wait = std::time::Duration::from_millis(
                            magi_protocol::limits::CLEANUP_WAIT_MS,
                        );
                        self.backend.end_within(wait).await.describe()
                    }
                    other => format!("the backend is gone: {other}"),
                };
                self.ended(said.clone());
                let _ = reply.send(Err(Error::internal_error().data(json!(format!(
                    "{said}; the next prompt starts a fresh backend for this session"
                )))));
                return;
            }
        };
        self.turn = Some(Turn {
            run_id: started.run_id,
            reply,
            cancelled: false,
            messages: HashMap::new(),
            thoughts: HashMap::new(),
            announced: HashSet::new(),
            last_call: None,
            truncated: false,
            refused: false,
            diagnostic: None,
            scratch,
        });
    }

    /// The `/compact` command: `session.compact`, told as a short reply.
    async fn compact(&mut self) -> Result<PromptResponse, Error> {
        let params = SessionCompactParams {
            session_id: self.backend_id.clone(),
        };
        let text = match self.backend.call::<methods::SessionCompact>(&params).await {
            Ok(Ok(result)) if result.compacted => "The conversation was compacted.",
            Ok(Ok(_)) => "There was nothing to compact.",
            Ok(Err(code)) => {
                return Err(Error::internal_error()
                    .data(json!(format!("compaction failed: {}", code.as_str()))));
            }
            Err(e) => return Err(super::config::gone(&e)),
        };
        self.update(agent_text(text.to_owned())).await;
        Ok(PromptResponse::new(StopReason::EndTurn))
    }

    /// One event of the backend.
    pub(super) async fn event(&mut self, event: Event) {
        let Some(event) = self.terminal_event(event) else {
            return;
        };
        let Some(event) = self.file_event(event) else {
            return;
        };
        if let Event::SessionTitled(titled) = &event {
            let update = SessionInfoUpdate::new().title(titled.title.clone());
            self.update(SessionUpdate::SessionInfoUpdate(update)).await;
            return;
        }
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        match event {
            Event::MessageDelta(delta) if delta.run_id == turn.run_id => {
                let message = turn.messages.entry(delta.message_id).or_default();
                if message.gap || delta.part != message.next_part {
                    message.gap = true;
                    return;
                }
                message.next_part += 1;
                message.sent.push_str(&delta.text);
                self.update(agent_text(delta.text)).await;
            }
            Event::ReasoningDelta(delta) if delta.run_id == turn.run_id => {
                let next = turn.thoughts.entry(delta.summary_id).or_insert(Some(0));
                if *next != Some(delta.part) {
                    *next = None;
                    return;
                }
                *next = Some(delta.part + 1);
                let chunk = ContentChunk::new(ContentBlock::from(delta.text));
                self.update(SessionUpdate::AgentThoughtChunk(chunk)).await;
            }
            Event::MessageReconcile(reconcile) if reconcile.run_id == turn.run_id => {
                let message = turn.messages.entry(reconcile.message_id).or_default();
                message.reconciled.push_str(&reconcile.text);
                if !reconcile.last_part {
                    return;
                }
                let whole = std::mem::take(&mut message.reconciled);
                let rest = match whole.strip_prefix(message.sent.as_str()) {
                    Some(rest) => rest.to_owned(),
                    None => {
                        // What was streamed cannot be taken back; say so rather than
                        // send the text twice.
                        eprintln!(
                            "magi-code acp: session {}: the reconciled reply differs from \
                             the streamed one; the streamed text stands",
                            self.id
                        );
                        String::new()
                    }
                };
                message.sent = whole;
                if !rest.is_empty() {
                    self.update(agent_text(rest)).await;
                }
            }
            Event::Activity(activity)
                if activity.run_id == turn.run_id && activity.kind != ActivityKind::Compaction =>
            {
                match activity.state {
                    ActivityState::Started => turn.last_call = Some(activity.activity_id),
                    // A call whose card never came (past the run's card budget) is
                    // still shown, from its activity.
                    ActivityState::Completed | ActivityState::Failed
                        if !turn.announced.contains(&activity.activity_id) =>
                    {
                        let status = match activity.state {
                            ActivityState::Completed => ToolCallStatus::Completed,
                            _ => ToolCallStatus::Failed,
                        };
                        turn.announced.insert(activity.activity_id.clone());
                        let call = ToolCall::new(activity.activity_id, activity.summary)
                            .name(activity.name)
                            .status(status);
                        self.update(SessionUpdate::ToolCall(call)).await;
                    }
                    _ => {}
                }
            }
            Event::ToolCard(event) if event.run_id == turn.run_id => {
                let call = self
                    .terminals
                    .embed(tool_calls::tool_call(&event.card, &self.cwd));
                let plan = crate::plan::plan_update(&event.card);
                let update = if turn.announced.insert(event.activity_id) {
                    SessionUpdate::ToolCall(call)
                } else {
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        call.tool_call_id.clone(),
                        ToolCallUpdateFields::new()
                            .title(call.title)
                            .kind(call.kind)
                            .status(call.status)
                            .content(call.content)
                            .locations(call.locations),
                    ))
                };
                self.update(update).await;
                if let Some(plan) = plan {
                    self.update(plan).await;
                }
            }
            Event::ApprovalRequested(request) if request.run_id == turn.run_id => {
                self.ask_permission(request);
            }
            Event::Diagnostic(diagnostic) if diagnostic.run_id == turn.run_id => {
                if diagnostic.code == DIAGNOSTIC_REPLY_TRUNCATED {
                    turn.truncated = true;
                }
                if diagnostic.code == DIAGNOSTIC_REPLY_REFUSED {
                    turn.refused = true;
                }
                eprintln!(
                    "magi-code acp: session {}: {}: {}",
                    self.id, diagnostic.code, diagnostic.summary
                );
                turn.diagnostic = Some(diagnostic.summary);
            }
            Event::UsageUpdated(usage) if usage.run_id == turn.run_id => {
                if let (Some(used), Some(size)) = (usage.context_used, usage.context_window) {
                    let update = UsageUpdate::new(used, size);
                    self.update(SessionUpdate::UsageUpdate(update)).await;
                }
            }
            Event::RunFinished(finished) if finished.run_id == turn.run_id => {
                let Some(turn) = self.turn.take() else {
                    return;
                };
                turn.remove_scratch();
                let outcome = match finished.outcome {
                    _ if turn.cancelled => Ok(StopReason::Cancelled),
                    RunOutcome::Cancelled => Ok(StopReason::Cancelled),
                    RunOutcome::Completed if turn.refused => Ok(StopReason::Refusal),
                    RunOutcome::Completed if turn.truncated => Ok(StopReason::MaxTokens),
                    RunOutcome::Completed => Ok(StopReason::EndTurn),
                    RunOutcome::Failed => stop_of_failure(finished.error_code, turn.diagnostic),
                };
                let _ = turn.reply.send(outcome.map(PromptResponse::new));
            }
            _ => {}
        }
    }
}

fn agent_text(text: String) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

/// A failed run: an error naming the code and the last diagnostic. (A provider's
/// refusal is a completed run with the `reply_refused` diagnostic, never a failure.)
fn stop_of_failure(
    code: Option<ErrorCode>,
    diagnostic: Option<String>,
) -> Result<StopReason, Error> {
    let code = code.map_or("execution_failed", ErrorCode::as_str);
    let mut why = format!("the turn failed: {code}");
    if let Some(diagnostic) = diagnostic {
        why.push_str(&format!(" ({diagnostic})"));
    }
    Err(Error::internal_error().data(json!(why)))
}

/// A `turn.start` the backend refused.
fn refused(code: ErrorCode) -> Error {
    let why = match code {
        ErrorCode::Busy => "a turn is already running in this session".to_owned(),
        ErrorCode::InvalidParams => {
            "the backend refused the prompt: it is blank, too long (at most 16,384 bytes), \
             or an image is not a PNG, JPEG, GIF or WebP file it can take"
                .to_owned()
        }
        other => format!("the backend refused the turn: {}", other.as_str()),
    };
    let error = match code {
        ErrorCode::InvalidParams => Error::invalid_params(),
        _ => Error::internal_error(),
    };
    error.data(json!(why))
}
