//! The agent runner: one turn, from the durable prompt to the terminal event.
//!
//! A turn runs on its own thread (it blocks on appends and tools, and must never stall
//! the protocol loop) with the child's sessions moved into it; it hands them back when
//! it ends. Events go to the server through a channel of [`WORKER_EVENTS`]: deltas are
//! best effort and dropped when the channel is full (their part numbers keep counting,
//! so the client sees the gap), every other event is critical and waits at most
//! [`CRITICAL_EVENT_WAIT_MS`]; a critical event that cannot be delivered cancels the
//! run with `output_unavailable`.

mod calls;
mod compaction;
mod conversation;
mod emit;
mod fault;
mod live_cards;
mod task;

pub(crate) use calls::SKILL_TOOL;
pub use conversation::conversation;
use conversation::{chunks, instructions};

use std::sync::Arc;
use std::time::Duration;

use magi_config::PermissionSettings;
use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    CRITICAL_EVENT_WAIT_MS, LIVE_CHUNK_BYTES, RUN_CONTENT_BYTES, RUN_CONTENT_SEGMENTS,
    TASK_MODEL_REQUESTS, WORKER_EVENTS,
};
use magi_protocol::messages::{Event, InputPersisted, Persistence, RunFinished, RunOutcome};
use magi_protocol::text::{redact_values, sanitize};
use magi_provider::{Item, ModelClient, ModelEvent, ModelRequest, ProviderError, ToolSpec};
use magi_store::records::{RecordBody, TurnOutcome};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::approvals::ApprovalGate;
use crate::client_tools::{ClientTool, ClientToolGate};
use crate::mcp::McpHub;
use crate::sessions::{AppendFailure, Sessions};

/// Model round trips one turn may take before it is stopped as failed.
const MAX_STEPS: usize = 64;
/// Model events buffered between the provider and the runner.
const MODEL_EVENTS: usize = 64;

/// What the agent talks to: the model client and the selected model.
#[derive(Clone)]
pub struct Agent {
    /// The provider's client.
    pub client: Arc<dyn ModelClient>,
    /// The model.
    pub model: String,
    /// Whether to ask for reasoning summaries.
    pub reasoning_summaries: bool,
    /// The explicit reasoning effort the selection resolves to, if any.
    pub reasoning_effort: Option<magi_protocol::messages::Effort>,
    /// The admitted permission rules.
    pub permissions: PermissionSettings,
    /// Environment variables holding credentials, hidden from the processes tools start.
    pub hidden_env: Vec<String>,
    /// The credential values themselves: redacted from everything the run sends, records
    /// or gives the model.
    pub secrets: Vec<String>,
    /// The instruction files startup read, in order.
    pub instructions: Arc<Vec<magi_config::Instruction>>,
    /// The model's context window in tokens, when compaction is configured.
    pub context_window_tokens: Option<usize>,
    /// The skills offered, by name.
    pub skills: Arc<Vec<magi_config::Skill>>,
    /// The primary agent's profile: its name, instructions and offered tools.
    pub profile: Option<Arc<(String, magi_config::Profile)>>,
    /// The connected MCP servers, whose tools are offered too.
    pub mcp: Arc<McpHub>,
    /// The subagent profiles the `task` tool may delegate to, by name.
    pub subagents: Arc<Vec<(String, magi_config::Profile)>>,
    /// The tools `[tools] disabled` turns off: offered to no agent, and never run.
    pub disabled_tools: Arc<Vec<String>>,
}

/// One admitted turn.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// The attached session.
    pub session_id: String,
    /// The run's UUID.
    pub run_id: String,
    /// The prompt, already checked (non-blank, within the bound).
    pub prompt: String,
    /// Whether the client negotiated `tool.cards`: the run then sends `tool.card`
    /// events.
    pub tool_cards: bool,
    /// The tools the client registered (`client.tools`); empty without it.
    pub client_tools: Arc<Vec<ClientTool>>,
}

/// A running turn, as the server sees it.
pub struct RunHandle {
    /// Cancels the run; its terminal event still follows.
    pub cancel: CancellationToken,
    /// Where `approval.answer` settles the run's pending approval.
    pub approvals: ApprovalGate,
    /// Where `client.tool.result` answers the run's client tool calls.
    pub client_calls: ClientToolGate,
    /// The run's events; closed after `run.finished`.
    pub events: mpsc::Receiver<Event>,
    /// The sessions, handed back when the run's thread ends.
    pub done: oneshot::Receiver<Box<Sessions>>,
}

