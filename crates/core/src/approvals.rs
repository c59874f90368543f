//! The approval gate between a running turn and `approval.answer`.
//!
//! A run has at most one approval pending. The gate holds it under a lock shared by
//! the run's thread and the protocol loop, so exactly one thing settles it: the first
//! answer that arrives before the deadline, or the deadline, or cancellation. Any
//! other answer — for another ID, a second answer, a late one — is stale and changes
//! nothing.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The client's answer to an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Whether the call may run.
    pub allow: bool,
    /// Whether the answer covers, through the suggested rule, the rest of the session
    /// (`scope: "session"` of `approval.scopes`).
    pub for_session: bool,
    /// What the person said with a denial, for the model.
    pub message: Option<String>,
    /// The client could not ask anyone (`unavailable: true`): denied as unavailable.
    pub unavailable: bool,
}

impl Answer {
    /// A plain answer about this one call.
    pub fn once(allow: bool) -> Answer {
        Answer {
            allow,
            for_session: false,
            message: None,
            unavailable: false,
        }
    }
}

/// How a pending approval was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalOutcome {
    /// The client answered.
    Answered(Answer),
    /// Nobody answered before it expired (denied).
    Expired,
    /// The run was cancelled first (denied).
    Cancelled,
}

#[derive(Debug)]
struct Pending {
    approval_id: String,
    deadline: Instant,
    answer: Option<Answer>,
}

/// The gate of one run. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct ApprovalGate {
    pending: Arc<Mutex<Option<Pending>>>,
    answered: Arc<Notify>,
}

impl ApprovalGate {
    fn lock(&self) -> MutexGuard<'_, Option<Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an answer. Returns whether it was the one winning answer of the
    /// pending approval; anything else is stale and has no effect.
    pub fn answer(&self, approval_id: &str, answer: Answer) -> bool {
        let mut pending = self.lock();
        match pending.as_mut() {
            Some(p)
                if p.approval_id == approval_id
                    && p.answer.is_none()
                    && Instant::now() < p.deadline =>
            {
                p.answer = Some(answer);
                self.answered.notify_one();
                true
            }
            _ => false,
        }
    }

    /// Opens approval `approval_id` and waits until it is settled: answered, expired
    /// after `expiry`, or cancelled. Call it before announcing the approval, so that
    /// an answer racing the announcement is not lost; the returned future does the
    /// waiting.
    pub fn open(&self, approval_id: &str, expiry: Duration) -> ApprovalWait {
        let deadline = Instant::now() + expiry;
        *self.lock() = Some(Pending {
            approval_id: approval_id.to_owned(),
            deadline,
            answer: None,
        });
        ApprovalWait {
            gate: self.clone(),
            deadline: tokio::time::Instant::now() + expiry,
        }
    }

    /// Closes the pending approval and says how it was settled.
    fn settle(&self, interrupted: ApprovalOutcome) -> ApprovalOutcome {
        match self.lock().take().and_then(|p| p.answer) {
            Some(answer) => ApprovalOutcome::Answered(answer),
            None => interrupted,
        }
    }
}

/// A pending approval being waited for.
#[derive(Debug)]
pub struct ApprovalWait {
    gate: ApprovalGate,
    deadline: tokio::time::Instant,
}

