//! Settlement with group commit: the records of a response's calls share syncs, the
//! calls they claim start and the ends they settle are told only once their sync
//! succeeded.

use std::sync::Arc;

use magi_protocol::limits::SUMMARY_BYTES;
use magi_protocol::messages::ActivityState;
use magi_provider::Item;
use magi_store::records::{RecordBody, ToolOutcome};
use magi_tools::ToolReport;

use super::progress::{
    Claim, ClaimSync, Ended, Group, InFlight, Progress, Settled, Staged, refused,
};
use super::reports::{SafeResult, outcome_of, result_record};
use super::role::Role;
use super::{Call, CallService};
use crate::cards::{CardSource, PreviewSource, Settlement, TranscriptStyles};
use crate::runner::conversation::{INTERRUPTED_CALL, attached_image};
use crate::runner::live_cards::Snapshot;
use crate::runner::text::bounded;

/// Why a call settles without running: what its report tells the model, how it
/// settles, and the protection label of a decision already made, if any.
pub(super) struct Refusal {
    pub(super) content: String,
    pub(super) outcome: ToolOutcome,
    pub(super) protection: Option<&'static str>,
}

impl Refusal {
    /// A refusal before any permission decision was made: its protection is none.
    pub(super) fn unjudged(content: String, outcome: ToolOutcome) -> Refusal {
        Refusal {
            content,
            outcome,
            protection: None,
        }
    }
}

impl CallService<'_, '_> {
    /// Waits for every call in flight, in the order they started, and stages each
    /// settlement. Results of calls that ended together share one sync: the group is
    /// committed only before waiting for a call still running.
    pub(super) async fn drain(
        &mut self,
        role: &mut Role<'_>,
        calls: &[Call],
        progress: &mut Progress,
    ) {
        if !progress.group.claimed.is_empty() {
            // Claimed calls start before anything waits for them.
            self.commit(role, calls, progress).await;
        }
        let mut flights = std::mem::take(&mut progress.in_flight);
        let mut shown = super::live::Shown::default();
        for at in 0..flights.len() {
            if !flights[at].task.is_finished() {
                self.commit(role, calls, progress).await;
            }
            // While it runs, the running commands' cards show their newest output.
            let joined = self
                .await_showing(role, calls, &mut flights[at..], &mut shown)
                .await;
            let flight = &flights[at];
            let (report, outcome) = match joined {
                Ok(report) => {
                    let outcome = outcome_of(&report);
                    (report, outcome)
                }
                // The tool's thread panicked: what it did before is unknown.
                Err(_) => (
                    refused("the tool stopped unexpectedly; its effects are unknown"),
                    ToolOutcome::Indeterminate,
                ),
            };
            let staged = self.staged(
                flight.index,
                &calls[flight.index],
                &flight.activity_id,
                report,
                outcome,
                flight.protection,
            );
            progress.stage(staged);
        }
    }

    /// Records the group with one write and one sync, and tells the ends it settled.
    /// The calls it claimed go to their threads just before the sync, to prepare beside
    /// it, and start only once it returned: a claim that could not be recorded runs
    /// nothing and settles failed. Returns whether everything was recorded.
    pub(super) async fn commit(
        &mut self,
        role: &mut Role<'_>,
        calls: &[Call],
        progress: &mut Progress,
    ) -> bool {
        let mut all_recorded = true;
        while !progress.group.records.is_empty() || !progress.group.starting.is_empty() {
            let Group {
                records,
                claims,
                claimed,
                ended,
                starting,
            } = std::mem::take(&mut progress.group);
            // The calls claimed go to their threads first, to prepare beside the sync;
            // each acts only once the claim is durable, and not at all if it is not.
            let claim = Arc::new(Claim::default());
            let sync = ClaimSync(Arc::clone(&claim));
            for claimed in claimed {
                let execution = claimed.execution;
                let live = execution.live.clone();
                let claim = Arc::clone(&claim);
                progress.in_flight.push(InFlight {
                    index: claimed.index,
                    activity_id: claimed.activity_id,
                    protection: claimed.protection,
                    read_only: claimed.read_only,
                    task: tokio::task::spawn_blocking(move || execution.run(&claim)),
                    live,
                });
            }
            let recorded = records.is_empty() || self.journal.append_all(records);
            all_recorded &= recorded;
            if recorded && (claims > 0 || !ended.is_empty()) {
                crate::fault::durable(claims, ended.len());
            }
            sync.open(recorded);
            // The ends of earlier calls, then the calls that waited for them started,
            // then the ends of those (a refusal settles at once).
            let (own, earlier): (Vec<Ended>, Vec<Ended>) = ended
                .into_iter()
                .partition(|ended| starting.iter().any(|s| s.index == ended.index));
            for ended in earlier {
                self.tell(role, &calls[ended.index], ended, recorded).await;
            }
            for starting in starting {
                self.start(role, &calls[starting.index], &starting.activity_id)
                    .await;
            }
            for ended in own {
                self.tell(role, &calls[ended.index], ended, recorded).await;
            }
        }
        all_recorded
    }