/// Starts a turn on its own thread. If no thread can be started the sessions come
/// back with the error.
pub fn start_turn(
    sessions: Box<Sessions>,
    agent: Agent,
    request: TurnRequest,
) -> Result<RunHandle, (Option<Box<Sessions>>, ErrorCode)> {
    let (events_tx, events) = mpsc::channel(WORKER_EVENTS);
    let (done_tx, done) = oneshot::channel();
    let cancel = CancellationToken::new();
    let run_cancel = cancel.clone();
    let approvals = ApprovalGate::default();
    let run_approvals = approvals.clone();
    let client_calls = ClientToolGate::default();
    let run_client_calls = client_calls.clone();
    // The sessions travel through this slot so that a failed spawn can return them.
    let slot = Arc::new(std::sync::Mutex::new(Some(sessions)));
    let thread_slot = Arc::clone(&slot);
    let spawned = std::thread::Builder::new()
        .name("magi-run".into())
        .spawn(move || {
            let taken = thread_slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            let Some(sessions) = taken else { return };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match runtime {
                Ok(runtime) => runtime.block_on(async move {
                    let mut turn = Turn::new(sessions, agent, request, events_tx, run_cancel);
                    turn.approvals = run_approvals;
                    turn.client_calls = run_client_calls;
                    let finished = turn.run().await;
                    // The sessions go back before the terminal event, so a client that
                    // saw `run.finished` finds the child idle.
                    let _ = done_tx.send(turn.sessions);
                    if !turn.output_lost {
                        let wait = Duration::from_millis(CRITICAL_EVENT_WAIT_MS);
                        let _ = turn.events.send_timeout(finished, wait).await;
                    }
                }),
                Err(_) => {
                    let _ = done_tx.send(sessions);
                }
            };
        });
    match spawned {
        Ok(_) => Ok(RunHandle {
            cancel,
            approvals,
            client_calls,
            events,
            done,
        }),
        // A thread that could not be spawned never ran: the sessions are still in
        // the slot.
        Err(_) => Err((
            slot.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
            ErrorCode::ExecutionFailed,
        )),
    }
}

/// The state of one turn.
struct Turn {
    sessions: Box<Sessions>,
    agent: Agent,
    request: TurnRequest,
    turn_id: String,
    events: mpsc::Sender<Event>,
    cancel: CancellationToken,
    approvals: ApprovalGate,
    client_calls: ClientToolGate,
    /// A critical event could not be delivered.
    output_lost: bool,
    /// The input was appended.
    input_durable: bool,
    /// An append after the input failed.
    degraded: bool,
    content_bytes: usize,
    segments: usize,
    activities: usize,
    /// The run's live cards.
    cards: live_cards::LiveCards,
    /// The delegated task the turn is working on, while a subagent runs.
    scope: Option<task::TaskScope>,
    /// `task` calls made so far (their task IDs count them).
    tasks: usize,
    /// The children of tasks whose subagent ended, until their call's final card.
    finished_tasks: std::collections::HashMap<String, crate::cards::TaskChildren>,
}

/// How the turn ends, before persistence is accounted.
struct Ending {
    outcome: RunOutcome,
    error_code: Option<ErrorCode>,
}

impl Ending {
    fn completed() -> Ending {
        Ending {
            outcome: RunOutcome::Completed,
            error_code: None,
        }
    }

    fn failed(code: ErrorCode) -> Ending {
        Ending {
            outcome: RunOutcome::Failed,
            error_code: Some(code),
        }
    }

    fn cancelled() -> Ending {
        Ending {
            outcome: RunOutcome::Cancelled,
            error_code: None,
        }
    }
}

impl Turn {
    fn new(
        sessions: Box<Sessions>,
        agent: Agent,
        request: TurnRequest,
        events: mpsc::Sender<Event>,
        cancel: CancellationToken,
    ) -> Turn {
        Turn {
            sessions,
            agent,
            turn_id: request.run_id.clone(),
            cards: live_cards::LiveCards::new(request.tool_cards),
            request,
            events,
            cancel,
            approvals: ApprovalGate::default(),
            client_calls: ClientToolGate::default(),
            output_lost: false,
            input_durable: false,
            degraded: false,
            content_bytes: 0,
            segments: 0,
            activities: 0,
            scope: None,
            tasks: 0,
            finished_tasks: std::collections::HashMap::new(),
        }
    }

