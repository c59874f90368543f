//! The agent runner: one turn, from the durable prompt to the terminal event.
//!
//! A turn runs on its own thread (it blocks on appends and tools, and must never stall
//! the protocol loop) with the child's sessions moved into it; it hands them back when
//! it ends. Events go to the server through a channel of [`WORKER_EVENTS`]: deltas are
//! best effort and dropped when the channel is full (their part numbers keep counting,
//! so the client sees the gap), every other event is critical and waits at most
//! [`CRITICAL_EVENT_WAIT_MS`](magi_protocol::limits::CRITICAL_EVENT_WAIT_MS); a critical
//! event that cannot be delivered cancels the run with `output_unavailable`.
//!
//! The turn is made of parts with one job each, passed what they need: the run's
//! `output` (shared with its subagents), an agent's `journal`, the `offer` of
//! tools, the model `exchange`, one round trip of the `dialogue`, the tool-call
//! service (`calls`), the subagent runner (`task`) and `compaction`; `turn` puts
//! them together for the session's agent, and `title` names an untitled session after
//! the run's terminal event.

mod calls;
mod compact_now;
mod compaction;
mod conversation;
mod dialogue;
mod ending;
mod estimate;
mod exchange;
mod hooks;
mod journal;
mod live_cards;
mod offer;
mod output;
mod pruning;
mod scope;
mod script_tools;
mod start_checkpoint;
mod steps;
mod task;
mod text;
mod title;
mod turn;
mod usage;

pub use crate::agent::Agent;
pub use calls::rules::RuleBook;
pub use compact_now::compact_session;
pub use conversation::conversation;
pub(crate) use exchange::SKILL_TOOL;
pub use title::{TitleOutcome, TitleSink};
pub use turn::TurnRequest;

use std::sync::Arc;

