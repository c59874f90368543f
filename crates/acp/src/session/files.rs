//! The editor's file system for the session's backend (`client.files`): when the
//! client offers `fs.readTextFile` and `fs.writeTextFile`, the backend's file tools
//! ask for a file's text or hand its new text over, and each ask becomes
//! `fs/read_text_file` or `fs/write_text_file` to the client. The backend checked the
//! call first (permissions, workspace, sandbox); here it is only carried. Each request
//! runs on a task of its own, bounded by the extension's timeout, and its answer comes
//! back to the session's loop, which hands it to the backend in parts.

use std::collections::HashMap;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    ClientCapabilities, ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest,
};
use magi_protocol::limits::{
    CLIENT_FILE_ERROR_BYTES, CLIENT_FILE_PART_ENCODED_BYTES, CLIENT_FILE_TIMEOUT_MS,
    CLIENT_FILE_WRITE_BYTES,
};
use magi_protocol::messages::{ClientFileResultParams, Event, split_encoded};
use magi_protocol::methods;
use tokio::sync::mpsc;

use super::Session;
use crate::rpc::{Peer, Unanswered};

/// Whether the client offers both file methods: only then do the backend's file tools
/// use them (reading from the editor and writing to the disk would part the two).
pub(crate) fn offered(client: Option<&ClientCapabilities>) -> bool {
    client.is_some_and(|c| c.fs.read_text_file && c.fs.write_text_file)
}

/// What the client answered for one read or write.
pub(crate) struct Done {
    run_id: String,
    file_id: String,
    /// A read's text and its bound, or a write's end (`None`); or the client's error.
    outcome: Result<Option<(String, usize)>, String>,
}

/// The session's reads and writes in progress.
pub(crate) struct Files {
    done: mpsc::UnboundedReceiver<Done>,
    sender: mpsc::UnboundedSender<Done>,
    /// The parts of each write received so far: its path and text.
    writes: HashMap<String, (String, String)>,
}

impl Files {
    pub(crate) fn new() -> Files {
        let (sender, done) = mpsc::unbounded_channel();
        Files {
            done,
            sender,
            writes: HashMap::new(),
        }
    }

    /// The next answer from the client.
    pub(crate) async fn next(&mut self) -> Option<Done> {
        self.done.recv().await
    }
}

/// The client's words for a failed request, bounded for the backend.
fn why(failure: Unanswered) -> String {
    let text = match failure {
        Unanswered::Error(e) => match e.data {
            Some(data) => format!("{} ({data})", e.message),
            None => e.message,
        },
        Unanswered::NoAnswer => "no answer in time".into(),
        Unanswered::TooMany => "too many requests wait on the editor".into(),
    };
    let mut end = text.len().min(CLIENT_FILE_ERROR_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// How long the client gets: the backend's own wait, less a margin for the answer to
/// reach it before it withdraws the ask.
fn wait() -> Duration {
    Duration::from_millis(CLIENT_FILE_TIMEOUT_MS.saturating_sub(1_000))
}

async fn read(peer: Peer, session_id: String, path: String) -> Result<String, String> {
    let request = ReadTextFileRequest::new(session_id, path);
    let params = serde_json::to_value(&request).map_err(|e| e.to_string())?;
    let result = peer
        .request("fs/read_text_file", params, wait())
        .await
        .map_err(why)?;
    serde_json::from_value::<ReadTextFileResponse>(result)
        .map(|response| response.content)
        .map_err(|e| format!("the editor's answer was not a file's text: {e}"))
}

async fn write(peer: Peer, session_id: String, path: String, text: String) -> Result<(), String> {
    let request = WriteTextFileRequest::new(session_id, path, text);
    let params = serde_json::to_value(&request).map_err(|e| e.to_string())?;
    peer.request("fs/write_text_file", params, wait())
        .await
        .map(drop)
        .map_err(why)
}

impl Session {
    /// Takes the backend's `client.files` events; any other event comes back.
    pub(super) fn file_event(&mut self, event: Event) -> Option<Event> {
        let run_id = self.turn.as_ref().map(|turn| turn.run_id.clone());
        match event {
            Event::ClientFileRead(ask) if Some(&ask.run_id) == run_id.as_ref() => {
                let ask = *ask;
                let (peer, sender, id) = (
                    self.peer.clone(),
                    self.files.sender.clone(),
                    self.id.clone(),
                );
                let max = usize::try_from(ask.max_bytes).unwrap_or(usize::MAX);
                tokio::spawn(async move {
                    let outcome = read(peer, id, ask.path).await.map(|text| Some((text, max)));
                    let _ = sender.send(Done {
                        run_id: ask.run_id,
                        file_id: ask.file_id,
                        outcome,
                    });
                });
                None
            }
            Event::ClientFileWrite(part) if Some(&part.run_id) == run_id.as_ref() => {
                let part = *part;
                let entry = self
                    .files
                    .writes
                    .entry(part.file_id.clone())
                    .or_insert_with(|| (part.path.clone(), String::new()));
                // The backend keeps within the bound; a write past it is not the
                // editor's to take.
                if entry.1.len() + part.content.len() <= CLIENT_FILE_WRITE_BYTES {
                    entry.1.push_str(&part.content);
                }
                if part.last_part
                    && let Some((path, text)) = self.files.writes.remove(&part.file_id)
                {
                    let (peer, sender, id) = (
                        self.peer.clone(),
                        self.files.sender.clone(),
                        self.id.clone(),
                    );
                    tokio::spawn(async move {
                        let outcome = write(peer, id, path, text).await.map(|()| None);
                        let _ = sender.send(Done {
                            run_id: part.run_id,
                            file_id: part.file_id,
                            outcome,
                        });
                    });
                }
                None
            }
            Event::ClientFileCancel(cancel) => {
                self.files.writes.remove(&cancel.file_id);
                None
            }
            Event::ClientFileRead(_) | Event::ClientFileWrite(_) => None,
            other => Some(other),
        }
    }

    /// Hands the client's answer to the backend: a read's text in parts, a write's end,
    /// or the client's error. An answer for a run that is over is dropped (the backend
    /// withdrew the ask already).
    pub(super) async fn file_done(&mut self, done: Done) {
        let current = self
            .turn
            .as_ref()
            .is_some_and(|turn| turn.run_id == done.run_id);
        if !current {
            return;
        }
        let part = |part: usize, last_part: bool, content: &str| ClientFileResultParams {
            session_id: self.id.clone(),
            run_id: done.run_id.clone(),
            file_id: done.file_id.clone(),
            part: part as u64,
            last_part,
            content: content.to_owned(),
            truncated: false,
            error: None,
        };
        let answers = match &done.outcome {
            Ok(Some((text, max))) => {
                let mut end = text.len().min(*max);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                let parts = split_encoded(&text[..end], CLIENT_FILE_PART_ENCODED_BYTES);
                let last = parts.len().saturating_sub(1);
                let mut answers: Vec<_> = parts
                    .iter()
                    .enumerate()
                    .map(|(n, content)| part(n, n == last, content))
                    .collect();
                if let Some(last) = answers.last_mut() {
                    last.truncated = end < text.len();
                }
                answers
            }
            Ok(None) => vec![part(0, true, "")],
            Err(why) => vec![ClientFileResultParams {
                error: Some(why.clone()),
                ..part(0, true, "")
            }],
        };
        for answer in answers {
            // A refused part (the ask was withdrawn) ends the read at the backend; its
            // end is seen there.
            if self
                .backend
                .send::<methods::ClientFileResult>(&answer)
                .await
                .is_err()
            {
                return;
            }
        }
    }
}
