//! The fail-closed single-card validator: every rule one card, or the event carrying
//! it, can be checked against on its own, and the card's serialized size.

use std::fmt;

use super::blocks::{Block, DiffLine, DiffLineKind};
use super::card::{Card, ToolCardEvent};
use super::kinds::{Availability, CardOutcome, CardState, Origin, ParentState, Subject};
use super::styles::spans_fit;
use super::{
    BLOCKS_PER_CARD, CARD_BYTES, CHILDREN_PER_BLOCK, COMMAND_BYTES, DIFF_LINES_PER_BLOCK,
    DIFF_PATH_BYTES, LANGUAGE_BYTES, MAX_SAFE_INTEGER, METADATA_BYTES, PROTECTION_SUMMARY_BYTES,
    ROWS_PER_BLOCK, SCHEMA_VERSION, SIGNAL_BYTES, STRING_BYTES, TEXT_BLOCK_BYTES, TITLE_BYTES,
    WORKING_DIRECTORY_BYTES,
};
use crate::names::{is_valid_name, is_valid_session_id};

/// A rule a card, or the event carrying it, breaks. Field names are wire paths; `[]`
/// stands for any element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardViolation {
    /// `schema_version` is not [`SCHEMA_VERSION`].
    SchemaVersion(u64),
    /// An ID field does not follow the 1–64-byte ID grammar.
    Id(&'static str),
    /// `card_id` differs from `activity_id`.
    CardIdMismatch,
    /// `parent_state` and `parent_activity_id` disagree, or the card is its own parent.
    Parent,
    /// A state and its outcome disagree (running with an outcome, finished without).
    Outcome(&'static str),
    /// `detail.reason` is set for complete/none or missing for truncated/unavailable.
    Detail,
    /// A string is longer than its bound, in UTF-8 bytes.
    TooLong {
        /// The field.
        field: &'static str,
        /// Its bound.
        max: usize,
    },
    /// A string holds a control character other than LF or TAB.
    Control(&'static str),
    /// An array has more elements than its bound.
    TooMany {
        /// The field.
        field: &'static str,
        /// Its bound.
        max: usize,
    },
    /// A diff line carries line numbers its kind does not allow, or a zero.
    LineNumbers,
    /// A progress block's `completed` exceeds its `total`.
    Progress,
    /// A children block's `total` is below the number of children it lists.
    ChildrenTotal,
    /// More than one omission has this subject.
    DuplicateOmission(Subject),
    /// An integer is above [`MAX_SAFE_INTEGER`].
    UnsafeInteger(&'static str),
    /// The compact serialized card exceeds [`CARD_BYTES`].
    TooLarge {
        /// The serialized size.
        bytes: usize,
    },
    /// The event's `part` is not 0.
    Part,
    /// The event's `last_part` is not true.
    LastPart,
    /// The event's `activity_id` differs from the card's.
    EventIdMismatch,
    /// The card's `origin` is wrong for where it arrived.
    Origin,
    /// The event's session or run ID does not follow its grammar.
    Scope,
    /// A saved card is not finished at revision 0.
    Saved,
    /// A text block's `styles` break their rules (`tool.cards.styles`): too many
    /// spans, or one that is empty, unstyled, out of order or off the text.
    Styles,
}

impl fmt::Display for CardViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CardViolation::SchemaVersion(v) => write!(f, "unsupported card schema version {v}"),
            CardViolation::Id(field) => write!(f, "{field} does not follow the ID grammar"),
            CardViolation::CardIdMismatch => f.write_str("card_id differs from activity_id"),
            CardViolation::Parent => f.write_str("parent_state disagrees with parent_activity_id"),
            CardViolation::Outcome(field) => write!(f, "{field} disagrees with its state"),
            CardViolation::Detail => f.write_str("detail.reason disagrees with availability"),
            CardViolation::TooLong { field, max } => {
                write!(f, "{field} is longer than {max} bytes")
            }
            CardViolation::Control(field) => write!(f, "{field} holds a control character"),
            CardViolation::TooMany { field, max } => {
                write!(f, "{field} has more than {max} elements")
            }
            CardViolation::LineNumbers => {
                f.write_str("a diff line's numbers do not match its kind")
            }
            CardViolation::Progress => f.write_str("progress completed exceeds total"),
            CardViolation::ChildrenTotal => {
                f.write_str("children total is below the listed children")
            }
            CardViolation::DuplicateOmission(subject) => {
                write!(f, "more than one omission for subject {subject:?}")
            }
            CardViolation::UnsafeInteger(field) => {
                write!(f, "{field} is above the safe integer range")
            }
            CardViolation::TooLarge { bytes } => {
                write!(f, "card is {bytes} bytes, over {CARD_BYTES}")
            }
            CardViolation::Part => f.write_str("tool.card part is not 0"),
            CardViolation::LastPart => f.write_str("tool.card last_part is not true"),
            CardViolation::EventIdMismatch => {
                f.write_str("event activity_id differs from the card's")
            }
            CardViolation::Origin => f.write_str("card origin is wrong for its channel"),
            CardViolation::Scope => f.write_str("event session_id or run_id is malformed"),
            CardViolation::Saved => f.write_str("saved card is not finished at revision 0"),
            CardViolation::Styles => f.write_str(
                "a text block's styles are not ordered, styled spans of its text within their bound",
            ),
        }
    }
}

