//! `bash` calls in the editor's terminal (`client.terminals`, negotiated with the
//! backend when the editor offers `terminal` and run only when `[acp]
//! client_terminals` is on): `terminal/create` with the command for the user's shell,
//! the terminal embedded in the tool call, `terminal/wait_for_exit` bounded by the
//! call's timeout (`terminal/kill` on timeout or withdrawal), `terminal/output` for what
//! the model is given, then `terminal/release`; the end goes back to the backend as
//! `client.terminal.result`.

use std::collections::HashMap;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, ReleaseTerminalRequest,
    SessionUpdate, Terminal, TerminalExitStatus, TerminalOutputRequest, TerminalOutputResponse,
    ToolCall, ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
};
use magi_protocol::limits::{ACP_TERMINAL_REQUEST_MS, CLIENT_TERMINAL_OUTPUT_BYTES};
use magi_protocol::messages::{
    ClientTerminalCancel, ClientTerminalOutcome, ClientTerminalResultParams, ClientTerminalRun,
    Event,
};
use magi_protocol::methods;
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, oneshot};

use super::Session;
use crate::rpc::{Peer, Unanswered};

/// Most bytes of `output` once JSON-escaped: the result must fit the backend's input
/// frame (64 KiB) with its envelope.
const ESCAPED_OUTPUT_BYTES: usize = 49_152;

/// What a terminal's task tells its session.
pub(crate) enum Note {
    /// The terminal exists: embed it in the call's tool call.
    Created {
        run_id: String,
        activity_id: String,
        terminal_id: String,
    },
    /// The command ended (or could not run): the backend's answer.
    Ended(ClientTerminalResultParams),
}

/// The terminals of a session: the running ones, and those embedded in the current
/// run's tool calls.
#[derive(Default)]
pub(crate) struct Terminals {
    /// Withdraws a running call's command, by call.
    running: HashMap<String, oneshot::Sender<()>>,
    /// The run the embedded terminals belong to, and its terminals by tool call.
    embedded: (String, HashMap<String, String>),
    notes: Option<mpsc::UnboundedSender<Note>>,
}

impl Terminals {
    /// The terminals of a session whose tasks report on `notes`.
    pub(crate) fn new(notes: mpsc::UnboundedSender<Note>) -> Terminals {
        Terminals {
            notes: Some(notes),
            ..Terminals::default()
        }
    }

    /// `call` with the terminal its command runs in as its first content, when it has
    /// one: later card snapshots keep showing it.
    pub(crate) fn embed(&self, mut call: ToolCall) -> ToolCall {
        if let Some(terminal_id) = self.embedded.1.get(&call.tool_call_id.to_string()) {
            call.content.insert(
                0,
                ToolCallContent::Terminal(Terminal::new(terminal_id.clone())),
            );
        }
        call
    }
}

/// The shell a command line runs with: the user's, else `sh`.
fn shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "sh".to_owned())
}

/// The end of `text` that fits both the byte bound and, escaped, the frame: whether
/// anything was cut, and the kept text.
fn tail(text: &str) -> (bool, String) {
    let mut bytes = 0;
    let mut escaped = 0;
    let mut start = text.len();
    for (at, c) in text.char_indices().rev() {
        let width = match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if bytes + c.len_utf8() > CLIENT_TERMINAL_OUTPUT_BYTES
            || escaped + width > ESCAPED_OUTPUT_BYTES
        {
            break;
        }
        bytes += c.len_utf8();
        escaped += width;
        start = at;
    }
    (start > 0, text[start..].to_owned())
}

/// A request to the client, its result read as `T`; why not, in words.
async fn ask<T: DeserializeOwned>(
    peer: &Peer,
    method: &str,
    params: impl serde::Serialize,
    wait: Duration,
) -> Result<T, String> {
    let params = serde_json::to_value(params).map_err(|e| e.to_string())?;
    match peer.request(method, params, wait).await {
        Ok(value) => {
            serde_json::from_value(value).map_err(|e| format!("{method}: unexpected result: {e}"))
        }
        Err(Unanswered::Error(e)) => Err(format!("{method} failed: {}", e.message)),
        Err(Unanswered::NoAnswer) => Err(format!("{method}: no answer in time")),
        Err(Unanswered::TooMany) => Err(format!("{method}: too many requests waiting")),
    }
}

