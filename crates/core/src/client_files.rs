//! The client's file system (`client.files`): a run's file tools read and write the
//! workspace's files through the client (an editor's buffers) once the call was let
//! run. Each read or write is announced with `client.file.read` or `client.file.write`
//! and waits for its `client.file.result` parts, the run's cancellation or the
//! timeout, whichever comes first; a withdrawn one is announced with
//! `client.file.cancel`, and any later answer for it is stale. The contract is
//! docs/protocol/client-files.md.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use magi_protocol::limits::{
    CLIENT_FILE_ERROR_BYTES, CLIENT_FILE_PART_ENCODED_BYTES, CLIENT_FILE_READ_BYTES,
    CLIENT_FILE_TIMEOUT_MS, CLIENT_FILE_WRITE_BYTES, CRITICAL_EVENT_WAIT_MS,
};
use magi_protocol::messages::{
    ClientFileCancel, ClientFileCancelReason, ClientFileRead, ClientFileResultParams,
    ClientFileWrite, Event, split_encoded,
};
use magi_tools::{EditorFiles, EditorText};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// What the client answered for a read (its text) or a write (empty), or why it
/// could not.
type FileAnswer = Result<EditorText, String>;

/// Why an answer was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It breaks the contract (a part out of order, over a bound, a write answered
    /// with text); the read or write it answered fails.
    Invalid,
    /// No read or write of the run waits for it.
    Stale,
}

/// A read or write waiting for the client.
struct Pending {
    /// `Some` for a read: its bound, the text so far and the next part's number.
    read: Option<(usize, String, u64)>,
    answer: oneshot::Sender<FileAnswer>,
}

/// The reads and writes of one run waiting for the client. Cloning shares it.
#[derive(Clone, Default)]
pub struct ClientFileGate {
    pending: Arc<Mutex<HashMap<String, Pending>>>,
}

impl ClientFileGate {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens `file_id` for its answer, a read of at most `max_bytes` when given; call
    /// it before the announcement, so an answer racing it is not lost.
    fn open(&self, file_id: &str, max_bytes: Option<usize>) -> oneshot::Receiver<FileAnswer> {
        let (answer, receiver) = oneshot::channel();
        let read = max_bytes.map(|max| (max, String::new(), 0));
        self.lock()
            .insert(file_id.to_owned(), Pending { read, answer });
        receiver
    }

    /// Withdraws `file_id`: later answers are stale.
    fn close(&self, file_id: &str) {
        self.lock().remove(file_id);
    }

    /// Takes one `client.file.result`. A part that breaks the contract fails the
    /// read or write it answers.
    pub fn answer(&self, params: ClientFileResultParams) -> Result<(), Refusal> {
        let mut pending = self.lock();
        let Some(waiting) = pending.get_mut(&params.file_id) else {
            return Err(Refusal::Stale);
        };
        let encoded = serde_json::to_string(&params.content).map_or(usize::MAX, |s| s.len());
        let verdict: Result<Option<FileAnswer>, &str> = match (&mut waiting.read, params.error) {
            (_, Some(error)) => {
                if error.len() > CLIENT_FILE_ERROR_BYTES || !params.last_part {
                    Err("a failure must be a last part with at most 1,024 bytes of error")
                } else {
                    Ok(Some(Err(magi_protocol::text::sanitize(&error))))
                }
            }
            (None, None) => {
                if params.part == 0
                    && params.last_part
                    && params.content.is_empty()
                    && !params.truncated
                {
                    Ok(Some(Ok(EditorText {
                        text: String::new(),
                        truncated: false,
                    })))
                } else {
                    Err("a write is answered with one empty part")
                }
            }
            (Some((max, text, next)), None) => {
                if params.part != *next {
                    Err("a part out of order")
                } else if encoded > CLIENT_FILE_PART_ENCODED_BYTES {
                    Err("a part over the encoded bound")
                } else if text.len() + params.content.len() > *max {
                    Err("more text than max_bytes")
                } else {
                    text.push_str(&params.content);
                    *next += 1;
                    Ok(params.last_part.then(|| {
                        Ok(EditorText {
                            text: std::mem::take(text),
                            truncated: params.truncated,
                        })
                    }))
                }
            }
        };
        match verdict {
            Ok(None) => Ok(()),
            Ok(Some(answer)) => {
                if let Some(done) = pending.remove(&params.file_id) {
                    let _ = done.answer.send(answer);
                }
                Ok(())
            }
            Err(why) => {
                if let Some(done) = pending.remove(&params.file_id) {
                    let _ = done.answer.send(Err(format!(
                        "its answer broke the client.files contract ({why})"
                    )));
                }
                Err(Refusal::Invalid)
            }
        }
    }
}