impl std::error::Error for CardViolation {}

/// Counts bytes written, so sizing a card needs no buffer.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The compact serialized size of `value` in bytes, as [`CARD_BYTES`] measures a card
/// (after JSON escaping, with every key and null), or a card as received.
///
/// Serializing cards and parsed JSON cannot fail; if it ever did, the size is
/// `usize::MAX` so that every bound check fails closed.
pub fn serialized_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Checks every rule that one card can be checked against on its own.
///
/// Rules spanning cards (revisions, identity budgets, hierarchy depth) belong to the
/// stream that carries them. The serialized size is checked last, as it is the only
/// check that serializes.
pub fn validate(card: &Card) -> Result<(), CardViolation> {
    if card.schema_version != SCHEMA_VERSION {
        return Err(CardViolation::SchemaVersion(card.schema_version));
    }
    id("card_id", &card.card_id)?;
    id("activity_id", &card.activity_id)?;
    if card.card_id != card.activity_id {
        return Err(CardViolation::CardIdMismatch);
    }
    if let Some(parent) = &card.parent_activity_id {
        id("parent_activity_id", parent)?;
    }
    if let Some(task) = &card.task_id {
        id("task_id", task)?;
    }
    let parent_ok = match card.parent_state {
        ParentState::Root => card.parent_activity_id.is_none(),
        ParentState::Available => card.parent_activity_id.is_some(),
        ParentState::Missing | ParentState::Omitted => true,
    };
    // A card that is its own parent is a cycle, which the hierarchy forbids.
    if !parent_ok || card.parent_activity_id.as_deref() == Some(card.activity_id.as_str()) {
        return Err(CardViolation::Parent);
    }
    lifecycle("outcome", card.state, card.outcome)?;
    safe("revision", Some(card.revision))?;
    let reason_needed = matches!(
        card.detail.availability,
        Availability::Truncated | Availability::Unavailable
    );
    if reason_needed != card.detail.reason.is_some() {
        return Err(CardViolation::Detail);
    }
    text("title", &card.title, TITLE_BYTES)?;
    let metadata = &card.metadata;
    opt_text("metadata.tool_name", &metadata.tool_name, METADATA_BYTES)?;
    opt_text(
        "metadata.resource_path",
        &metadata.resource_path,
        METADATA_BYTES,
    )?;
    opt_text(
        "metadata.working_directory",
        &metadata.working_directory,
        METADATA_BYTES,
    )?;
    opt_text(
        "metadata.public_protection.summary",
        &metadata.public_protection.summary,
        PROTECTION_SUMMARY_BYTES,
    )?;
    count("blocks", card.blocks.len(), BLOCKS_PER_CARD)?;
    for block in &card.blocks {
        validate_block(block)?;
    }
    count("omissions", card.omissions.len(), Subject::COUNT)?;
    for (i, omission) in card.omissions.iter().enumerate() {
        if card.omissions[..i]
            .iter()
            .any(|o| o.subject == omission.subject)
        {
            return Err(CardViolation::DuplicateOmission(omission.subject));
        }
        safe("omissions[].omitted_count", omission.omitted_count)?;
    }
    let bytes = serialized_len(card);
    if bytes > CARD_BYTES {
        return Err(CardViolation::TooLarge { bytes });
    }
    Ok(())
}

