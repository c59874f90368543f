//! The closed vocabularies of a card: its lifecycle and outcome, what is known about
//! changes and detail, its metadata, and what it left out (with the rules that merge
//! reasons and omissions).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{MAX_SAFE_INTEGER, nullable};
#[cfg(doc)]
use super::{METADATA_BYTES, PROTECTION_SUMMARY_BYTES};

/// What is known about a card's parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParentState {
    /// No parent; the parent ID is null.
    Root,
    /// The parent is projected; the parent ID is set.
    Available,
    /// The source ancestry is unavailable.
    Missing,
    /// Known ancestry was excluded by projection bounds or privacy.
    Omitted,
}

/// The kind of tool a card describes; unrecognized tools are [`ToolKind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the tool kinds")]
pub enum ToolKind {
    Read,
    Search,
    Write,
    Edit,
    Command,
    Web,
    Mcp,
    CodeMode,
    Subagent,
    Other,
}

/// The display lifecycle of a card or child, not transport or persistence state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CardState {
    /// Still running; the outcome is null.
    Running,
    /// Finished; the outcome is set.
    Finished,
}

/// The observed outcome of a finished tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CardOutcome {
    /// Authoritative tool completion.
    Success,
    /// An observed failed result.
    Failure,
    /// Observed tool cancellation.
    Cancelled,
    /// Evidence that execution ended without a tool terminal record.
    Interrupted,
    /// Outcome evidence is insufficient.
    Unknown,
}

/// What is known about the changes a tool made; independent of the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Changes {
    /// A non-mutating operation by contract.
    NotApplicable,
    /// Evidence that no changes occurred.
    None,
    /// Observed changes completed.
    Applied,
    /// Observed changes, incompletely applied.
    Partial,
    /// No change evidence.
    Unknown,
}

/// Where a card comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The live `tool.card` stream.
    Live,
    /// A projection of durable history records.
    Saved,
}

/// `detail`: how much safe detail a card carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Detail {
    /// How complete the detail is.
    pub availability: Availability,
    /// Null for complete/none; set for truncated/unavailable.
    #[serde(deserialize_with = "nullable")]
    pub reason: Option<Reason>,
}

/// How complete a card's detail is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    /// All safely displayable detail from the source fits.
    Complete,
    /// Selected detail was shortened or excluded.
    Truncated,
    /// No safe detail can be provided.
    Unavailable,
    /// The activity has no display detail by design.
    None,
}

/// Why detail is missing, for `detail.reason` and omissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The card or block size bound.
    SizeLimit,
    /// A run or history budget.
    BudgetLimit,
    /// Redaction.
    Redacted,
    /// The source never recorded it.
    NotRecorded,
    /// The source is of an unsupported kind.
    UnsupportedSource,
    /// The source is inaccessible.
    MissingSource,
}

impl Reason {
    /// Every reason, strongest first: when several apply, the first one is reported.
    pub const PRIORITY: [Reason; 6] = [
        Reason::Redacted,
        Reason::MissingSource,
        Reason::NotRecorded,
        Reason::UnsupportedSource,
        Reason::BudgetLimit,
        Reason::SizeLimit,
    ];

    /// Position in [`Reason::PRIORITY`]; lower is stronger.
    pub fn rank(self) -> usize {
        match self {
            Reason::Redacted => 0,
            Reason::MissingSource => 1,
            Reason::NotRecorded => 2,
            Reason::UnsupportedSource => 3,
            Reason::BudgetLimit => 4,
            Reason::SizeLimit => 5,
        }
    }

    /// The stronger of two reasons.
    pub fn stronger(self, other: Reason) -> Reason {
        if other.rank() < self.rank() {
            other
        } else {
            self
        }
    }
}

/// The reason to report when all of `reasons` apply, for `detail.reason` or an
/// omission: the strongest by [`Reason::PRIORITY`], or none when none applies.
pub fn strongest_reason(reasons: impl IntoIterator<Item = Reason>) -> Option<Reason> {
    reasons.into_iter().reduce(Reason::stronger)
}

/// The fixed `metadata` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Metadata {
    /// A sanitized tool name, never routing information; at most [`METADATA_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub tool_name: Option<String>,
    /// A selected display path; at most [`METADATA_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub resource_path: Option<String>,
    /// A selected working directory; at most [`METADATA_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub working_directory: Option<String>,
    /// The latest authoritative public protection decision.
    pub public_protection: PublicProtection,
}

/// `metadata.public_protection`: the latest public decision, never a private
/// assessment. It cannot authorize execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublicProtection {
    /// The decision.
    pub decision: ProtectionDecision,
    /// The backend's public summary, at most [`PROTECTION_SUMMARY_BYTES`].
    #[serde(deserialize_with = "nullable")]
    pub summary: Option<String>,
}

/// A public protection decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the decisions")]
pub enum ProtectionDecision {
    NotReported,
    Allowed,
    Blocked,
    ApprovalRequired,
    Denied,
}

/// An explicit statement that part of a card's content was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Omission {
    /// What was left out.
    pub subject: Subject,
    /// Why.
    pub reason: Reason,
    /// How many items were left out (Unicode scalar values for text), if known.
    #[serde(deserialize_with = "nullable")]
    pub omitted_count: Option<u64>,
}

impl Omission {
    /// Merges two omissions of the same subject: counts add when both are known, an
    /// unknown count (or a sum past [`MAX_SAFE_INTEGER`]) makes the result unknown,
    /// and the stronger reason wins. Returns `None` for different subjects.
    pub fn merge(self, other: Omission) -> Option<Omission> {
        if self.subject != other.subject {
            return None;
        }
        let omitted_count = match (self.omitted_count, other.omitted_count) {
            (Some(a), Some(b)) => a.checked_add(b).filter(|n| *n <= MAX_SAFE_INTEGER),
            _ => None,
        };
        Some(Omission {
            subject: self.subject,
            reason: self.reason.stronger(other.reason),
            omitted_count,
        })
    }
}

/// Merges same-subject omissions into one per subject, keeping the order in which
/// subjects first appear. See [`Omission::merge`] for counts and reasons.
pub fn merge_omissions(omissions: impl IntoIterator<Item = Omission>) -> Vec<Omission> {
    let mut merged: Vec<Omission> = Vec::new();
    for omission in omissions {
        match merged.iter_mut().find(|m| m.subject == omission.subject) {
            Some(existing) => {
                if let Some(combined) = existing.merge(omission) {
                    *existing = combined;
                }
            }
            None => merged.push(omission),
        }
    }
    merged
}

/// What an omission describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[expect(missing_docs, reason = "the variant names are the subjects")]
pub enum Subject {
    Title,
    Metadata,
    Blocks,
    Rows,
    Text,
    DiffLines,
    Children,
    Progress,
    Ancestry,
    Updates,
}

impl Subject {
    /// How many subjects there are: the most omissions one card can carry.
    pub const COUNT: usize = 10;
}
