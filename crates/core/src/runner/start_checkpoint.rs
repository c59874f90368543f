//! The turn's start checkpoint, recorded beside the model's first answer rather than
//! before its request: a turn that only talks never waits for `git`, and a large first
//! snapshot does not hold the model back. Whatever could change a file waits for it
//! first: the turn's hooks (when any are configured) and each round's calls
//! ([`StartCheckpoint::ready`] at the top of `CallService::run_calls`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use crate::checkpoints::{NotRecorded, Snapshot};

/// What the start checkpoint's recording gave.
pub(in crate::runner) type Recorded = Result<Snapshot, NotRecorded>;

/// The start checkpoint of a turn: being recorded, recorded (its outcome kept until the
/// turn reports it), or never begun (a run that records none).
#[derive(Clone, Default)]
pub(in crate::runner) struct StartCheckpoint {
    slot: Arc<Mutex<Slot>>,
    /// Whether a round of calls waited for it: a turn whose calls never ran (and which
    /// runs no hooks) changed no file, so its end is its start.
    calls_ran: Arc<AtomicBool>,
}

#[derive(Default)]
enum Slot {
    #[default]
    None,
    Recording(JoinHandle<Recorded>),
    Recorded(Recorded),
    Reported,
}

impl StartCheckpoint {
    /// Begins with `recording`, the blocking task that records the checkpoint.
    pub(in crate::runner) async fn begin(&self, recording: JoinHandle<Recorded>) {
        *self.slot.lock().await = Slot::Recording(recording);
    }

    /// Returns once the checkpoint is recorded (or could not be), so nothing changes a
    /// file before it. At once when it already is, or was never begun.
    pub(in crate::runner) async fn ready(&self) {
        let mut slot = self.slot.lock().await;
        match std::mem::take(&mut *slot) {
            Slot::Recording(recording) => {
                let recorded = recording.await.unwrap_or_else(|_| {
                    Err(NotRecorded::Failed("the checkpoint's work panicked".into()))
                });
                *slot = Slot::Recorded(recorded);
            }
            other => *slot = other,
        }
    }

    /// [`StartCheckpoint::ready`] for a round of calls, which may change files.
    pub(in crate::runner) async fn ready_for_calls(&self) {
        self.calls_ran.store(true, Ordering::Relaxed);
        self.ready().await;
    }

    /// Whether a round of calls ran in the turn.
    pub(in crate::runner) fn calls_ran(&self) -> bool {
        self.calls_ran.load(Ordering::Relaxed)
    }

    /// The outcome once recorded, given once (the turn reports it); none before, after,
    /// or when never begun.
    pub(in crate::runner) async fn take_outcome(&self) -> Option<Recorded> {
        self.ready().await;
        let mut slot = self.slot.lock().await;
        match std::mem::replace(&mut *slot, Slot::Reported) {
            Slot::Recorded(recorded) => Some(recorded),
            other => {
                *slot = other;
                None
            }
        }
    }
}