/// Checks the data of a live `tool.card` event: the single-part framing, the identity
/// shared by the event and its card, live origin, and the card itself.
pub fn validate_event(event: &ToolCardEvent) -> Result<(), CardViolation> {
    if event.part != 0 {
        return Err(CardViolation::Part);
    }
    if !event.last_part {
        return Err(CardViolation::LastPart);
    }
    if !is_valid_session_id(&event.session_id) || !is_valid_name(&event.run_id) {
        return Err(CardViolation::Scope);
    }
    if event.activity_id != event.card.activity_id || event.activity_id != event.card.card_id {
        return Err(CardViolation::EventIdMismatch);
    }
    if event.card.origin != Origin::Live {
        return Err(CardViolation::Origin);
    }
    validate(&event.card)
}

/// Checks a card attached to a saved `activity` history entry: both IDs equal the
/// entry's `message_id`, the origin is saved, and it is finished at revision 0.
pub fn validate_saved(card: &Card, message_id: &str) -> Result<(), CardViolation> {
    if card.activity_id != message_id || card.card_id != message_id {
        return Err(CardViolation::EventIdMismatch);
    }
    if card.origin != Origin::Saved {
        return Err(CardViolation::Origin);
    }
    if card.state != CardState::Finished || card.revision != 0 {
        return Err(CardViolation::Saved);
    }
    validate(card)
}

fn validate_block(block: &Block) -> Result<(), CardViolation> {
    match block {
        Block::Text(b) => {
            text("blocks[].text", &b.text, TEXT_BLOCK_BYTES)?;
            opt_text("blocks[].language", &b.language, LANGUAGE_BYTES)?;
            match &b.styles {
                Some(Some(spans)) if !spans_fit(spans, &b.text) => Err(CardViolation::Styles),
                _ => Ok(()),
            }
        }
        Block::Resources(b) => {
            count("blocks[].rows", b.rows.len(), ROWS_PER_BLOCK)?;
            for row in &b.rows {
                text("blocks[].rows[].label", &row.label, STRING_BYTES)?;
                opt_text("blocks[].rows[].location", &row.location, STRING_BYTES)?;
            }
            Ok(())
        }
        Block::Results(b) => {
            count("blocks[].rows", b.rows.len(), ROWS_PER_BLOCK)?;
            for row in &b.rows {
                text("blocks[].rows[].label", &row.label, STRING_BYTES)?;
                opt_text("blocks[].rows[].value", &row.value, STRING_BYTES)?;
            }
            Ok(())
        }
        Block::Command(b) => {
            opt_text("blocks[].command", &b.command, COMMAND_BYTES)?;
            opt_text(
                "blocks[].working_directory",
                &b.working_directory,
                WORKING_DIRECTORY_BYTES,
            )?;
            opt_text("blocks[].signal", &b.signal, SIGNAL_BYTES)
        }
        Block::Diff(b) => {
            opt_text("blocks[].old_path", &b.old_path, DIFF_PATH_BYTES)?;
            opt_text("blocks[].new_path", &b.new_path, DIFF_PATH_BYTES)?;
            count("blocks[].lines", b.lines.len(), DIFF_LINES_PER_BLOCK)?;
            for line in &b.lines {
                text("blocks[].lines[].text", &line.text, STRING_BYTES)?;
                diff_numbers(line)?;
            }
            Ok(())
        }
        Block::Children(b) => {
            count("blocks[].children", b.children.len(), CHILDREN_PER_BLOCK)?;
            safe("blocks[].total", b.total)?;
            if b.total.is_some_and(|total| total < b.children.len() as u64) {
                return Err(CardViolation::ChildrenTotal);
            }
            for child in &b.children {
                id("blocks[].children[].activity_id", &child.activity_id)?;
                if let Some(task) = &child.task_id {
                    id("blocks[].children[].task_id", task)?;
                }
                text("blocks[].children[].title", &child.title, TITLE_BYTES)?;
                lifecycle("blocks[].children[].outcome", child.state, child.outcome)?;
            }
            Ok(())
        }
        Block::Progress(b) => {
            text("blocks[].label", &b.label, STRING_BYTES)?;
            safe("blocks[].completed", b.completed)?;
            safe("blocks[].total", b.total)?;
            match (b.completed, b.total) {
                (Some(completed), Some(total)) if completed > total => Err(CardViolation::Progress),
                _ => Ok(()),
            }
        }
    }
}

