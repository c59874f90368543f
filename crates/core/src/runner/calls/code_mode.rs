//! `code_mode`: the script runs on a thread of its own (its engine is not `Send`), with
//! the `[code_mode]` limits, until it ends, a limit stops it or the turn is cancelled,
//! which its engine's interrupt handler sees at once.
//!
//! Its nested calls are real calls of the turn. The engine hands the calls its jobs
//! started to a [`ChannelHost`], which sends them to the turn together when the script
//! next waits; the turn runs each such batch through [`CallService::run_calls`], as if
//! the model had asked for them in one response (the same lifecycle, claims, ordering,
//! settlement, activities and cards), recorded as `code_mode_tool_result` and never
//! given to the model, and sends each result back to its promise. When the script ends
//! while a batch runs (a limit, an uncaught error), the batch's calls are cancelled and
//! settle before the call's result is reported.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use magi_protocol::limits::CODE_MODE_OUTPUT_BYTES;
use magi_provider::Item;
use magi_tools::code_mode::{
    LimitSettings, ScriptClock, ScriptEnd, ScriptHost, ScriptOutcome, parse_code, report,
    run_script,
};
use magi_tools::{ToolOutput, ToolReport};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use super::role::Role;
use super::{Call, CallService, Nested};

/// A nested call the script started: its number, tool and arguments (JSON text).
type Started = (u64, String, String);
/// A nested call's end: its number, and the text its promise resolves with or the
/// message it rejects with.
type Ended = (u64, Result<String, String>);

/// The script's side of its nested calls: the calls its jobs started, sent to the turn
/// as one batch when the script waits, and their ends as the turn sends them back.
/// Both channels hold at most `[code_mode] max_tool_calls` entries, the calls one
/// script may start.
struct ChannelHost {
    started: Vec<Started>,
    batches: UnboundedSender<Vec<Started>>,
    ended: mpsc::Receiver<Ended>,
}

impl ScriptHost for ChannelHost {
    fn start(&mut self, sequence: u64, tool: &str, arguments: String) {
        self.started.push((sequence, tool.to_owned(), arguments));
    }

    fn wait(&mut self, timeout: Duration) -> Option<Ended> {
        if !self.started.is_empty() {
            // The turn is gone only when the call is being dropped; the script then
            // waits out its clock alone, and nobody reads its result.
            let _ = self.batches.send(std::mem::take(&mut self.started));
        }
        self.ended.recv_timeout(timeout).ok()
    }
}

impl ChannelHost {
    /// The calls the script started and never awaited before it ended. When it
    /// returned, threw or stalled they still run, as pending work does in any
    /// JavaScript runtime, within what is left of the time limit, and count as
    /// completed or failed; their results go nowhere. When a limit or a cancel stopped
    /// it they are not run, and not counted as started.
    fn finish_unawaited(
        &mut self,
        outcome: &mut ScriptOutcome,
        limit: Duration,
        clock: &ScriptClock,
    ) {
        if self.started.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.started);
        let count = u64::try_from(pending.len()).unwrap_or(u64::MAX);
        if matches!(outcome.end, ScriptEnd::Stopped(_) | ScriptEnd::Cancelled)
            || self.batches.send(pending).is_err()
        {
            outcome.started = outcome.started.saturating_sub(count);
            return;
        }
        for _ in 0..count {
            let left = limit.saturating_sub(clock.counted());
            match self.ended.recv_timeout(left) {
                Ok((_, Ok(_))) => outcome.completed += 1,
                Ok((_, Err(_))) => outcome.failed += 1,
                // Past the limit: the turn cancels and settles what still runs.
                Err(_) => break,
            }
        }
    }
}

/// The message a nested call's promise rejects with when the turn gave no result for
/// it.
const NOT_RUN: &str = "The call was not run: the script's calls could not be started.";
/// The message of a nested call refused because the run has shown as many tool calls
/// as one run may (`RUN_ACTIVITIES`); the run's diagnostic says so too.
const OVER_RUN_BOUND: &str =
    "The call was not run: this run has shown as many tool calls as one run may.";