impl ApprovalWait {
    /// Waits for the answer, the deadline or cancellation, whichever comes first.
    pub async fn settled(self, cancel: &CancellationToken) -> ApprovalOutcome {
        loop {
            let answered = self.gate.answered.notified();
            if self
                .gate
                .lock()
                .as_ref()
                .is_some_and(|p| p.answer.is_some())
            {
                return self.gate.settle(ApprovalOutcome::Expired);
            }
            tokio::select! {
                () = answered => {}
                () = tokio::time::sleep_until(self.deadline) => {
                    return self.gate.settle(ApprovalOutcome::Expired);
                }
                () = cancel.cancelled() => {
                    return self.gate.settle(ApprovalOutcome::Cancelled);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn the_first_answer_wins_and_the_rest_are_stale() {
        let gate = ApprovalGate::default();
        assert!(!gate.answer("a1", Answer::once(true)), "nothing pending");
        let wait = gate.open("a1", Duration::from_secs(60));
        assert!(!gate.answer("other", Answer::once(true)));
        assert!(gate.answer("a1", Answer::once(false)));
        assert!(
            !gate.answer("a1", Answer::once(true)),
            "a second answer is stale"
        );
        let outcome = runtime().block_on(wait.settled(&CancellationToken::new()));
        assert_eq!(outcome, ApprovalOutcome::Answered(Answer::once(false)));
        assert!(
            !gate.answer("a1", Answer::once(true)),
            "settled approvals are stale"
        );
    }

    #[test]
    fn expiry_and_cancellation_deny() {
        let gate = ApprovalGate::default();
        let wait = gate.open("a1", Duration::from_millis(20));
        let outcome = runtime().block_on(wait.settled(&CancellationToken::new()));
        assert_eq!(outcome, ApprovalOutcome::Expired);
        assert!(
            !gate.answer("a1", Answer::once(true)),
            "an expired approval is stale"
        );

        let cancel = CancellationToken::new();
        cancel.cancel();
        let wait = gate.open("a2", Duration::from_secs(60));
        assert_eq!(
            runtime().block_on(wait.settled(&cancel)),
            ApprovalOutcome::Cancelled
        );
        assert!(!gate.answer("a2", Answer::once(true)));
    }

    #[test]
    fn an_answer_during_the_wait_is_taken() {
        let gate = ApprovalGate::default();
        let wait = gate.open("a1", Duration::from_secs(60));
        let answering = gate.clone();
        let outcome = runtime().block_on(async move {
            let waiter = tokio::spawn(wait.settled_owned());
            tokio::task::yield_now().await;
            assert!(answering.answer("a1", Answer::once(true)));
            waiter.await.unwrap()
        });
        assert_eq!(outcome, ApprovalOutcome::Answered(Answer::once(true)));
    }

    #[test]
    fn the_real_expiry_denies_on_a_paused_clock() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let gate = ApprovalGate::default();
        let expiry = Duration::from_millis(magi_protocol::limits::APPROVAL_EXPIRY_MS);
        let outcome = runtime.block_on(async {
            let wait = gate.open("a1", expiry);
            let started = tokio::time::Instant::now();
            let outcome = wait.settled(&CancellationToken::new()).await;
            // The paused clock jumped exactly to the deadline: 60 s, not a moment less.
            assert_eq!(started.elapsed(), expiry);
            outcome
        });
        assert_eq!(outcome, ApprovalOutcome::Expired);
        assert!(
            !gate.answer("a1", Answer::once(true)),
            "an expired approval is stale"
        );
    }

    #[test]
    fn racing_answers_have_exactly_one_winner() {
        for _ in 0..50 {
            let gate = ApprovalGate::default();
            let wait = gate.open("a1", Duration::from_secs(60));
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
            let answers: Vec<_> = (0..4)
                .map(|n| {
                    let gate = gate.clone();
                    let barrier = std::sync::Arc::clone(&barrier);
                    std::thread::spawn(move || {
                        barrier.wait();
                        (n % 2 == 0, gate.answer("a1", Answer::once(n % 2 == 0)))
                    })
                })
                .collect();
            let results: Vec<(bool, bool)> =
                answers.into_iter().map(|h| h.join().unwrap()).collect();
            let winners: Vec<bool> = results
                .iter()
                .filter(|(_, won)| *won)
                .map(|(allow, _)| *allow)
                .collect();
            assert_eq!(winners.len(), 1, "{results:?}");
            let outcome = runtime().block_on(wait.settled(&CancellationToken::new()));
            let expected = ApprovalOutcome::Answered(Answer::once(winners[0]));
            assert_eq!(outcome, expected, "the winner's answer is the outcome");
        }
    }

    impl ApprovalWait {
        async fn settled_owned(self) -> ApprovalOutcome {
            self.settled(&CancellationToken::new()).await
        }
    }
}
