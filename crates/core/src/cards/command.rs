//! The blocks of a Bash command card: the command, its notices and its execution.

use magi_protocol::cards::{
    Block, COMMAND_BYTES, CommandBlock, Origin, Reason, ResultsBlock, SIGNAL_BYTES, STRING_BYTES,
    Subject, WORKING_DIRECTORY_BYTES,
};
use magi_protocol::text::REDACTED;
use magi_store::records::ToolOutcome;
use magi_tools::facts::CommandFacts;
use magi_tools::tracking::{
    FileOperation, INFERRED_ACTIVITY_ENTRIES, TrackedPath, TrackingStatus, inferred_activity,
};
use serde_json::Value;

use super::blocks::Context;
use super::labels::{
    APPROVAL_REQUIRED, PUBLIC_PROTECTION_LABELS, ROW_BACKGROUND_JOB, ROW_BASH_PROTECTION,
    ROW_CLEANUP_WARNING, ROW_COMMAND_TIMEOUT, ROW_FAILURE_EXPLANATION, ROW_FILE_TRACKING,
    ROW_HUMANIZE_PROTECTION, ROW_INFERRED_FILE_ACTIVITY, ROW_OUTPUT_LINES, ROW_OUTPUT_TRUNCATION,
    ROW_SANDBOX, ROW_SANDBOX_NOTICE,
};
use super::metadata::missing;
use super::part::{Part, Role, row};
use super::source::Settlement;
use super::text::{Notes, counted, safe_count, seconds};

impl Context<'_, '_> {
    /// The command's blocks, with the sandbox it ran in last when one was recorded.
    pub(super) fn command(&self, facts: &CommandFacts, tracking: Option<&Value>) -> Vec<Part> {
        let mut parts = self.command_parts(facts, tracking);
        parts.extend(sandbox_part(facts));
        parts
    }

    fn command_parts(&self, facts: &CommandFacts, tracking: Option<&Value>) -> Vec<Part> {
        let origin = self.source.origin;
        let mut parts = vec![self.notices(tracking)];

        let mut notes = Notes::default();
        let command = {
            let text = notes.text(Subject::Text, &facts.command, COMMAND_BYTES);
            (!text.is_empty() && text != REDACTED).then_some(text)
        };
        let working_directory = Some(notes.text(
            Subject::Text,
            &facts.working_directory,
            WORKING_DIRECTORY_BYTES,
        ))
        .filter(|wd| !wd.is_empty());
        let signal = facts
            .signal
            .as_deref()
            .map(|s| notes.text(Subject::Text, s, SIGNAL_BYTES));
        parts.push(Part::new(
            Block::Command(CommandBlock {
                command,
                working_directory,
                exit_code: facts.exit_code,
                signal,
            }),
            notes,
            Role::Command,
        ));

        let Some(outcome) = self.outcome else {
            // A running or interrupted call has no execution notices to report.
            return parts;
        };
        let background = facts.job_id.is_some()
            && facts.exit_code.is_none()
            && facts.signal.is_none()
            && facts.timed_out.is_none();
        if let (true, Some(job)) = (background, facts.job_id.as_deref()) {
            // The process outlives the call; its end is a separate notice.
            let mut notes = Notes::default();
            let job = notes.text(Subject::Text, job, STRING_BYTES);
            parts.push(Part::results(
                vec![row(ROW_BACKGROUND_JOB, Some(job))],
                notes,
            ));
            return parts;
        }
        parts.push(self.execution(facts, outcome, origin));
        parts
    }

    /// The Bash protection/tracking notices: four rows, always in this order.
    pub(super) fn notices(&self, tracking: Option<&Value>) -> Part {
        let source = self.source;
        let missing = missing(source.origin);
        let mut notes = Notes::default();
        let bash_protection = if source.awaiting_approval && self.outcome.is_none() {
            Some(APPROVAL_REQUIRED.to_owned())
        } else {
            match source.protection {
                Some(label) if PUBLIC_PROTECTION_LABELS.contains(&label) => Some(label.to_owned()),
                Some(_) => {
                    notes.add(Subject::Rows, Reason::UnsupportedSource, Some(1));
                    None
                }
                None => {
                    notes.add(Subject::Rows, missing, Some(1));
                    None
                }
            }
        };
        let (file_tracking, inferred) = tracking_rows(tracking, missing, &mut notes);
        Part::results(
            vec![
                // This backend has no humanize protection: nothing is missing.
                row(ROW_HUMANIZE_PROTECTION, None),
                row(ROW_BASH_PROTECTION, bash_protection),
                row(ROW_FILE_TRACKING, file_tracking),
                row(ROW_INFERRED_FILE_ACTIVITY, inferred),
            ],
            notes,
        )
    }

