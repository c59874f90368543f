//! The connection: reads the client's messages, answers each request once, and keeps
//! the sessions (at most [`ACP_SESSIONS`], each with its own backend).
//!
//! Requests run on tasks of their own, so a long `session/prompt` never holds up
//! `session/cancel` or a permission answer; the writer keeps the output in order.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol_schema::MethodDispatchError;
use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AvailableCommand, AvailableCommandsUpdate,
    ClientCapabilities, ClientRequest, Error, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionResponse, PromptCapabilities, SessionCapabilities,
    SessionCloseCapabilities, SessionInfo, SessionListCapabilities, SessionNotification,
    SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionResponse,
};
use magi_protocol::limits::{ACP_PENDING_REQUESTS, ACP_SESSIONS};
use magi_protocol::messages::SessionListParams;
use magi_protocol::methods;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::oneshot;

use crate::prompt::TurnInput;
use crate::rpc::{Incoming, Peer, classify, response};
use crate::session::{self, Command, Handle, Target};
use crate::transport::{Line, LineReader, Writer};

/// How long the writer gets to flush the last messages at the end.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

/// What the connection knows.
#[derive(Default)]
struct State {
    /// What `initialize` said the client can do; `None` before it.
    client: Option<ClientCapabilities>,
    sessions: HashMap<String, Handle>,
    /// Sessions being opened, counted against the bound.
    opening: usize,
}

/// The agent's side of one connection.
struct Agent {
    peer: Peer,
    state: Mutex<State>,
    /// Requests being handled, bounded by [`ACP_PENDING_REQUESTS`].
    in_flight: AtomicUsize,
}

/// Serves ACP on `input` and `output` until the input ends.
pub(crate) async fn serve<R, W>(input: R, output: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (writer, written) = Writer::start(output);
    let agent = Arc::new(Agent {
        peer: Peer::new(writer),
        state: Mutex::default(),
        in_flight: AtomicUsize::new(0),
    });
    let mut reader = LineReader::new(input);
    loop {
        let line = match reader.next().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                eprintln!("magi-code acp: cannot read stdin: {e}");
                break;
            }
        };
        let bytes = match line {
            Line::Message(bytes) => bytes,
            Line::Oversized => {
                let error = Error::invalid_request().data(json!(format!(
                    "a message is longer than the {} byte bound",
                    magi_protocol::limits::ACP_MESSAGE_BYTES
                )));
                agent
                    .peer
                    .send(response(
                        &agent_client_protocol_schema::v1::RequestId::Null,
                        Err(error),
                    ))
                    .await;
                continue;
            }
        };
        match classify(&bytes) {
            Incoming::Request { id, method, params } => {
                if agent.in_flight.fetch_add(1, Ordering::SeqCst) >= ACP_PENDING_REQUESTS {
                    agent.in_flight.fetch_sub(1, Ordering::SeqCst);
                    let error = Error::internal_error().data(json!(format!(
                        "more than {ACP_PENDING_REQUESTS} requests are in progress; wait for \
                         some to be answered"
                    )));
                    agent.peer.send(response(&id, Err(error))).await;
                    continue;
                }
                let agent = Arc::clone(&agent);
                tokio::spawn(async move {
                    let (outcome, then) = agent.request(&method, params).await;
                    agent.peer.send(response(&id, outcome)).await;
                    for message in then {
                        agent.peer.send(message).await;
                    }
                    agent.in_flight.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Incoming::Notification { method, params } => agent.notification(&method, params).await,
            Incoming::Response { id, outcome } => {
                if !agent.peer.answered(&id, outcome) {
                    eprintln!(
                        "magi-code acp: a response to no request of ours (id {id}) was ignored"
                    );
                }
            }
            Incoming::Invalid { id, error } => {
                agent.peer.send(response(&id, Err(error))).await;
            }
        }
    }
    // The client is gone: every session's backend is shut down.
    let handles: Vec<Handle> = agent.state().sessions.drain().map(|(_, h)| h).collect();
    for handle in handles {
        handle.close().await;
    }
    drop(agent);
    let _ = tokio::time::timeout(FLUSH_WAIT, written).await;
}

/// A request's result, and the messages to send after its response.
type Outcome = (Result<Value, Error>, Vec<Value>);

fn encode<T: serde::Serialize>(value: &T) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|e| Error::internal_error().data(json!(e.to_string())))
}

