//! Every state and reason Mission Control shows, in words a person reads: the one
//! place a wire value becomes text on screen. Each function matches its enum
//! exhaustively, so a new variant fails to compile until it has words.

use std::borrow::Cow;

use magi_client::fold::{ActivityDisplay, ApprovalState};
use magi_protocol::ErrorCode;
use magi_protocol::cards::{
    Availability, CardOutcome, CardState, Changes, DiffApplication, Omission, ProgressUnit,
    ProtectionDecision, Reason, ResourceAvailability, Subject,
};
use magi_protocol::messages::{
    DIAGNOSTIC_CONTEXT_EXCEEDED, DIAGNOSTIC_HOOK_BLOCKED, DIAGNOSTIC_HOOK_FAILED,
    DIAGNOSTIC_LOOP_DETECTED, DIAGNOSTIC_PROVIDER_RETRYING, DIAGNOSTIC_REPLY_REFUSED,
    DIAGNOSTIC_REPLY_TRUNCATED, DIAGNOSTIC_STEP_LIMIT,
};

/// What an omission left out, as a noun phrase (`count` when known).
pub(super) fn subject(subject: Subject) -> &'static str {
    match subject {
        Subject::Title => "part of the title",
        Subject::Metadata => "some details",
        Subject::Blocks => "detail",
        Subject::Rows => "some rows",
        Subject::Text => "some text",
        Subject::DiffLines => "diff lines",
        Subject::Children => "subagent calls",
        Subject::Progress => "progress",
        Subject::Ancestry => "where it belongs",
        Subject::Updates => "updates",
    }
}

/// Why something was left out.
pub(super) fn reason(reason: Reason) -> &'static str {
    match reason {
        Reason::SizeLimit => "too long to show",
        Reason::BudgetLimit => "over the run's display budget",
        Reason::Redacted => "hidden because it looked like a secret",
        Reason::NotRecorded => "not recorded in the session",
        Reason::UnsupportedSource => "recorded in a form this version cannot show",
        Reason::MissingSource => "not reported",
    }
}

/// An omission in one line: `12 diff lines not shown: too long to show`.
pub(super) fn omission(omission: &Omission) -> String {
    let what = subject(omission.subject);
    match omission.omitted_count {
        Some(n) => format!("{n} × {what} not shown: {}", reason(omission.reason)),
        None => format!("{what} not shown: {}", reason(omission.reason)),
    }
}

/// How complete a card's detail is; `None` when nothing needs saying.
pub(super) fn availability(availability: Availability) -> Option<&'static str> {
    match availability {
        Availability::Complete | Availability::None => None,
        Availability::Truncated => Some("detail shortened"),
        Availability::Unavailable => Some("no detail available"),
    }
}

/// A finished card's outcome.
pub(super) fn outcome(outcome: CardOutcome) -> &'static str {
    match outcome {
        CardOutcome::Success => "done",
        CardOutcome::Failure => "failed",
        CardOutcome::Cancelled => "cancelled",
        CardOutcome::Interrupted => "interrupted",
        CardOutcome::Unknown => "outcome unknown",
    }
}

/// A card's lifecycle.
pub(super) fn card_state(state: CardState) -> &'static str {
    match state {
        CardState::Running => "running",
        CardState::Finished => "finished",
    }
}

/// What is known of the changes a call made; `None` where a person needs no note (a
/// tool that changes nothing by contract).
pub(super) fn changes(changes: Changes) -> Option<&'static str> {
    match changes {
        Changes::NotApplicable => None,
        Changes::None => Some("nothing changed"),
        Changes::Applied => Some("changes applied"),
        Changes::Partial => Some("changes partly applied"),
        Changes::Unknown => Some("changes not verified"),
    }
}

/// The public protection decision; `None` when none was reported.
pub(super) fn decision(decision: ProtectionDecision) -> Option<&'static str> {
    match decision {
        ProtectionDecision::NotReported => None,
        ProtectionDecision::Allowed => Some("allowed"),
        ProtectionDecision::Blocked => Some("blocked"),
        ProtectionDecision::ApprovalRequired => Some("waiting for your approval"),
        ProtectionDecision::Denied => Some("denied"),
    }
}

/// What is known about applying a diff.
pub(super) fn application(application: DiffApplication) -> &'static str {
    match application {
        DiffApplication::Proposed => "proposed",
        DiffApplication::Applied => "applied",
        DiffApplication::Partial => "partly applied",
        DiffApplication::Unknown => "application unknown",
    }
}

/// What the source says about a file or URL a card names; `None` when available.
pub(super) fn resource(availability: ResourceAvailability) -> Option<&'static str> {
    match availability {
        ResourceAvailability::Available => None,
        ResourceAvailability::Unavailable => Some("unavailable"),
        ResourceAvailability::Unknown => Some("not checked"),
    }
}

