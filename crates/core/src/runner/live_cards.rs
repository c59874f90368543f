//! Live `tool.card` events: the run's cards, their revisions and their budgets.
//!
//! With `tool.cards` negotiated every tool activity gets an initial snapshot right after
//! its `started` activity, an interim one while it awaits approval, and a final one right
//! after its `completed`/`failed` activity, all projected by the one selector
//! ([`crate::cards::project`]) that saved cards use too.
//!
//! Budgets (spec `000_…`): at most 16,384 snapshots and 32 MiB of serialized cards per
//! run. At admission the run reserves, for every activity identity it may still create
//! (4,096 in all), an initial and a terminal core of at most 2,048 bytes and their two
//! snapshot slots. Detail above a core, and interim snapshots, come only from what the
//! reserve leaves: an initial or final card that does not fit is sent as its core, an
//! interim one that does not fit is left out (coalesced into the next snapshot).

use std::collections::HashMap;

use magi_protocol::cards::{
    CARDS_PER_RUN, CORE_BYTES, Card, CardOutcome, CardState, Changes, RUN_SNAPSHOT_BYTES,
    SNAPSHOTS_PER_RUN, serialized_len,
};

use crate::cards::core;

/// Which snapshot of a card is being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Snapshot {
    /// The first, right after the `started` activity: uses the identity's reserve.
    Initial,
    /// An update while the call runs: only from what the reserve leaves.
    Interim,
    /// The last, right after the base activity ended: uses the identity's reserve.
    Final,
}

/// The run's card state.
#[derive(Debug, Default)]
pub(super) struct LiveCards {
    /// Whether `tool.cards` was negotiated.
    pub(super) enabled: bool,
    /// The next revision of each card.
    revisions: HashMap<String, u64>,
    /// Identities that got their initial snapshot.
    started: usize,
    /// Identities that got their final snapshot.
    finished: usize,
    /// Snapshots sent.
    snapshots: usize,
    /// Serialized card bytes sent.
    bytes: usize,
    /// The newest snapshot of each card that got no final one yet, in the order they
    /// started: what a run that ends without settling them (a contained panic) ends
    /// as unknown.
    unfinished: Vec<Card>,
}

impl LiveCards {
    /// Cards enabled or not, as negotiated.
    pub(super) fn new(enabled: bool) -> LiveCards {
        LiveCards {
            enabled,
            ..LiveCards::default()
        }
    }

    /// Reserved snapshot slots: two for each identity not started, one for each
    /// started and not finished.
    fn reserved_slots(&self) -> usize {
        2 * CARDS_PER_RUN.saturating_sub(self.started) + self.started.saturating_sub(self.finished)
    }

    /// What `snapshot` may spend: (bytes, whether a slot is free), after releasing the
    /// reserve it draws on.
    fn room(&self, snapshot: Snapshot) -> (usize, bool) {
        let released = match snapshot {
            Snapshot::Interim => 0,
            Snapshot::Initial | Snapshot::Final => 1,
        };
        let reserved_slots = self.reserved_slots() - released;
        let bytes = RUN_SNAPSHOT_BYTES
            .saturating_sub(self.bytes)
            .saturating_sub(reserved_slots * CORE_BYTES);
        let slot = self.snapshots + reserved_slots < SNAPSHOTS_PER_RUN;
        (bytes, slot)
    }

    /// The revision the next snapshot of `activity_id` carries.
    pub(super) fn revision(&self, activity_id: &str) -> u64 {
        self.revisions.get(activity_id).copied().unwrap_or(0)
    }

    /// Notes that `revision` of `activity_id` was sent.
    pub(super) fn advance(&mut self, activity_id: &str, revision: u64) {
        self.revisions.insert(activity_id.to_owned(), revision + 1);
    }

    /// The card to send for `snapshot`, reduced to what the budget allows, or none when
    /// an interim snapshot does not fit. Accounts for it.
    pub(super) fn admit(&mut self, snapshot: Snapshot, card: Card) -> Option<Card> {
        let (room, slot) = self.room(snapshot);
        let card = if serialized_len(&card) <= room {
            card
        } else {
            // The core keeps identity, outcome, changes and the protection decision.
            core(&card)
        };
        let size = serialized_len(&card);
        // An initial or final core always fits: the reserve holds its bytes and slot.
        if snapshot == Snapshot::Interim && (!slot || size > room) {
            return None;
        }
        self.unfinished
            .retain(|sent| sent.activity_id != card.activity_id);
        match snapshot {
            Snapshot::Initial => self.started += 1,
            Snapshot::Final => self.finished += 1,
            Snapshot::Interim => {}
        }
        if snapshot != Snapshot::Final {
            self.unfinished.push(card.clone());
        }
        self.snapshots += 1;
        self.bytes += size;
        Some(card)
    }

    /// The final snapshots that end every card still unfinished as `unknown`, each its
    /// newest snapshot finished with the outcome unknown (and changes unknown, unless
    /// the tool changes nothing by contract), at its next revision; for a run that
    /// ends without evidence of how they ended. Nothing is known of a tool that was
    /// running, so nothing else is claimed.
    pub(super) fn unknown_endings(&mut self) -> Vec<Card> {
        std::mem::take(&mut self.unfinished)
            .into_iter()
            .map(|mut card| {
                card.state = CardState::Finished;
                card.outcome = Some(CardOutcome::Unknown);
                if card.changes != Changes::NotApplicable {
                    card.changes = Changes::Unknown;
                }
                card.revision = self.revision(&card.activity_id);
                card
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_covers_every_identity_and_interim_snapshots_give_way() {
        let mut cards = LiveCards::new(true);
        // Before anything, the reserve holds 4,096 × 2 cores and slots.
        assert_eq!(cards.reserved_slots(), 2 * CARDS_PER_RUN);
        let (room, slot) = cards.room(Snapshot::Initial);
        assert_eq!(
            room,
            RUN_SNAPSHOT_BYTES - (2 * CARDS_PER_RUN - 1) * CORE_BYTES
        );
        assert!(slot);
        // Spend everything above the reserve: interim snapshots are then refused, while
        // initial and final ones still fit as cores.
        cards.bytes = RUN_SNAPSHOT_BYTES - 2 * CARDS_PER_RUN * CORE_BYTES;
        assert_eq!(cards.room(Snapshot::Interim).0, 0);
        assert_eq!(cards.room(Snapshot::Initial).0, CORE_BYTES);
    }
}
