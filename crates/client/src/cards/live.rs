//! The live cards of one connection: each accepted snapshot applied in revision order,
//! and cards shown as unknown when their run or transport ends before they finish.

use std::collections::HashMap;
use std::fmt;

use magi_protocol::cards::{
    self, CARDS_PER_RUN, Card, CardState, CardViolation, ProtectionDecision, ToolCardEvent,
};
use magi_protocol::names::{is_valid_name, is_valid_session_id};

/// Why a tracked card is shown as unknown. Its last accepted snapshot, if any, is kept
/// for identity and title only; its outcome is no longer trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// The backend sent a snapshot breaking the rules for this card.
    Violation,
    /// The connection was lost while the card was running.
    TransportLost,
    /// The run finished while the card was still running: its final snapshot never
    /// arrived.
    Unresolved,
}

/// What a UI knows about one activity's card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedCard {
    card: Option<Card>,
    unknown: Option<Unknown>,
}

impl TrackedCard {
    /// The last accepted snapshot; none when the first snapshot was already refused.
    pub fn card(&self) -> Option<&Card> {
        self.card.as_ref()
    }

    /// Why the card must be shown as unknown, if it must.
    pub fn unknown(&self) -> Option<Unknown> {
        self.unknown
    }

    /// Whether the card must be shown as unknown rather than with its snapshot's facts.
    pub fn is_unknown(&self) -> bool {
        self.unknown.is_some()
    }
}

/// A `tool.card` event the tracker refused. Each one is a protocol violation; the
/// affected card (when the event names a well-formed one) is marked unknown and never
/// updated again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveViolation {
    /// `tool.cards` was not negotiated on this connection.
    NotNegotiated,
    /// The event or its card breaks a rule checkable on the event alone.
    Card(CardViolation),
    /// The revision went backwards.
    RevisionBackwards {
        /// The revision already applied.
        current: u64,
        /// The revision received.
        received: u64,
    },
    /// An already emitted revision came again with different content.
    RevisionConflict {
        /// The revision.
        revision: u64,
    },
    /// A running snapshot followed a finished one.
    Reopened,
    /// A finished card's outcome changed.
    OutcomeChanged,
    /// A known public protection decision went back to `not_reported`.
    ProtectionErased,
    /// The run already has [`CARDS_PER_RUN`] card identities.
    TooManyCards,
    /// The card is already unknown; the snapshot was not applied.
    CardUnknown,
    /// A card arrived after its run finished.
    AfterRunFinished,
}

impl fmt::Display for LiveViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveViolation::NotNegotiated => f.write_str("tool.card without negotiation"),
            LiveViolation::Card(violation) => violation.fmt(f),
            LiveViolation::RevisionBackwards { current, received } => {
                write!(f, "card revision {received} after {current}")
            }
            LiveViolation::RevisionConflict { revision } => {
                write!(
                    f,
                    "card revision {revision} repeated with different content"
                )
            }
            LiveViolation::Reopened => f.write_str("running card snapshot after finished"),
            LiveViolation::OutcomeChanged => f.write_str("finished card changed its outcome"),
            LiveViolation::ProtectionErased => {
                f.write_str("known protection decision reset to not_reported")
            }
            LiveViolation::TooManyCards => {
                write!(f, "more than {CARDS_PER_RUN} cards in one run")
            }
            LiveViolation::CardUnknown => f.write_str("snapshot for a card already unknown"),
            LiveViolation::AfterRunFinished => f.write_str("card after run.finished"),
        }
    }
}

impl std::error::Error for LiveViolation {}

/// The cards of one run.
#[derive(Debug, Default)]
struct RunCards {
    cards: HashMap<String, TrackedCard>,
    finished: bool,
}

/// The live cards of one connection, by run and activity.
///
/// Each run holds at most [`CARDS_PER_RUN`] identities; drop a run with
/// [`LiveCards::remove_run`] once its saved history replaces the live projection.
#[derive(Debug, Default)]
pub struct LiveCards {
    runs: HashMap<(String, String), RunCards>,
}

impl LiveCards {
    /// An empty tracker.
    pub fn new() -> LiveCards {
        LiveCards::default()
    }

