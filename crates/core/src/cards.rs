//! The card selector: the one place that turns the recorded facts of a tool call into
//! a schema-1 tool card, for live `tool.card` events and for saved cards in
//! `history.page` alike.
//!
//! Everything here is a pure function of a [`CardSource`]: no file, clock or process is
//! consulted, so a saved card is exactly what the records say, never what today's files
//! say. Outcome, changes and the protection decision come from authoritative evidence
//! only (the result record, the change facts, the recorded protection label); display
//! detail comes from the facts and the recorded preview. Every string passes through
//! [`magi_protocol::text::sanitize`] before it is sized, and every cut, exclusion, redaction or missing value
//! is stated as an omission. The fixed rows are documented in `docs/protocol/cards.md`.

use magi_protocol::cards::{
    Availability, Block, CARD_BYTES, CHILDREN_PER_BLOCK, COMMAND_BYTES, CORE_BYTES, Card,
    CardOutcome, CardState, Changes, Child, ChildrenBlock, CommandBlock, DIFF_LINES_PER_BLOCK,
    DIFF_PATH_BYTES, Detail, DiffApplication, DiffBlock, DiffLine, DiffLineKind, MAX_SAFE_INTEGER,
    METADATA_BYTES, Metadata, Omission, Origin, PROTECTION_SUMMARY_BYTES, ParentState,
    ProtectionDecision, PublicProtection, ROWS_PER_BLOCK, Reason, ResourceAvailability,
    ResourceKind, ResourceRow, ResourcesBlock, ResultRow, ResultsBlock, RowOutcome, SCHEMA_VERSION,
    SIGNAL_BYTES, STRING_BYTES, Subject, TITLE_BYTES, ToolKind, WORKING_DIRECTORY_BYTES,
    merge_omissions, serialized_len, strongest_reason,
};
use magi_protocol::text::{REDACTED, redact_secrets, strip_controls};
use magi_store::records::ToolOutcome;
use magi_tools::facts::{CommandFacts, Facts};
use magi_tools::tracking::{
    FileOperation, INFERRED_ACTIVITY_ENTRIES, TrackedPath, TrackingStatus, inferred_activity,
};
use magi_tools::{BuiltinTool, SubjectArgument};
use serde_json::Value;

/// Label of the Bash notice row for the humanize protection, which this backend does
/// not have: its value is always null.
pub const ROW_HUMANIZE_PROTECTION: &str = "Humanize protection";
/// Label of the Bash notice row for the recorded protection label.
pub const ROW_BASH_PROTECTION: &str = "Bash protection";
/// Label of the Bash notice row for the file tracking status.
pub const ROW_FILE_TRACKING: &str = "File tracking";
/// Label of the Bash notice row for the inferred file activity aggregate.
pub const ROW_INFERRED_FILE_ACTIVITY: &str = "Inferred file activity";
/// Label of the Bash execution row for the timeout.
pub const ROW_COMMAND_TIMEOUT: &str = "Command timeout";
/// Label of the Bash execution row for capture truncation.
pub const ROW_OUTPUT_TRUNCATION: &str = "Output truncation";
/// Label of the Bash execution row for a cleanup warning.
pub const ROW_CLEANUP_WARNING: &str = "Cleanup warning";
/// Label of the Bash execution row for a failed command's explanation.
pub const ROW_FAILURE_EXPLANATION: &str = "Failure explanation";
/// Label of the Bash execution row, and of the job row, for output line counts.
pub const ROW_OUTPUT_LINES: &str = "Output lines";
/// Label of the row naming the job a command moved to.
pub const ROW_BACKGROUND_JOB: &str = "Background job";
/// Label of the `read` and `bash_log` row for the lines returned.
pub const ROW_LINES_SHOWN: &str = "Lines shown";
/// Label of the `read` row for the file's length in lines.
pub const ROW_FILE_LINES: &str = "File lines";
/// Label of the `read` row for a stop at a bound.
pub const ROW_STOPPED_AT_BOUND: &str = "Stopped at bound";
/// Label of the `read` row for a binary file.
pub const ROW_BINARY: &str = "Binary";
/// Label of the search row for what was looked for.
pub const ROW_PATTERN: &str = "Pattern";
/// Label of the search row for where it looked.
pub const ROW_SCOPE: &str = "Scope";
/// Label of the search row for the reported count.
pub const ROW_MATCHES: &str = "Matches";
/// Label of the `grep` row for the files with a match.
pub const ROW_FILES_WITH_MATCHES: &str = "Files with matches";
/// Label of the search row for scan completeness.
pub const ROW_SCAN: &str = "Scan";
/// Label of the change row for operations applied.
pub const ROW_OPERATIONS_APPLIED: &str = "Operations applied";
/// Label of the `write` row for a file that did not exist before.
pub const ROW_FILE_CREATED: &str = "File created";
/// Label of the change row for a file whose content changed.
pub const ROW_FILE_CHANGED: &str = "File changed";
/// Label of the `web_fetch` row for the HTTP status.
pub const ROW_HTTP_STATUS: &str = "HTTP status";
/// Label of the `web_fetch` row for the content type.
pub const ROW_CONTENT_TYPE: &str = "Content type";
/// Label of the `web_fetch` row for the body bytes read.
pub const ROW_BYTES_READ: &str = "Bytes read";
/// Label of the `web_fetch` row for a cut at a bound.
pub const ROW_CUT_AT_BOUND: &str = "Cut at bound";
/// Label of the job row for the job's ID.
pub const ROW_JOB: &str = "Job";
/// Label of the job row for the job's state.
pub const ROW_STATE: &str = "State";
/// Label of the task row for the subagent profile.
pub const ROW_SUBAGENT: &str = "Subagent";
/// Label of the task row for the subagent's model requests.
pub const ROW_MODEL_REQUESTS: &str = "Model requests";
/// Label of the task row for the tool calls the subagent asked for.
pub const ROW_TOOL_CALLS: &str = "Tool calls";
/// Label of the task row for how the subagent ended.
pub const ROW_ENDED: &str = "Ended";
/// Label of the task row for the size of the subagent's final response.
pub const ROW_FINAL_RESPONSE: &str = "Final response";
/// Label of the MCP row for the server.
pub const ROW_SERVER: &str = "Server";
/// Label of the MCP row for the tool at the server.
pub const ROW_TOOL: &str = "Tool";
/// Label of the MCP row for whether the server answered.
pub const ROW_ANSWERED: &str = "Answered";
/// Label of the MCP row for whether the server marked its answer as an error.
pub const ROW_SERVER_ERROR: &str = "Server error";
/// Label of the MCP row for the answer's size.
pub const ROW_RESULT_SIZE: &str = "Result size";
/// Label of the MCP row for content not given as text.
pub const ROW_NON_TEXT_CONTENT: &str = "Non-text content";