    /// Runs the turn and returns its `run.finished` event, for the caller to send once
    /// the sessions are handed back.
    async fn run(&mut self) -> Event {
        let ending = match self.persist_input().await {
            Ok(mut items) => self.converse(&mut items).await,
            Err(ending) => ending,
        };
        self.finish(ending)
    }

    /// Appends the turn's start and the prompt, then acknowledges them.
    async fn persist_input(&mut self) -> Result<Vec<Item>, Ending> {
        let records = self.sessions.records().map_err(Ending::failed)?;
        // Calls a crashed run left without a result are settled first: nothing that
        // might have had effects runs again, and the model is told what is known.
        let records = match self.recover(&records) {
            Some(0) => records,
            Some(_) => self.sessions.records().map_err(Ending::failed)?,
            None => return Err(Ending::failed(ErrorCode::PersistenceFailed)),
        };
        let mut items = conversation(&records);
        items.push(Item::User {
            text: self.request.prompt.clone(),
        });
        let started = RecordBody::TurnStarted {
            turn_id: self.turn_id.clone(),
        };
        let input = RecordBody::UserInput {
            turn_id: self.turn_id.clone(),
            message_id: format!("u-{}", self.request.run_id),
            text: self.request.prompt.clone(),
        };
        for body in [started, input] {
            if self.sessions.append(body).is_err() {
                return Err(Ending::failed(ErrorCode::PersistenceFailed));
            }
        }
        self.input_durable = true;
        let (revision, message_id) = match self.sessions.refresh() {
            Ok((revision, Some(message_id))) => (revision, message_id),
            Ok((_, None)) | Err(_) => {
                // The prompt is on disk but cannot be shown as a projection entry.
                self.degraded = true;
                return Err(Ending::failed(ErrorCode::PersistenceFailed));
            }
        };
        let event = Event::InputPersisted(InputPersisted {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            message_id,
            durable: true,
            revision,
        });
        self.critical(event).await;
        if self.output_lost {
            return Err(Ending::failed(ErrorCode::OutputUnavailable));
        }
        Ok(items)
    }