    /// Applies one decoded `tool.card` event. `negotiated` says whether `tool.cards`
    /// was admitted on this connection.
    ///
    /// A snapshot replaces the card when its revision is higher; the same revision
    /// with identical content changes nothing. Any refused event that names a
    /// well-formed activity marks that card unknown for good: older or conflicting
    /// state is never applied.
    pub fn apply(&mut self, event: ToolCardEvent, negotiated: bool) -> Result<(), LiveViolation> {
        if !negotiated {
            return Err(LiveViolation::NotNegotiated);
        }
        let checked = cards::validate_event(&event).map_err(LiveViolation::Card);
        let ToolCardEvent {
            session_id,
            run_id,
            activity_id,
            card,
            ..
        } = event;
        let trackable = is_valid_session_id(&session_id)
            && is_valid_name(&run_id)
            && is_valid_name(&activity_id);
        if !trackable {
            // There is no well-formed identity to mark. The event check refuses such
            // events too; its explanation is the one reported.
            return Err(checked
                .err()
                .unwrap_or(LiveViolation::Card(CardViolation::Scope)));
        }
        let run = self.runs.entry((session_id, run_id)).or_default();
        if run.finished {
            return Err(LiveViolation::AfterRunFinished);
        }
        let verdict = match run.cards.get(&activity_id) {
            None if run.cards.len() >= CARDS_PER_RUN => return Err(LiveViolation::TooManyCards),
            None => checked.map(|()| Applied::Replaced),
            Some(tracked) if tracked.unknown.is_some() => return Err(LiveViolation::CardUnknown),
            Some(tracked) => checked.and_then(|()| successor(tracked.card.as_ref(), &card)),
        };
        let tracked = run.cards.entry(activity_id).or_insert(TrackedCard {
            card: None,
            unknown: None,
        });
        match verdict {
            Ok(Applied::Replaced) => tracked.card = Some(card),
            Ok(Applied::Unchanged) => {}
            Err(_) => tracked.unknown = Some(Unknown::Violation),
        }
        verdict.map(|_| ())
    }

    /// The connection was lost: every running card becomes locally unknown. No
    /// revision is invented and no cancellation is claimed.
    pub fn transport_lost(&mut self) {
        for run in self.runs.values_mut() {
            mark_running(run, Unknown::TransportLost);
        }
    }

    /// `run.finished` arrived: cards still running never got their final snapshot and
    /// become unknown, and any later card for the run is a violation.
    pub fn run_finished(&mut self, session_id: &str, run_id: &str) {
        let run = self
            .runs
            .entry((session_id.to_owned(), run_id.to_owned()))
            .or_default();
        run.finished = true;
        mark_running(run, Unknown::Unresolved);
    }

    /// Forgets a run's cards, once its saved history replaced the live projection.
    pub fn remove_run(&mut self, session_id: &str, run_id: &str) {
        self.runs
            .remove(&(session_id.to_owned(), run_id.to_owned()));
    }

    /// The card of one activity, if any snapshot for it arrived.
    pub fn get(&self, session_id: &str, run_id: &str, activity_id: &str) -> Option<&TrackedCard> {
        self.runs
            .get(&(session_id.to_owned(), run_id.to_owned()))
            .and_then(|run| run.cards.get(activity_id))
    }

    /// Every card of one run by activity ID, in no particular order: a UI places each
    /// at its base activity's position.
    pub fn run_cards(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> impl Iterator<Item = (&str, &TrackedCard)> {
        self.runs
            .get(&(session_id.to_owned(), run_id.to_owned()))
            .into_iter()
            .flat_map(|run| run.cards.iter().map(|(id, card)| (id.as_str(), card)))
    }
}

fn mark_running(run: &mut RunCards, why: Unknown) {
    for tracked in run.cards.values_mut() {
        let running = tracked
            .card
            .as_ref()
            .is_some_and(|card| card.state == CardState::Running);
        if running && tracked.unknown.is_none() {
            tracked.unknown = Some(why);
        }
    }
}

/// What applying an accepted snapshot does.
enum Applied {
    Replaced,
    Unchanged,
}

/// Whether `next` may follow `current` for the same card.
fn successor(current: Option<&Card>, next: &Card) -> Result<Applied, LiveViolation> {
    let Some(current) = current else {
        return Ok(Applied::Replaced);
    };
    if next.revision < current.revision {
        return Err(LiveViolation::RevisionBackwards {
            current: current.revision,
            received: next.revision,
        });
    }
    if next.revision == current.revision {
        return if next == current {
            Ok(Applied::Unchanged)
        } else {
            Err(LiveViolation::RevisionConflict {
                revision: next.revision,
            })
        };
    }
    if current.state == CardState::Finished {
        if next.state == CardState::Running {
            return Err(LiveViolation::Reopened);
        }
        if next.outcome != current.outcome {
            return Err(LiveViolation::OutcomeChanged);
        }
    }
    let known = current.metadata.public_protection.decision != ProtectionDecision::NotReported;
    if known && next.metadata.public_protection.decision == ProtectionDecision::NotReported {
        return Err(LiveViolation::ProtectionErased);
    }
    Ok(Applied::Replaced)
}