/// Every public protection label of the contract. Only these are ever copied into a
/// card; any other recorded string is unavailable.
pub const PUBLIC_PROTECTION_LABELS: [&str; 11] = [
    "allowed",
    "allowed automatically",
    "allowed by user",
    "allowed by API failure policy",
    "denied by API failure policy",
    "denied by user",
    "denied; approval unavailable",
    "denied; needs humanizing",
    "approval required",
    "no added prose",
    "no comments or documentation",
];

/// The public label of a pending approval.
const APPROVAL_REQUIRED: &str = "approval required";

/// Longest cleanup warning a core card keeps, in bytes.
const CORE_CLEANUP_BYTES: usize = 128;

/// Where a call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement<'a> {
    /// It has not settled yet.
    Running,
    /// Its result is recorded (saved) or was observed (live).
    Settled {
        /// How it ended.
        outcome: ToolOutcome,
        /// Its safe summary: used only as the failure explanation of a command that
        /// produced no output streams (it could not start).
        summary: &'a str,
    },
    /// Execution ended without a result record (a crashed turn).
    Interrupted,
}

/// What is known about the display-only applied preview of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewSource<'a> {
    /// No preview belongs to this call (it applied nothing, or it is not a change).
    NotApplicable,
    /// A preview should exist but none was recorded (legacy, or a failed append).
    NotRecorded,
    /// The recorded preview payload: `{"schema_version":1,"diff":…,"truncated":…}`.
    Recorded(&'a Value),
    /// A preview was recorded but cannot be used (duplicate, mismatched, unreadable).
    Malformed,
}

/// Everything the selector needs about one call, from records (saved) or the live run.
///
/// The caller guarantees `activity_id` follows the ID grammar and `revision` is at most
/// [`MAX_SAFE_INTEGER`]; the selector never shortens identities.
#[derive(Debug, Clone, Copy)]
pub struct CardSource<'a> {
    /// Live: `tool-N`; saved: the history entry's `message_id`.
    pub activity_id: &'a str,
    /// Live stream or saved history.
    pub origin: Origin,
    /// The card's revision in its scope.
    pub revision: u64,
    /// The tool's name as called; it may be unknown to this build.
    pub tool_name: &'a str,
    /// The call's safe label (`read src/main.rs`).
    pub label: &'a str,
    /// The recorded working directory of a command, when the facts do not carry it.
    pub working_directory: Option<&'a str>,
    /// Where the call stands.
    pub settlement: Settlement<'a>,
    /// The recorded facts: absent (legacy, refused arguments), or any JSON value, which
    /// may be malformed or carry an unknown tag.
    pub facts: Option<&'a Value>,
    /// The recorded public protection label, if any.
    pub protection: Option<&'a str>,
    /// Whether an approval is pending (live only).
    pub awaiting_approval: bool,
    /// The applied preview of a change.
    pub preview: PreviewSource<'a>,
    /// The parent activity of a subagent's call (live only); none for a root call.
    pub parent_activity_id: Option<&'a str>,
    /// The delegated task the call is (a `task` call) or belongs to (a subagent's call).
    pub task_id: Option<&'a str>,
    /// A `task` call's children so far (live only).
    pub children: Option<&'a TaskChildren>,
}

/// The calls of a subagent, as its task's live card lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskChildren {
    /// Each call's reference, in order.
    pub children: Vec<Child>,
    /// Calls in all.
    pub total: u64,
}

/// The card for `source`: valid under [`magi_protocol::cards::validate`] and at most
/// [`CARD_BYTES`] serialized. Oversized detail is reduced deterministically (preview
/// lines, resource rows, optional values, whole optional blocks); when even that does
/// not fit, the result is [`core`] of the card.
pub fn project(source: &CardSource) -> Card {
    let mut draft = Draft::new(source);
    // Most cards fit as selected: build and size them once.
    let card = draft.card();
    if serialized_len(&card) <= CARD_BYTES {
        return card;
    }
    draft.trim_diff_lines();
    if draft.fits() {
        return draft.card();
    }
    draft.trim_resource_rows();
    if draft.fits() {
        return draft.card();
    }
    draft.null_optional_values();
    if draft.fits() {
        return draft.card();
    }
    draft.drop_optional_blocks();
    if draft.fits() {
        return draft.card();
    }
    core(&draft.card())
}

/// The reduced core of `card`, at most [`CORE_BYTES`] serialized: identity, outcome,
/// changes and the protection decision stay; the only blocks kept are a command block
/// (exit code and signal, without command text or working directory) and the Bash
/// execution notices (timeout, truncation and cleanup, the cleanup text cut to 128
/// bytes). Every other block is dropped with a `blocks` omission; title and metadata
/// give way to the fixed title and nulls only when the core would not fit otherwise.
/// A card with nothing to reduce is returned unchanged.
pub fn core(card: &Card) -> Card {
    let mut out = card.clone();
    let mut added: Vec<Omission> = Vec::new();
    let mut blocks = Vec::new();
    let mut dropped = 0u64;
    for block in &card.blocks {
        match block {
            Block::Command(command) => {
                let mut command = command.clone();
                for text in [&mut command.command, &mut command.working_directory] {
                    if let Some(value) = text.take() {
                        added.push(omission(
                            Subject::Text,
                            Reason::SizeLimit,
                            safe_count(char_count(&value)),
                        ));
                    }
                }
                blocks.push(Block::Command(command));
            }
            Block::Results(results) if is_execution_block(results) => {
                let mut results = results.clone();
                for row in &mut results.rows {
                    if row.label == ROW_FAILURE_EXPLANATION || row.label == ROW_OUTPUT_LINES {
                        if row.value.take().is_some() {
                            added.push(omission(Subject::Rows, Reason::SizeLimit, Some(1)));
                        }
                    } else if row.label == ROW_CLEANUP_WARNING
                        && let Some(value) = &mut row.value
                    {
                        let (kept, omitted) = cut(value, CORE_CLEANUP_BYTES);
                        if omitted > 0 {
                            *value = kept;
                            added.push(omission(
                                Subject::Text,
                                Reason::SizeLimit,
                                safe_count(omitted),
                            ));
                        }
                    }
                }
                blocks.push(Block::Results(results));
            }
            _ => dropped += 1,
        }
    }
    let changed = dropped > 0 || !added.is_empty();
    if !changed && serialized_len(card) <= CORE_BYTES {
        return out;
    }
    if dropped > 0 {
        added.push(omission(Subject::Blocks, Reason::SizeLimit, Some(dropped)));
    }
    let keeps_rows = blocks.iter().any(|b| matches!(b, Block::Results(_)));
    let keeps_text = !blocks.is_empty();
    // Omissions that described dropped content no longer say how much of the current
    // content is missing: their reasons stay, their counts become unknown.
    let mut omissions: Vec<Omission> = card
        .omissions
        .iter()
        .filter_map(|o| match o.subject {
            Subject::Rows if keeps_rows => Some(Omission {
                omitted_count: None,
                ..*o
            }),
            Subject::Text if keeps_text => Some(Omission {
                omitted_count: None,
                ..*o
            }),
            Subject::Rows
            | Subject::Text
            | Subject::DiffLines
            | Subject::Children
            | Subject::Progress => None,
            _ => Some(*o),
        })
        .collect();
    omissions.extend(added);
    out.blocks = blocks;
    out.omissions = merge_omissions(omissions);
    out.detail = reduced_detail(&out);
    if serialized_len(&out) > CORE_BYTES {
        let fixed = fixed_title(out.tool_kind);
        if out.title != fixed {
            let count = safe_count(char_count(&out.title));
            out.title = fixed.to_owned();
            out.omissions
                .push(omission(Subject::Title, Reason::SizeLimit, count));
        }
        let metadata = &mut out.metadata;
        let mut nulled = 0u64;
        for field in [
            &mut metadata.tool_name,
            &mut metadata.resource_path,
            &mut metadata.working_directory,
            &mut metadata.public_protection.summary,
        ] {
            if field.take().is_some() {
                nulled += 1;
            }
        }
        if nulled > 0 {
            out.omissions
                .push(omission(Subject::Metadata, Reason::SizeLimit, Some(nulled)));
        }
        out.omissions = merge_omissions(out.omissions);
        out.detail = reduced_detail(&out);
    }
    out
}

