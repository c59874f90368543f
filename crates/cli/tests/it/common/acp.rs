//! An ACP client for the tests of `magi-code acp`: the real binary on pipes, JSON-RPC
//! lines written and read with bounded waits, the agent's own requests answered by the
//! test, and the session updates kept decoded as the schema crate's client types.

use std::collections::VecDeque;
use std::process::Stdio;

use agent_client_protocol_schema::v1::{SessionNotification, SessionUpdate};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::{TestEnv, WAIT, bin};

/// A running `magi-code acp` and what it sent that no call claimed yet.
pub struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: i64,
    /// Session updates, in arrival order.
    pub updates: Vec<SessionNotification>,
    /// Messages no call claimed (responses to raw lines, unanswered agent requests).
    pub other: VecDeque<Value>,
}

impl Acp {
    /// Starts `magi-code acp` in `env`'s workspace with `env`'s variables.
    pub fn spawn(env: &TestEnv) -> Acp {
        let stderr = std::fs::File::create(env.root().join("acp-stderr.txt")).unwrap();
        let mut child = tokio::process::Command::new(bin())
            .arg("acp")
            .env_clear()
            .env("MC_HOME", env.mc_home())
            .envs(env.vars())
            .current_dir(env.cwd())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Acp {
            child,
            stdin,
            lines,
            next_id: 0,
            updates: Vec::new(),
            other: VecDeque::new(),
        }
    }

    /// Writes one line as it is.
    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Sends a request and returns its ID.
    pub async fn send(&mut self, method: &str, params: impl serde::Serialize) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&message.to_string()).await;
        id
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: impl serde::Serialize) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_line(&message.to_string()).await;
    }

    /// The next message, within [`WAIT`].
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("a message within the wait")
            .unwrap()
            .expect("the agent's output ended");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and waits for its response, keeping updates and answering the
    /// agent's requests with `answer` (method and params to result; `None` leaves one
    /// unanswered, in [`Self::other`]).
    pub async fn call_with(
        &mut self,
        method: &str,
        params: impl serde::Serialize,
        answer: impl FnMut(&str, &Value) -> Option<Value>,
    ) -> Result<Value, Value> {
        let id = self.send(method, params).await;
        self.until_response(id, answer).await
    }

    /// [`Self::call_with`] answering nothing.
    pub async fn call(
        &mut self,
        method: &str,
        params: impl serde::Serialize,
    ) -> Result<Value, Value> {
        self.call_with(method, params, |_, _| None).await
    }

    /// Reads until the response to `id`.
    pub async fn until_response(
        &mut self,
        id: i64,
        mut answer: impl FnMut(&str, &Value) -> Option<Value>,
    ) -> Result<Value, Value> {
        loop {
            let message = self.next().await;
            if let Some(done) = self.take(message, id, &mut answer).await {
                return done;
            }
        }
    }

    /// Files one message; the outcome when it is the response to `id`.
    async fn take(
        &mut self,
        message: Value,
        id: i64,
        answer: &mut impl FnMut(&str, &Value) -> Option<Value>,
    ) -> Option<Result<Value, Value>> {
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        match (
            message.get("method").and_then(Value::as_str),
            message.get("id"),
        ) {
            (Some("session/update"), None) => {
                let update: SessionNotification = serde_json::from_value(message["params"].clone())
                    .unwrap_or_else(|e| panic!("not a session/update ({e}): {message}"));
                self.updates.push(update);
                None
            }
            (Some(method), Some(request)) => {
                match answer(method, &message["params"]) {
                    Some(result) => {
                        let reply = json!({"jsonrpc": "2.0", "id": request, "result": result});
                        self.send_line(&reply.to_string()).await;
                    }
                    None => self.other.push_back(message),
                }
                None
            }
            (None, Some(got)) if *got == json!(id) => Some(match message.get("error") {
                Some(error) => Err(error.clone()),
                None => Ok(message["result"].clone()),
            }),
            _ => {
                self.other.push_back(message);
                None
            }
        }
    }

    /// Reads (keeping updates) until `seen` holds for the updates so far.
    pub async fn until_update(&mut self, mut seen: impl FnMut(&[SessionNotification]) -> bool) {
        while !seen(&self.updates) {
            let message = self.next().await;
            let _ = self.take(message, -1, &mut |_, _| None).await;
        }
    }

    /// The text of the agent message chunks so far, in order.
    pub fn agent_text(&self) -> String {
        self.updates
            .iter()
            .filter_map(|n| match &n.update {
                SessionUpdate::AgentMessageChunk(chunk) => Some(text_of(&chunk.content)),
                _ => None,
            })
            .collect()
    }

    /// Closes stdin and waits for the agent to exit; its exit status.
    pub async fn finish(mut self) -> std::process::ExitStatus {
        self.stdin = None;
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("the agent exits when its input ends")
            .unwrap()
    }
}

/// A text content block's text.
pub fn text_of(block: &agent_client_protocol_schema::v1::ContentBlock) -> String {
    match block {
        agent_client_protocol_schema::v1::ContentBlock::Text(text) => text.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}
