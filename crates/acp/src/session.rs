//! One ACP session: a backend of its own — `magi-code serve --stdio` started in the
//! session's folder, so its settings, instructions and MCP servers are that folder's —
//! and the task that owns it, taking the connection's commands and turning the
//! backend's events into `session/update` notifications.
//!
//! The parts: `open` (spawning, initializing and attaching the backend; `session/load`'s
//! replay), `turn` (one prompt turn's events), `permission` (approvals as
//! `session/request_permission`) and `config` (the model and effort options).

use std::path::PathBuf;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    Error, PromptResponse, SessionConfigOption, SessionNotification, SessionUpdate,
};
use magi_client::{Backend, Incoming};
use magi_protocol::messages::{EmptyParams, TurnCancelParams};
use magi_protocol::methods;
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use crate::prompt::TurnInput;
use crate::rpc::Peer;

mod config;
mod files;
mod open;
mod permission;
mod terminal;
mod turn;

pub(crate) use files::offered as files_offered;
pub(crate) use open::{Target, backend, open};

/// Commands a session's task takes, at most this many waiting.
const COMMAND_QUEUE: usize = 16;
/// How long a backend gets to exit after `shutdown` before it is killed.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// What the connection asks of a session.
pub(crate) enum Command {
    /// `session/prompt`.
    Prompt {
        input: TurnInput,
        reply: oneshot::Sender<Result<PromptResponse, Error>>,
    },
    /// `session/cancel`.
    Cancel,
    /// `session/set_config_option`: the option's ID and its new value's ID.
    SetConfig {
        option: String,
        value: String,
        reply: oneshot::Sender<Result<Vec<SessionConfigOption>, Error>>,
    },
    /// `session/close`, or the connection's end: the backend is shut down.
    Close { done: oneshot::Sender<()> },
}

/// The connection's handle on a running session.
#[derive(Clone)]
pub(crate) struct Handle {
    commands: mpsc::Sender<Command>,
}

impl Handle {
    /// Hands a command to the session; false once it has ended.
    pub(crate) async fn send(&self, command: Command) -> bool {
        self.commands.send(command).await.is_ok()
    }

    /// Shuts the session's backend down, waiting at most for its exit bound.
    pub(crate) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.send(Command::Close { done }).await {
            let _ = tokio::time::timeout(EXIT_WAIT + EXIT_WAIT, closed).await;
        }
    }
}

/// A session's task: its backend and the turn in progress.
pub(crate) struct Session {
    /// The ACP session ID: the backend's session, or the one it began as.
    id: String,
    /// The backend's session: the ACP ID, unless a backend that ended took a session
    /// that was never made durable with it, and a fresh one began another.
    backend_id: String,
    /// How a fresh backend for this session is started.
    start: open::Start,
    /// How the backend ended, once it did: the next prompt starts a fresh one.
    gone: Option<String>,
    /// The session's folder, for absolute paths in tool calls.
    cwd: PathBuf,
    backend: Backend,
    peer: Peer,
    /// The turn in progress, if any.
    turn: Option<turn::Turn>,
    /// The client's answers to permission requests, from their own tasks.
    answers: mpsc::UnboundedReceiver<permission::Answer>,
    answer_sender: mpsc::UnboundedSender<permission::Answer>,
    /// The commands run in the client's terminal, and their tasks' reports.
    terminals: terminal::Terminals,
    terminal_notes: mpsc::UnboundedReceiver<terminal::Note>,
    /// The reads and writes the backend asked of the editor (`client.files`).
    files: files::Files,
    /// The approval mode the client chose, set again on a fresh backend.
    mode: Option<String>,
}

impl Session {
    fn new(id: String, cwd: PathBuf, start: open::Start, backend: Backend, peer: Peer) -> Session {
        let (answer_sender, answers) = mpsc::unbounded_channel();
        let (note_sender, terminal_notes) = mpsc::unbounded_channel();
        Session {
            backend_id: id.clone(),
            id,
            start,
            gone: None,
            cwd,
            backend,
            peer,
            turn: None,
            answers,
            answer_sender,
            terminals: terminal::Terminals::new(note_sender),
            terminal_notes,
            files: files::Files::new(),
            mode: None,
        }
    }

    /// Starts the session's task and returns its handle.
    pub(crate) fn start(self) -> Handle {
        let (commands, receiver) = mpsc::channel(COMMAND_QUEUE);
        tokio::spawn(self.run(receiver));
        Handle { commands }
    }