/// One call's reads and writes through the client, made from the call's blocking
/// thread.
pub(crate) struct CallFiles {
    pub(crate) gate: ClientFileGate,
    pub(crate) events: mpsc::Sender<Event>,
    pub(crate) session_id: String,
    pub(crate) run_id: String,
    pub(crate) call_id: String,
    pub(crate) cancel: CancellationToken,
    /// The run's runtime, which the waits run on.
    pub(crate) runtime: tokio::runtime::Handle,
    /// Numbers the call's reads and writes.
    pub(crate) count: AtomicU64,
}

impl CallFiles {
    fn next_id(&self) -> String {
        let n = self.count.fetch_add(1, Ordering::SeqCst);
        // Unique in the run, whatever the provider's call IDs look like.
        format!("file-{}-{n}", uuid::Uuid::new_v4().simple())
    }

    /// Sends `event` within the critical bound; a run whose events cannot be
    /// delivered is cancelled, as for every critical event.
    async fn send(&self, event: Event) -> Result<(), String> {
        let wait = Duration::from_millis(CRITICAL_EVENT_WAIT_MS);
        if self.events.send_timeout(event, wait).await.is_err() {
            self.cancel.cancel();
            return Err("the client could not be told (its output is lost)".into());
        }
        Ok(())
    }

    /// Announces `events` for `file_id` (opened already) and waits for its answer.
    async fn exchange(
        &self,
        file_id: &str,
        answer: oneshot::Receiver<FileAnswer>,
        events: Vec<Event>,
    ) -> FileAnswer {
        for event in events {
            if let Err(why) = self.send(event).await {
                self.gate.close(file_id);
                return Err(why);
            }
        }
        let timeout = tokio::time::sleep(Duration::from_millis(CLIENT_FILE_TIMEOUT_MS));
        let reason = tokio::select! {
            answered = answer => match answered {
                Ok(answer) => return answer,
                Err(_) => ClientFileCancelReason::Cancelled,
            },
            () = self.cancel.cancelled() => ClientFileCancelReason::Cancelled,
            () = timeout => ClientFileCancelReason::TimedOut,
        };
        self.gate.close(file_id);
        let _ = self
            .send(Event::ClientFileCancel(ClientFileCancel {
                session_id: self.session_id.clone(),
                run_id: self.run_id.clone(),
                file_id: file_id.to_owned(),
                reason,
            }))
            .await;
        Err(match reason {
            ClientFileCancelReason::Cancelled => "the call was cancelled first".into(),
            ClientFileCancelReason::TimedOut => {
                format!("no answer within {CLIENT_FILE_TIMEOUT_MS} ms")
            }
        })
    }
}

impl EditorFiles for CallFiles {
    fn read(&self, path: &Path, max_bytes: usize) -> Result<EditorText, String> {
        let max_bytes = max_bytes.min(CLIENT_FILE_READ_BYTES);
        let file_id = self.next_id();
        let answer = self.gate.open(&file_id, Some(max_bytes));
        let event = Event::ClientFileRead(Box::new(ClientFileRead {
            session_id: self.session_id.clone(),
            run_id: self.run_id.clone(),
            call_id: self.call_id.clone(),
            file_id: file_id.clone(),
            path: path.display().to_string(),
            max_bytes: max_bytes as u64,
            timeout_ms: CLIENT_FILE_TIMEOUT_MS,
        }));
        self.runtime
            .block_on(self.exchange(&file_id, answer, vec![event]))
    }

