//! The tokens of each model request: recorded in the agent's journal (a `usage` record)
//! once the request ended, whatever the provider reported of them, and told to a client
//! that negotiated `session.usage` as `usage.updated` when the request was the session
//! agent's.

use magi_protocol::messages::{Event, UsageUpdated};
use magi_provider::ModelEvent;
use magi_store::records::RecordBody;

use super::journal::Journal;
use super::output::Output;

/// What the provider reported of one request's tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Reported {
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
    output_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

impl Reported {
    /// Takes in `event` when it reports usage; a later report replaces an earlier one.
    pub(super) fn observe(&mut self, event: &ModelEvent) {
        if let ModelEvent::Usage {
            input_tokens,
            output_tokens,
            cached_input_tokens,
            cache_write_tokens,
            reasoning_tokens,
        } = *event
        {
            *self = Reported {
                input_tokens: Some(input_tokens),
                cached_input_tokens,
                cache_write_tokens,
                output_tokens: Some(output_tokens),
                reasoning_tokens,
            };
        }
    }

    /// The `usage` record of a request of turn `turn_id` held to `window`: the window
    /// the conversation fills after it is its input and output, when both are known.
    pub(super) fn record(self, turn_id: Option<&str>, window: Option<usize>) -> RecordBody {
        RecordBody::Usage {
            turn_id: turn_id.map(str::to_owned),
            input_tokens: self.input_tokens,
            cached_input_tokens: self.cached_input_tokens,
            cache_write_tokens: self.cache_write_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_tokens,
            context_window: window.map(|w| w as u64),
            context_used: self
                .input_tokens
                .zip(self.output_tokens)
                .map(|(input, output)| input.saturating_add(output)),
        }
    }
}

/// Records the usage of one request of turn `turn_id` and tells it (see [`tell`]).
pub(super) async fn record(
    output: &mut Output,
    journal: &mut Journal<'_>,
    turn_id: &str,
    window: Option<usize>,
    reported: Reported,
) {
    let record = reported.record(Some(turn_id), window);
    journal.append(record.clone());
    tell(output, journal, record).await;
}

/// Tells the `usage` record of a request, once recorded, to a client that negotiated
/// `session.usage`, when the request was the session agent's.
pub(super) async fn tell(output: &mut Output, journal: &Journal<'_>, record: RecordBody) {
    if !output.has(magi_protocol::Extension::SessionUsage) || !journal.is_session() {
        return;
    }
    if let RecordBody::Usage {
        input_tokens,
        cached_input_tokens,
        cache_write_tokens,
        output_tokens,
        reasoning_tokens,
        context_window,
        context_used,
        ..
    } = record
    {
        let event = Event::UsageUpdated(UsageUpdated {
            session_id: output.session_id().to_owned(),
            run_id: output.run_id().to_owned(),
            input_tokens,
            cached_input_tokens,
            output_tokens,
            reasoning_tokens,
            context_window,
            context_used,
            // The server leaves it out unless `usage.cache_writes` was negotiated.
            cache_write_tokens: Some(cache_write_tokens),
        });
        output.critical(event).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_report_counts_and_unknowns_stay_null() {
        let mut reported = Reported::default();
        assert_eq!(
            reported.record(Some("t"), None),
            RecordBody::Usage {
                turn_id: Some("t".into()),
                input_tokens: None,
                cached_input_tokens: None,
                cache_write_tokens: None,
                output_tokens: None,
                reasoning_tokens: None,
                context_window: None,
                context_used: None,
            }
        );
        reported.observe(&ModelEvent::TextDelta("x".into()));
        for (input, output) in [(1, 1), (120, 30)] {
            reported.observe(&ModelEvent::Usage {
                input_tokens: input,
                output_tokens: output,
                cached_input_tokens: Some(100),
                cache_write_tokens: None,
                reasoning_tokens: None,
            });
        }
        assert_eq!(
            reported.record(Some("t"), Some(1_000)),
            RecordBody::Usage {
                turn_id: Some("t".into()),
                input_tokens: Some(120),
                cached_input_tokens: Some(100),
                cache_write_tokens: None,
                output_tokens: Some(30),
                reasoning_tokens: None,
                context_window: Some(1_000),
                context_used: Some(150),
            }
        );
    }
}
