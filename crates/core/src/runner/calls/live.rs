//! A running command's card shows its newest output. While the call service waits for
//! the calls in flight, each running `bash` command whose output changed gets an
//! interim revision of its card: its facts so far (command, working directory,
//! timeout; no end and no execution notices yet) and its last lines, made safe like
//! every card string. At most one per [`LIVE_OUTPUT_INTERVAL_MS`] per card; output in
//! between is coalesced before a revision is assigned, and a revision that does not
//! fit the run's card budget is left out (the next replaces it). A call's interim
//! revisions stop once it ended: its final card is told after the last of them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use magi_protocol::limits::LIVE_OUTPUT_INTERVAL_MS;
use magi_tools::ToolReport;
use tokio::task::JoinError;

use super::progress::InFlight;
use super::reports::running_card;
use super::role::Role;
use super::{Call, CallService};
use crate::runner::live_cards::Snapshot;

/// The interval between two interim revisions of one card.
const INTERVAL: Duration = Duration::from_millis(LIVE_OUTPUT_INTERVAL_MS);

/// The output last shown of each running command: the generation and when.
#[derive(Default)]
pub(super) struct Shown {
    sent: HashMap<String, (u64, Instant)>,
}

impl CallService<'_, '_> {
    /// Waits for `flights[0]` to end and gives what it returned; meanwhile every
    /// running command among `flights` shows its newest output on its card.
    pub(super) async fn await_showing(
        &mut self,
        role: &mut Role<'_>,
        calls: &[Call],
        flights: &mut [InFlight],
        shown: &mut Shown,
    ) -> Result<ToolReport, JoinError> {
        let live = self.output.cards_enabled() && flights.iter().any(|f| f.live.is_some());
        loop {
            let Some(first) = flights.first_mut() else {
                // Never called without a flight; nothing to wait for.
                return Ok(ToolReport::from(magi_tools::ToolOutput {
                    content: String::new(),
                    summary: String::new(),
                    is_error: true,
                }));
            };
            if !live {
                return (&mut first.task).await;
            }
            tokio::select! {
                joined = &mut first.task => return joined,
                () = tokio::time::sleep(INTERVAL) => {}
            }
            for flight in flights.iter() {
                self.show_output(role, calls, flight, shown).await;
            }
        }
    }

    /// Sends an interim revision of a running command's card when its output changed
    /// and the last one is at least [`INTERVAL`] old.
    async fn show_output(
        &mut self,
        role: &mut Role<'_>,
        calls: &[Call],
        flight: &InFlight,
        shown: &mut Shown,
    ) {
        let Some(live) = &flight.live else { return };
        // Its end is told next, in its final card: nothing more of it runs.
        if flight.task.is_finished() {
            return;
        }
        let generation = live.generation();
        let due = shown
            .sent
            .get(&flight.activity_id)
            .is_none_or(|(last, at)| *last != generation && at.elapsed() >= INTERVAL);
        if generation == 0 || !due {
            return;
        }
        let call = &calls[flight.index];
        let Some(facts) = magi_tools::running_command_facts(&call.arguments, self.workspace.cwd())
        else {
            return;
        };
        let facts = self.recorded_facts(Some(&facts));
        let (generation, lines) = live.tail();
        let (lines, styles) = self.output.safe_lines(&lines);
        let mut source = running_card(call, flight.protection, false);
        source.facts = facts.as_ref();
        source.transcript = &lines;
        source.transcript_styles = crate::cards::TranscriptStyles::recorded(&styles);
        self.card(role, &flight.activity_id, Snapshot::Interim, source)
            .await;
        shown
            .sent
            .insert(flight.activity_id.clone(), (generation, Instant::now()));
    }
}