    /// Settles at once a call that did not run: its report is the refusal's content.
    pub(super) async fn refuse(
        &mut self,
        role: &mut Role<'_>,
        calls: &[Call],
        progress: &mut Progress,
        index: usize,
        activity_id: &str,
        refusal: Refusal,
    ) {
        let report = refused(&refusal.content);
        let staged = self.staged(
            index,
            &calls[index],
            activity_id,
            report,
            refusal.outcome,
            refusal.protection,
        );
        progress.stage(staged);
        self.commit(role, calls, progress).await;
    }

    /// A call's settlement: its result (and the preview of a change it applied, which
    /// follows its result in the same write), the end to tell and what the model is
    /// given.
    pub(super) fn staged(
        &self,
        index: usize,
        call: &Call,
        activity_id: &str,
        report: ToolReport,
        outcome: ToolOutcome,
        protection: Option<&'static str>,
    ) -> Staged {
        let display_id = report
            .preview
            .as_ref()
            .map(|_| format!("{}-preview", call.call_id));
        let mut safe = self.safe_result(&report);
        safe.content = super::hooked::model_content(call, safe.content);
        let (summary, facts, content, transcript, transcript_styles) = (
            safe.summary.clone(),
            safe.facts.clone(),
            safe.content.clone(),
            safe.transcript.clone(),
            safe.transcript_styles.clone(),
        );
        let image = (outcome == ToolOutcome::Completed)
            .then(|| {
                let assets = |id: &str| self.workspace.tool_assets_dir(id);
                attached_image(&call.name, &call.call_id, facts.as_ref(), &assets)
            })
            .flatten();
        let mut records = vec![result_record(
            self.turn_id.to_owned(),
            call,
            safe,
            outcome,
            protection,
            display_id.clone(),
        )];
        let mut preview = None;
        if let (Some(display_id), Some(applied)) = (display_id, report.preview) {
            let payload = serde_json::json!({
                "schema_version": 1,
                "diff": self.output.without_credentials(&applied.diff),
                "truncated": applied.truncated,
            });
            preview = Some(payload.clone());
            records.push(RecordBody::ToolAppliedPreview {
                display_id,
                preview: payload,
                parent_call_id: call.nested.as_ref().map(|n| n.parent_call_id.clone()),
                sequence: call.nested.as_ref().map(|n| n.sequence),
            });
        }
        Staged {
            records,
            ended: Ended {
                index,
                activity_id: activity_id.to_owned(),
                outcome,
                protection,
                summary,
                facts,
                preview,
                transcript,
                transcript_styles,
            },
            settled: Settled {
                content,
                is_error: outcome != ToolOutcome::Completed,
                image,
                outcome,
            },
        }
    }