impl Agent {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn request(&self, method: &str, params: Value) -> Outcome {
        let request = match ClientRequest::from_method_and_params(method, &params) {
            Ok(request) => request,
            Err(MethodDispatchError::UnknownMethod { .. }) => {
                let error = Error::method_not_found()
                    .data(json!(format!("magi-code acp has no method `{method}`")));
                return (Err(error), Vec::new());
            }
            Err(MethodDispatchError::InvalidPayload { source, .. }) => {
                let error = Error::invalid_params().data(json!(format!("{method}: {source}")));
                return (Err(error), Vec::new());
            }
            Err(other) => {
                return (
                    Err(Error::invalid_params().data(json!(other.to_string()))),
                    Vec::new(),
                );
            }
        };
        if !matches!(request, ClientRequest::InitializeRequest(_)) && self.state().client.is_none()
        {
            let error = Error::invalid_request().data(json!("send `initialize` first"));
            return (Err(error), Vec::new());
        }
        match request {
            ClientRequest::InitializeRequest(request) => (self.initialize(request), Vec::new()),
            ClientRequest::AuthenticateRequest(_) => (Ok(json!({})), Vec::new()),
            ClientRequest::NewSessionRequest(request) => {
                self.open(request.cwd, &request.mcp_servers, Target::New)
                    .await
            }
            ClientRequest::LoadSessionRequest(request) => {
                let target = Target::Load(request.session_id.0.to_string());
                self.open(request.cwd, &request.mcp_servers, target).await
            }
            ClientRequest::ResumeSessionRequest(request) => {
                let target = Target::Resume(request.session_id.0.to_string());
                self.open(request.cwd, &request.mcp_servers, target).await
            }
            ClientRequest::CloseSessionRequest(request) => {
                let handle = self.state().sessions.remove(&*request.session_id.0);
                match handle {
                    Some(handle) => {
                        handle.close().await;
                        (Ok(json!({})), Vec::new())
                    }
                    None => (Err(no_session(&request.session_id.0)), Vec::new()),
                }
            }
            ClientRequest::ListSessionsRequest(request) => (self.list(request).await, Vec::new()),
            ClientRequest::PromptRequest(request) => {
                let outcome = async {
                    let input = TurnInput::from_blocks(request.prompt)?;
                    let handle = self.session(&request.session_id.0)?;
                    let (reply, answer) = oneshot::channel();
                    if !handle.send(Command::Prompt { input, reply }).await {
                        return Err(no_session(&request.session_id.0));
                    }
                    let response = answer.await.map_err(|_| {
                        Error::internal_error().data(json!("the session ended during the turn"))
                    })??;
                    encode(&response)
                };
                (outcome.await, Vec::new())
            }
            ClientRequest::SetSessionConfigOptionRequest(request) => {
                let outcome = async {
                    let value = match &request.value {
                        agent_client_protocol_schema::v1::SessionConfigOptionValue::ValueId {
                            value,
                        } => value.0.to_string(),
                        _ => {
                            return Err(Error::invalid_params()
                                .data(json!("the model and effort options take a value ID")));
                        }
                    };
                    let handle = self.session(&request.session_id.0)?;
                    let (reply, answer) = oneshot::channel();
                    let command = Command::SetConfig {
                        option: request.config_id.0.to_string(),
                        value,
                        reply,
                    };
                    if !handle.send(command).await {
                        return Err(no_session(&request.session_id.0));
                    }
                    let options = answer
                        .await
                        .map_err(|_| no_session(&request.session_id.0))??;
                    encode(&SetSessionConfigOptionResponse::new(options))
                };
                (outcome.await, Vec::new())
            }
            other => {
                let error = Error::method_not_found().data(json!(format!(
                    "magi-code acp does not support `{}`",
                    other.method()
                )));
                (Err(error), Vec::new())
            }
        }
    }

    async fn notification(&self, method: &str, params: Value) {
        if method != "session/cancel" {
            eprintln!("magi-code acp: the notification `{method}` is not supported; ignored");
            return;
        }
        let cancel: agent_client_protocol_schema::v1::CancelNotification =
            match serde_json::from_value(params) {
                Ok(cancel) => cancel,
                Err(e) => {
                    eprintln!("magi-code acp: a session/cancel with bad params was ignored: {e}");
                    return;
                }
            };
        match self.session(&cancel.session_id.0) {
            Ok(handle) => {
                handle.send(Command::Cancel).await;
            }
            Err(_) => eprintln!(
                "magi-code acp: session/cancel for an unknown session {} was ignored",
                cancel.session_id.0
            ),
        }
    }

    fn session(&self, id: &str) -> Result<Handle, Error> {
        self.state()
            .sessions
            .get(id)
            .cloned()
            .ok_or_else(|| no_session(id))
    }