    /// Model round trips until the model stops asking for tools.
    async fn converse(&mut self, items: &mut Vec<Item>) -> Ending {
        let mut tools: Vec<ToolSpec> = magi_tools::definitions()
            .into_iter()
            .filter(|d| self.offered(d.name))
            .map(|d| ToolSpec {
                name: d.name.to_owned(),
                description: d.description.to_owned(),
                parameters: d.parameters,
            })
            .collect();
        if !self.agent.skills.is_empty() && self.offered(calls::SKILL_TOOL) {
            tools.push(calls::skill_tool_spec());
        }
        // A subagent never delegates further.
        if self.scope.is_none()
            && !self.agent.subagents.is_empty()
            && self.offered(magi_config::TASK_TOOL)
        {
            tools.push(task::task_tool_spec(&self.agent.subagents));
        }
        // The client's own tools serve the session's agent, never a subagent.
        if self.scope.is_none() {
            tools.extend(
                self.request
                    .client_tools
                    .iter()
                    .filter(|t| self.offered(&t.name))
                    .map(|t| ToolSpec {
                        name: t.name.clone(),
                        description: t.description.clone(),
                        parameters: t.parameters.clone(),
                    }),
            );
        }
        let mcp = Arc::clone(&self.agent.mcp);
        tools.extend(
            mcp.tools()
                .filter(|t| self.offered(&t.name))
                .map(|t| ToolSpec {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    parameters: t.parameters.clone(),
                }),
        );
        let steps = if self.scope.is_some() {
            TASK_MODEL_REQUESTS
        } else {
            MAX_STEPS
        };
        for _ in 0..steps {
            if let Some(scope) = &mut self.scope {
                scope.model_requests += 1;
            } else {
                // Job notices belong to the session's own conversation.
                self.deliver_job_notices(items);
            }
            let mut system = instructions(
                self.sessions.cwd(),
                &self.agent.instructions,
                &self.agent.skills,
            );
            if let Some((name, profile)) = self.agent.profile.as_deref()
                && let Some(text) = &profile.instructions
            {
                system.push_str(&format!(
                    "\n\n# Instructions of the {name} profile\n\n{}",
                    text.trim_end()
                ));
            }
            if self.needs_compaction(&system, items) {
                self.compact(&system, items).await;
            }
            let request = ModelRequest {
                model: self.agent.model.clone(),
                instructions: Some(system),
                items: items.clone(),
                tools: tools.clone(),
                reasoning_summaries: self.agent.reasoning_summaries,
                reasoning_effort: self.agent.reasoning_effort,
            };
            let response = self.respond(&request).await;
            if self.output_lost {
                return Ending::failed(ErrorCode::OutputUnavailable);
            }
            if let Some(text) = &response.text {
                items.push(Item::Assistant { text: text.clone() });
            }
            if let Some(ending) = response.ending {
                return ending;
            }
            if response.calls.is_empty() {
                return Ending::completed();
            }
            let calls = response
                .calls
                .into_iter()
                .map(|(call_id, name, arguments)| self.call(call_id, name, arguments))
                .collect();
            if let Some(ending) = Box::pin(self.run_calls(calls, items)).await {
                return ending;
            }
            if self.output_lost {
                return Ending::failed(ErrorCode::OutputUnavailable);
            }
            if self.cancel.is_cancelled() {
                return Ending::cancelled();
            }
        }
        match &mut self.scope {
            // The task call reports it; the run goes on.
            Some(scope) => scope.step_limit = true,
            None => {
                self.diagnostic(
                    "step_limit",
                    "The turn reached its limit of model round trips.",
                )
                .await
            }
        }
        Ending::failed(ErrorCode::ExecutionFailed)
    }

    /// One model response: streams deltas, records the segment and its summaries.
    async fn respond(&mut self, request: &ModelRequest) -> Response {
        let (model_tx, mut model_rx) = mpsc::channel(MODEL_EVENTS);
        let client = Arc::clone(&self.agent.client);
        let cancel = self.cancel.clone();
        let mut stream = std::pin::pin!(client.stream(request, model_tx, &cancel));
        let message_id = format!("a{}", self.segments);
        let mut text = String::new();
        let mut part = 0u64;
        let mut calls = Vec::new();
        let mut summaries: Vec<(Option<String>, String)> = Vec::new();
        let mut over_bound = false;
        let mut result = None;
        loop {
            tokio::select! {
                outcome = &mut stream, if result.is_none() => result = Some(outcome),
                event = model_rx.recv() => match event {
                    Some(ModelEvent::TextDelta(delta)) => {
                        self.content_bytes += delta.len();
                        if self.content_bytes > RUN_CONTENT_BYTES {
                            over_bound = true;
                            self.cancel.cancel();
                            continue;
                        }
                        text.push_str(&delta);
                        // A subagent's text is its report, not the run's reply.
                        if self.scope.is_some() {
                            continue;
                        }
                        for chunk in chunks(&self.safe(&delta), LIVE_CHUNK_BYTES) {
                            self.delta(&message_id, part, chunk);
                            part += 1;
                        }
                    }
                    Some(ModelEvent::ReasoningSummary { item_id, text }) => {
                        match summaries.iter_mut().find(|(id, _)| id.is_some() && *id == item_id) {
                            Some(existing) => existing.1 = text,
                            None => summaries.push((item_id, text)),
                        }
                    }
                    Some(ModelEvent::ToolCall { call_id, name, arguments }) => {
                        calls.push((call_id, name, arguments));
                    }
                    Some(ModelEvent::Usage { .. } | ModelEvent::Completed(_)) => {}
                    // The provider finished and dropped its sender.
                    None => break,
                },
            }
        }
        let result = match result {
            Some(result) => result,
            None => stream.await,
        };
        for (item_id, summary) in summaries {
            self.append(RecordBody::ReasoningSummary {
                turn_id: self.turn_id.clone(),
                item_id,
                text: self.without_credentials(&summary),
                provider_summary: Some(true),
            });
        }
        let ending = if over_bound {
            Some(Ending::failed(ErrorCode::ContentLimit))
        } else {
            match result {
                Ok(()) => None,
                Err(ProviderError::Cancelled) => Some(Ending::cancelled()),
                Err(error) => {
                    self.diagnostic(error.code(), "The model provider request failed.")
                        .await;
                    Some(Ending::failed(ErrorCode::ExecutionFailed))
                }
            }
        };
        let partial = ending.is_some();
        let text = if text.is_empty() {
            None
        } else {
            let text = self.without_credentials(&text);
            self.segments += 1;
            if self.segments > RUN_CONTENT_SEGMENTS {
                return Response {
                    text: None,
                    calls: Vec::new(),
                    ending: Some(Ending::failed(ErrorCode::ContentLimit)),
                };
            }
            self.append(RecordBody::AssistantOutput {
                turn_id: self.turn_id.clone(),
                message_id: message_id.clone(),
                text: Some(text.clone()),
                chunks: Vec::new(),
                partial,
            });
            if self.scope.is_none() {
                self.reconcile(&message_id, &text, partial).await;
            }
            Some(text)
        };
        Response {
            text,
            // Calls of a response that did not complete are never run.
            calls: if partial { Vec::new() } else { calls },
            ending,
        }
    }