/// What a progress block counts.
pub(super) fn unit(unit: ProgressUnit) -> &'static str {
    match unit {
        ProgressUnit::Items => "items",
        ProgressUnit::Bytes => "bytes",
        ProgressUnit::Steps => "steps",
        ProgressUnit::Unknown => "",
    }
}

/// An activity without a card: where it is.
pub(super) fn activity(state: ActivityDisplay) -> &'static str {
    match state {
        ActivityDisplay::Started => "running",
        ActivityDisplay::Completed => "done",
        ActivityDisplay::Failed => "failed",
        ActivityDisplay::Unknown => "end unknown (the connection was lost or the run ended)",
    }
}

/// An approval after it was asked.
pub(super) fn approval(state: ApprovalState) -> &'static str {
    match state {
        ApprovalState::Pending => "waiting for your answer",
        ApprovalState::Answered { allow: true } => "allowed",
        ApprovalState::Answered { allow: false } => "denied",
        ApprovalState::Lapsed => "denied: not answered before the run ended",
        ApprovalState::Unknown => "answer unknown: the connection was lost",
    }
}

/// A diagnostic of the run, in words: what happened, then the backend's summary. A
/// code this version does not know keeps its summary and names the code in brackets,
/// never alone.
pub(super) fn diagnostic(code: &str, summary: &str) -> String {
    let said = match code {
        DIAGNOSTIC_REPLY_TRUNCATED => "reply cut at the output limit (incomplete)",
        DIAGNOSTIC_REPLY_REFUSED => "the provider refused to answer",
        DIAGNOSTIC_PROVIDER_RETRYING => "retrying the model request",
        DIAGNOSTIC_STEP_LIMIT => "stopped at the step limit ([turns] max_steps)",
        DIAGNOSTIC_LOOP_DETECTED => "stopped: the model kept repeating the same calls",
        DIAGNOSTIC_HOOK_FAILED => "a hook failed",
        DIAGNOSTIC_HOOK_BLOCKED => "a hook refused the prompt",
        DIAGNOSTIC_CONTEXT_EXCEEDED => {
            "stopped: the conversation no longer fits the model's context window"
        }
        "activity_limit" => "stopped: more tool calls than one run may show",
        "provider_unreachable" => "the provider could not be reached",
        "provider_authentication_failed" => "the provider refused the credential",
        "provider_rate_limited" => "the provider's rate limit was hit",
        "provider_server_error" => "the provider failed with a server error",
        "provider_rejected_request" => "the provider rejected the request",
        "provider_stream_malformed" => "the provider's reply could not be read",
        "cancelled" => "cancelled",
        other => return format!("{} [{other}]", summary.trim()),
    };
    if summary.trim().is_empty() {
        said.to_owned()
    } else {
        format!("{said}: {}", summary.trim())
    }
}

/// A history entry of the session's diagnostics, in words: a turn that failed names
/// its error code in the log (`The turn failed: content_limit.`), which is said here
/// as what it means ([`crate::explain::run_failure`]); other entries are already words.
pub(super) fn history_diagnostic(text: &str) -> Cow<'_, str> {
    let code = text
        .strip_prefix("The turn failed: ")
        .and_then(|rest| rest.strip_suffix('.'))
        .and_then(ErrorCode::from_wire);
    match code {
        Some(code) => match crate::explain::run_failure(code) {
            Some(said) => Cow::Owned(format!("The turn failed: {said}.")),
            // The live diagnostics said why; the log keeps only that it failed.
            None => Cow::Borrowed("The turn failed while it ran."),
        },
        None => Cow::Borrowed(text),
    }
}