/// The detail of a reduced card: unavailable without blocks, truncated with them, for
/// the strongest reason its omissions give.
fn reduced_detail(card: &Card) -> Detail {
    match strongest_reason(card.omissions.iter().map(|o| o.reason)) {
        Some(reason) => Detail {
            availability: if card.blocks.is_empty() {
                Availability::Unavailable
            } else {
                Availability::Truncated
            },
            reason: Some(reason),
        },
        None => card.detail,
    }
}

/// Whether a results block is the Bash execution notices block.
fn is_execution_block(block: &ResultsBlock) -> bool {
    block
        .rows
        .first()
        .is_some_and(|row| row.label == ROW_COMMAND_TIMEOUT)
}

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

fn omission(subject: Subject, reason: Reason, omitted_count: Option<u64>) -> Omission {
    Omission {
        subject,
        reason,
        omitted_count,
    }
}

/// A count as a card may carry it: unknown past the safe-integer range.
fn safe_count(count: u64) -> Option<u64> {
    (count <= MAX_SAFE_INTEGER).then_some(count)
}

fn char_count(text: &str) -> u64 {
    text.chars().count() as u64
}

/// `text` cut to at most `max` bytes on a character boundary, and the number of
/// characters left out.
fn cut(text: &str, max: usize) -> (String, u64) {
    if text.len() <= max {
        return (text.to_owned(), 0);
    }
    let end = text.floor_char_boundary(max);
    (text[..end].to_owned(), char_count(&text[end..]))
}

/// `count` followed by its unit, singular for exactly one.
fn counted(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_owned()
}

/// A 1-based inclusive line range: `A-B`, or `A` for a single line.
fn line_range(first: u64, last: u64) -> Option<String> {
    match first.cmp(&last) {
        std::cmp::Ordering::Less => Some(format!("{first}-{last}")),
        std::cmp::Ordering::Equal => Some(first.to_string()),
        std::cmp::Ordering::Greater => None,
    }
}

/// Milliseconds as seconds: `120s`, `1.5s`, `0.2s`.
fn seconds(ms: u64) -> String {
    let whole = ms / 1000;
    let fraction = ms % 1000;
    if fraction == 0 {
        format!("{whole}s")
    } else {
        let digits = format!("{fraction:03}");
        format!("{whole}.{}s", digits.trim_end_matches('0'))
    }
}

/// Omissions gathered while selecting strings.
#[derive(Debug, Default, Clone)]
struct Notes(Vec<Omission>);

impl Notes {
    fn add(&mut self, subject: Subject, reason: Reason, count: Option<u64>) {
        self.0.push(omission(subject, reason, count));
    }

    /// `raw` made safe and cut to `max` bytes; a redaction and a cut are each recorded
    /// under `subject`.
    fn text(&mut self, subject: Subject, raw: &str, max: usize) -> String {
        let safe = self.safe(subject, raw);
        self.bound(subject, &safe, max)
    }

    /// `raw` made safe: controls stripped and secrets redacted, the redaction recorded.
    fn safe(&mut self, subject: Subject, raw: &str) -> String {
        let stripped = strip_controls(raw);
        let safe = redact_secrets(&stripped);
        if safe != stripped {
            self.add(subject, Reason::Redacted, None);
        }
        safe
    }

    /// Safe text cut to `max` bytes, the cut recorded.
    fn bound(&mut self, subject: Subject, safe: &str, max: usize) -> String {
        let (kept, omitted) = cut(safe, max);
        if omitted > 0 {
            self.add(subject, Reason::SizeLimit, safe_count(omitted));
        }
        kept
    }

    /// The first nonempty line of `raw`, made safe and bounded; the lines after it are
    /// recorded as omitted text.
    fn first_line(&mut self, raw: &str, max: usize) -> Option<String> {
        let safe = self.safe(Subject::Text, raw);
        let mut start = 0;
        let line = loop {
            let end = safe[start..].find('\n').map_or(safe.len(), |i| start + i);
            let line = &safe[start..end];
            if !line.trim().is_empty() {
                break &safe[start..end];
            }
            if end == safe.len() {
                return None;
            }
            start = end + 1;
        };
        let rest = &safe[start + line.len()..];
        if !rest.trim().is_empty() {
            self.add(
                Subject::Text,
                Reason::SizeLimit,
                safe_count(char_count(rest)),
            );
        }
        Some(self.bound(Subject::Text, line.trim_end(), max))
    }
}

/// What a block is to the reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Detail that may be shortened or dropped.
    Optional,
    /// The command block: it keeps the exit code.
    Command,
    /// The Bash execution notices: they keep timeout, truncation and cleanup.
    Execution,
}

/// A selected block with the omissions that describe its content.
#[derive(Debug, Clone)]
struct Part {
    block: Block,
    notes: Notes,
    role: Role,
}

impl Part {
    fn new(block: Block, notes: Notes, role: Role) -> Part {
        Part { block, notes, role }
    }

    fn results(rows: Vec<ResultRow>, notes: Notes) -> Part {
        Part::new(Block::Results(ResultsBlock { rows }), notes, Role::Optional)
    }
}

fn row(label: &str, value: Option<String>) -> ResultRow {
    ResultRow {
        label: label.to_owned(),
        value,
        outcome: RowOutcome::Unknown,
    }
}

/// How the recorded facts stand.
enum Source {
    /// Facts of the kind this tool reports.
    Facts(Box<Facts>, Option<Value>),
    /// No facts were recorded.
    Absent,
    /// Facts that cannot be read, of another tool, or of a tool this build does not
    /// know.
    Unsupported,
}