    /// Whether the agent's profile offers tool `name` (the client's own tools are always
    /// offered, except to a subagent; without a profile list, every tool is). A tool the
    /// settings disable is offered to no agent.
    fn offered(&self, name: &str) -> bool {
        if self.disabled(name) {
            return false;
        }
        if self.scope.is_some() && self.request.client_tools.iter().any(|t| t.name == name) {
            return false;
        }
        match self
            .agent
            .profile
            .as_deref()
            .and_then(|(_, p)| p.tools.as_ref())
        {
            Some(tools) => {
                tools.iter().any(|t| t == name)
                    || self.request.client_tools.iter().any(|t| t.name == name)
            }
            None => true,
        }
    }

    /// Whether `[tools] disabled` turns tool `name` off.
    fn disabled(&self, name: &str) -> bool {
        self.agent.disabled_tools.iter().any(|t| t == name)
    }

    /// Gives the model the ends of this session's background jobs that it was not told
    /// of yet, each recorded before the request that carries it.
    fn deliver_job_notices(&mut self, items: &mut Vec<Item>) {
        let Some(conversation) = self.sessions.conversation_dir() else {
            return;
        };
        for notice in magi_tools::take_notices(&conversation) {
            self.append(RecordBody::AsyncBashEvent {
                turn_id: self.turn_id.clone(),
                job_id: notice.job_id,
                state: notice.state,
                text: notice.text.clone(),
                facts: serde_json::to_value(notice.facts).ok(),
            });
            items.push(Item::User { text: notice.text });
        }
    }

    /// Records the end of the turn and builds `run.finished`.
    fn finish(&mut self, ending: Ending) -> Event {
        // Whatever else happened, a run whose critical events could not be delivered
        // ends as `output_unavailable`.
        let ending = if self.output_lost {
            Ending::failed(ErrorCode::OutputUnavailable)
        } else {
            ending
        };
        let persistence = if !self.input_durable {
            Persistence::NotStarted
        } else {
            let outcome = match ending.outcome {
                RunOutcome::Completed => TurnOutcome::Completed,
                RunOutcome::Cancelled => TurnOutcome::Cancelled,
                RunOutcome::Failed => TurnOutcome::Failed,
            };
            self.append(RecordBody::TurnFinished {
                turn_id: self.turn_id.clone(),
                outcome,
                error_code: ending.error_code.map(|c| c.as_str().to_owned()),
            });
            if self.degraded {
                Persistence::Degraded
            } else {
                Persistence::Durable
            }
        };
        let revision = if self.input_durable {
            self.sessions.refresh().ok().map(|(revision, _)| revision)
        } else {
            None
        };
        Event::RunFinished(RunFinished {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            outcome: ending.outcome,
            persistence,
            revision,
            error_code: ending.error_code,
        })
    }

    /// Text as it may leave the run: controls stripped, secret-like tokens and the
    /// backend's own credential values redacted.
    fn safe(&self, text: &str) -> String {
        redact_values(&sanitize(text), &self.agent.secrets)
    }

