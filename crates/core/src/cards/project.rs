//! The selector and its size budget: a card as selected, reduced step by step until it
//! fits, and the core that is left when nothing else does.

use magi_protocol::cards::{
    Availability, Block, CARD_BYTES, CORE_BYTES, Card, Detail, Omission, Reason, ResultsBlock,
    Subject, merge_omissions, serialized_len, strongest_reason,
};

use super::draft::Draft;
use super::labels::{
    ROW_CLEANUP_WARNING, ROW_COMMAND_TIMEOUT, ROW_FAILURE_EXPLANATION, ROW_OUTPUT_LINES,
};
use super::metadata::fixed_title;
use super::source::CardSource;
use super::text::{char_count, cut, omission, safe_count};

/// Longest cleanup warning a core card keeps, in bytes.
const CORE_CLEANUP_BYTES: usize = 128;

/// The card for `source`: valid under [`magi_protocol::cards::validate`] and at most
/// [`CARD_BYTES`] serialized. Oversized detail is reduced deterministically (text
/// styles, preview lines, resource rows, optional values, whole optional blocks); when
/// even that does not fit, the result is [`core()`] of the card.
pub fn project(source: &CardSource) -> Card {
    let mut draft = Draft::new(source);
    // Most cards fit as selected: build and size them once.
    let card = draft.card();
    if serialized_len(&card) <= CARD_BYTES {
        return card;
    }
    draft.leave_out_styles();
    if draft.fits() {
        return draft.card();
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