/// Reads the recorded facts of `tool_name`. A command's `tracking` is taken out first
/// and read on its own, so that an unknown tracking status costs only its two rows.
fn read_facts(tool_name: &str, kind: ToolKind, facts: Option<&Value>) -> Source {
    let Some(value) = facts else {
        return if kind == ToolKind::Other {
            Source::Unsupported
        } else {
            Source::Absent
        };
    };
    let mut value = value.clone();
    let mut tracking = None;
    if value.get("tool").and_then(Value::as_str) == Some("command")
        && let Some(object) = value.as_object_mut()
    {
        tracking = object.remove("tracking");
    }
    let Ok(facts) = serde_json::from_value::<Facts>(value) else {
        return Source::Unsupported;
    };
    let fits = match BuiltinTool::from_name(tool_name) {
        Some(tool) => tool.family().fits(&facts),
        None if tool_name == magi_config::TASK_TOOL => matches!(facts, Facts::Task { .. }),
        None if tool_name.starts_with(crate::mcp::MCP_TOOL_PREFIX) => {
            matches!(facts, Facts::Mcp { .. })
        }
        None => false,
    };
    if fits {
        Source::Facts(Box::new(facts), tracking)
    } else {
        Source::Unsupported
    }
}

/// A card being assembled: the fixed part, the selected blocks with their omissions,
/// and the `blocks` omissions.
struct Draft {
    card: Card,
    head: Notes,
    parts: Vec<Part>,
    tail: Notes,
    /// No display detail by design (a running call or a refused one, without facts).
    by_design: bool,
}

impl Draft {
    fn new(source: &CardSource) -> Draft {
        let kind = tool_kind(source.tool_name);
        let (state, outcome) = match source.settlement {
            Settlement::Running => (CardState::Running, None),
            Settlement::Interrupted => (CardState::Finished, Some(CardOutcome::Interrupted)),
            Settlement::Settled { outcome, .. } => (
                CardState::Finished,
                Some(match outcome {
                    ToolOutcome::Completed => CardOutcome::Success,
                    ToolOutcome::Failed | ToolOutcome::Denied => CardOutcome::Failure,
                    ToolOutcome::Cancelled => CardOutcome::Cancelled,
                    ToolOutcome::Indeterminate => CardOutcome::Unknown,
                }),
            ),
        };
        let mut head = Notes::default();
        let title = {
            let safe = head.safe(Subject::Title, source.label);
            let safe = safe.trim();
            if safe.is_empty() {
                fixed_title(kind).to_owned()
            } else {
                head.bound(Subject::Title, safe, TITLE_BYTES)
            }
        };
        let facts = read_facts(source.tool_name, kind, source.facts);
        let changes = changes(source, &facts);
        let public_protection = protection(source, &mut head);
        let tool_name = Some(head.text(Subject::Metadata, source.tool_name, METADATA_BYTES))
            .filter(|name| !name.is_empty());
        let resource_path = match &facts {
            Source::Facts(facts, _) => match facts.as_ref() {
                Facts::Read { path, .. } | Facts::Change { path, .. } => Some(path.as_str()),
                Facts::Search { path, .. } => path.as_deref(),
                _ => None,
            },
            _ => None,
        }
        .map(|path| head.text(Subject::Metadata, path, METADATA_BYTES))
        .filter(|path| !path.is_empty());
        let working_directory = match &facts {
            Source::Facts(facts, _) => match facts.as_ref() {
                Facts::Command(command) => Some(command.working_directory.as_str()),
                _ => None,
            },
            _ if BuiltinTool::from_name(source.tool_name)
                .is_some_and(|t| t.subject() == SubjectArgument::Command) =>
            {
                source.working_directory
            }
            _ => None,
        }
        .map(|wd| head.text(Subject::Metadata, wd, METADATA_BYTES))
        .filter(|wd| !wd.is_empty());

        let mut tail = Notes::default();
        let mut by_design = false;
        let parts = match &facts {
            Source::Facts(facts, tracking) => {
                let context = Context {
                    source,
                    changes,
                    outcome: match source.settlement {
                        Settlement::Settled { outcome, .. } => Some(outcome),
                        _ => None,
                    },
                };
                context.parts(facts, tracking.as_ref(), &mut tail)
            }
            Source::Absent => {
                let refused = matches!(
                    source.settlement,
                    Settlement::Settled {
                        outcome: ToolOutcome::Denied,
                        ..
                    }
                );
                if source.settlement == Settlement::Running || refused {
                    by_design = true;
                } else {
                    tail.add(Subject::Blocks, Reason::NotRecorded, None);
                }
                // A running task shows its subagent's calls so far.
                match (source.children, source.settlement, source.origin) {
                    (Some(children), Settlement::Running, Origin::Live) => {
                        vec![children_part(children)]
                    }
                    _ => Vec::new(),
                }
            }
            Source::Unsupported => {
                tail.add(Subject::Blocks, Reason::UnsupportedSource, None);
                Vec::new()
            }
        };

        let card = Card {
            schema_version: SCHEMA_VERSION,
            card_id: source.activity_id.to_owned(),
            activity_id: source.activity_id.to_owned(),
            parent_activity_id: source.parent_activity_id.map(str::to_owned),
            parent_state: if source.parent_activity_id.is_some() {
                ParentState::Available
            } else {
                ParentState::Root
            },
            task_id: source.task_id.map(str::to_owned),
            tool_kind: kind,
            state,
            outcome,
            changes,
            revision: source.revision,
            origin: source.origin,
            detail: Detail {
                availability: Availability::Complete,
                reason: None,
            },
            title,
            metadata: Metadata {
                tool_name,
                resource_path,
                working_directory,
                public_protection,
            },
            blocks: Vec::new(),
            omissions: Vec::new(),
        };
        Draft {
            card,
            head,
            parts,
            tail,
            by_design,
        }
    }

    /// The card as it stands.
    fn card(&self) -> Card {
        let mut card = self.card.clone();
        card.blocks = self.parts.iter().map(|p| p.block.clone()).collect();
        let all = self
            .head
            .0
            .iter()
            .chain(self.parts.iter().flat_map(|p| p.notes.0.iter()))
            .chain(self.tail.0.iter())
            .copied();
        card.omissions = merge_omissions(all);
        let reason = strongest_reason(card.omissions.iter().map(|o| o.reason));
        card.detail = if card.blocks.is_empty() {
            match reason {
                Some(reason) if !self.by_design => Detail {
                    availability: Availability::Unavailable,
                    reason: Some(reason),
                },
                _ => Detail {
                    availability: Availability::None,
                    reason: None,
                },
            }
        } else {
            match reason {
                Some(reason) => Detail {
                    availability: Availability::Truncated,
                    reason: Some(reason),
                },
                None => Detail {
                    availability: Availability::Complete,
                    reason: None,
                },
            }
        };
        card
    }

    fn excess(&self) -> usize {
        serialized_len(&self.card()).saturating_sub(CARD_BYTES)
    }

    fn fits(&self) -> bool {
        self.excess() == 0
    }

    /// Drops a block, recording it.
    fn drop_part(&mut self, index: usize) {
        self.parts.remove(index);
        self.tail.add(Subject::Blocks, Reason::SizeLimit, Some(1));
    }