    /// `text` with the backend's credential values redacted and nothing else changed:
    /// what the model and the log may hold of a reply or a tool result.
    fn without_credentials(&self, text: &str) -> String {
        redact_values(text, &self.agent.secrets)
    }

    /// Appends a record after the input; a failure degrades persistence.
    fn append(&mut self, body: RecordBody) {
        let _ = self.append_all(vec![body]);
    }

    /// Appends records together after the input; a failure degrades persistence.
    /// Returns whether they were appended.
    fn append_all(&mut self, bodies: Vec<RecordBody>) -> bool {
        if let Some(scope) = &mut self.scope {
            // A subagent's records go to its own history.
            let appended = scope.append_all(bodies);
            self.degraded |= !appended;
            return appended;
        }
        match self.sessions.append_all(bodies) {
            Ok(()) => true,
            Err(AppendFailure::Detached | AppendFailure::Busy | AppendFailure::Io) => {
                self.degraded = true;
                false
            }
        }
    }
}

/// What one model response left for the loop.
struct Response {
    text: Option<String>,
    calls: Vec<(String, String, String)>,
    ending: Option<Ending>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model client at the network edge that streams a fixed reply.
    struct ScriptedClient {
        deltas: usize,
    }

    impl ModelClient for ScriptedClient {
        fn stream<'a>(
            &'a self,
            _request: &'a ModelRequest,
            events: mpsc::Sender<ModelEvent>,
            _cancel: &'a CancellationToken,
        ) -> magi_provider::BoxFuture<'a, Result<(), ProviderError>> {
            Box::pin(async move {
                for n in 0..self.deltas {
                    if events
                        .send(ModelEvent::TextDelta(format!("d{n} ")))
                        .await
                        .is_err()
                    {
                        return Err(ProviderError::Cancelled);
                    }
                }
                let _ = events
                    .send(ModelEvent::Completed(magi_provider::StopReason::EndTurn))
                    .await;
                Ok(())
            })
        }
    }

    #[test]
    fn undeliverable_critical_events_end_the_run_with_output_unavailable() {
        let dir = tempfile::tempdir().unwrap();
        let home = magi_store::Home::prepare(&dir.path().join("home")).unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let mut sessions = Box::new(Sessions::new(home.clone(), cwd.clone()));
        let session_id = sessions.create().session_id;
        let agent = Agent {
            client: Arc::new(ScriptedClient { deltas: 100 }),
            model: "m".into(),
            reasoning_summaries: false,
            reasoning_effort: None,
            permissions: PermissionSettings::default(),
            hidden_env: Vec::new(),
            secrets: Vec::new(),
            instructions: Arc::default(),
            context_window_tokens: None,
            skills: Arc::default(),
            profile: None,
            mcp: Arc::new(McpHub::empty()),
            subagents: Arc::default(),
            disabled_tools: Arc::default(),
        };
        let request = TurnRequest {
            session_id: session_id.clone(),
            run_id: "run-1".into(),
            prompt: "hi".into(),
            tool_cards: false,
            client_tools: Arc::default(),
        };
        let Ok(mut handle) = start_turn(sessions, agent, request) else {
            panic!("the run's thread starts");
        };
        // Nobody reads the events: the channel fills, deltas drop, and the first
        // reconciliation part waits its 2,000 ms in vain.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let done = handle.done;
        let sessions = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(10), done).await })
            .unwrap()
            .unwrap();
        assert_eq!(sessions.attached(), Some(session_id.as_str()));
        let mut events = Vec::new();
        while let Ok(event) = handle.events.try_recv() {
            events.push(event);
        }
        assert_eq!(events.len(), WORKER_EVENTS);
        assert!(matches!(events[0], Event::InputPersisted(_)));
        assert!(
            events[1..]
                .iter()
                .all(|e| matches!(e, Event::MessageDelta(_)))
        );
        let log = magi_store::log::read_log(
            &home.session_path(&cwd, &session_id),
            &session_id,
            magi_store::log::ReadLimits::STORED,
        )
        .unwrap();
        let last = &log.records.last().unwrap().body;
        assert_eq!(
            *last,
            RecordBody::TurnFinished {
                turn_id: "run-1".into(),
                outcome: TurnOutcome::Failed,
                error_code: Some("output_unavailable".into()),
            }
        );
    }
}
