//! The fixed part of a card: tool kind and title, changes made, and the public
//! protection decision.

use magi_protocol::cards::{
    Changes, Origin, PROTECTION_SUMMARY_BYTES, ProtectionDecision, PublicProtection, Reason,
    Subject, ToolKind,
};
use magi_store::records::ToolOutcome;
use magi_tools::BuiltinTool;
use magi_tools::facts::Facts;

use super::blocks::Source;
use super::labels::APPROVAL_REQUIRED;
use super::source::{CardSource, Settlement};
use super::text::{Notes, cut};

/// The tool kind of a tool name; unknown names are `other`.
pub fn tool_kind(tool_name: &str) -> ToolKind {
    match BuiltinTool::from_name(tool_name) {
        Some(tool) => tool.kind(),
        None if tool_name == magi_config::TASK_TOOL => ToolKind::Subagent,
        None if tool_name.starts_with(crate::mcp::MCP_TOOL_PREFIX) => ToolKind::Mcp,
        None => ToolKind::Other,
    }
}

/// The fixed title of a tool kind, used when the source title cannot be shown.
pub fn fixed_title(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "Read",
        ToolKind::Search => "Search",
        ToolKind::Write => "Write",
        ToolKind::Edit => "Edit",
        ToolKind::Command => "Command",
        ToolKind::Web => "Web",
        ToolKind::Mcp | ToolKind::CodeMode | ToolKind::Subagent | ToolKind::Other => "Tool",
    }
}

/// The metadata decision a recorded public label stands for; `None` for a label that
/// names no decision this backend defines, and for any other string.
fn decision_of(label: &str) -> Option<ProtectionDecision> {
    match label {
        "allowed"
        | "allowed automatically"
        | "allowed by user"
        | "allowed by API failure policy" => Some(ProtectionDecision::Allowed),
        "denied by API failure policy"
        | "denied by user"
        | "denied; approval unavailable"
        | "denied; needs humanizing" => Some(ProtectionDecision::Denied),
        APPROVAL_REQUIRED => Some(ProtectionDecision::ApprovalRequired),
        _ => None,
    }
}

/// What the change facts and the settlement say about changes made.
pub(super) fn changes(source: &CardSource, facts: &Source) -> Changes {
    // Subagents, MCP tools and the client's tools change what they change; a question
    // to the user changes nothing.
    let mutating = source.tool_name != crate::questions::ASK_USER_TOOL
        && BuiltinTool::from_name(source.tool_name).is_none_or(BuiltinTool::may_change_files);
    if !mutating {
        return Changes::NotApplicable;
    }
    let outcome = match source.settlement {
        Settlement::Running | Settlement::Interrupted => return Changes::Unknown,
        Settlement::Settled { outcome, .. } => outcome,
    };
    // A refused call never ran.
    if outcome == ToolOutcome::Denied {
        return Changes::None;
    }
    match facts {
        Source::Facts(facts, _) => match facts.as_ref() {
            Facts::Change {
                operations,
                applied,
                changed,
                ..
            } => {
                if applied > operations {
                    Changes::Unknown
                } else if !changed {
                    Changes::None
                } else if applied == operations && *operations > 0 {
                    Changes::Applied
                } else {
                    Changes::Partial
                }
            }
            // Commands' effects on files are not verified.
            _ => Changes::Unknown,
        },
        Source::Absent | Source::Unsupported => Changes::Unknown,
    }
}

/// The reason a missing value is given: inaccessible live, never recorded when saved.
pub(super) fn missing(origin: Origin) -> Reason {
    match origin {
        Origin::Live => Reason::MissingSource,
        Origin::Saved => Reason::NotRecorded,
    }
}

/// The public protection object: the decision of a pending approval, of the recorded
/// label, or of a refusal; the summary only ever a public label.
pub(super) fn protection(source: &CardSource, head: &mut Notes) -> PublicProtection {
    let settled = match source.settlement {
        Settlement::Settled { outcome, .. } => Some(outcome),
        _ => None,
    };
    let mut decision = ProtectionDecision::NotReported;
    let mut summary = None;
    if source.awaiting_approval && settled.is_none() {
        decision = ProtectionDecision::ApprovalRequired;
        summary = Some(APPROVAL_REQUIRED.to_owned());
    } else if let Some(label) = source.protection {
        match decision_of(label) {
            Some(known) => {
                decision = known;
                summary = Some(label.to_owned());
            }
            // Any other string is unavailable, never copied.
            None => head.add(Subject::Metadata, Reason::UnsupportedSource, Some(1)),
        }
    }
    if settled == Some(ToolOutcome::Denied) && decision != ProtectionDecision::Denied {
        // The refusal itself is the authoritative decision; a summary that does not say
        // so is not shown.
        let reason = if source.protection.is_none() {
            missing(source.origin)
        } else {
            Reason::UnsupportedSource
        };
        if summary.take().is_some() || source.protection.is_none() {
            head.add(Subject::Metadata, reason, Some(1));
        }
        decision = ProtectionDecision::Denied;
    }
    let summary = summary.map(|s| {
        let (kept, _) = cut(&s, PROTECTION_SUMMARY_BYTES);
        kept
    });
    PublicProtection { decision, summary }
}
