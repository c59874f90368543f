//! A spawned backend child and the connection to it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use magi_protocol::frame::{Decoded, FrameDecoder};
use magi_protocol::limits::{READ_BATCH_BYTES, REQUEST_IDS};
use magi_protocol::messages::{
    ClientToolDefinition, EmptyParams, Event, InitializeParams, InitializeResult, ShutdownResult,
    StatusResult,
};
use magi_protocol::{ErrorCode, Method, MethodName, PROTOCOL_NAME, PROTOCOL_VERSION};
use magi_protocol::{Request, methods};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};

use crate::ClientError;
use crate::decode::{FrameChecker, ServerFrame, Violation};

/// Frames the reader holds for the application before it stops reading.
const INCOMING_CAPACITY: usize = 1024;

/// How to start a backend: `PROGRAM serve --stdio` with the given environment and
/// working directory.
#[derive(Debug, Clone)]
pub struct BackendCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env_clear: bool,
    envs: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    capture_stderr: bool,
}

impl BackendCommand {
    /// `program serve --stdio`, inheriting the environment and working directory.
    pub fn new(program: impl Into<PathBuf>) -> BackendCommand {
        BackendCommand {
            program: program.into(),
            args: vec!["serve".into(), "--stdio".into()],
            env_clear: false,
            envs: Vec::new(),
            cwd: None,
            capture_stderr: false,
        }
    }

    /// Starts the child with an empty environment (plus what [`Self::env`] adds).
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// Sets one environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Pipes the child's stderr so it can be read with [`Backend::take_stderr`];
    /// otherwise it is discarded.
    pub fn capture_stderr(mut self) -> Self {
        self.capture_stderr = true;
        self
    }

    /// Spawns the backend and starts reading its output.
    pub fn spawn(&self) -> Result<Backend, ClientError> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if self.capture_stderr {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true);
        if self.env_clear {
            command.env_clear();
        }
        command.envs(self.envs.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(ClientError::Spawn)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Spawn(std::io::Error::other("stdio not piped")));
        };
        let shared = Arc::new(Shared::default());
        let (incoming_tx, incoming) = mpsc::channel(INCOMING_CAPACITY);
        tokio::spawn(read_output(stdout, Arc::clone(&shared), incoming_tx));
        Ok(Backend {
            child,
            stdin: Some(stdin),
            shared,
            incoming,
            next_id: 0,
        })
    }
}

/// A response as the client received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Its sequence number.
    pub seq: u64,
    /// The request ID it answers, or `None` for `id=null`.
    pub id: Option<String>,
    /// The result, or the error code.
    pub outcome: Result<Value, ErrorCode>,
}

impl Response {
    /// The result as `T`, or the error code; a result of another shape is an error.
    pub fn parse<T: DeserializeOwned>(self) -> Result<Result<T, ErrorCode>, ClientError> {
        match self.outcome {
            Ok(value) => serde_json::from_value(value)
                .map(Ok)
                .map_err(|_| ClientError::UnexpectedResult),
            Err(code) => Ok(Err(code)),
        }
    }
}

/// What arrives from the backend that no pending request claimed.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// An event.
    Event {
        /// Its sequence number.
        seq: u64,
        /// The event.
        event: Event,
    },
    /// A response to a request this client did not send through [`Backend::send`] or
    /// [`Backend::send_request_raw`] (raw frames), or with `id=null`.
    Response(Response),
    /// The backend broke the protocol; nothing follows.
    Violation(Violation),
}

type Waiter = oneshot::Sender<Result<Response, ClientError>>;

#[derive(Default)]
struct Shared {
    /// Requests sent and not yet answered, by ID.
    pending: Mutex<HashMap<String, Waiter>>,
    instance_id: Mutex<Option<String>>,
    /// Set once `initialize` admitted `tool.cards`; the reader then accepts cards.
    tool_cards: std::sync::atomic::AtomicBool,
    /// Set once `initialize` admitted `client.tools`; the reader then accepts its events.
    client_tools: std::sync::atomic::AtomicBool,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiter>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A response that has not arrived yet.
pub struct PendingResponse {
    id: String,
    receiver: oneshot::Receiver<Result<Response, ClientError>>,
}

impl PendingResponse {
    /// The request ID this waits for.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits for the response.
    pub async fn response(self) -> Result<Response, ClientError> {
        self.receiver.await.unwrap_or(Err(ClientError::Closed))
    }
}

/// The answer to a typed request that has not arrived yet.
pub struct PendingCall<R> {
    pending: PendingResponse,
    negotiation: Option<Negotiation>,
    method: PhantomData<fn() -> R>,
}

impl<R: Request> PendingCall<R> {
    /// The request ID this waits for.
    pub fn id(&self) -> &str {
        self.pending.id()
    }

