//! Recovery: the calls a crashed run left without a result are settled before the
//! next turn's input is recorded.

use magi_config::Verdict;
use magi_store::records::{Record, RecordBody, ToolCallPhase, ToolOutcome};

use super::progress::{Claim, refused};
use super::reports::{outcome_of, result_record};
use super::role::Role;
use super::supervision::LABEL_APPROVAL_UNAVAILABLE;
use super::{CallService, Nested};
use crate::runner::conversation::INTERRUPTED_CALL;

/// What the model is told of questions a crashed run left open.
const RECOVERED_QUESTION: &str =
    "The user did not answer: the backend ended while the questions were open; they are declined.";
/// The summary of questions a crashed run left open.
const RECOVERED_QUESTION_SUMMARY: &str = "declined; the backend ended";

impl CallService<'_, '_> {
    /// Settles the calls a crashed run left unsettled, before this turn's input is
    /// recorded. Returns how many it settled, or none when a settlement could not be
    /// recorded.
    pub(in crate::runner) fn recover(
        &mut self,
        role: &mut Role<'_>,
        records: &[Record],
    ) -> Option<usize> {
        let unsettled = unsettled_calls(records);
        let count = unsettled.len();
        for unsettled in unsettled {
            let mut call = self.call(
                role,
                unsettled.call_id,
                unsettled.name,
                unsettled.arguments.unwrap_or_else(|| "{}".into()),
            );
            call.nested = unsettled.nested;
            // A disabled tool never runs, not even to recover a call made before; nor
            // does a Code Mode script's call, whose script is gone.
            let replayable = call.nested.is_none()
                && magi_tools::BuiltinTool::from_name(&call.name)
                    .is_some_and(magi_tools::BuiltinTool::replay_safe)
                && !self.offer.disabled(&call.name)
                && unsettled.phase != Some(ToolCallPhase::AwaitingApproval)
                && self.verdict(&call) == Verdict::Run;
            let (report, outcome, protection) = if replayable {
                let report = self.execution(&call).run(&Claim::recorded());
                let outcome = outcome_of(&report);
                (report, outcome, None)
            } else if call.name == crate::questions::ASK_USER_TOOL {
                // Questions open when the backend died were never answered: declined.
                let mut report = refused(RECOVERED_QUESTION);
                report.output.is_error = false;
                report.output.summary = RECOVERED_QUESTION_SUMMARY.into();
                // The card keeps the questions and says how they ended.
                report.facts =
                    crate::questions::parse_questions(&call.arguments)
                        .ok()
                        .map(|questions| magi_tools::facts::Facts::Questions {
                            questions,
                            answers: None,
                            settled: Some(RECOVERED_QUESTION_SUMMARY.into()),
                        });
                (report, ToolOutcome::Completed, None)
            } else if unsettled.phase == Some(ToolCallPhase::AwaitingApproval) {
                (
                    refused(&format!(
                        "The call was not run: {LABEL_APPROVAL_UNAVAILABLE}."
                    )),
                    ToolOutcome::Denied,
                    Some(LABEL_APPROVAL_UNAVAILABLE),
                )
            } else {
                let mut report = refused(INTERRUPTED_CALL);
                report.output.summary = "interrupted; outcome unknown".into();
                (report, ToolOutcome::Indeterminate, None)
            };
            let safe = self.safe_result(&report);
            let settled = result_record(unsettled.turn_id, &call, safe, outcome, protection, None);
            self.journal.append_all(vec![settled]).then_some(())?;
        }
        Some(count)
    }
}

/// A call of the log without a result.
struct Unsettled {
    turn_id: String,
    call_id: String,
    name: String,
    /// What it runs with: a hook's arguments when one replaced the model's.
    arguments: Option<String>,
    /// The last phase recorded for it, if any.
    phase: Option<ToolCallPhase>,
    /// Its script's call and number, when a Code Mode script made it.
    nested: Option<Nested>,
}

/// The calls of `records` that have no recorded result, in the order they were made.
fn unsettled_calls(records: &[Record]) -> Vec<Unsettled> {
    let mut settled = std::collections::HashSet::new();
    let mut phases = std::collections::HashMap::new();
    let mut replaced = std::collections::HashMap::new();
    for record in records {
        match &record.body {
            RecordBody::ToolResult { call_id, .. }
            | RecordBody::CodeModeToolResult { call_id, .. } => {
                settled.insert(call_id.as_str());
            }
            RecordBody::ToolCallState { call_id, state, .. } => {
                phases.insert(call_id.as_str(), *state);
            }
            // What a hook gave the call is what it ran with, if it ran at all.
            RecordBody::ToolCallHook {
                call_id,
                arguments: Some(arguments),
                ..
            } => {
                replaced.insert(call_id.as_str(), arguments);
            }
            _ => {}
        }
    }
    records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::ToolCall {
                turn_id,
                call_id,
                name,
                arguments,
                parent_call_id,
                sequence,
                ..
            } if !settled.contains(call_id.as_str()) => Some(Unsettled {
                turn_id: turn_id.clone(),
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: replaced
                    .get(call_id.as_str())
                    .map(|a| (*a).clone())
                    .or_else(|| arguments.clone()),
                phase: phases.get(call_id.as_str()).copied(),
                nested: parent_call_id.clone().map(|parent_call_id| Nested {
                    parent_call_id,
                    sequence: sequence.unwrap_or(0),
                }),
            }),
            _ => None,
        })
        .collect()
}