    /// Tells a settled call's end, once its records were written (`recorded`) or
    /// could not be.
    pub(super) async fn tell(
        &mut self,
        role: &mut Role<'_>,
        call: &Call,
        ended: Ended,
        recorded: bool,
    ) {
        let Ended {
            activity_id,
            outcome,
            protection,
            summary,
            facts,
            preview,
            transcript,
            transcript_styles,
            ..
        } = ended;
        let state = if outcome == ToolOutcome::Completed {
            ActivityState::Completed
        } else {
            ActivityState::Failed
        };
        self.output
            .activity(&activity_id, &call.name, state, &summary)
            .await;
        // A preview that did not reach the log is not shown either.
        let preview = match (&preview, recorded) {
            (Some(payload), true) => PreviewSource::Recorded(payload),
            (Some(_), false) => PreviewSource::NotRecorded,
            (None, _) => PreviewSource::NotApplicable,
        };
        let cwd = self.workspace.cwd().to_string_lossy().into_owned();
        let children = role.children(call);
        let settled = CardSource {
            activity_id: &activity_id,
            origin: magi_protocol::cards::Origin::Live,
            revision: 0,
            tool_name: &call.name,
            label: &call.label,
            working_directory: Some(&cwd),
            settlement: Settlement::Settled {
                outcome,
                summary: &summary,
            },
            facts: facts.as_ref(),
            protection,
            awaiting_approval: false,
            preview,
            parent_activity_id: call.parent_activity_id.as_deref(),
            task_id: call.task_id.as_deref(),
            children: children.as_ref(),
            transcript: &transcript,
            transcript_styles: TranscriptStyles::recorded(&transcript_styles),
            hook: call.hook.as_ref().map(super::hooked::Decided::source),
        };
        self.card(role, &activity_id, Snapshot::Final, settled)
            .await;
        role.settled(self.output).await;
    }

    /// What a report records, made safe and bounded the one way every settlement
    /// records it.
    pub(super) fn safe_result(&self, report: &ToolReport) -> SafeResult {
        let (transcript, transcript_styles) = self.output.safe_lines(&report.transcript);
        SafeResult {
            summary: bounded(&self.output.safe(&report.output.summary), SUMMARY_BYTES),
            content: self.output.without_credentials(&report.output.content),
            facts: self.recorded_facts(report.facts.as_ref()),
            transcript,
            transcript_styles,
        }
    }

    /// A call's facts as recorded: every string made safe (controls stripped, secrets
    /// and credential values redacted) before it reaches the log and the cards.
    pub(super) fn recorded_facts(
        &self,
        facts: Option<&magi_tools::Facts>,
    ) -> Option<serde_json::Value> {
        let mut value = serde_json::to_value(facts?).ok()?;
        self.make_safe(&mut value);
        Some(value)
    }

    pub(super) fn make_safe(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => *text = self.output.safe(text),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.make_safe(v)),
            serde_json::Value::Object(fields) => fields
                .iter_mut()
                .filter(|(key, value)| !is_digest(key, value))
                .for_each(|(_, v)| self.make_safe(v)),
            _ => {}
        }
    }
}

/// Whether a fact is a SHA-256 digest the backend computed of a file it kept (a
/// capture, a `view_image` image): 64 hex digits under `sha256`, which look like a
/// secret to the redaction but are needed whole to tell the file is the one written.
/// Nothing else passes: any other text there is made safe as usual.
fn is_digest(key: &str, value: &serde_json::Value) -> bool {
    key == "sha256"
        && value
            .as_str()
            .is_some_and(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What each call of a response gives the model: its settlement, or, for a call that
/// never settled, the interrupted result.
pub(super) fn settlements(progress: Progress) -> Vec<Settled> {
    progress
        .settled
        .into_iter()
        .map(|settled| {
            settled.unwrap_or_else(|| Settled {
                content: INTERRUPTED_CALL.into(),
                is_error: true,
                image: None,
                outcome: ToolOutcome::Cancelled,
            })
        })
        .collect()
}

/// Appends the calls of one response to `items` as the model made them, together (one
/// assistant message in every wire format), then their results in the same order, each
/// followed by the image it gives the model, if any: the conversation as it happened.
pub(super) fn hand_over(calls: Vec<Call>, settled: Vec<Settled>, items: &mut Vec<Item>) {
    let mut results = Vec::with_capacity(2 * settled.len());
    for (call, settled) in calls.into_iter().zip(settled) {
        let Settled {
            content,
            is_error,
            image,
            ..
        } = settled;
        // The provider is given the call as the model made it; a hook's replacement
        // is said in the result.
        items.push(Item::ToolCall {
            call_id: call.call_id.clone(),
            name: call.name,
            arguments: call.model_arguments.unwrap_or(call.arguments),
        });
        results.push(Item::ToolResult {
            call_id: call.call_id,
            output: content,
            is_error,
        });
        results.extend(image);
    }
    items.extend(results);
}