    fn write(&self, path: &Path, content: &str) -> Result<(), String> {
        if content.len() > CLIENT_FILE_WRITE_BYTES {
            return Err(format!(
                "the text is over the {CLIENT_FILE_WRITE_BYTES}-byte bound"
            ));
        }
        let file_id = self.next_id();
        let answer = self.gate.open(&file_id, None);
        let parts = split_encoded(content, CLIENT_FILE_PART_ENCODED_BYTES);
        let last = parts.len().saturating_sub(1);
        let events = parts
            .into_iter()
            .enumerate()
            .map(|(part, text)| {
                Event::ClientFileWrite(Box::new(ClientFileWrite {
                    session_id: self.session_id.clone(),
                    run_id: self.run_id.clone(),
                    call_id: self.call_id.clone(),
                    file_id: file_id.clone(),
                    path: path.display().to_string(),
                    part: part as u64,
                    last_part: part == last,
                    content: text.to_owned(),
                    timeout_ms: CLIENT_FILE_TIMEOUT_MS,
                }))
            })
            .collect();
        self.runtime
            .block_on(self.exchange(&file_id, answer, events))
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(file_id: &str, part: u64, last_part: bool, content: &str) -> ClientFileResultParams {
        ClientFileResultParams {
            session_id: "s".into(),
            run_id: "r".into(),
            file_id: file_id.into(),
            part,
            last_part,
            content: content.into(),
            truncated: false,
            error: None,
        }
    }

    #[test]
    fn a_read_takes_its_parts_in_order_within_its_bound() {
        let gate = ClientFileGate::default();
        let mut read = gate.open("f1", Some(10));
        assert_eq!(gate.answer(part("f2", 0, true, "")), Err(Refusal::Stale));
        assert_eq!(gate.answer(part("f1", 0, false, "abc")), Ok(()));
        assert_eq!(gate.answer(part("f1", 1, true, "def")), Ok(()));
        assert_eq!(
            read.try_recv().unwrap(),
            Ok(EditorText {
                text: "abcdef".into(),
                truncated: false
            })
        );
        assert_eq!(gate.answer(part("f1", 2, true, "")), Err(Refusal::Stale));

        let mut read = gate.open("f3", Some(4));
        assert_eq!(
            gate.answer(part("f3", 0, true, "too long")),
            Err(Refusal::Invalid)
        );
        assert!(read.try_recv().unwrap().unwrap_err().contains("max_bytes"));
        let mut read = gate.open("f4", Some(4));
        assert_eq!(gate.answer(part("f4", 1, true, "")), Err(Refusal::Invalid));
        assert!(read.try_recv().unwrap().is_err());
    }

    #[test]
    fn a_write_takes_one_empty_answer_or_a_failure() {
        let gate = ClientFileGate::default();
        let mut write = gate.open("w1", None);
        assert_eq!(gate.answer(part("w1", 0, true, "")), Ok(()));
        assert!(write.try_recv().unwrap().is_ok());
        let mut write = gate.open("w2", None);
        let mut failed = part("w2", 0, true, "");
        failed.error = Some("read-only buffer\u{7}".into());
        assert_eq!(gate.answer(failed), Ok(()));
        assert_eq!(write.try_recv().unwrap(), Err("read-only buffer".into()));
        let mut write = gate.open("w3", None);
        assert_eq!(gate.answer(part("w3", 0, true, "x")), Err(Refusal::Invalid));
        assert!(write.try_recv().unwrap().is_err());
        gate.open("w4", None);
        gate.close("w4");
        assert_eq!(gate.answer(part("w4", 0, true, "")), Err(Refusal::Stale));
    }
}