    /// Waits for the answer: the result, or the error code.
    pub async fn result(self) -> Result<Result<R::Result, ErrorCode>, ClientError> {
        let response = self.pending.response().await?;
        if let (Some(negotiation), Ok(result)) = (self.negotiation, &response.outcome) {
            negotiation.admitted(result)?;
        }
        response.parse()
    }
}

/// The extensions an `initialize` required, recorded once it is admitted: the reader
/// accepts their events only from then on.
struct Negotiation {
    tool_cards: bool,
    client_tools: bool,
    shared: Arc<Shared>,
}

impl Negotiation {
    /// What the `initialize` params (as sent) require.
    fn requested(params: &Value, shared: Arc<Shared>) -> Result<Negotiation, ClientError> {
        let params: InitializeParams =
            serde_json::from_value(params.clone()).map_err(|_| ClientError::UnencodableParams)?;
        let requires = |name: &str| params.required_capabilities.iter().any(|c| c == name);
        Ok(Negotiation {
            tool_cards: requires(magi_protocol::cards::CAPABILITY),
            client_tools: requires(CLIENT_TOOLS_CAPABILITY),
            shared,
        })
    }

    /// Checks the admitted result's advertisement and turns the extensions on.
    fn admitted(self, result: &Value) -> Result<(), ClientError> {
        let result: InitializeResult =
            serde_json::from_value(result.clone()).map_err(|_| ClientError::UnexpectedResult)?;
        check_advertisement(&result, self.tool_cards, self.client_tools)
            .map_err(ClientError::Violation)?;
        self.shared
            .tool_cards
            .store(self.tool_cards, std::sync::atomic::Ordering::SeqCst);
        self.shared
            .client_tools
            .store(self.client_tools, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// A running backend child.
pub struct Backend {
    child: Child,
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    incoming: mpsc::Receiver<Incoming>,
    next_id: usize,
}

impl Backend {
    /// Sends a typed request with a fresh ID and returns a handle to its answer.
    pub async fn send<R: Request>(
        &mut self,
        params: &R::Params,
    ) -> Result<PendingCall<R>, ClientError> {
        let params = serde_json::to_value(params).map_err(|_| ClientError::UnencodableParams)?;
        let negotiation = match R::METHOD {
            MethodName::Base(Method::Initialize) => {
                Some(Negotiation::requested(&params, Arc::clone(&self.shared))?)
            }
            _ => None,
        };
        let pending = self.send_request_raw(R::METHOD.as_str(), params).await?;
        Ok(PendingCall {
            pending,
            negotiation,
            method: PhantomData,
        })
    }

    /// Sends a typed request and waits for its answer: the result, or the error code.
    ///
    /// A result that does not have the method's shape is
    /// [`ClientError::UnexpectedResult`]. An admitted `initialize` also checks what the
    /// backend advertised and, from then on, accepts the events of the extensions it
    /// required.
    pub async fn call<R: Request>(
        &mut self,
        params: &R::Params,
    ) -> Result<Result<R::Result, ErrorCode>, ClientError> {
        self.send::<R>(params).await?.result().await
    }

    /// Sends a request of any method with any params, as they are, with a fresh ID.
    ///
    /// For requests the typed [`Self::send`] cannot express: unknown methods and
    /// malformed params. An `initialize` sent this way negotiates no extension events.
    pub async fn send_request_raw(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<PendingResponse, ClientError> {
        if self.next_id >= REQUEST_IDS {
            return Err(ClientError::IdsExhausted);
        }
        self.next_id += 1;
        let id = format!("c{}", self.next_id);
        let frame = serde_json::json!({
            "protocol": PROTOCOL_NAME,
            "version": PROTOCOL_VERSION,
            "id": id,
            "method": method,
            "params": params,
        });
        let (sender, receiver) = oneshot::channel();
        self.shared.pending().insert(id.clone(), sender);
        let mut line = frame.to_string().into_bytes();
        line.push(b'\n');
        if let Err(e) = self.send_raw(&line).await {
            self.shared.pending().remove(&id);
            return Err(e);
        }
        Ok(PendingResponse { id, receiver })
    }

    /// Sends a raw request (see [`Self::send_request_raw`]) and waits for its response.
    pub async fn request_raw(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<Response, ClientError> {
        self.send_request_raw(method, params)
            .await?
            .response()
            .await
    }

    /// `initialize` with these required capabilities: the result, or the error code.
    pub async fn initialize(
        &mut self,
        required: &[&str],
    ) -> Result<Result<InitializeResult, ErrorCode>, ClientError> {
        self.initialize_with_tools(required, None).await
    }

    /// `initialize`, registering `client_tools` when `client.tools` is required.
    pub async fn initialize_with_tools(
        &mut self,
        required: &[&str],
        client_tools: Option<&[ClientToolDefinition]>,
    ) -> Result<Result<InitializeResult, ErrorCode>, ClientError> {
        let params = InitializeParams {
            required_capabilities: required.iter().map(|&name| name.to_owned()).collect(),
            client_tools: client_tools.map(<[ClientToolDefinition]>::to_vec),
        };
        self.call::<methods::Initialize>(&params).await
    }

    /// `status`: the result, or the error code.
    pub async fn status(&mut self) -> Result<Result<StatusResult, ErrorCode>, ClientError> {
        self.call::<methods::Status>(&EmptyParams {}).await
    }

    /// `shutdown`: the result, or the error code.
    pub async fn shutdown(&mut self) -> Result<Result<ShutdownResult, ErrorCode>, ClientError> {
        self.call::<methods::Shutdown>(&EmptyParams {}).await
    }

    /// Request IDs this client may still use with this child (4,096 in its life).
    ///
    /// A long-lived client checks it before starting a turn: below
    /// [`crate::fold::TURN_ID_RESERVE`] it shuts this child down, spawns a fresh one,
    /// initializes it, opens [`crate::fold::Transcript::durable_session`] again and
    /// folds the attachment and the new revision's pages into the same transcript.
    /// Running out mid-turn would leave it unable to cancel, answer an approval or page
    /// the turn's history.
    pub fn ids_remaining(&self) -> usize {
        REQUEST_IDS - self.next_id
    }

    /// Writes bytes to the backend as they are, for frames this library would not send.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        let stdin = self.stdin.as_mut().ok_or(ClientError::Closed)?;
        stdin.write_all(bytes).await.map_err(ClientError::Io)?;
        stdin.flush().await.map_err(ClientError::Io)
    }

    /// The next frame no request claimed, or `None` once output ended.
    pub async fn next_incoming(&mut self) -> Option<Incoming> {
        self.incoming.recv().await
    }

    /// Like [`Self::next_incoming`], giving up after `timeout`.
    pub async fn next_incoming_within(&mut self, timeout: Duration) -> Option<Incoming> {
        tokio::time::timeout(timeout, self.incoming.recv())
            .await
            .ok()
            .flatten()
    }

    /// The backend's instance ID, once a frame arrived.
    pub fn instance_id(&self) -> Option<String> {
        self.shared
            .instance_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Closes the backend's standard input (EOF).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The child's process ID, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The child's stderr, when captured.
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Waits for the child to exit, at most `timeout`; `None` if it is still running.
    pub async fn wait_within(&mut self, timeout: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .ok()?
            .ok()
    }

    /// Kills the child.
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// The `client.tools` capability name.
pub const CLIENT_TOOLS_CAPABILITY: &str = "client.tools";

/// Checks what an admitted `initialize` advertises: the sixteen base capabilities in
/// order, then `tool.cards` with exactly schema 1's descriptor and `client.tools` with
/// its descriptor, each exactly when it was required, and nothing of them otherwise.
fn check_advertisement(
    result: &InitializeResult,
    tool_cards: bool,
    client_tools: bool,
) -> Result<(), Violation> {
    let mut expected = magi_protocol::names::base_capabilities();
    if tool_cards {
        expected.push(magi_protocol::cards::CAPABILITY.to_owned());
    }
    if client_tools {
        expected.push(CLIENT_TOOLS_CAPABILITY.to_owned());
    }
    if result.capabilities != expected {
        return Err(Violation("initialize advertised other capabilities".into()));
    }
    let cards = result
        .extensions
        .as_ref()
        .and_then(|e| e.tool_cards.as_ref());
    let cards_ok = match (tool_cards, cards) {
        (false, None) => true,
        (true, Some(d)) => *d == magi_protocol::cards::ToolCardsDescriptor::schema_1(),
        _ => false,
    };
    let tools = result
        .extensions
        .as_ref()
        .and_then(|e| e.client_tools.as_ref());
    let tools_ok = match (client_tools, tools) {
        (false, None) => true,
        (true, Some(d)) => d.schema_version == 1,
        _ => false,
    };
    let extensions_ok = result.extensions.is_some() == (tool_cards || client_tools);
    if cards_ok && tools_ok && extensions_ok {
        Ok(())
    } else {
        Err(Violation(
            "initialize advertised extension descriptors other than the ones negotiated".into(),
        ))
    }
}

/// Reads output frames, routes responses to their waiters and everything else to the
/// incoming stream, and fails every waiter when output ends or breaks the protocol.
async fn read_output(
    mut stdout: ChildStdout,
    shared: Arc<Shared>,
    incoming: mpsc::Sender<Incoming>,
) {
    let mut decoder = FrameDecoder::new();
    let mut checker = FrameChecker::default();
    let mut buffer = vec![0u8; READ_BATCH_BYTES];
    let mut units = Vec::new();
    let failure = 'reading: loop {
        let read = match stdout.read(&mut buffer).await {
            Ok(0) | Err(_) => break ClientError::Closed,
            Ok(read) => read,
        };
        decoder.feed(&buffer[..read], &mut units);
        for unit in units.drain(..) {
            checker.tool_cards = shared.tool_cards.load(std::sync::atomic::Ordering::SeqCst);
            checker.client_tools = shared
                .client_tools
                .load(std::sync::atomic::Ordering::SeqCst);
            let checked = match unit {
                Decoded::Frame(line) => checker.check(&line),
                Decoded::TooLarge => Err(Violation("output frame over the bound".into())),
            };
            if let Some(id) = checker.instance_id() {
                let mut known = shared
                    .instance_id
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                if known.is_none() {
                    *known = Some(id.to_owned());
                }
            }
            let message = match checked {
                Ok(ServerFrame::Response { seq, id, outcome }) => {
                    let response = Response { seq, id, outcome };
                    let waiter = response
                        .id
                        .as_ref()
                        .and_then(|id| shared.pending().remove(id));
                    match waiter {
                        Some(waiter) => {
                            let _ = waiter.send(Ok(response));
                            continue;
                        }
                        None => Incoming::Response(response),
                    }
                }
                Ok(ServerFrame::Event { seq, event }) => Incoming::Event { seq, event },
                Err(violation) => {
                    let _ = incoming.send(Incoming::Violation(violation.clone())).await;
                    break 'reading ClientError::Violation(violation);
                }
            };
            if incoming.send(message).await.is_err() {
                break 'reading ClientError::Closed;
            }
        }
    };
    let waiters: Vec<Waiter> = shared.pending().drain().map(|(_, w)| w).collect();
    for waiter in waiters {
        let error = match &failure {
            ClientError::Violation(v) => ClientError::Violation(v.clone()),
            _ => ClientError::Closed,
        };
        let _ = waiter.send(Err(error));
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use magi_protocol::messages::{EmptyParams, ShutdownResult, StoppingState};
    use magi_protocol::methods;

    use super::*;

    /// A backend that records each request line and answers it with the next of
    /// `answers` (results as JSON text), then waits for EOF.
    fn scripted(dir: &std::path::Path, answers: &[&str]) -> BackendCommand {
        let mut script = String::from("#!/bin/sh\n");
        for (n, result) in answers.iter().enumerate() {
            let seq = n + 1;
            script.push_str(&format!(
                "read -r line; printf '%s\\n' \"$line\" >> '{dir}/received'\n\
                 printf '%s\\n' '{{\"protocol\":\"magi-code.local-agent\",\"version\":1,\
                 \"type\":\"response\",\"instance_id\":\"i\",\"seq\":{seq},\"id\":\"c{seq}\",\
                 \"result\":{result}}}'\n",
                dir = dir.display(),
            ));
        }
        script.push_str("cat > /dev/null\n");
        let path = dir.join("backend.sh");
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        BackendCommand::new(path)
    }

    #[tokio::test]
    async fn a_typed_call_names_its_method_and_decodes_its_result_fail_closed() {
        let dir = tempfile::tempdir().unwrap();
        let mut backend = scripted(
            dir.path(),
            &[r#"{"state":"wandering"}"#, r#"{"state":"stopping"}"#],
        )
        .spawn()
        .unwrap();
        let wrong = backend.call::<methods::Shutdown>(&EmptyParams {}).await;
        assert!(
            matches!(wrong, Err(ClientError::UnexpectedResult)),
            "{wrong:?}"
        );
        let right = backend
            .call::<methods::Shutdown>(&EmptyParams {})
            .await
            .unwrap();
        assert_eq!(
            right,
            Ok(ShutdownResult {
                state: StoppingState::Stopping
            })
        );
        backend.close_stdin();
        assert!(backend.wait_within(Duration::from_secs(10)).await.is_some());
        let received = std::fs::read_to_string(dir.path().join("received")).unwrap();
        let requests: Vec<Value> = received
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(requests.len(), 2);
        for (n, request) in requests.iter().enumerate() {
            assert_eq!(request["method"], "shutdown");
            assert_eq!(request["params"], serde_json::json!({}));
            assert_eq!(request["id"], format!("c{}", n + 1));
        }
    }
}
