//! The reader of the child's output: each frame checked, responses routed to their
//! waiters, everything else to the incoming stream.

use std::sync::{Arc, PoisonError};

use magi_protocol::extensions::ExtensionSet;
use magi_protocol::frame::{Decoded, FrameDecoder};
use magi_protocol::limits::READ_BATCH_BYTES;
use magi_protocol::messages::Event;
use tokio::io::AsyncReadExt;
use tokio::process::ChildStdout;
use tokio::sync::mpsc;

use super::pending::Response;
use super::{Shared, Waiter};
use crate::ClientError;
use crate::decode::{FrameChecker, ServerFrame, Violation};

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
    /// A response to a request this client did not send through
    /// [`Backend::send`](super::Backend::send) or
    /// [`Backend::send_request_raw`](super::Backend::send_request_raw) (raw frames), or
    /// with `id=null`.
    Response(Response),
    /// The backend broke the protocol; nothing follows.
    Violation(Violation),
}

/// Reads output frames, routes responses to their waiters and everything else to the
/// incoming stream, and fails every waiter when output ends or breaks the protocol.
pub(super) async fn read_output(
    mut stdout: ChildStdout,
    shared: Arc<Shared>,
    incoming: mpsc::Sender<Incoming>,
) {
    // Whatever ends the reading, a panic included, every waiter is answered.
    let mut ended = EndsWaiters {
        shared: Arc::clone(&shared),
        failure: ClientError::Closed,
    };
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
            checker.negotiated = ExtensionSet::from_bits(
                shared.negotiated.load(std::sync::atomic::Ordering::SeqCst),
            );
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
                        .and_then(|id| shared.pending().waiters.remove(id));
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
    ended.failure = failure;
}

/// Answers every request still waiting when the reader ends, however it ends (a panic
/// unwinding through it too), with why it ended.
struct EndsWaiters {
    shared: Arc<Shared>,
    failure: ClientError,
}

impl Drop for EndsWaiters {
    fn drop(&mut self) {
        // Marked ended under the lock that adds requests: a later one fails at once.
        let waiters: Vec<Waiter> = {
            let mut pending = self.shared.pending();
            pending.ended = Some(match &self.failure {
                ClientError::Violation(violation) => Some(violation.clone()),
                _ => None,
            });
            pending.waiters.drain().map(|(_, w)| w).collect()
        };
        for waiter in waiters {
            let error = match &self.failure {
                ClientError::Violation(v) => ClientError::Violation(v.clone()),
                _ => ClientError::Closed,
            };
            let _ = waiter.send(Err(error));
        }
    }
}