    /// The Bash execution notices of a settled command: five rows, always in this order.
    pub(super) fn execution(
        &self,
        facts: &CommandFacts,
        outcome: ToolOutcome,
        origin: Origin,
    ) -> Part {
        let missing = missing(origin);
        let mut notes = Notes::default();
        let timeout = match facts.timed_out {
            Some(false) => Some("not timed out".to_owned()),
            Some(true) => Some(match facts.timeout_ms {
                Some(ms) => format!("timed out after {}", seconds(ms)),
                None => "timed out; timeout duration unavailable".to_owned(),
            }),
            None => {
                notes.add(Subject::Rows, missing, Some(1));
                None
            }
        };
        let stream = |flag: Option<bool>| match flag {
            Some(true) => "truncated",
            Some(false) => "not truncated",
            None => "truncation unavailable",
        };
        let truncation = if facts.stdout_truncated.is_none() && facts.stderr_truncated.is_none() {
            notes.add(Subject::Rows, missing, Some(1));
            None
        } else {
            Some(format!(
                "stdout {}, stderr {}",
                stream(facts.stdout_truncated),
                stream(facts.stderr_truncated)
            ))
        };
        let cleanup = facts
            .cleanup_warning
            .as_deref()
            .and_then(|w| notes.first_line(w, STRING_BYTES));
        let failure = if outcome == ToolOutcome::Failed {
            let streams_absent = facts.stdout_lines.is_none() && facts.stderr_lines.is_none();
            let explanation = match facts.failure_line.as_deref() {
                Some(line) => notes.first_line(line, STRING_BYTES),
                None if streams_absent => match self.source.settlement {
                    Settlement::Settled { summary, .. } => notes.first_line(summary, STRING_BYTES),
                    _ => None,
                },
                None => None,
            };
            let repeated = |text: &String| {
                [&timeout, &truncation, &cleanup]
                    .iter()
                    .any(|other| other.as_ref() == Some(text))
            };
            match explanation {
                Some(text) if repeated(&text) => None,
                Some(text) => Some(text),
                None => {
                    // Without stderr there is nothing to explain from; with it, an
                    // empty one had no line to give.
                    if facts.stderr_lines.is_none() {
                        notes.add(Subject::Rows, missing, Some(1));
                    }
                    None
                }
            }
        } else {
            None
        };
        let lines = match (facts.stdout_lines, facts.stderr_lines) {
            (Some(out), Some(err)) => Some(format!(
                "{} (stdout, stderr); full output total unknown",
                counted(out.saturating_add(err), "line", "lines")
            )),
            (Some(out), None) => Some(format!(
                "{} (stdout; stderr unavailable); full output total unknown",
                counted(out, "line", "lines")
            )),
            (None, Some(err)) => Some(format!(
                "{} (stderr; stdout unavailable); full output total unknown",
                counted(err, "line", "lines")
            )),
            (None, None) => {
                notes.add(Subject::Rows, missing, Some(1));
                None
            }
        };
        Part::new(
            Block::Results(ResultsBlock {
                rows: vec![
                    row(ROW_COMMAND_TIMEOUT, timeout),
                    row(ROW_OUTPUT_TRUNCATION, truncation),
                    row(ROW_CLEANUP_WARNING, cleanup),
                    row(ROW_FAILURE_EXPLANATION, failure),
                    row(ROW_OUTPUT_LINES, lines),
                ],
            }),
            notes,
            Role::Execution,
        )
    }
}

/// The sandbox a command ran in, as applied, and the notice that it is not in force
/// when this command was the one to give it: a results block of its own, so the
/// specification's fixed Bash rows stay as they are.
fn sandbox_part(facts: &CommandFacts) -> Option<Part> {
    let applied = facts.sandbox.as_deref()?;
    let mut notes = Notes::default();
    let mut rows = vec![row(
        ROW_SANDBOX,
        Some(notes.text(Subject::Text, applied, STRING_BYTES)),
    )];
    if let Some(notice) = facts.sandbox_notice.as_deref() {
        rows.push(row(
            ROW_SANDBOX_NOTICE,
            Some(notes.text(Subject::Text, notice, STRING_BYTES)),
        ));
    }
    Some(Part::results(rows, notes))
}

/// The `File tracking` and `Inferred file activity` values of a recorded tracking
/// report, read leniently: an unknown status suppresses both rows, malformed entries
/// count as unsupported in the aggregate, and entries past the selection are excluded.
fn tracking_rows(
    tracking: Option<&Value>,
    missing: Reason,
    notes: &mut Notes,
) -> (Option<String>, Option<String>) {
    let object = match tracking {
        None | Some(Value::Null) => {
            notes.add(Subject::Rows, missing, Some(2));
            return (None, None);
        }
        Some(Value::Object(object)) => object,
        Some(_) => {
            notes.add(Subject::Rows, Reason::UnsupportedSource, Some(2));
            return (None, None);
        }
    };
    let Some(status) = object
        .get("status")
        .and_then(Value::as_str)
        .and_then(TrackingStatus::parse)
    else {
        notes.add(Subject::Rows, Reason::UnsupportedSource, Some(2));
        return (None, None);
    };
    let unsupported = match object.get("unsupported_segments") {
        None | Some(Value::Null) => Some(0usize),
        Some(value) => value
            .as_u64()
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    };
    let inferred = match (object.get("entries"), unsupported) {
        (None | Some(Value::Null), _) => {
            notes.add(Subject::Rows, missing, Some(1));
            None
        }
        (Some(Value::Array(items)), Some(unsupported)) => {
            let selected = items.len().min(INFERRED_ACTIVITY_ENTRIES);
            let mut malformed_selected = 0u64;
            // A malformed entry keeps its place in the selection as an invalid one, so
            // the aggregate counts it unsupported.
            let entries: Vec<TrackedPath> = items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    serde_json::from_value::<TrackedPath>(item.clone()).unwrap_or_else(|_| {
                        if index < selected {
                            malformed_selected += 1;
                        }
                        TrackedPath {
                            path: String::new(),
                            operation: FileOperation::Read,
                        }
                    })
                })
                .collect();
            if malformed_selected > 0 {
                notes.add(
                    Subject::Rows,
                    Reason::UnsupportedSource,
                    Some(malformed_selected),
                );
            }
            let excluded = (items.len() - selected) as u64;
            if excluded > 0 {
                notes.add(Subject::Rows, Reason::SizeLimit, safe_count(excluded));
            }
            inferred_activity(Some(&entries), unsupported)
        }
        _ => {
            notes.add(Subject::Rows, Reason::UnsupportedSource, Some(1));
            None
        }
    };
    (Some(status.label().to_owned()), inferred)
}