    /// Shortens diff previews from their end, last block first, until the card fits;
    /// a diff left without lines is dropped.
    fn trim_diff_lines(&mut self) {
        for index in (0..self.parts.len()).rev() {
            while !self.fits() {
                let excess = self.excess();
                let part = &mut self.parts[index];
                let Block::Diff(diff) = &mut part.block else {
                    break;
                };
                let removed = pop_until(&mut diff.lines, excess);
                if removed == 0 {
                    break;
                }
                part.notes
                    .add(Subject::DiffLines, Reason::SizeLimit, Some(removed));
                if diff.lines.is_empty() {
                    self.drop_part(index);
                    break;
                }
            }
        }
    }

    /// Shortens resource lists from their end, last block first, until the card fits;
    /// a list left without rows is dropped.
    fn trim_resource_rows(&mut self) {
        for index in (0..self.parts.len()).rev() {
            while !self.fits() {
                let excess = self.excess();
                let part = &mut self.parts[index];
                let Block::Resources(resources) = &mut part.block else {
                    break;
                };
                let removed = pop_until(&mut resources.rows, excess);
                if removed == 0 {
                    break;
                }
                part.notes
                    .add(Subject::Rows, Reason::SizeLimit, Some(removed));
                if resources.rows.is_empty() {
                    self.drop_part(index);
                    break;
                }
            }
        }
    }

    /// Nulls the optional execution values (failure explanation, output lines), then
    /// the command text, until the card fits.
    fn null_optional_values(&mut self) {
        for part in &mut self.parts {
            let Block::Results(results) = &mut part.block else {
                continue;
            };
            if part.role != Role::Execution {
                continue;
            }
            for row in &mut results.rows {
                let optional =
                    row.label == ROW_FAILURE_EXPLANATION || row.label == ROW_OUTPUT_LINES;
                if optional && row.value.take().is_some() {
                    part.notes.add(Subject::Rows, Reason::SizeLimit, Some(1));
                }
            }
        }
        if self.fits() {
            return;
        }
        for part in &mut self.parts {
            if let Block::Command(command) = &mut part.block
                && let Some(text) = command.command.take()
            {
                part.notes.add(
                    Subject::Text,
                    Reason::SizeLimit,
                    safe_count(char_count(&text)),
                );
            }
        }
    }

    /// Drops optional blocks, last first, until the card fits.
    fn drop_optional_blocks(&mut self) {
        for index in (0..self.parts.len()).rev() {
            if self.fits() {
                return;
            }
            if self.parts[index].role == Role::Optional {
                self.drop_part(index);
            }
        }
    }
}

/// Removes items from the end of `items` until their serialized sizes add up to at
/// least `excess` bytes (or none is left); returns how many were removed.
fn pop_until<T: serde::Serialize>(items: &mut Vec<T>, excess: usize) -> u64 {
    let mut freed = 0usize;
    let mut removed = 0u64;
    while freed < excess {
        let Some(item) = items.pop() else {
            break;
        };
        // An element costs its JSON and the comma before it.
        freed += serde_json::to_string(&item).map_or(usize::MAX / 2, |json| json.len() + 1);
        removed += 1;
    }
    removed
}

