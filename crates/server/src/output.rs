//! The one ordered, non-blocking writer of every protocol byte.
//!
//! Frames get their sequence number when they are enqueued, under the same lock that
//! orders the queue, so `seq` increases in write order across all output. A frame is
//! written straight away when nothing is queued and the pipe has room; otherwise it
//! waits in a queue of at most [`PENDING_OUTPUT_FRAMES`] frames (the one being written
//! included). Each frame must be fully written within [`OUTPUT_DEADLINE_MS`] of being
//! enqueued; partial writes do not extend that. Overflow, a missed deadline or a broken
//! pipe is an [`OutputFailure`]: the child then exits 1 without a word on stderr.

use std::collections::VecDeque;
use std::io;
use std::pin::pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use magi_protocol::frame::encode_frame;
use magi_protocol::limits::{OUTPUT_DEADLINE_MS, PENDING_OUTPUT_FRAMES};
use magi_protocol::messages::{Event, ResultBody};
use magi_protocol::wire::{EventFrame, Outcome, ResponseFrame};
use magi_protocol::{ErrorBody, ErrorCode};
use tokio::net::unix::pipe;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Why output cannot continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputFailure {
    /// A frame was enqueued while the queue was full.
    Overflow,
    /// The oldest frame was not fully written by its deadline.
    Deadline,
    /// Writing failed (the reader went away).
    Broken,
    /// A frame would exceed the output frame bound.
    TooLarge,
}

struct PendingFrame {
    bytes: Vec<u8>,
    deadline: Instant,
}

#[derive(Default)]
struct Queue {
    frames: VecDeque<PendingFrame>,
    /// Bytes of the front frame already written.
    front_written: usize,
    next_seq: u64,
    failed: Option<OutputFailure>,
}

/// The writer shared by everything that produces output.
pub(crate) struct Output {
    pipe: pipe::Sender,
    instance_id: String,
    queue: Mutex<Queue>,
    /// Wakes the writer task when a frame is left queued.
    queued: Notify,
    /// Wakes drain waiters when the queue becomes empty.
    emptied: Notify,
    /// Wakes room waiters whenever a frame was fully written.
    written: Notify,
}

/// Queue slots run events may not take, so that answers to requests (a `status`, a
/// `turn.cancel`) still fit while a run streams into a slow reader.
const RESPONSE_RESERVE_FRAMES: usize = 4;

impl Output {
    pub(crate) fn new(pipe: pipe::Sender, instance_id: String) -> Output {
        Output {
            pipe,
            instance_id,
            queue: Mutex::new(Queue {
                next_seq: 1,
                ..Queue::default()
            }),
            queued: Notify::new(),
            emptied: Notify::new(),
            written: Notify::new(),
        }
    }

    /// Enqueues a response with a result.
    pub(crate) fn result(&self, id: &str, result: ResultBody) -> Result<(), OutputFailure> {
        self.respond(Some(id), Outcome::Result(result))
    }

    /// Enqueues an error response; `id` is `None` when identity was unrecoverable.
    pub(crate) fn error(&self, id: Option<&str>, code: ErrorCode) -> Result<(), OutputFailure> {
        self.respond(id, Outcome::Error(ErrorBody { code }))
    }

    /// Enqueues a run event.
    pub(crate) fn event(&self, event: Event) -> Result<(), OutputFailure> {
        self.push(|seq| {
            encode_frame(&EventFrame {
                protocol: Default::default(),
                version: Default::default(),
                kind: Default::default(),
                instance_id: self.instance_id.clone(),
                seq,
                event,
            })
        })
    }