impl CallService<'_, '_> {
    /// Runs a claimed `code_mode` call's script, its nested calls through the turn,
    /// and reports its result.
    pub(super) async fn code_mode(
        &mut self,
        role: &mut Role<'_>,
        call: &Call,
        activity_id: &str,
    ) -> ToolReport {
        let code = match parse_code(&call.arguments) {
            Ok(code) => code,
            Err(why) => {
                return ToolReport::from(ToolOutput {
                    content: why,
                    summary: "invalid arguments".into(),
                    is_error: true,
                });
            }
        };
        let settings = LimitSettings {
            timeout_secs: self.agent.code_mode.timeout_secs,
            max_tool_calls: self.agent.code_mode.max_tool_calls,
            memory_mib: self.agent.code_mode.memory_mib,
            output_bytes: CODE_MODE_OUTPUT_BYTES,
        };
        let tools: Vec<String> = super::super::script_tools::callable(self.offer, self.agent)
            .into_iter()
            .map(|spec| spec.name)
            .collect();
        let assets_dir = self.workspace.tool_assets_dir(&call.call_id);
        let cancel = self.output.cancel.clone();
        let (batches, mut batch_rx) = unbounded_channel();
        let (ended_tx, ended) = mpsc::channel();
        let clock = Arc::new(ScriptClock::start());
        let script_clock = Arc::clone(&clock);
        let began = Instant::now();
        let mut script = tokio::task::spawn_blocking(move || {
            let cancelled = Arc::new(move || cancel.is_cancelled());
            let mut host = ChannelHost {
                started: Vec::new(),
                batches,
                ended,
            };
            let limit = settings.script_limits().timeout;
            let held_clock = Arc::clone(&script_clock);
            let mut outcome = run_script(
                &code,
                &tools,
                settings.script_limits(),
                script_clock,
                cancelled,
                &mut host,
            );
            host.finish_unawaited(&mut outcome, limit, &held_clock);
            let wall_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
            report(&outcome, settings, wall_ms, assets_dir.as_deref())
        });
        let parent = Parent {
            call,
            activity_id,
            clock: Arc::clone(&clock),
        };
        let joined = loop {
            tokio::select! {
                joined = &mut script => break joined,
                Some(batch) = batch_rx.recv() => {
                    let (results, ended_early) =
                        self.nested_batch(role, &parent, batch, &mut script).await;
                    if let Some(joined) = ended_early {
                        break joined;
                    }
                    for ended in results {
                        // The script may have ended meanwhile; its result is then told.
                        let _ = ended_tx.send(ended);
                    }
                }
            }
        };
        joined.unwrap_or_else(|_| {
            ToolReport::from(ToolOutput {
                content: "The script's engine stopped before it reported; nothing more is \
                          known of the script."
                    .into(),
                summary: "engine stopped".into(),
                is_error: true,
            })
        })
    }

    /// Runs one batch of a script's nested calls as the calls of one response, and
    /// gives each call's end. When the script ends before the batch does, the batch's
    /// calls are cancelled and settle, and the script's end is given too.
    async fn nested_batch(
        &mut self,
        role: &mut Role<'_>,
        parent: &Parent<'_>,
        batch: Vec<Started>,
        script: &mut tokio::task::JoinHandle<ToolReport>,
    ) -> (
        Vec<Ended>,
        Option<Result<ToolReport, tokio::task::JoinError>>,
    ) {
        let calls: Vec<Call> = batch
            .iter()
            .map(|(sequence, tool, arguments)| {
                let mut nested = self.call(
                    role,
                    nested_call_id(&parent.call.call_id, *sequence),
                    tool.clone(),
                    arguments.clone(),
                );
                nested.parent_activity_id = Some(parent.activity_id.to_owned());
                nested.nested = Some(Nested {
                    parent_call_id: parent.call.call_id.clone(),
                    sequence: *sequence,
                });
                nested
            })
            .collect();
        let ids: Vec<(u64, String)> = batch
            .iter()
            .zip(&calls)
            .map(|((sequence, _, _), call)| (*sequence, call.call_id.clone()))
            .collect();
        // The batch's calls answer to a token of their own, a child of the turn's, so
        // that the script's end stops them without cancelling the turn.
        let nested_cancel = self.output.cancel.child_token();
        let turn_cancel = std::mem::replace(&mut self.output.cancel, nested_cancel.clone());
        let mut items = Vec::new();
        let mut ended_early = None;
        // Whether the batch was refused whole: more calls than one run may show.
        let refused;
        let held = self.output.script_clock.replace(Arc::clone(&parent.clock));
        {
            let mut run = Box::pin(self.run_calls(role, calls, &mut items));
            refused = tokio::select! {
                ending = &mut run => ending.is_some(),
                joined = &mut *script => {
                    ended_early = Some(joined);
                    nested_cancel.cancel();
                    run.await.is_some()
                }
            };
        }
        self.output.cancel = turn_cancel;
        self.output.script_clock = held;
        if nested_cancel.is_cancelled() && ended_early.is_none() {
            // Something cancelled the run while the batch ran (the client, a lost
            // output): it is the turn's cancellation.
            self.output.cancel.cancel();
        }
        let results = ids
            .into_iter()
            .map(|(sequence, call_id)| {
                let result = items.iter().find_map(|item| match item {
                    Item::ToolResult {
                        call_id: id,
                        output,
                        is_error,
                    } if *id == call_id => Some(if *is_error {
                        Err(output.clone())
                    } else {
                        Ok(output.clone())
                    }),
                    _ => None,
                });
                let not_run = if refused { OVER_RUN_BOUND } else { NOT_RUN };
                (sequence, result.unwrap_or_else(|| Err(not_run.into())))
            })
            .collect();
        (results, ended_early)
    }
}

/// The `code_mode` call whose script makes nested calls.
struct Parent<'a> {
    call: &'a Call,
    activity_id: &'a str,
    /// The script's clock, held while a nested call waits for a person.
    clock: Arc<ScriptClock>,
}

/// A nested call's ID: its script's call and its number, which no call the model asked
/// for is given (the backend never names a top-level call this way, and a provider's
/// ID with this shape would still differ in its scope, the record kind).
fn nested_call_id(parent_call_id: &str, sequence: u64) -> String {
    format!("{parent_call_id}.code_mode.{sequence}")
}