/// What the change facts and the settlement say about changes made.
fn changes(source: &CardSource, facts: &Source) -> Changes {
    // Subagents, MCP tools and the client's tools change what they change.
    let mutating =
        BuiltinTool::from_name(source.tool_name).is_none_or(BuiltinTool::may_change_files);
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
fn missing(origin: Origin) -> Reason {
    match origin {
        Origin::Live => Reason::MissingSource,
        Origin::Saved => Reason::NotRecorded,
    }
}

/// The public protection object: the decision of a pending approval, of the recorded
/// label, or of a refusal; the summary only ever a public label.
fn protection(source: &CardSource, head: &mut Notes) -> PublicProtection {
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

/// What block selection needs besides the facts.
struct Context<'s, 'a> {
    source: &'s CardSource<'a>,
    changes: Changes,
    outcome: Option<ToolOutcome>,
}

impl Context<'_, '_> {
    fn parts(&self, facts: &Facts, tracking: Option<&Value>, tail: &mut Notes) -> Vec<Part> {
        match facts {
            Facts::Read {
                path,
                first_line,
                last_line,
                total_lines,
                truncated,
                binary,
            } => self.read(
                path,
                *first_line,
                *last_line,
                *total_lines,
                *truncated,
                *binary,
            ),
            Facts::Search {
                pattern,
                path,
                matches,
                files,
                complete,
                paths,
            } => self.search(
                pattern.as_deref(),
                path.as_deref(),
                *matches,
                *files,
                *complete,
                paths,
            ),
            Facts::Change {
                path,
                created,
                operations,
                applied,
                changed,
            } => self.change(path, *created, *operations, *applied, *changed, tail),
            Facts::Web {
                url,
                status,
                content_type,
                bytes,
                truncated,
            } => self.web(url, *status, content_type.as_deref(), *bytes, *truncated),
            Facts::Command(command) => self.command(command, tracking),
            Facts::Job {
                job_id,
                state,
                first_line,
                lines,
                total_lines,
            } => self.job(job_id, state.as_deref(), *first_line, *lines, *total_lines),
            Facts::Mcp {
                server,
                server_tool: tool,
                answered,
                server_error,
                result_bytes,
                non_text_items,
            } => self.mcp(
                server,
                tool,
                *answered,
                *server_error,
                *result_bytes,
                *non_text_items,
            ),
            Facts::Task {
                profile,
                model_requests,
                tool_calls,
                ended,
                report_bytes,
                ..
            } => self.task(
                profile,
                *model_requests,
                *tool_calls,
                ended,
                *report_bytes,
                tail,
            ),
        }
    }

    fn read(
        &self,
        path: &str,
        first_line: Option<u64>,
        last_line: Option<u64>,
        total_lines: Option<u64>,
        truncated: bool,
        binary: bool,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let availability = match self.outcome {
            Some(ToolOutcome::Completed) => ResourceAvailability::Available,
            Some(ToolOutcome::Failed) if binary => ResourceAvailability::Available,
            Some(ToolOutcome::Failed) => ResourceAvailability::Unavailable,
            _ => ResourceAvailability::Unknown,
        };
        let label = notes.text(Subject::Text, path, STRING_BYTES);
        let resources = Part::new(
            Block::Resources(ResourcesBlock {
                rows: vec![ResourceRow {
                    kind: ResourceKind::File,
                    location: Some(label.clone()),
                    label,
                    availability,
                }],
            }),
            notes,
            Role::Optional,
        );
        let shown = match (first_line, last_line) {
            (Some(first), Some(last)) if first > 0 => line_range(first, last),
            (None, None) if self.outcome == Some(ToolOutcome::Completed) => Some("none".to_owned()),
            _ => None,
        };
        let rows = vec![
            row(ROW_LINES_SHOWN, shown),
            row(
                ROW_FILE_LINES,
                total_lines.map(|n| counted(n, "line", "lines")),
            ),
            row(ROW_STOPPED_AT_BOUND, Some(yes_no(truncated))),
            row(ROW_BINARY, Some(yes_no(binary))),
        ];
        vec![resources, Part::results(rows, Notes::default())]
    }

    fn search(
        &self,
        pattern: Option<&str>,
        path: Option<&str>,
        matches: u64,
        files: Option<u64>,
        complete: bool,
        paths: &[String],
    ) -> Vec<Part> {
        let tool = BuiltinTool::from_name(self.source.tool_name);
        let mut notes = Notes::default();
        let (one, many) = match tool {
            Some(BuiltinTool::Grep) => ("match", "matches"),
            Some(BuiltinTool::Find) => ("file", "files"),
            _ => ("entry", "entries"),
        };
        let scan = if complete {
            "complete"
        } else if self.outcome == Some(ToolOutcome::Completed) {
            "stopped at a bound; full totals unknown"
        } else {
            "incomplete; full totals unknown"
        };
        let rows = vec![
            row(
                ROW_PATTERN,
                pattern.map(|p| notes.text(Subject::Text, p, STRING_BYTES)),
            ),
            row(
                ROW_SCOPE,
                Some(match path {
                    Some(path) => notes.text(Subject::Text, path, STRING_BYTES),
                    None => "working directory".to_owned(),
                }),
            ),
            row(ROW_MATCHES, Some(counted(matches, one, many))),
            row(
                ROW_FILES_WITH_MATCHES,
                files
                    .filter(|_| tool == Some(BuiltinTool::Grep))
                    .map(|n| counted(n, "file", "files")),
            ),
            row(ROW_SCAN, Some(scan.to_owned())),
        ];
        let mut parts = vec![Part::results(rows, notes)];
        if paths.is_empty() {
            return parts;
        }
        let mut notes = Notes::default();
        let listed = paths.len().min(ROWS_PER_BLOCK);
        let rows: Vec<ResourceRow> = paths[..listed]
            .iter()
            .map(|p| {
                let label = notes.text(Subject::Text, p, STRING_BYTES);
                ResourceRow {
                    kind: ResourceKind::File,
                    // A listing's entries are names in the listed directory, with marks.
                    location: (tool != Some(BuiltinTool::List)).then(|| label.clone()),
                    label,
                    availability: ResourceAvailability::Unknown,
                }
            })
            .collect();
        // `grep` lists files with a match; the others list what they count. Listed
        // rows are the first reported ones; the rest are omitted from display.
        let reported = if tool == Some(BuiltinTool::Grep) {
            files
        } else {
            Some(matches)
        };
        let listed = listed as u64;
        let excluded_paths = paths.len() as u64 - listed;
        match reported {
            Some(reported) => {
                let omitted = reported.saturating_sub(listed).max(excluded_paths);
                if omitted > 0 {
                    notes.add(Subject::Rows, Reason::SizeLimit, safe_count(omitted));
                }
            }
            None if excluded_paths > 0 => notes.add(Subject::Rows, Reason::SizeLimit, None),
            None => {}
        }
        parts.push(Part::new(
            Block::Resources(ResourcesBlock { rows }),
            notes,
            Role::Optional,
        ));
        parts
    }

    fn change(
        &self,
        path: &str,
        created: bool,
        operations: u64,
        applied: u64,
        changed: bool,
        tail: &mut Notes,
    ) -> Vec<Part> {
        let mut rows = vec![ResultRow {
            label: ROW_OPERATIONS_APPLIED.to_owned(),
            value: Some(format!("{applied} of {operations}")),
            // The count itself is an application outcome.
            outcome: if applied > operations {
                RowOutcome::Unknown
            } else if applied == 0 {
                RowOutcome::Failure
            } else if applied == operations {
                RowOutcome::Success
            } else {
                RowOutcome::Partial
            },
        }];
        if BuiltinTool::from_name(self.source.tool_name) == Some(BuiltinTool::Write) {
            rows.push(row(ROW_FILE_CREATED, Some(yes_no(created))));
        }
        rows.push(row(ROW_FILE_CHANGED, Some(yes_no(changed))));
        let mut parts = vec![Part::results(rows, Notes::default())];
        let effects = matches!(self.changes, Changes::Applied | Changes::Partial);
        let preview = match self.source.preview {
            // An applied change always has a preview in this build: one that is not
            // there was not recorded.
            PreviewSource::NotApplicable if effects => PreviewSource::NotRecorded,
            other => other,
        };
        match preview {
            PreviewSource::NotApplicable => {}
            PreviewSource::NotRecorded => tail.add(Subject::Blocks, Reason::NotRecorded, Some(1)),
            PreviewSource::Malformed => {
                tail.add(Subject::Blocks, Reason::UnsupportedSource, Some(1));
            }
            PreviewSource::Recorded(payload) => match preview_payload(payload) {
                None => tail.add(Subject::Blocks, Reason::UnsupportedSource, Some(1)),
                Some((diff, truncated)) => {
                    let mut notes = Notes::default();
                    let path = Some(notes.text(Subject::Text, path, DIFF_PATH_BYTES))
                        .filter(|p| !p.is_empty());
                    let lines = diff_lines(diff, truncated, &mut notes);
                    if lines.is_empty() {
                        if let Some(reason) = strongest_reason(notes.0.iter().map(|o| o.reason)) {
                            tail.add(Subject::Blocks, reason, Some(1));
                        }
                    } else {
                        let application = match self.changes {
                            Changes::Applied => DiffApplication::Applied,
                            Changes::Partial => DiffApplication::Partial,
                            _ => DiffApplication::Unknown,
                        };
                        parts.push(Part::new(
                            Block::Diff(DiffBlock {
                                // A created file had no old version.
                                old_path: if created { None } else { path.clone() },
                                new_path: path,
                                application,
                                lines,
                            }),
                            notes,
                            Role::Optional,
                        ));
                    }
                }
            },
        }
        parts
    }

    fn web(
        &self,
        url: &str,
        status: Option<u16>,
        content_type: Option<&str>,
        bytes: Option<u64>,
        truncated: bool,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let availability = match status {
            Some(status) if status < 400 => ResourceAvailability::Available,
            Some(_) => ResourceAvailability::Unavailable,
            None if self.outcome == Some(ToolOutcome::Failed) => ResourceAvailability::Unavailable,
            None => ResourceAvailability::Unknown,
        };
        let before = notes.0.len();
        let label = notes.text(Subject::Text, url, STRING_BYTES);
        let redacted = notes.0[before..]
            .iter()
            .any(|o| o.reason == Reason::Redacted);
        let resources = Part::new(
            Block::Resources(ResourcesBlock {
                rows: vec![ResourceRow {
                    kind: ResourceKind::Url,
                    // A redacted URL is no location.
                    location: (!redacted).then(|| label.clone()),
                    label,
                    availability,
                }],
            }),
            notes,
            Role::Optional,
        );
        let mut notes = Notes::default();
        let rows = vec![
            row(ROW_HTTP_STATUS, status.map(|s| s.to_string())),
            row(
                ROW_CONTENT_TYPE,
                content_type.map(|c| notes.text(Subject::Text, c, STRING_BYTES)),
            ),
            row(ROW_BYTES_READ, bytes.map(|n| counted(n, "byte", "bytes"))),
            row(ROW_CUT_AT_BOUND, Some(yes_no(truncated))),
        ];
        vec![resources, Part::results(rows, notes)]
    }

    fn command(&self, facts: &CommandFacts, tracking: Option<&Value>) -> Vec<Part> {
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
    fn notices(&self, tracking: Option<&Value>) -> Part {
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
    fn execution(&self, facts: &CommandFacts, outcome: ToolOutcome, origin: Origin) -> Part {
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

    fn job(
        &self,
        job_id: &str,
        state: Option<&str>,
        first_line: Option<u64>,
        lines: Option<u64>,
        total_lines: Option<u64>,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        // The tool's offsets are 0-based; cards show lines 1-based, as `read` does.
        let shown = match (first_line, lines) {
            (Some(_), Some(0)) => Some("none".to_owned()),
            (Some(first), Some(count)) => first
                .checked_add(1)
                .zip(first.checked_add(count))
                .and_then(|(a, b)| line_range(a, b)),
            _ => None,
        };
        let rows = vec![
            row(
                ROW_JOB,
                Some(notes.text(Subject::Text, job_id, STRING_BYTES)),
            ),
            row(
                ROW_STATE,
                state.map(|s| notes.text(Subject::Text, s, STRING_BYTES)),
            ),
            row(ROW_LINES_SHOWN, shown),
            row(
                ROW_OUTPUT_LINES,
                total_lines.map(|n| counted(n, "line", "lines")),
            ),
        ];
        vec![Part::results(rows, notes)]
    }

    fn mcp(
        &self,
        server: &str,
        tool: &str,
        answered: bool,
        server_error: Option<bool>,
        result_bytes: Option<u64>,
        non_text_items: Option<u64>,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let rows = vec![
            row(
                ROW_SERVER,
                Some(notes.text(Subject::Text, server, STRING_BYTES)),
            ),
            row(
                ROW_TOOL,
                Some(notes.text(Subject::Text, tool, STRING_BYTES)),
            ),
            row(ROW_ANSWERED, Some(yes_no(answered))),
            row(ROW_SERVER_ERROR, server_error.map(yes_no)),
            row(
                ROW_RESULT_SIZE,
                result_bytes.map(|n| counted(n, "byte", "bytes")),
            ),
            row(
                ROW_NON_TEXT_CONTENT,
                non_text_items.map(|n| match n {
                    0 => "none".to_owned(),
                    n => format!("{}, not shown", counted(n, "item", "items")),
                }),
            ),
        ];
        vec![Part::results(rows, notes)]
    }

    fn task(
        &self,
        profile: &str,
        model_requests: u64,
        tool_calls: u64,
        ended: &str,
        report_bytes: Option<u64>,
        tail: &mut Notes,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let rows = vec![
            row(
                ROW_SUBAGENT,
                Some(notes.text(Subject::Text, profile, STRING_BYTES)),
            ),
            row(
                ROW_MODEL_REQUESTS,
                Some(counted(model_requests, "request", "requests")),
            ),
            row(ROW_TOOL_CALLS, Some(counted(tool_calls, "call", "calls"))),
            row(
                ROW_ENDED,
                Some(notes.text(Subject::Text, ended, STRING_BYTES)),
            ),
            row(
                ROW_FINAL_RESPONSE,
                report_bytes.map(|n| {
                    format!(
                        "{}; the full text is in the report file",
                        counted(n, "byte", "bytes")
                    )
                }),
            ),
        ];
        let mut parts = vec![Part::results(rows, notes)];
        match (self.source.children, self.source.origin) {
            (Some(children), Origin::Live) => parts.push(children_part(children)),
            // The subagent's calls live in its own history, not in this one.
            _ if tool_calls > 0 => {
                tail.add(Subject::Children, Reason::NotRecorded, Some(tool_calls))
            }
            _ => {}
        }
        parts
    }
}

/// The children block of a task's live card: the first [`CHILDREN_PER_BLOCK`] calls
/// of its subagent, with the known total.
fn children_part(children: &TaskChildren) -> Part {
    let mut notes = Notes::default();
    let shown: Vec<Child> = children
        .children
        .iter()
        .take(CHILDREN_PER_BLOCK)
        .cloned()
        .collect();
    let total = children.total.max(shown.len() as u64);
    if total > shown.len() as u64 {
        notes.add(
            Subject::Children,
            Reason::BudgetLimit,
            Some(total - shown.len() as u64),
        );
    }
    Part::new(
        Block::Children(ChildrenBlock {
            children: shown,
            total: Some(total),
        }),
        notes,
        Role::Optional,
    )
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

/// The diff text and truncation flag of a schema-1 preview payload.
fn preview_payload(payload: &Value) -> Option<(&str, bool)> {
    let object = payload.as_object()?;
    if object.get("schema_version")?.as_u64()? != 1 {
        return None;
    }
    Some((
        object.get("diff")?.as_str()?,
        object.get("truncated")?.as_bool()?,
    ))
}

/// The position in the hunk being read.
#[derive(Debug, Clone, Copy)]
struct Hunk {
    /// The next old and new line numbers, when the header gave them.
    old: Option<u64>,
    new: Option<u64>,
    /// Old and new lines still to come, when the header gave them.
    old_left: Option<u64>,
    new_left: Option<u64>,
}

impl Hunk {
    /// Whether the hunk may still hold lines: unknown counts keep it open until the
    /// next header.
    fn open(&self) -> bool {
        match (self.old_left, self.new_left) {
            (Some(old), Some(new)) => old > 0 || new > 0,
            _ => true,
        }
    }
}

/// `-a,b` or `+c,d` (the count defaults to 1).
fn hunk_range(token: &str, sign: char) -> Option<(u64, u64)> {
    let range = token.strip_prefix(sign)?;
    let (start, count) = match range.split_once(',') {
        Some((start, count)) => (start.parse().ok()?, count.parse().ok()?),
        None => (range.parse().ok()?, 1),
    };
    Some((start, count))
}

fn parse_hunk(line: &str) -> Hunk {
    let mut tokens = line.split_whitespace().skip(1);
    let old = tokens.next().and_then(|t| hunk_range(t, '-'));
    let new = tokens.next().and_then(|t| hunk_range(t, '+'));
    match (old, new) {
        (Some((old, old_left)), Some((new, new_left))) => Hunk {
            old: Some(old),
            new: Some(new),
            old_left: Some(old_left),
            new_left: Some(new_left),
        },
        _ => Hunk {
            old: None,
            new: None,
            old_left: None,
            new_left: None,
        },
    }
}

/// A line number as a card may carry it: positive and safe, else unknown.
fn line_number(number: Option<u64>) -> Option<u64> {
    number.filter(|n| *n > 0 && *n <= MAX_SAFE_INTEGER)
}

fn step(counter: &mut Option<u64>) {
    if let Some(n) = counter {
        *n = n.saturating_add(1);
    }
}

fn consume(counter: &mut Option<u64>) {
    if let Some(n) = counter {
        *n = n.saturating_sub(1);
    }
}

/// The unified diff `diff` as typed diff lines: at most [`DIFF_LINES_PER_BLOCK`], the
/// rest counted as omitted, lines that are no diff line counted as unsupported, and a
/// truncated preview stated with an unknown count.
fn diff_lines(diff: &str, truncated: bool, notes: &mut Notes) -> Vec<DiffLine> {
    let mut lines: Vec<DiffLine> = Vec::new();
    let mut hunk: Option<Hunk> = None;
    let mut unsupported = 0u64;
    let mut raw_lines = diff.split_terminator('\n');
    for raw in raw_lines.by_ref() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let in_hunk = hunk.as_ref().is_some_and(Hunk::open);
        let first = raw.chars().next();
        let text = |notes: &mut Notes, body: &str| notes.text(Subject::Text, body, STRING_BYTES);
        let line = if raw.starts_with("@@") {
            let parsed = parse_hunk(raw);
            hunk = Some(parsed);
            Some((DiffLineKind::HunkHeader, text(notes, raw), None, None))
        } else if first == Some('\\') {
            let body = raw[1..].strip_prefix(' ').unwrap_or(&raw[1..]);
            Some((DiffLineKind::NoNewline, text(notes, body), None, None))
        } else if !in_hunk && (raw.starts_with("---") || raw.starts_with("+++")) {
            hunk = None;
            Some((DiffLineKind::FileHeader, text(notes, raw), None, None))
        } else if let Some(h) = hunk.as_mut().filter(|_| in_hunk) {
            match first {
                Some(' ') | None => {
                    let numbers = (line_number(h.old), line_number(h.new));
                    step(&mut h.old);
                    step(&mut h.new);
                    consume(&mut h.old_left);
                    consume(&mut h.new_left);
                    let body = raw.get(1..).unwrap_or("");
                    Some((
                        DiffLineKind::Context,
                        text(notes, body),
                        numbers.0,
                        numbers.1,
                    ))
                }
                Some('-') => {
                    let number = line_number(h.old);
                    step(&mut h.old);
                    consume(&mut h.old_left);
                    Some((DiffLineKind::Removed, text(notes, &raw[1..]), number, None))
                }
                Some('+') => {
                    let number = line_number(h.new);
                    step(&mut h.new);
                    consume(&mut h.new_left);
                    Some((DiffLineKind::Added, text(notes, &raw[1..]), None, number))
                }
                Some(_) => None,
            }
        } else {
            None
        };
        match line {
            Some((kind, text, old_line, new_line)) => lines.push(DiffLine {
                kind,
                text,
                old_line,
                new_line,
            }),
            None => unsupported += 1,
        }
        if lines.len() == DIFF_LINES_PER_BLOCK {
            break;
        }
    }
    let rest = raw_lines.count() as u64;
    if rest > 0 {
        notes.add(Subject::DiffLines, Reason::SizeLimit, safe_count(rest));
    }
    if unsupported > 0 {
        notes.add(
            Subject::DiffLines,
            Reason::UnsupportedSource,
            safe_count(unsupported),
        );
    }
    if truncated {
        notes.add(Subject::DiffLines, Reason::SizeLimit, None);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(diff: &str) -> Vec<(DiffLineKind, String, Option<u64>, Option<u64>)> {
        let mut notes = Notes::default();
        diff_lines(diff, false, &mut notes)
            .into_iter()
            .map(|l| (l.kind, l.text, l.old_line, l.new_line))
            .collect()
    }

    #[test]
    fn hunk_counts_tell_removed_lines_from_file_headers() {
        // A removed line whose text starts with `-- ` reads like a file header; the
        // hunk's counts say it is still inside the hunk.
        let lines = kinds("--- a\n+++ a\n@@ -7 +7 @@\n--- x\n+++ y\n--- b\n");
        assert_eq!(
            lines,
            vec![
                (DiffLineKind::FileHeader, "--- a".into(), None, None),
                (DiffLineKind::FileHeader, "+++ a".into(), None, None),
                (DiffLineKind::HunkHeader, "@@ -7 +7 @@".into(), None, None),
                (DiffLineKind::Removed, "-- x".into(), Some(7), None),
                (DiffLineKind::Added, "++ y".into(), None, Some(7)),
                (DiffLineKind::FileHeader, "--- b".into(), None, None),
            ]
        );
    }

    #[test]
    fn lines_outside_hunks_and_zero_numbers_are_never_invented() {
        let mut notes = Notes::default();
        let lines = diff_lines(
            "stray\n@@ -0,0 +0,1 @@\n+x\n@@ bad @@\n y\n",
            false,
            &mut notes,
        );
        let numbers: Vec<_> = lines.iter().map(|l| (l.old_line, l.new_line)).collect();
        // `+0` is no line number: it stays unknown, as does everything after a header
        // that cannot be read.
        assert_eq!(
            numbers,
            vec![(None, None), (None, None), (None, None), (None, None)]
        );
        assert_eq!(
            notes.0,
            vec![omission(
                Subject::DiffLines,
                Reason::UnsupportedSource,
                Some(1)
            )]
        );
    }

    #[test]
    fn value_formats() {
        assert_eq!(seconds(120_000), "120s");
        assert_eq!(seconds(1_500), "1.5s");
        assert_eq!(seconds(200), "0.2s");
        assert_eq!(seconds(1_234), "1.234s");
        assert_eq!(line_range(3, 3).as_deref(), Some("3"));
        assert_eq!(line_range(3, 2), None);
        assert_eq!(counted(1, "line", "lines"), "1 line");
        assert_eq!(counted(0, "line", "lines"), "0 lines");
        assert_eq!(cut("héllo", 2), ("h".to_owned(), 4));
    }

    #[test]
    fn first_lines_count_what_they_leave_out() {
        let mut notes = Notes::default();
        assert_eq!(
            notes.first_line("\n  \nerror: x  \n", 1024).as_deref(),
            Some("error: x")
        );
        assert!(notes.0.is_empty(), "a trailing newline is no omitted text");
        assert_eq!(notes.first_line("one\ntwo", 1024).as_deref(), Some("one"));
        assert_eq!(
            notes.0,
            vec![omission(Subject::Text, Reason::SizeLimit, Some(4))]
        );
        let mut notes = Notes::default();
        assert_eq!(notes.first_line(" \n\t", 1024), None);
        assert_eq!(
            notes.first_line("key sk-abcdefghijklmnop", 1024).as_deref(),
            Some("key [redacted]")
        );
        assert_eq!(
            notes.0,
            vec![omission(Subject::Text, Reason::Redacted, None)]
        );
    }
}
