//! The fail-closed decoder of `tool.card` events and saved cards.
//!
//! Cards are decoded from raw JSON text, not from an already parsed
//! [`serde_json::Value`]: a parsed value has already lost duplicate fields, which the
//! extension requires clients to refuse. Decoding then refuses missing fields (nullable
//! ones included), unknown enum values and block types, and anything
//! [`magi_protocol::cards::validate`] refuses.
//!
//! **Unknown object fields** are accepted and ignored, as the extension allows for
//! inert optional display annotations: they are never shown, never executed and never
//! override a required fact. They still count toward the card's serialized-size and
//! nesting bounds, and a field repeating a known name is a refused duplicate.
//!
//! [`LiveCards`] applies decoded snapshots of one connection and keeps, per activity,
//! the current card and whether it must be shown as unknown.

use std::fmt;

use magi_protocol::cards::{
    self, CARD_BYTES, Card, CardViolation, ToolCardEvent, ToolCardsDescriptor, serialized_len,
};
use magi_protocol::limits::JSON_DEPTH;
use serde_json::Value;

mod live;
mod strict;
#[cfg(test)]
mod tests;

pub use live::{LiveCards, LiveViolation, TrackedCard, Unknown};
pub(crate) use strict::strict_value;

/// Why card JSON was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The text is longer than any frame that could carry it.
    TooLarge,
    /// The text is not one JSON value.
    Malformed,
    /// An object repeats this field name.
    DuplicateField(String),
    /// The value nests more than the protocol's container bound.
    TooDeep,
    /// The value does not have the schema's shape: a missing field, a wrong type, an
    /// unknown enum value or block type. Holds the parser's explanation.
    Shape(String),
    /// The card (or its event) breaks a schema rule.
    Invalid(CardViolation),
    /// The `tool.cards` descriptor differs from schema 1's.
    Descriptor,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::TooLarge => f.write_str("card text is over the frame bound"),
            DecodeError::Malformed => f.write_str("card text is not one JSON value"),
            DecodeError::DuplicateField(name) => write!(f, "duplicate JSON field `{name}`"),
            DecodeError::TooDeep => write!(f, "card nests more than {JSON_DEPTH} containers"),
            DecodeError::Shape(why) => write!(f, "card does not match schema 1: {why}"),
            DecodeError::Invalid(violation) => write!(f, "invalid card: {violation}"),
            DecodeError::Descriptor => f.write_str("tool.cards descriptor is not schema 1"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes one card, live or saved, from its JSON text and validates it on its own.
pub fn decode_card(json: &str) -> Result<Card, DecodeError> {
    let value = strict_value(json)?;
    check_card_size(&value)?;
    let card: Card = typed(value)?;
    cards::validate(&card).map_err(DecodeError::Invalid)?;
    Ok(card)
}

/// Decodes the card of a saved `activity` history entry (its `tool_card` field, when
/// not null) and checks it belongs to that entry.
pub fn decode_saved_card(json: &str, message_id: &str) -> Result<Card, DecodeError> {
    let card = decode_card(json)?;
    cards::validate_saved(&card, message_id).map_err(DecodeError::Invalid)?;
    Ok(card)
}

/// Decodes the `data` object of a `tool.card` event from its JSON text and checks the
/// event on its own: one part, matching identities, live origin, a valid card.
/// Rules spanning events belong to [`LiveCards`].
pub fn decode_event(json: &str) -> Result<ToolCardEvent, DecodeError> {
    let value = strict_value(json)?;
    if let Some(card) = value.get("card") {
        check_card_size(card)?;
    }
    let event: ToolCardEvent = typed(value)?;
    cards::validate_event(&event).map_err(DecodeError::Invalid)?;
    Ok(event)
}

/// Decodes the `extensions["tool.cards"]` object of an `initialize` result and checks
/// it is exactly schema 1's descriptor; anything else fails closed.
pub fn decode_descriptor(json: &str) -> Result<ToolCardsDescriptor, DecodeError> {
    let descriptor: ToolCardsDescriptor = typed(strict_value(json)?)?;
    if descriptor == ToolCardsDescriptor::schema_1() {
        Ok(descriptor)
    } else {
        Err(DecodeError::Descriptor)
    }
}

/// Converts a strictly parsed value into its schema type, refusing alternative forms.
///
/// Serde also accepts a struct written as an array of its field values, and a unit
/// enum value written as a one-entry object (`{"edit":null}`). Neither is the schema's
/// form, so the decoded value, serialized back, must be contained in what was
/// received: same scalars, same array lengths, every schema field present with the
/// same value. Only fields the schema does not name may be extra.
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(
    value: Value,
) -> Result<T, DecodeError> {
    let decoded = T::deserialize(&value).map_err(|e| DecodeError::Shape(e.to_string()))?;
    let canonical =
        serde_json::to_value(&decoded).map_err(|e| DecodeError::Shape(e.to_string()))?;
    if contains(&value, &canonical) {
        Ok(decoded)
    } else {
        Err(DecodeError::Shape(
            "a value is not written in its schema form".to_owned(),
        ))
    }
}

/// Whether `received` holds `canonical`, allowing only extra object fields.
fn contains(received: &Value, canonical: &Value) -> bool {
    match (received, canonical) {
        (Value::Object(received), Value::Object(canonical)) => canonical
            .iter()
            .all(|(key, value)| received.get(key).is_some_and(|r| contains(r, value))),
        (Value::Array(received), Value::Array(canonical)) => {
            received.len() == canonical.len()
                && received.iter().zip(canonical).all(|(r, c)| contains(r, c))
        }
        _ => received == canonical,
    }
}

/// Bounds the card as received, unknown fields included, measured compactly so that
/// insignificant whitespace in the text does not count.
fn check_card_size(card: &Value) -> Result<(), DecodeError> {
    let bytes = serialized_len(card);
    if bytes > CARD_BYTES {
        return Err(DecodeError::Invalid(CardViolation::TooLarge { bytes }));
    }
    Ok(())
}

/// Whether every text block of `card` carries `styles` exactly when
/// `tool.cards.styles` was negotiated.
pub fn styles_match(card: &Card, negotiated: bool) -> bool {
    card.blocks.iter().all(|block| match block {
        cards::Block::Text(text) => text.styles.is_some() == negotiated,
        _ => true,
    })
}

/// Checks the saved cards of a `history.page` result: none at all unless `tool.cards`
/// was negotiated; with it, the field on every activity's first part and nowhere else,
/// and every card a valid saved card of its entry, its text blocks' `styles` present
/// exactly when `styles` (`tool.cards.styles`) was negotiated.
pub fn check_page(
    page: &magi_protocol::messages::HistoryPageResult,
    negotiated: bool,
    styles: bool,
) -> Result<(), DecodeError> {
    use magi_protocol::messages::{EntryKind, SavedCard};
    for entry in &page.entries {
        let carries = entry.kind == EntryKind::Activity && entry.part == 0;
        match (&entry.tool_card, negotiated && carries) {
            (SavedCard::Absent, false) => {}
            (SavedCard::Null, true) => {}
            (SavedCard::Card(card), true) => {
                cards::validate_saved(card, &entry.message_id).map_err(DecodeError::Invalid)?;
                if !styles_match(card, styles) {
                    return Err(DecodeError::Shape(format!(
                        "the styles of the card of entry {} do not match the tool.cards.styles negotiation",
                        entry.message_id
                    )));
                }
                let size = serde_json::to_vec(card).map_or(usize::MAX, |v| v.len());
                if size > cards::CARD_BYTES {
                    return Err(DecodeError::TooLarge);
                }
            }
            _ => {
                return Err(DecodeError::Shape(format!(
                    "tool_card on entry {} part {} is not allowed here",
                    entry.message_id, entry.part
                )));
            }
        }
    }
    Ok(())
}
