//! What a call's report becomes: its outcome, the safe parts its result record keeps
//! (`tool_result`, or `code_mode_tool_result` for a call a script made) and the card of
//! a call not yet settled. (The report of a call that did not run is
//! `progress::refused`.)

use magi_store::records::{RecordBody, ToolOutcome, TranscriptStyles as TranscriptStyleSpans};
use magi_tools::ToolReport;

use super::{Call, hooked};
use crate::cards::{CardSource, PreviewSource, Settlement, TranscriptStyles};

/// A report's recordable parts, safe and bounded.
pub(super) struct SafeResult {
    pub(super) summary: String,
    pub(super) content: String,
    pub(super) facts: Option<serde_json::Value>,
    pub(super) transcript: Vec<String>,
    pub(super) transcript_styles: TranscriptStyleSpans,
}

/// The `tool_result` record of a settled call; `code_mode_tool_result` for a nested
/// one.
pub(super) fn result_record(
    turn_id: String,
    call: &Call,
    safe: SafeResult,
    outcome: ToolOutcome,
    protection: Option<&'static str>,
    display_id: Option<String>,
) -> RecordBody {
    if let Some(nested) = &call.nested {
        return RecordBody::CodeModeToolResult {
            turn_id,
            parent_call_id: nested.parent_call_id.clone(),
            sequence: nested.sequence,
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            outcome,
            summary: safe.summary,
            content: Some(safe.content),
            facts: safe.facts,
            protection: protection.map(str::to_owned),
            display_id,
            transcript: safe.transcript,
            transcript_styles: safe.transcript_styles,
        };
    }
    RecordBody::ToolResult {
        turn_id,
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        outcome,
        summary: safe.summary,
        content: Some(safe.content),
        facts: safe.facts,
        protection: protection.map(str::to_owned),
        display_id,
        transcript: safe.transcript,
        transcript_styles: safe.transcript_styles,
    }
}

/// The card source of a call that has not settled; identity, origin and revision are
/// filled in when it is sent.
pub(super) fn running_card<'a>(
    call: &'a Call,
    protection: Option<&'a str>,
    awaiting_approval: bool,
) -> CardSource<'a> {
    CardSource {
        activity_id: "",
        origin: magi_protocol::cards::Origin::Live,
        revision: 0,
        tool_name: &call.name,
        label: &call.label,
        working_directory: None,
        settlement: Settlement::Running,
        facts: None,
        protection,
        awaiting_approval,
        preview: PreviewSource::NotApplicable,
        parent_activity_id: call.parent_activity_id.as_deref(),
        task_id: call.task_id.as_deref(),
        children: None,
        transcript: &[],
        transcript_styles: TranscriptStyles::Off,
        hook: call.hook.as_ref().map(hooked::Decided::source),
    }
}

/// How a finished report settles: cancelled, failed or completed.
pub(super) fn outcome_of(report: &ToolReport) -> ToolOutcome {
    if report.cancelled {
        ToolOutcome::Cancelled
    } else if report.output.is_error {
        ToolOutcome::Failed
    } else {
        ToolOutcome::Completed
    }
}