    /// `initialize`: version 1 whatever the client asked (it is the one we speak), and
    /// what this agent can do.
    fn initialize(&self, request: InitializeRequest) -> Result<Value, Error> {
        self.state().client = Some(request.client_capabilities);
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new())
                    .close(SessionCloseCapabilities::new()),
            );
        let auth = AuthMethodAgent::new("environment", "Provider credentials").description(
            "magi-code reads the provider's credential from the environment (such as \
             OPENAI_API_KEY or ANTHROPIC_API_KEY) or from its settings; there is nothing to \
             sign in to here. Run `magi-code doctor` to check the setup.",
        );
        let response = InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .auth_methods(vec![AuthMethod::Agent(auth)])
            .agent_info(Implementation::new("magi-code", env!("CARGO_PKG_VERSION")));
        encode(&response)
    }

    /// `session/new`, `session/load` and `session/resume`: a backend in `cwd` attached
    /// to the session; the response, then the session's commands.
    async fn open(&self, cwd: PathBuf, mcp_servers: &[McpServer], target: Target) -> Outcome {
        if let Err(e) = check_cwd(&cwd) {
            return (Err(e), Vec::new());
        }
        let loading = matches!(target, Target::Load(_));
        {
            let mut state = self.state();
            if state.sessions.len() + state.opening >= ACP_SESSIONS {
                let error = Error::internal_error().data(json!(format!(
                    "at most {ACP_SESSIONS} sessions are open at once; close one \
                     (session/close) first"
                )));
                return (Err(error), Vec::new());
            }
            if let Target::Load(id) | Target::Resume(id) = &target
                && state.sessions.contains_key(id)
            {
                let error = Error::invalid_request().data(json!(format!(
                    "session {id} is already open on this connection"
                )));
                return (Err(error), Vec::new());
            }
            state.opening += 1;
        }
        let client_files = session::files_offered(self.state().client.as_ref());
        let terminals = self.state().client.as_ref().is_some_and(|c| c.terminal);
        let opened = session::open(
            self.peer.clone(),
            cwd,
            mcp_servers,
            target,
            client_files,
            terminals,
        )
        .await;
        let mut state = self.state();
        state.opening -= 1;
        let (id, handle, options) = match opened {
            Ok(opened) => opened,
            Err(e) => return (Err(e), Vec::new()),
        };
        state.sessions.insert(id.clone(), handle);
        drop(state);
        let result = if loading {
            encode(&LoadSessionResponse::new().config_options(options))
        } else {
            encode(&NewSessionResponse::new(id.clone()).config_options(options))
        };
        (result, vec![commands_update(&id)])
    }

    /// `session/list`: the sessions of a folder (the client's `cwd`, or ours), newest
    /// first, from a backend started there for the purpose.
    async fn list(&self, request: ListSessionsRequest) -> Result<Value, Error> {
        let cwd = match request.cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|e| {
                Error::internal_error().data(json!(format!("cannot read the working folder: {e}")))
            })?,
        };
        check_cwd(&cwd)?;
        let mut backend = session::backend(&cwd, &[]).await?;
        let params = SessionListParams {
            revision: None,
            cursor: request.cursor,
            limit: None,
        };
        let answer = backend.call::<methods::SessionList>(&params).await;
        let _ = backend
            .send::<methods::Shutdown>(&magi_protocol::messages::EmptyParams {})
            .await;
        if backend.wait_within(Duration::from_secs(5)).await.is_none() {
            backend.kill().await;
        }
        let page = match answer {
            Ok(Ok(page)) => page,
            Ok(Err(code)) => {
                return Err(Error::internal_error()
                    .data(json!(format!("session.list failed: {}", code.as_str()))));
            }
            Err(e) => return Err(Error::internal_error().data(json!(e.to_string()))),
        };
        let sessions = page
            .sessions
            .into_iter()
            .map(|entry| {
                SessionInfo::new(entry.session_id, cwd.clone())
                    .title(entry.title)
                    .updated_at(entry.updated_at)
            })
            .collect();
        let next = if page.complete {
            None
        } else {
            page.next_cursor
        };
        encode(&ListSessionsResponse::new(sessions).next_cursor(next))
    }
}

/// A session's folder must be an absolute path to a folder.
fn check_cwd(cwd: &Path) -> Result<(), Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid_params().data(json!(format!(
            "cwd must be an absolute path; got {}",
            cwd.display()
        ))));
    }
    if !cwd.is_dir() {
        return Err(
            Error::invalid_params().data(json!(format!("cwd {} is not a folder", cwd.display())))
        );
    }
    Ok(())
}

fn no_session(id: &str) -> Error {
    Error::invalid_params().data(json!(format!(
        "no session {id} is open on this connection; session/new or session/load it first"
    )))
}

/// The `available_commands_update` sent once a session is open.
fn commands_update(id: &str) -> Value {
    let commands = vec![AvailableCommand::new(
        "compact",
        "Summarise the conversation so far to free the model's context window",
    )];
    let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands));
    let notification = SessionNotification::new(id.to_owned(), update);
    crate::rpc::notification(
        "session/update",
        serde_json::to_value(notification).unwrap_or(Value::Null),
    )
}
