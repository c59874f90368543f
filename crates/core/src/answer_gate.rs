//! Calls of one run that wait for the client's one answer each: client tools
//! (`client.tool.result`) and client terminals (`client.terminal.result`) share it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// The calls of one run waiting for the client, each for one answer of type `T`.
/// Cloning shares it.
pub struct AnswerGate<T> {
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<T>>>>,
}

impl<T> AnswerGate<T> {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, oneshot::Sender<T>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens call `call_id` for one answer; call it before announcing the call, so an
    /// answer racing the announcement is not lost.
    pub fn open(&self, call_id: &str) -> oneshot::Receiver<T> {
        let (sender, receiver) = oneshot::channel();
        self.lock().insert(call_id.to_owned(), sender);
        receiver
    }

    /// Delivers the client's answer. Returns whether the call was waiting for it; any
    /// other answer (an unknown call, a second answer, a withdrawn call) is stale.
    pub fn answer(&self, call_id: &str, answer: T) -> bool {
        match self.lock().remove(call_id) {
            Some(sender) => sender.send(answer).is_ok(),
            None => false,
        }
    }

    /// Withdraws call `call_id`: later answers are stale.
    pub fn close(&self, call_id: &str) {
        self.lock().remove(call_id);
    }
}

// By hand: derived, they would ask the same of `T`, which a shared handle does not need.
impl<T> Clone for AnswerGate<T> {
    fn clone(&self) -> Self {
        AnswerGate {
            pending: Arc::clone(&self.pending),
        }
    }
}

impl<T> Default for AnswerGate<T> {
    fn default() -> Self {
        AnswerGate {
            pending: Arc::default(),
        }
    }
}

impl<T> std::fmt::Debug for AnswerGate<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting: Vec<String> = self.lock().keys().cloned().collect();
        f.debug_struct("AnswerGate")
            .field("waiting", &waiting)
            .finish()
    }
}