/// How a command ended: `exit 1`, `killed by signal 9 (KILL)`, `timed out`; `None`
/// when nothing is known. A timeout wins: the kill that ended it is its consequence.
pub(super) fn exit(
    exit_code: Option<i32>,
    signal: Option<&str>,
    timed_out: bool,
) -> Option<String> {
    if timed_out {
        return Some("timed out".to_owned());
    }
    if let Some(signal) = signal.map(str::trim).filter(|s| !s.is_empty()) {
        let name = signal.strip_prefix("SIG").unwrap_or(signal);
        return Some(match magi_protocol::text::signal_number(name) {
            Some(number) => format!("killed by signal {number} ({name})"),
            None => format!("killed by signal {name}"),
        });
    }
    exit_code.map(|code| format!("exit {code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_and_subject_has_words_and_no_wire_name() {
        let subjects = [
            Subject::Title,
            Subject::Metadata,
            Subject::Blocks,
            Subject::Rows,
            Subject::Text,
            Subject::DiffLines,
            Subject::Children,
            Subject::Progress,
            Subject::Ancestry,
            Subject::Updates,
        ];
        assert_eq!(subjects.len(), Subject::COUNT);
        for s in subjects {
            let said = subject(s);
            assert!(!said.contains('_') && !said.is_empty(), "{s:?}: {said}");
        }
        for r in Reason::PRIORITY {
            let said = reason(r);
            assert!(!said.contains('_') && !said.is_empty(), "{r:?}: {said}");
        }
        let o = Omission {
            subject: Subject::Blocks,
            reason: Reason::NotRecorded,
            omitted_count: None,
        };
        assert_eq!(
            omission(&o),
            "detail not shown: not recorded in the session"
        );
        let o = Omission {
            subject: Subject::DiffLines,
            reason: Reason::SizeLimit,
            omitted_count: Some(12),
        };
        assert_eq!(omission(&o), "12 × diff lines not shown: too long to show");
    }

    #[test]
    fn states_outcomes_and_decisions_are_words() {
        let mut said: Vec<Option<&str>> = Vec::new();
        for a in [
            Availability::Complete,
            Availability::Truncated,
            Availability::Unavailable,
            Availability::None,
        ] {
            said.push(availability(a));
        }
        for o in [
            CardOutcome::Success,
            CardOutcome::Failure,
            CardOutcome::Cancelled,
            CardOutcome::Interrupted,
            CardOutcome::Unknown,
        ] {
            said.push(Some(outcome(o)));
        }
        for c in [
            Changes::NotApplicable,
            Changes::None,
            Changes::Applied,
            Changes::Partial,
            Changes::Unknown,
        ] {
            said.push(changes(c));
        }
        for d in [
            ProtectionDecision::NotReported,
            ProtectionDecision::Allowed,
            ProtectionDecision::Blocked,
            ProtectionDecision::ApprovalRequired,
            ProtectionDecision::Denied,
        ] {
            said.push(decision(d));
        }
        for a in [
            DiffApplication::Proposed,
            DiffApplication::Applied,
            DiffApplication::Partial,
            DiffApplication::Unknown,
        ] {
            said.push(Some(application(a)));
        }
        for r in [
            ResourceAvailability::Available,
            ResourceAvailability::Unavailable,
            ResourceAvailability::Unknown,
        ] {
            said.push(resource(r));
        }
        for s in [CardState::Running, CardState::Finished] {
            said.push(Some(card_state(s)));
        }
        for a in [
            ActivityDisplay::Started,
            ActivityDisplay::Completed,
            ActivityDisplay::Failed,
            ActivityDisplay::Unknown,
        ] {
            said.push(Some(activity(a)));
        }
        for a in [
            ApprovalState::Pending,
            ApprovalState::Answered { allow: true },
            ApprovalState::Answered { allow: false },
            ApprovalState::Lapsed,
            ApprovalState::Unknown,
        ] {
            said.push(Some(approval(a)));
        }
        for u in [
            ProgressUnit::Items,
            ProgressUnit::Bytes,
            ProgressUnit::Steps,
        ] {
            said.push(Some(unit(u)));
        }
        for text in said.into_iter().flatten() {
            assert!(!text.contains('_') && !text.is_empty(), "{text}");
        }
        assert_eq!(changes(Changes::Applied), Some("changes applied"));
        assert_eq!(availability(Availability::Complete), None);
    }

    #[test]
    fn exits_and_signals_in_words() {
        assert_eq!(exit(Some(0), None, false).as_deref(), Some("exit 0"));
        assert_eq!(exit(Some(1), None, false).as_deref(), Some("exit 1"));
        assert_eq!(
            exit(None, Some("SIGKILL"), false).as_deref(),
            Some("killed by signal 9 (KILL)")
        );
        assert_eq!(
            exit(None, Some("TERM"), false).as_deref(),
            Some("killed by signal 15 (TERM)")
        );
        assert_eq!(
            exit(None, Some("SIGWINCH"), false).as_deref(),
            Some("killed by signal WINCH")
        );
        assert_eq!(
            exit(None, Some("SIGKILL"), true).as_deref(),
            Some("timed out")
        );
        assert_eq!(exit(None, None, false), None);
    }

    #[test]
    fn a_failed_turn_in_the_history_says_why_in_words() {
        assert_eq!(
            history_diagnostic("The turn failed: execution_failed."),
            "The turn failed while it ran."
        );
        assert_eq!(
            history_diagnostic("The turn failed: persistence_failed."),
            "The turn failed: the session log could not be written: check the free space \
             and permissions of MC_HOME."
        );
        assert_eq!(
            history_diagnostic("The turn was cancelled."),
            "The turn was cancelled."
        );
    }

    #[test]
    fn diagnostics_never_show_a_bare_code() {
        assert_eq!(
            diagnostic(DIAGNOSTIC_REPLY_TRUNCATED, "cut off"),
            "reply cut at the output limit (incomplete): cut off"
        );
        assert_eq!(
            diagnostic("provider_unreachable", "connection refused (http://x)"),
            "the provider could not be reached: connection refused (http://x)"
        );
        assert_eq!(
            diagnostic(DIAGNOSTIC_REPLY_REFUSED, "model \"m\" refused"),
            "the provider refused to answer: model \"m\" refused"
        );
        assert_eq!(
            diagnostic("something_new", "what happened"),
            "what happened [something_new]"
        );
    }
}
