//! A spawned backend child and the connection to it.
//!
//! The parts: `command` (how the child is started), `pending` (responses and the
//! answers still to come), `negotiation` (the extensions an `initialize` turns on) and
//! `reader` (the task that reads the child's output and routes its frames).

use std::collections::HashMap;
use std::marker::PhantomData;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use magi_protocol::limits::REQUEST_IDS;
use magi_protocol::messages::{
    ClientToolDefinition, EmptyParams, InitializeParams, InitializeResult, ShutdownResult,
    StatusResult,
};
use magi_protocol::{ErrorCode, Method, MethodName, PROTOCOL_NAME, PROTOCOL_VERSION};
use magi_protocol::{Request, methods};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot};

use crate::ClientError;

mod command;
mod ending;
mod negotiation;
mod pending;
mod reader;

pub use command::BackendCommand;
pub use ending::BackendEnd;
pub use pending::{PendingCall, PendingResponse, Response};
pub use reader::Incoming;

use negotiation::Negotiation;

type Waiter = oneshot::Sender<Result<Response, ClientError>>;

/// What the connection and its reader share.
#[derive(Default)]
struct Shared {
    /// Requests sent and not yet answered.
    pending: Mutex<Pending>,
    instance_id: Mutex<Option<String>>,
    /// The extensions `initialize` admitted (`ExtensionSet::bits`), set once it
    /// did: from then on the reader accepts what they add to frames and expects the
    /// fields they make present.
    negotiated: std::sync::atomic::AtomicU32,
}

/// The requests waiting for their responses, and whether any more can get one.
#[derive(Default)]
struct Pending {
    /// By request ID.
    waiters: HashMap<String, Waiter>,
    /// Set when the reader ended (with the violation, if that is why): a request sent
    /// after that fails at once instead of waiting for an answer that cannot come.
    ended: Option<Option<crate::Violation>>,
}

impl Pending {
    /// The error a request meets once the reader has ended.
    fn ended_error(&self) -> Option<ClientError> {
        self.ended.as_ref().map(|why| match why {
            Some(violation) => ClientError::Violation(violation.clone()),
            None => ClientError::Closed,
        })
    }
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running backend child.
pub struct Backend {
    child: Child,
    stdin: Option<ChildStdin>,
    shared: Arc<Shared>,
    incoming: mpsc::Receiver<Incoming>,
    next_id: usize,
    /// The newest of what the child wrote on stderr, read as it comes.
    stderr: Arc<ending::StderrTail>,
    /// Turns true once the child's stderr ended.
    stderr_ended: tokio::sync::watch::Receiver<bool>,
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
        {
            let mut pending = self.shared.pending();
            if let Some(error) = pending.ended_error() {
                return Err(error);
            }
            pending.waiters.insert(id.clone(), sender);
        }
        let mut line = frame.to_string().into_bytes();
        line.push(b'\n');
        if let Err(e) = self.send_raw(&line).await {
            self.shared.pending().waiters.remove(&id);
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

    /// The newest of what the child wrote on stderr (at most
    /// [`BACKEND_STDERR_TAIL_BYTES`](magi_protocol::limits::BACKEND_STDERR_TAIL_BYTES)),
    /// once its stderr ended or `timeout` passed, whichever comes first.
    pub async fn stderr_within(&mut self, timeout: Duration) -> String {
        let _ = tokio::time::timeout(timeout, self.stderr_ended.wait_for(|ended| *ended)).await;
        self.stderr.text()
    }

    /// How the child ended: its exit status (waited for at most `timeout`), the crash
    /// it told if it died of a bug, and the tail of its stderr. Every front end says a
    /// backend's end with [`BackendEnd::describe`].
    pub async fn end_within(&mut self, timeout: Duration) -> BackendEnd {
        let deadline = tokio::time::Instant::now() + timeout;
        let status = self.wait_within(timeout).await;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let stderr = self.stderr_within(left).await;
        BackendEnd::of(status, &stderr)
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use magi_protocol::messages::{EmptyParams, ShutdownResult, StoppingState};
    use magi_protocol::methods;

    use super::*;

    /// A backend that records each request line and answers it with the next of
    /// `answers` (results as JSON text), then waits for EOF.
    fn scripted(dir: &std::path::Path, answers: &[&str]) -> Scripted {
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
        Scripted(BackendCommand::new(path))
    }

    /// A scripted backend's command.
    struct Scripted(BackendCommand);

    impl Scripted {
        /// Starts it. A test on another thread that forks while this one still has the
        /// script open for writing holds a copy of that descriptor until its child
        /// execs, and meanwhile the kernel refuses to run the script (`ETXTBSY`): that
        /// passes in moments, so it is tried again, a bounded number of times.
        fn spawn(&self) -> Result<Backend, ClientError> {
            for _ in 0..200 {
                match self.0.spawn() {
                    Err(ClientError::Spawn(e))
                        if e.kind() == std::io::ErrorKind::ExecutableFileBusy =>
                    {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    other => return other,
                }
            }
            self.0.spawn()
        }
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

    #[tokio::test]
    async fn a_request_after_a_violation_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        // The answer is not a frame of the protocol: the reader stops there.
        let mut backend = scripted(dir.path(), &["not json"]).spawn().unwrap();
        let first = backend.call::<methods::Shutdown>(&EmptyParams {}).await;
        assert!(matches!(first, Err(ClientError::Violation(_))), "{first:?}");
        // Nothing would ever answer a later request: it fails instead of waiting.
        let later = tokio::time::timeout(
            Duration::from_secs(10),
            backend.call::<methods::Shutdown>(&EmptyParams {}),
        )
        .await
        .expect("a request after the reader ended fails at once");
        assert!(matches!(later, Err(ClientError::Violation(_))), "{later:?}");
        backend.close_stdin();
        assert!(backend.wait_within(Duration::from_secs(10)).await.is_some());
    }
}