    fn respond(&self, id: Option<&str>, outcome: Outcome) -> Result<(), OutputFailure> {
        self.push(|seq| {
            encode_frame(&ResponseFrame {
                protocol: Default::default(),
                version: Default::default(),
                kind: Default::default(),
                instance_id: self.instance_id.clone(),
                seq,
                id: id.map(str::to_owned),
                outcome,
            })
        })
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push<E>(&self, encode: impl FnOnce(u64) -> Result<Vec<u8>, E>) -> Result<(), OutputFailure> {
        let mut queue = self.lock();
        if let Some(failure) = queue.failed {
            return Err(failure);
        }
        if queue.frames.len() >= PENDING_OUTPUT_FRAMES {
            queue.failed = Some(OutputFailure::Overflow);
            return Err(OutputFailure::Overflow);
        }
        let Ok(bytes) = encode(queue.next_seq) else {
            queue.failed = Some(OutputFailure::TooLarge);
            return Err(OutputFailure::TooLarge);
        };
        queue.next_seq += 1;
        queue.frames.push_back(PendingFrame {
            bytes,
            deadline: Instant::now() + Duration::from_millis(OUTPUT_DEADLINE_MS),
        });
        if queue.frames.len() == 1 {
            self.write_ready(&mut queue)?;
        }
        if !queue.frames.is_empty() {
            self.queued.notify_one();
        }
        Ok(())
    }

    /// Writes queued bytes until the pipe would block or the queue is empty.
    fn write_ready(&self, queue: &mut Queue) -> Result<(), OutputFailure> {
        while let Some(front) = queue.frames.front() {
            match self.pipe.try_write(&front.bytes[queue.front_written..]) {
                Ok(written) => {
                    queue.front_written += written;
                    if queue.front_written == front.bytes.len() {
                        queue.frames.pop_front();
                        queue.front_written = 0;
                        self.written.notify_waiters();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    queue.failed = Some(OutputFailure::Broken);
                    return Err(OutputFailure::Broken);
                }
            }
        }
        if queue.frames.is_empty() {
            self.emptied.notify_waiters();
        }
        Ok(())
    }

    /// Writes queued frames as the pipe accepts them, until output fails.
    pub(crate) async fn run_writer(&self) -> OutputFailure {
        loop {
            let deadline = {
                let queue = self.lock();
                if let Some(failure) = queue.failed {
                    return failure;
                }
                queue.frames.front().map(|f| f.deadline)
            };
            let Some(deadline) = deadline else {
                self.queued.notified().await;
                continue;
            };
            let ready = tokio::time::timeout_at(deadline, self.pipe.writable()).await;
            let mut queue = self.lock();
            let outcome = match ready {
                Err(_) => Err(OutputFailure::Deadline),
                Ok(Err(_)) => Err(OutputFailure::Broken),
                Ok(Ok(())) => {
                    self.write_ready(&mut queue)
                        .and_then(|()| match queue.frames.front() {
                            Some(front) if Instant::now() >= front.deadline => {
                                Err(OutputFailure::Deadline)
                            }
                            _ => Ok(()),
                        })
                }
            };
            if let Err(failure) = outcome {
                queue.failed = Some(failure);
                return failure;
            }
        }
    }

    /// Whether a run event may be enqueued now. Run events are taken from the run only
    /// while this holds, so a slow reader makes the run's bounded channel fill (deltas
    /// drop, critical events wait) instead of overflowing the output queue.
    pub(crate) fn has_room_for_events(&self) -> bool {
        self.lock().frames.len() < PENDING_OUTPUT_FRAMES - RESPONSE_RESERVE_FRAMES
    }

    /// Resolves once a run event may be enqueued.
    pub(crate) async fn room_for_events(&self) {
        loop {
            let mut written = pin!(self.written.notified());
            written.as_mut().enable();
            if self.has_room_for_events() {
                return;
            }
            written.await;
        }
    }

    /// Resolves once nothing is queued. Output failure is reported by the writer task.
    pub(crate) async fn drained(&self) {
        loop {
            let mut emptied = pin!(self.emptied.notified());
            emptied.as_mut().enable();
            if self.lock().frames.is_empty() {
                return;
            }
            emptied.await;
        }
    }
}