use magi_protocol::ErrorCode;
use magi_protocol::limits::WORKER_EVENTS;
use magi_protocol::messages::{
    DIAGNOSTIC_INTERNAL_ERROR, Event, Persistence, RunFinished, RunOutcome,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::approvals::ApprovalGate;
use crate::client_tools::ClientToolGate;
use crate::sessions::Sessions;

/// A running turn, as the server sees it.
pub struct RunHandle {
    /// Cancels the run; its terminal event still follows.
    pub cancel: CancellationToken,
    /// Tells the run the backend is ending: what a cancelled run still does before
    /// its terminal event (its `turn_end` hooks) stops at once.
    pub closing: CancellationToken,
    /// Where `approval.answer` settles the run's pending approval.
    pub approvals: ApprovalGate,
    /// Where `client.tool.result` answers the run's client tool calls.
    pub client_calls: ClientToolGate,
    /// Where `client.terminal.result` answers the run's terminal calls.
    pub terminals: crate::client_terminals::TerminalGate,
    /// Where `question.answer` answers the run's questions to the user.
    pub questions: crate::questions::QuestionGate,
    /// Where `client.file.result` answers the run's reads and writes.
    pub files: crate::client_files::ClientFileGate,
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
    let closing = CancellationToken::new();
    let run_closing = closing.clone();
    let gates = calls::Gates {
        rules: request.permissions.clone(),
        ..calls::Gates::default()
    };
    let (approvals, client_calls) = (gates.approvals.clone(), gates.client_calls.clone());
    let questions = gates.questions.clone();
    let terminals = gates.terminals.clone();
    let files = gates.files.clone();
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
            let Some(mut sessions) = taken else { return };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let Ok(runtime) = runtime else {
                let _ = done_tx.send(sessions);
                return;
            };
            runtime.block_on(async move {
                // A sign-in due for a refresh gets it now, so the run redacts the tokens
                // it will use. A panic there is reported by the crash hook and goes no
                // further: the provider asks the sign-in for its token again at the
                // request, and a sign-in that cannot give one fails the turn in order.
                let mut agent = agent;
                let _ = magi_crash::contained(agent.prepare_sign_in()).await;
                let mut output = output::Output::new(
                    events_tx,
                    request.session_id.clone(),
                    request.run_id.clone(),
                    run_cancel,
                    agent.secrets.clone(),
                    request.extensions,
                );
                output.closing = run_closing;
                let (finished, mut title) =
                    run_contained(&mut sessions, &mut output, agent, request, gates).await;
                // The sessions go back before the terminal event, so a client that
                // saw `run.finished` finds the child idle.
                let _ = done_tx.send(sessions);
                if title.is_some() && crate::fault::title_first() {
                    title::ask_first(title.take()).await;
                }
                output.finished(finished).await;
                // The run's events end here; a title is asked for only now, so the
                // turn never waits for it.
                drop(output);
                title::ask(title).await;
            });
        });
    match spawned {
        Ok(_) => Ok(RunHandle {
            cancel,
            closing,
            approvals,
            client_calls,
            terminals,
            questions,
            files,
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

/// Runs the turn of `request` with every panic in it contained: a panic ends the run
/// `failed` with an `internal_error` diagnostic (see [`turn::Turn::crashed`]) instead of
/// the thread, so the sessions still go back and the backend goes on serving. Returns
/// the run's `run.finished` and the title request it leaves.
async fn run_contained(
    sessions: &mut Sessions,
    output: &mut output::Output,
    agent: Agent,
    request: TurnRequest,
    gates: calls::Gates,
) -> (Event, Option<title::TitleJob>) {
    let (session_id, run_id) = (request.session_id.clone(), request.run_id.clone());
    // The model's limits are read here, on the run's thread: the cached catalog is a
    // file, and the protocol loop that admitted the turn never waits on it.
    let prepared = magi_crash::contain(|| {
        let mut agent = agent;
        agent.resolve_limits();
        magi_crash::register_secrets(&agent.secrets);
        turn::Turn::new(sessions, agent, request, gates)
    });
    let mut turn = match prepared {
        Ok(turn) => turn,
        Err(crash) => {
            output
                .diagnostic(DIAGNOSTIC_INTERNAL_ERROR, &crash.summary())
                .await;
            let finished = Event::RunFinished(RunFinished {
                session_id,
                run_id,
                outcome: RunOutcome::Failed,
                persistence: Persistence::NotStarted,
                revision: None,
                error_code: Some(ErrorCode::ExecutionFailed),
            });
            return (finished, None);
        }
    };
    let finished = match magi_crash::contained(turn.run(sessions, output)).await {
        Ok(finished) => finished,
        Err(crash) => turn.crashed(sessions, output, &crash).await,
    };
    (finished, turn.take_title_job())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use magi_config::PermissionSettings;
    use magi_provider::{ModelClient, ModelEvent, ModelRequest, ProviderError};

    use crate::mcp::McpHub;
    use magi_store::records::{RecordBody, TurnOutcome};

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
        ) -> magi_provider::BoxFuture<'a, Result<(), magi_provider::Failure>> {
            Box::pin(async move {
                for n in 0..self.deltas {
                    if events
                        .send(ModelEvent::TextDelta(format!("d{n} ")))
                        .await
                        .is_err()
                    {
                        return Err(ProviderError::Cancelled.into());
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
            provider: "mock".into(),
            credential_source: None,
            sign_in: None,
            reasoning_summaries: false,
            reasoning_effort: None,
            permissions: PermissionSettings::default(),
            hidden_env: Vec::new(),
            secrets: Vec::new(),
            instructions: Arc::default(),
            context_window_tokens: None,
            max_output_tokens: None,
            limits: None,
            images: true,
            prune_protect_tokens: 0,
            max_steps: None,
            code_mode: magi_config::CodeModeSettings::default(),
            skills: Arc::default(),
            profile: None,
            mcp: Arc::new(McpHub::empty()),
            subagents: Arc::default(),
            disabled_tools: Arc::default(),
            hooks: Arc::default(),
            client_terminals: false,
        };
        let request = TurnRequest {
            session_id: session_id.clone(),
            run_id: "run-1".into(),
            prompt: "hi".into(),
            extensions: magi_protocol::extensions::ExtensionSet::EMPTY,
            client_tools: Arc::default(),
            titles: None,
            titles_beside: false,
            attachments: Vec::new(),
            permissions: RuleBook::default(),
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