/// One command in the client's terminal, from `terminal/create` to `terminal/release`.
async fn run(
    peer: Peer,
    session_id: String,
    order: ClientTerminalRun,
    mut withdrawn: oneshot::Receiver<()>,
    notes: mpsc::UnboundedSender<Note>,
) {
    let bound = Duration::from_millis(ACP_TERMINAL_REQUEST_MS);
    let mut result = ClientTerminalResultParams {
        session_id: order.session_id.clone(),
        run_id: order.run_id.clone(),
        call_id: order.call_id.clone(),
        outcome: ClientTerminalOutcome::Failed,
        exit_code: None,
        signal: None,
        output: String::new(),
        truncated: false,
    };
    let create = CreateTerminalRequest::new(session_id.clone(), shell())
        .args(vec!["-c".to_owned(), order.command.clone()])
        .cwd(std::path::PathBuf::from(&order.cwd))
        .output_byte_limit(order.output_bytes.min(CLIENT_TERMINAL_OUTPUT_BYTES as u64));
    let terminal_id =
        match ask::<CreateTerminalResponse>(&peer, "terminal/create", create, bound).await {
            Ok(created) => created.terminal_id.to_string(),
            Err(why) => {
                result.output = tail(&why).1;
                let _ = notes.send(Note::Ended(result));
                return;
            }
        };
    let _ = notes.send(Note::Created {
        run_id: order.run_id.clone(),
        activity_id: order.activity_id.clone(),
        terminal_id: terminal_id.clone(),
    });
    let exit = {
        let params = WaitForTerminalExitRequest::new(session_id.clone(), terminal_id.clone());
        let waiting = ask::<WaitForTerminalExitResponse>(
            &peer,
            "terminal/wait_for_exit",
            params,
            Duration::from_millis(order.timeout_ms),
        );
        tokio::pin!(waiting);
        tokio::select! {
            exited = &mut waiting => exited.map(|e| e.exit_status),
            _ = &mut withdrawn => {
                kill(&peer, &session_id, &terminal_id).await;
                // The kill ends the wait; the call is withdrawn either way, so the
                // release waits no longer than one request's bound for it.
                let _ = tokio::time::timeout(bound, waiting).await;
                release(&peer, &session_id, &terminal_id).await;
                return;
            }
        }
    };
    let timed_out = exit.is_err();
    if timed_out {
        kill(&peer, &session_id, &terminal_id).await;
    }
    let params = TerminalOutputRequest::new(session_id.clone(), terminal_id.clone());
    let output = ask::<TerminalOutputResponse>(&peer, "terminal/output", params, bound).await;
    release(&peer, &session_id, &terminal_id).await;
    let status: Option<TerminalExitStatus> = match &output {
        Ok(output) => output.exit_status.clone().or(exit.ok()),
        Err(_) => exit.ok(),
    };
    match output {
        Ok(output) => {
            let (cut, text) = tail(&output.output);
            result.output = text;
            result.truncated = output.truncated || cut;
            result.outcome = if timed_out {
                ClientTerminalOutcome::TimedOut
            } else {
                ClientTerminalOutcome::Exited
            };
        }
        Err(why) => result.output = tail(&why).1,
    }
    if let Some(status) = status {
        result.exit_code = status.exit_code.and_then(|c| i32::try_from(c).ok());
        result.signal = status
            .signal
            .filter(|s| magi_protocol::names::is_valid_name(s) && s.len() <= 64);
    }
    let _ = notes.send(Note::Ended(result));
}

async fn kill(peer: &Peer, session_id: &str, terminal_id: &str) {
    let params = KillTerminalRequest::new(session_id.to_owned(), terminal_id.to_owned());
    let bound = Duration::from_millis(ACP_TERMINAL_REQUEST_MS);
    if let Err(why) = ask::<serde_json::Value>(peer, "terminal/kill", params, bound).await {
        eprintln!("magi-code acp: session {session_id}: {why}");
    }
}

async fn release(peer: &Peer, session_id: &str, terminal_id: &str) {
    let params = ReleaseTerminalRequest::new(session_id.to_owned(), terminal_id.to_owned());
    let bound = Duration::from_millis(ACP_TERMINAL_REQUEST_MS);
    if let Err(why) = ask::<serde_json::Value>(peer, "terminal/release", params, bound).await {
        eprintln!("magi-code acp: session {session_id}: {why}");
    }
}

impl Session {
    /// Takes the backend's terminal events; hands every other event back.
    pub(super) fn terminal_event(&mut self, event: Event) -> Option<Event> {
        match event {
            Event::ClientTerminalRun(order) => {
                let (withdraw, withdrawn) = oneshot::channel();
                self.terminals
                    .running
                    .insert(order.call_id.clone(), withdraw);
                if let Some(notes) = self.terminals.notes.clone() {
                    tokio::spawn(run(
                        self.peer.clone(),
                        self.id.clone(),
                        *order,
                        withdrawn,
                        notes,
                    ));
                }
                None
            }
            Event::ClientTerminalCancel(ClientTerminalCancel { call_id, .. }) => {
                if let Some(withdraw) = self.terminals.running.remove(&call_id) {
                    let _ = withdraw.send(());
                }
                None
            }
            other => Some(other),
        }
    }

    /// What a terminal's task reported.
    pub(super) async fn terminal_note(&mut self, note: Note) {
        match note {
            Note::Created {
                run_id,
                activity_id,
                terminal_id,
            } => {
                if self.terminals.embedded.0 != run_id {
                    self.terminals.embedded = (run_id, HashMap::new());
                }
                self.terminals
                    .embedded
                    .1
                    .insert(activity_id.clone(), terminal_id.clone());
                let fields = ToolCallUpdateFields::new()
                    .content(vec![ToolCallContent::Terminal(Terminal::new(terminal_id))]);
                let update = ToolCallUpdate::new(activity_id, fields);
                self.update(SessionUpdate::ToolCallUpdate(update)).await;
            }
            Note::Ended(result) => {
                // A withdrawn call takes no answer.
                if self.terminals.running.remove(&result.call_id).is_some() {
                    let _ = self
                        .backend
                        .send::<methods::ClientTerminalResult>(&result)
                        .await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes_within_both_bounds() {
        assert_eq!(tail("short"), (false, "short".to_owned()));
        let long = format!("{}end", "a".repeat(CLIENT_TERMINAL_OUTPUT_BYTES));
        let (cut, kept) = tail(&long);
        assert!(cut);
        assert!(kept.ends_with("end") && kept.len() == CLIENT_TERMINAL_OUTPUT_BYTES);
        let quotes = "\"".repeat(CLIENT_TERMINAL_OUTPUT_BYTES);
        let (cut, kept) = tail(&quotes);
        assert!(cut);
        assert!(serde_json::to_string(&kept).unwrap().len() <= ESCAPED_OUTPUT_BYTES + 2);
    }
}
