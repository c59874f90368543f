//! What the saved calls of the history shown took, as far as Mission Control saw them
//! run. When a turn ends, the history's pages replace its live entries; the saved
//! cards carry no time, so the time each call took would vanish from the screen. The
//! calls of the run that just ended are the last saved calls of the new history, in the
//! same order and with the same titles; they keep the times seen live. Times carry
//! over from one history to the next while the history only grew (the earlier saved
//! calls, in order, are the same); a history that changed otherwise (compacted,
//! pruned) shows no time for the calls it kept. A call matched by nothing shows no
//! time: Mission Control did not see it run.

use std::collections::HashMap;
use std::time::Duration;

use magi_client::fold::{CardView, Item, Role};

/// The times of the saved calls shown, by message ID of the revision shown, and the
/// saved calls in order with their times, to carry over to the next revision.
#[derive(Debug, Default)]
pub(super) struct SavedTimes {
    /// The session whose history is shown.
    session_id: String,
    by_message: HashMap<String, Duration>,
    order: Vec<(String, Option<Duration>)>,
}

/// A run's calls as Mission Control saw them: each call's card title and what it took
/// (none when it was not seen to end), in the order they started.
pub(super) type SeenCalls = Vec<(String, Option<Duration>)>;

impl SavedTimes {
    /// What the saved call `message_id` took, when it was seen.
    pub(super) fn took(&self, message_id: &str) -> Option<Duration> {
        self.by_message.get(message_id).copied()
    }

    /// The history of `session_id` in `items` is shown, after a run whose calls were
    /// `ran` (none after a session was opened).
    pub(super) fn history_shown(&mut self, session_id: &str, items: &[Item], ran: &SeenCalls) {
        if self.session_id != session_id {
            // Another session's calls are not this one's.
            self.session_id = session_id.to_owned();
            self.order.clear();
        }
        let shown = saved_calls(items);
        let mut took: Vec<Option<Duration>> = vec![None; shown.len()];
        let same = |(a, _): &(String, Option<Duration>), (_, b): &(&str, String)| a == b;
        // What an earlier revision showed carries over while the history only grew.
        let grew = self.order.len() <= shown.len()
            && self
                .order
                .iter()
                .zip(&shown)
                .all(|(old, new)| same(old, new));
        if grew {
            for (slot, (_, seen)) in took.iter_mut().zip(&self.order) {
                *slot = *seen;
            }
        }
        // The run's calls are the last saved calls, in the order they ran.
        if let Some(start) = shown.len().checked_sub(ran.len())
            && ran.iter().zip(&shown[start..]).all(|(r, s)| same(r, s))
        {
            for (slot, (_, seen)) in took[start..].iter_mut().zip(ran) {
                *slot = *seen;
            }
        }
        self.by_message = shown
            .iter()
            .zip(&took)
            .filter_map(|((id, _), seen)| seen.map(|d| ((*id).to_owned(), d)))
            .collect();
        self.order = shown
            .into_iter()
            .map(|(_, title)| title)
            .zip(took)
            .collect();
    }
}

/// The saved calls among `items`, in order: message ID and card title. Only calls made
/// by the session's agent count (a subagent's or a script's call names its parent):
/// those are the ones a run shows at the top level.
fn saved_calls(items: &[Item]) -> Vec<(&str, String)> {
    items
        .iter()
        .filter_map(|item| match item {
            Item::History(h) if item.role() == Role::Activity => h
                .card
                .as_ref()
                .filter(|card| card.parent_activity_id.is_none())
                .map(|card| (h.message_id.as_str(), card.title.clone())),
            _ => None,
        })
        .collect()
}

/// The live calls among `items`, in the order they started, with what each took by
/// `took` (run and activity ID): the calls of the runs since the history was last
/// shown.
pub(super) fn live_calls(
    items: &[Item],
    took: impl Fn(&str, &str) -> Option<Duration>,
) -> SeenCalls {
    items
        .iter()
        .filter_map(|item| match item {
            Item::Activity(a) => match &a.card {
                CardView::Card(card) if card.parent_activity_id.is_none() => {
                    Some((card.title.clone(), took(&a.run_id, &a.activity_id)))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
