//! One live assistant segment: `message.delta` parts accumulate for display,
//! `message.reconcile` parts replace them once every part up to `last_part` arrived.

use std::collections::BTreeMap;

/// Where a live assistant segment is, as far as this client can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageState {
    /// Deltas arrive in order with no part missing; reconciliation has not completed.
    Streaming,
    /// A delta part was missing, repeated or out of order, or reconciliation started
    /// without completing: the text shown is not the whole message.
    Incomplete,
    /// Every reconciliation part `0..=last` arrived: the text is authoritative.
    Complete {
        /// The segment itself is partial (its run failed or was cancelled).
        partial: bool,
    },
    /// The segment's end was never learned (transport lost, or the run ended without
    /// completing its reconciliation); never shown as finished.
    Unknown,
}

/// A live assistant segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The run the segment belongs to (its ID is run-scoped).
    pub run_id: String,
    /// The segment's run-scoped ID.
    pub message_id: String,
    /// Deltas in arrival order while streaming; the reconciled text once complete.
    text: String,
    state: MessageState,
    /// The next delta part expected, or `None` before the first delta.
    next_delta: Option<u64>,
    /// Reconciliation parts by number; kept apart from the deltas because they
    /// replace them rather than append to them.
    reconcile: BTreeMap<u64, String>,
    /// The part number that carried `last_part=true`, once seen.
    last_part: Option<u64>,
    /// Whether any reconciliation part said the segment is partial.
    partial: bool,
}

impl Message {
    /// An empty segment, before its first event.
    pub(crate) fn new(run_id: &str, message_id: &str) -> Message {
        Message {
            run_id: run_id.to_owned(),
            message_id: message_id.to_owned(),
            text: String::new(),
            state: MessageState::Streaming,
            next_delta: None,
            reconcile: BTreeMap::new(),
            last_part: None,
            partial: false,
        }
    }

    /// The text to show: the reconciled text once complete, else the deltas received.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the segment is.
    pub fn state(&self) -> MessageState {
        self.state
    }

    /// Whether the segment has reached a state that no later live event changes.
    pub(crate) fn is_settled(&self) -> bool {
        matches!(
            self.state,
            MessageState::Complete { .. } | MessageState::Unknown
        )
    }

    /// Folds one `message.delta` part.
    pub(crate) fn delta(&mut self, part: u64, text: &str) {
        if self.is_settled() {
            // No deltas follow the terminal; a late one must not touch reconciled text.
            return;
        }
        let expected = self.next_delta.unwrap_or(0);
        if part < expected {
            // Repeated or out of order: its place in the text is unknown, so it is
            // not shown, and the display can no longer claim to be whole.
            self.state = MessageState::Incomplete;
            return;
        }
        if part > expected {
            self.state = MessageState::Incomplete;
        }
        if self.reconcile.is_empty() {
            self.text.push_str(text);
        }
        self.next_delta = Some(part.saturating_add(1));
    }

    /// Folds one `message.reconcile` part; completes the segment when every part
    /// `0..=last` is present.
    pub(crate) fn reconcile(&mut self, part: u64, text: &str, last_part: bool, partial: bool) {
        if self.is_settled() {
            return;
        }
        // The first copy of a part wins, so re-delivery changes nothing.
        self.reconcile
            .entry(part)
            .or_insert_with(|| text.to_owned());
        self.partial |= partial;
        if last_part && self.last_part.is_none() {
            self.last_part = Some(part);
        }
        let Some(last) = self.last_part else {
            // Reconciliation has begun: whatever the deltas showed is no longer the
            // whole story until it completes.
            self.state = MessageState::Incomplete;
            return;
        };
        // Keys are distinct, so `last + 1` keys none above `last` are exactly 0..=last.
        let exact = self.reconcile.keys().next_back() == Some(&last)
            && u64::try_from(self.reconcile.len()).ok() == last.checked_add(1);
        if exact {
            self.text = self.reconcile.values().map(String::as_str).collect();
            self.reconcile.clear();
            self.state = MessageState::Complete {
                partial: self.partial,
            };
        } else {
            self.state = MessageState::Incomplete;
        }
    }

    /// Marks an unsettled segment unknown: its end will not be learned live.
    pub(crate) fn mark_unknown(&mut self) {
        if !self.is_settled() {
            self.state = MessageState::Unknown;
            self.reconcile.clear();
        }
    }
}