    async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        let mut closed: Option<oneshot::Sender<()>> = None;
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    Some(Command::Close { done }) => {
                        closed = Some(done);
                        break;
                    }
                    Some(command) => self.command(command).await,
                    None => break,
                },
                Some(answer) = self.answers.recv() => self.answered(answer).await,
                Some(note) = self.terminal_notes.recv() => self.terminal_note(note).await,
                Some(done) = self.files.next() => self.file_done(done).await,
                // A backend that ended has nothing more to say.
                incoming = self.backend.next_incoming(), if self.gone.is_none() => match incoming {
                    Some(Incoming::Event { event, .. }) => self.event(event).await,
                    Some(Incoming::Response(_)) => {}
                    Some(Incoming::Violation(violation)) => {
                        // Nothing it says can be trusted any more: it is stopped.
                        self.backend.kill().await;
                        self.ended(format!("the backend broke the protocol: {violation}"));
                    }
                    None => {
                        let wait = Duration::from_millis(magi_protocol::limits::CLEANUP_WAIT_MS);
                        let said = self.backend.end_within(wait).await.describe();
                        self.ended(said);
                    }
                },
            }
        }
        if let Some(turn) = self.turn.take() {
            turn.fail("the session was closed before the turn finished");
        }
        if self.gone.is_some() {
            if let Some(done) = closed {
                let _ = done.send(());
            }
            return;
        }
        let exited = async {
            let _ = self
                .backend
                .send::<methods::Shutdown>(&EmptyParams {})
                .await;
            self.backend.wait_within(EXIT_WAIT).await.is_some()
        };
        if !exited.await {
            self.backend.kill().await;
        }
        if let Some(done) = closed {
            let _ = done.send(());
        }
    }

    /// The backend ended, `said` telling how: the turn in progress fails saying so,
    /// and the session waits for its next prompt to start a fresh backend.
    pub(super) fn ended(&mut self, said: String) {
        eprintln!("magi-code acp: session {}: {said}", self.id);
        if let Some(turn) = self.turn.take() {
            turn.fail(&format!(
                "{said}; the next prompt starts a fresh backend for this session"
            ));
        }
        self.gone = Some(said);
    }

    /// Starts a fresh backend for the session after the last one ended: it reopens the
    /// session, or, when the session was never made durable, begins a new one for the
    /// same ACP session. The calls the last backend left open are settled by the
    /// recovery rules at the next turn.
    async fn renew(&mut self) -> Result<(), Error> {
        let Some(said) = self.gone.clone() else {
            return Ok(());
        };
        let (backend, backend_id) = self
            .start
            .again(&self.cwd, &self.backend_id)
            .await
            .map_err(|e| {
                let why = e
                    .data
                    .as_ref()
                    .and_then(|d| d.as_str())
                    .unwrap_or_default()
                    .to_owned();
                Error::internal_error().data(json!(format!(
                    "{said}; a fresh backend could not start: {why}"
                )))
            })?;
        self.backend = backend;
        self.backend_id = backend_id;
        self.gone = None;
        // The client's mode goes on in the fresh backend.
        if let Some(mode) = self.mode.clone() {
            config::set_mode(&mut self.backend, &self.backend_id, &mode).await?;
        }
        Ok(())
    }

    async fn command(&mut self, command: Command) {
        let renewal = match &command {
            Command::Prompt { .. } | Command::SetConfig { .. } => self.renew().await,
            Command::Cancel | Command::Close { .. } => Ok(()),
        };
        if let Err(e) = renewal {
            match command {
                Command::Prompt { reply, .. } => {
                    let _ = reply.send(Err(e));
                }
                Command::SetConfig { reply, .. } => {
                    let _ = reply.send(Err(e));
                }
                Command::Cancel | Command::Close { .. } => {}
            }
            return;
        }
        match command {
            Command::Prompt { input, reply } => self.prompt(input, reply).await,
            Command::Cancel => self.cancel().await,
            Command::SetConfig {
                option,
                value,
                reply,
            } => {
                let result = if option == config::MODE {
                    // A mode switched during a turn applies to its next call that asks.
                    let set = config::set_mode(&mut self.backend, &self.backend_id, &value).await;
                    if set.is_ok() {
                        self.mode = Some(value);
                    }
                    set
                } else if self.turn.is_some() {
                    Err(Error::invalid_request()
                        .data(json!("a turn is running; change the model once it ends")))
                } else {
                    config::set(&mut self.backend, &self.backend_id, &option, &value).await
                };
                let _ = reply.send(result);
            }
            Command::Close { .. } => {}
        }
    }

    /// `session/cancel`: cancels the running turn; its prompt then answers `cancelled`.
    async fn cancel(&mut self) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        if turn.cancelled {
            return;
        }
        turn.cancelled = true;
        let params = TurnCancelParams {
            session_id: self.backend_id.clone(),
            run_id: turn.run_id.clone(),
        };
        // The run's end follows as `run.finished`; a backend that cannot be written to
        // is gone, and its end is seen on its output.
        let _ = self.backend.send::<methods::TurnCancel>(&params).await;
    }

    /// Sends one `session/update`.
    async fn update(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.id.clone(), update);
        match serde_json::to_value(&notification) {
            Ok(params) => {
                self.peer.notify("session/update", params).await;
            }
            Err(e) => eprintln!("magi-code acp: an update did not encode: {e}"),
        }
    }
}