/// Line numbers by kind: context may carry both, added only the new one, removed
/// only the old one, headers and no-newline markers neither. Known numbers are
/// positive and safe; unknown ones stay null.
fn diff_numbers(line: &DiffLine) -> Result<(), CardViolation> {
    let (old_allowed, new_allowed) = match line.kind {
        DiffLineKind::Context => (true, true),
        DiffLineKind::Added => (false, true),
        DiffLineKind::Removed => (true, false),
        DiffLineKind::FileHeader | DiffLineKind::HunkHeader | DiffLineKind::NoNewline => {
            (false, false)
        }
    };
    let fits = |number: Option<u64>, allowed: bool| match number {
        None => true,
        Some(n) => allowed && n > 0,
    };
    if !fits(line.old_line, old_allowed) || !fits(line.new_line, new_allowed) {
        return Err(CardViolation::LineNumbers);
    }
    safe("blocks[].lines[].old_line", line.old_line)?;
    safe("blocks[].lines[].new_line", line.new_line)
}

fn lifecycle(
    field: &'static str,
    state: CardState,
    outcome: Option<CardOutcome>,
) -> Result<(), CardViolation> {
    match (state, outcome) {
        (CardState::Running, None) | (CardState::Finished, Some(_)) => Ok(()),
        _ => Err(CardViolation::Outcome(field)),
    }
}

fn id(field: &'static str, value: &str) -> Result<(), CardViolation> {
    if is_valid_name(value) {
        Ok(())
    } else {
        Err(CardViolation::Id(field))
    }
}

/// A display string: within its byte bound, and sanitized, so no control character
/// other than the LF and TAB that sanitization keeps (terminal escapes are controls).
fn text(field: &'static str, value: &str, max: usize) -> Result<(), CardViolation> {
    if value.len() > max {
        return Err(CardViolation::TooLong { field, max });
    }
    if value
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(CardViolation::Control(field));
    }
    Ok(())
}

fn opt_text(field: &'static str, value: &Option<String>, max: usize) -> Result<(), CardViolation> {
    match value {
        Some(value) => text(field, value, max),
        None => Ok(()),
    }
}

fn count(field: &'static str, len: usize, max: usize) -> Result<(), CardViolation> {
    if len > max {
        Err(CardViolation::TooMany { field, max })
    } else {
        Ok(())
    }
}

fn safe(field: &'static str, value: Option<u64>) -> Result<(), CardViolation> {
    if value.is_some_and(|v| v > MAX_SAFE_INTEGER) {
        Err(CardViolation::UnsafeInteger(field))
    } else {
        Ok(())
    }
}
