//! How a conversation ends, before persistence is accounted.

use magi_protocol::ErrorCode;
use magi_protocol::messages::RunOutcome;

/// How a turn or a subagent's conversation ends, before persistence is accounted.
pub(super) struct Ending {
    /// The outcome `run.finished` reports.
    pub(super) outcome: RunOutcome,
    /// Why it failed, when it did.
    pub(super) error_code: Option<ErrorCode>,
}

impl Ending {
    /// It completed.
    pub(super) fn completed() -> Ending {
        Ending {
            outcome: RunOutcome::Completed,
            error_code: None,
        }
    }

    /// It failed with `code`.
    pub(super) fn failed(code: ErrorCode) -> Ending {
        Ending {
            outcome: RunOutcome::Failed,
            error_code: Some(code),
        }
    }

    /// It was cancelled.
    pub(super) fn cancelled() -> Ending {
        Ending {
            outcome: RunOutcome::Cancelled,
            error_code: None,
        }
    }
}
