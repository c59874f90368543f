//! The turn's checkpoints: the workspace's state recorded at its start and its end,
//! and what a client that negotiated `checkpoints` is told of them.

use magi_protocol::messages::{
    DIAGNOSTIC_CHECKPOINT_NOT_RECORDED, DIAGNOSTIC_CHECKPOINT_STORE_REBUILT,
};

use super::Turn;
use crate::checkpoints::{NotRecorded, Phase};
use crate::runner::output::Output;
use crate::runner::start_checkpoint::Recorded;
use crate::sessions::Sessions;

impl Turn {
    /// Records the workspace's state at the turn's `phase` (`crate::checkpoints`), off
    /// the run's thread since it waits for `git`; cancelling the run stops it. A start
    /// that could not be recorded, or a store that had to be rebuilt, is said in a
    /// diagnostic to a client that negotiated `checkpoints`; an end that could not be
    /// recorded only makes a later restore count every file as changed outside.
    pub(super) async fn checkpoint(&self, sessions: &Sessions, output: &mut Output, phase: Phase) {
        let recorded = self
            .record_checkpoint(sessions, output, phase)
            .await
            .unwrap_or_else(|_| Err(NotRecorded::Failed("the checkpoint's work panicked".into())));
        self.report_checkpoint(output, phase, recorded).await;
    }

    /// Begins recording the turn's start checkpoint beside what follows
    /// (`super::start_checkpoint`); the turn reports it at its end.
    pub(super) async fn begin_start_checkpoint(&self, sessions: &Sessions, output: &Output) {
        let recording = self.record_checkpoint(sessions, output, Phase::Start);
        self.gates.start_checkpoint.begin(recording).await;
    }

    /// Records the workspace's state at `phase` off the run's thread, since it waits
    /// for `git`; cancelling the run stops it.
    fn record_checkpoint(
        &self,
        sessions: &Sessions,
        output: &Output,
        phase: Phase,
    ) -> tokio::task::JoinHandle<Recorded> {
        let store = sessions.checkpoint_store();
        let turn_id = self.turn_id();
        let cancel = output.cancel.clone();
        tokio::task::spawn_blocking(move || {
            let recorded = store.record(&turn_id, phase, &move || cancel.is_cancelled());
            if phase == Phase::End && recorded.is_ok() {
                // Keeping the store within its bound waits for no one: the turn goes
                // on to its end, and the next snapshot waits for the store's lock.
                tokio::task::spawn_blocking(move || {
                    let _ = magi_crash::contain(|| store.prune(&|| false));
                });
            }
            recorded
        })
    }

    /// Says what a checkpoint's recording gave, to a client that negotiated
    /// `checkpoints` (see [`Turn::checkpoint`]).
    pub(super) async fn report_checkpoint(
        &self,
        output: &mut Output,
        phase: Phase,
        recorded: Recorded,
    ) {
        if !self.request.has(magi_protocol::Extension::Checkpoints) {
            return;
        }
        match recorded {
            Ok(snapshot) => {
                if let Some(notice) = snapshot.rebuilt {
                    output
                        .diagnostic(DIAGNOSTIC_CHECKPOINT_STORE_REBUILT, &notice)
                        .await;
                }
            }
            Err(NotRecorded::Cancelled | NotRecorded::Off) => {}
            Err(why) if phase == Phase::Start => {
                let summary = format!(
                    "This turn's checkpoint was not recorded, so it cannot be undone: {why}."
                );
                output
                    .diagnostic(DIAGNOSTIC_CHECKPOINT_NOT_RECORDED, &summary)
                    .await;
            }
            Err(_) => {}
        }
    }
}
