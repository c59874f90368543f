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

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use magi_protocol::cards::{
    self, CARD_BYTES, CARDS_PER_RUN, Card, CardState, CardViolation, LIVE_ENVELOPE_BYTES,
    ProtectionDecision, ToolCardEvent, ToolCardsDescriptor,
};
use magi_protocol::limits::JSON_DEPTH;
use magi_protocol::names::{is_valid_name, is_valid_session_id};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

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
    let bytes = compact_len(card);
    if bytes > CARD_BYTES {
        return Err(DecodeError::Invalid(CardViolation::TooLarge { bytes }));
    }
    Ok(())
}

/// Counts bytes written, so measuring needs no buffer.
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

/// The compact serialized size of `value`; `usize::MAX` (failing every bound) in the
/// impossible case that a parsed value cannot be written back.
fn compact_len(value: &Value) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Parses `json` into a value, refusing duplicate fields and deep nesting.
///
/// `serde_json` keeps the last of duplicate object fields without telling, and its
/// own nesting limit (128) is far above the protocol's, so this walks the text with
/// its own visitor instead. The visitor records why it stopped, as the parser's error
/// only carries a message.
pub(crate) fn strict_value(json: &str) -> Result<Value, DecodeError> {
    if json.len() > LIVE_ENVELOPE_BYTES {
        return Err(DecodeError::TooLarge);
    }
    let problem = RefCell::new(None);
    let seed = Strict {
        depth: 0,
        problem: &problem,
    };
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let parsed = seed
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|_| problem.into_inner().unwrap_or(DecodeError::Malformed))
}

/// One level of the strict walk: the number of containers around the value.
#[derive(Clone, Copy)]
struct Strict<'p> {
    depth: usize,
    problem: &'p RefCell<Option<DecodeError>>,
}

impl<'p> Strict<'p> {
    fn fail<E: de::Error>(self, problem: DecodeError) -> E {
        let message = problem.to_string();
        self.problem.borrow_mut().get_or_insert(problem);
        E::custom(message)
    }

    /// The seed for the elements of a container entered at this level.
    fn enter<E: de::Error>(self) -> Result<Strict<'p>, E> {
        let depth = self.depth + 1;
        if depth > JSON_DEPTH {
            return Err(self.fail(DecodeError::TooDeep));
        }
        Ok(Strict { depth, ..self })
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // Keys compare after unescaping, so `"a"` and `"\u0061"` are duplicates.
            if object.contains_key(&key) {
                return Err(self.fail(DecodeError::DuplicateField(key)));
            }
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Why a tracked card is shown as unknown. Its last accepted snapshot, if any, is kept
/// for identity and title only; its outcome is no longer trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// The backend sent a snapshot breaking the rules for this card.
    Violation,
    /// The connection was lost while the card was running.
    TransportLost,
    /// The run finished while the card was still running: its final snapshot never
    /// arrived.
    Unresolved,
}

/// What a UI knows about one activity's card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedCard {
    card: Option<Card>,
    unknown: Option<Unknown>,
}

impl TrackedCard {
    /// The last accepted snapshot; none when the first snapshot was already refused.
    pub fn card(&self) -> Option<&Card> {
        self.card.as_ref()
    }

    /// Why the card must be shown as unknown, if it must.
    pub fn unknown(&self) -> Option<Unknown> {
        self.unknown
    }

    /// Whether the card must be shown as unknown rather than with its snapshot's facts.
    pub fn is_unknown(&self) -> bool {
        self.unknown.is_some()
    }
}

/// A `tool.card` event the tracker refused. Each one is a protocol violation; the
/// affected card (when the event names a well-formed one) is marked unknown and never
/// updated again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveViolation {
    /// `tool.cards` was not negotiated on this connection.
    NotNegotiated,
    /// The event or its card breaks a rule checkable on the event alone.
    Card(CardViolation),
    /// The revision went backwards.
    RevisionBackwards {
        /// The revision already applied.
        current: u64,
        /// The revision received.
        received: u64,
    },
    /// An already emitted revision came again with different content.
    RevisionConflict {
        /// The revision.
        revision: u64,
    },
    /// A running snapshot followed a finished one.
    Reopened,
    /// A finished card's outcome changed.
    OutcomeChanged,
    /// A known public protection decision went back to `not_reported`.
    ProtectionErased,
    /// The run already has [`CARDS_PER_RUN`] card identities.
    TooManyCards,
    /// The card is already unknown; the snapshot was not applied.
    CardUnknown,
    /// A card arrived after its run finished.
    AfterRunFinished,
}

impl fmt::Display for LiveViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveViolation::NotNegotiated => f.write_str("tool.card without negotiation"),
            LiveViolation::Card(violation) => violation.fmt(f),
            LiveViolation::RevisionBackwards { current, received } => {
                write!(f, "card revision {received} after {current}")
            }
            LiveViolation::RevisionConflict { revision } => {
                write!(
                    f,
                    "card revision {revision} repeated with different content"
                )
            }
            LiveViolation::Reopened => f.write_str("running card snapshot after finished"),
            LiveViolation::OutcomeChanged => f.write_str("finished card changed its outcome"),
            LiveViolation::ProtectionErased => {
                f.write_str("known protection decision reset to not_reported")
            }
            LiveViolation::TooManyCards => {
                write!(f, "more than {CARDS_PER_RUN} cards in one run")
            }
            LiveViolation::CardUnknown => f.write_str("snapshot for a card already unknown"),
            LiveViolation::AfterRunFinished => f.write_str("card after run.finished"),
        }
    }
}

impl std::error::Error for LiveViolation {}

/// The cards of one run.
#[derive(Debug, Default)]
struct RunCards {
    cards: HashMap<String, TrackedCard>,
    finished: bool,
}

/// The live cards of one connection, by run and activity.
///
/// Each run holds at most [`CARDS_PER_RUN`] identities; drop a run with
/// [`LiveCards::remove_run`] once its saved history replaces the live projection.
#[derive(Debug, Default)]
pub struct LiveCards {
    runs: HashMap<(String, String), RunCards>,
}

impl LiveCards {
    /// An empty tracker.
    pub fn new() -> LiveCards {
        LiveCards::default()
    }

    /// Applies one decoded `tool.card` event. `negotiated` says whether `tool.cards`
    /// was admitted on this connection.
    ///
    /// A snapshot replaces the card when its revision is higher; the same revision
    /// with identical content changes nothing. Any refused event that names a
    /// well-formed activity marks that card unknown for good: older or conflicting
    /// state is never applied.
    pub fn apply(&mut self, event: ToolCardEvent, negotiated: bool) -> Result<(), LiveViolation> {
        if !negotiated {
            return Err(LiveViolation::NotNegotiated);
        }
        let checked = cards::validate_event(&event).map_err(LiveViolation::Card);
        let ToolCardEvent {
            session_id,
            run_id,
            activity_id,
            card,
            ..
        } = event;
        let trackable = is_valid_session_id(&session_id)
            && is_valid_name(&run_id)
            && is_valid_name(&activity_id);
        if !trackable {
            // There is no well-formed identity to mark. The event check refuses such
            // events too; its explanation is the one reported.
            return Err(checked
                .err()
                .unwrap_or(LiveViolation::Card(CardViolation::Scope)));
        }
        let run = self.runs.entry((session_id, run_id)).or_default();
        if run.finished {
            return Err(LiveViolation::AfterRunFinished);
        }
        let verdict = match run.cards.get(&activity_id) {
            None if run.cards.len() >= CARDS_PER_RUN => return Err(LiveViolation::TooManyCards),
            None => checked.map(|()| Applied::Replaced),
            Some(tracked) if tracked.unknown.is_some() => return Err(LiveViolation::CardUnknown),
            Some(tracked) => checked.and_then(|()| successor(tracked.card.as_ref(), &card)),
        };
        let tracked = run.cards.entry(activity_id).or_insert(TrackedCard {
            card: None,
            unknown: None,
        });
        match verdict {
            Ok(Applied::Replaced) => tracked.card = Some(card),
            Ok(Applied::Unchanged) => {}
            Err(_) => tracked.unknown = Some(Unknown::Violation),
        }
        verdict.map(|_| ())
    }

    /// The connection was lost: every running card becomes locally unknown. No
    /// revision is invented and no cancellation is claimed.
    pub fn transport_lost(&mut self) {
        for run in self.runs.values_mut() {
            mark_running(run, Unknown::TransportLost);
        }
    }

    /// `run.finished` arrived: cards still running never got their final snapshot and
    /// become unknown, and any later card for the run is a violation.
    pub fn run_finished(&mut self, session_id: &str, run_id: &str) {
        let run = self
            .runs
            .entry((session_id.to_owned(), run_id.to_owned()))
            .or_default();
        run.finished = true;
        mark_running(run, Unknown::Unresolved);
    }

    /// Forgets a run's cards, once its saved history replaced the live projection.
    pub fn remove_run(&mut self, session_id: &str, run_id: &str) {
        self.runs
            .remove(&(session_id.to_owned(), run_id.to_owned()));
    }

    /// The card of one activity, if any snapshot for it arrived.
    pub fn get(&self, session_id: &str, run_id: &str, activity_id: &str) -> Option<&TrackedCard> {
        self.runs
            .get(&(session_id.to_owned(), run_id.to_owned()))
            .and_then(|run| run.cards.get(activity_id))
    }

    /// Every card of one run by activity ID, in no particular order: a UI places each
    /// at its base activity's position.
    pub fn run_cards(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> impl Iterator<Item = (&str, &TrackedCard)> {
        self.runs
            .get(&(session_id.to_owned(), run_id.to_owned()))
            .into_iter()
            .flat_map(|run| run.cards.iter().map(|(id, card)| (id.as_str(), card)))
    }
}

fn mark_running(run: &mut RunCards, why: Unknown) {
    for tracked in run.cards.values_mut() {
        let running = tracked
            .card
            .as_ref()
            .is_some_and(|card| card.state == CardState::Running);
        if running && tracked.unknown.is_none() {
            tracked.unknown = Some(why);
        }
    }
}

/// What applying an accepted snapshot does.
enum Applied {
    Replaced,
    Unchanged,
}

/// Whether `next` may follow `current` for the same card.
fn successor(current: Option<&Card>, next: &Card) -> Result<Applied, LiveViolation> {
    let Some(current) = current else {
        return Ok(Applied::Replaced);
    };
    if next.revision < current.revision {
        return Err(LiveViolation::RevisionBackwards {
            current: current.revision,
            received: next.revision,
        });
    }
    if next.revision == current.revision {
        return if next == current {
            Ok(Applied::Unchanged)
        } else {
            Err(LiveViolation::RevisionConflict {
                revision: next.revision,
            })
        };
    }
    if current.state == CardState::Finished {
        if next.state == CardState::Running {
            return Err(LiveViolation::Reopened);
        }
        if next.outcome != current.outcome {
            return Err(LiveViolation::OutcomeChanged);
        }
    }
    let known = current.metadata.public_protection.decision != ProtectionDecision::NotReported;
    if known && next.metadata.public_protection.decision == ProtectionDecision::NotReported {
        return Err(LiveViolation::ProtectionErased);
    }
    Ok(Applied::Replaced)
}

/// Checks the saved cards of a `history.page` result: none at all unless `tool.cards`
/// was negotiated; with it, the field on every activity's first part and nowhere else,
/// and every card a valid saved card of its entry.
pub fn check_page(
    page: &magi_protocol::messages::HistoryPageResult,
    negotiated: bool,
) -> Result<(), DecodeError> {
    use magi_protocol::messages::{EntryKind, SavedCard};
    for entry in &page.entries {
        let carries = entry.kind == EntryKind::Activity && entry.part == 0;
        match (&entry.tool_card, negotiated && carries) {
            (SavedCard::Absent, false) => {}
            (SavedCard::Null, true) => {}
            (SavedCard::Card(card), true) => {
                cards::validate_saved(card, &entry.message_id).map_err(DecodeError::Invalid)?;
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

#[cfg(test)]
mod tests {
    use magi_protocol::cards::{CardOutcome, Origin};

    use super::*;

    /// The data of the extension's live example event.
    const LIVE: &str = r#"{"session_id":"example-session","run_id":"run-1","activity_id":"a1","part":0,"last_part":true,"card":{"schema_version":1,"card_id":"a1","activity_id":"a1","parent_activity_id":null,"parent_state":"root","task_id":null,"tool_kind":"edit","state":"finished","outcome":"cancelled","changes":"partial","revision":2,"origin":"live","detail":{"availability":"truncated","reason":"size_limit"},"title":"Edit example.rs","metadata":{"tool_name":"hash_edit","resource_path":"example.rs","working_directory":null,"public_protection":{"decision":"allowed","summary":null}},"blocks":[{"type":"diff","old_path":"example.rs","new_path":"example.rs","application":"partial","lines":[{"kind":"removed","text":"let count = 1;","old_line":4,"new_line":null},{"kind":"added","text":"let count = 2;","old_line":null,"new_line":4}]}],"omissions":[{"subject":"diff_lines","reason":"size_limit","omitted_count":null}]}}"#;

    /// The card of the extension's saved example entry.
    const SAVED: &str = r#"{"schema_version":1,"card_id":"saved-a1","activity_id":"saved-a1","parent_activity_id":null,"parent_state":"missing","task_id":null,"tool_kind":"command","state":"finished","outcome":"interrupted","changes":"unknown","revision":0,"origin":"saved","detail":{"availability":"unavailable","reason":"not_recorded"},"title":"Command","metadata":{"tool_name":null,"resource_path":null,"working_directory":null,"public_protection":{"decision":"not_reported","summary":null}},"blocks":[],"omissions":[{"subject":"blocks","reason":"not_recorded","omitted_count":null},{"subject":"ancestry","reason":"not_recorded","omitted_count":null}]}"#;

    const DESCRIPTOR: &str = r#"{"schema_version":1,"event":"tool.card","history_field":"tool_card","snapshot_parts":1,"card_bytes":16384,"core_bytes":2048,"cards_per_run":4096,"snapshots_per_run":16384,"run_snapshot_bytes":33554432,"retained_card_bytes":8388608,"blocks_per_card":16,"rows_per_block":32,"diff_lines_per_block":128,"children_per_block":32,"children_depth":8,"string_bytes":1024,"title_bytes":256,"metadata_bytes":512,"preview_bytes":4096}"#;

    /// The live example's card, as its own JSON text.
    fn live_card_json() -> String {
        let start = LIVE.find("\"card\":").unwrap() + "\"card\":".len();
        LIVE[start..LIVE.len() - 1].to_owned()
    }

    fn shape(result: Result<Card, DecodeError>, needle: &str) {
        match result {
            Err(DecodeError::Shape(why)) => assert!(why.contains(needle), "{why}"),
            other => panic!("expected a shape error with {needle:?}, got {other:?}"),
        }
    }

    #[test]
    fn spec_examples_decode() {
        let event = decode_event(LIVE).unwrap();
        assert_eq!(event.card.outcome, Some(CardOutcome::Cancelled));
        assert_eq!(decode_card(&live_card_json()).unwrap(), event.card);
        let saved = decode_saved_card(SAVED, "saved-a1").unwrap();
        assert_eq!(saved.origin, Origin::Saved);
        assert_eq!(decode_card(SAVED).unwrap(), saved);
        assert_eq!(
            decode_saved_card(SAVED, "other"),
            Err(DecodeError::Invalid(CardViolation::EventIdMismatch))
        );
        assert_eq!(
            decode_saved_card(&live_card_json(), "a1"),
            Err(DecodeError::Invalid(CardViolation::Origin))
        );
    }

    #[test]
    fn duplicate_fields_are_refused_at_every_level() {
        let card = live_card_json();
        let cases = [
            (card.replacen("{", "{\"title\":\"Other\",", 1), "title"),
            (
                card.replace("\"summary\":null", "\"summary\":null,\"summary\":\"x\""),
                "summary",
            ),
            (
                card.replace("\"type\":\"diff\"", "\"type\":\"diff\",\"type\":\"text\""),
                "type",
            ),
            (
                card.replace("\"old_line\":4,", "\"old_line\":4,\"old_line\":5,"),
                "old_line",
            ),
            // Keys are compared after unescaping.
            (
                card.replace("\"revision\":2", "\"revision\":2,\"revisio\\u006e\":3"),
                "revision",
            ),
            // Unknown annotations are checked too.
            (card.replacen("{", "{\"note\":{\"a\":1,\"a\":2},", 1), "a"),
        ];
        for (json, name) in cases {
            assert_eq!(
                decode_card(&json),
                Err(DecodeError::DuplicateField(name.to_owned())),
                "{json}"
            );
        }
        let event = LIVE.replacen("{", "{\"part\":0,", 1);
        assert_eq!(
            decode_event(&event),
            Err(DecodeError::DuplicateField("part".to_owned()))
        );
    }

    #[test]
    fn missing_fields_are_refused_nullable_ones_included() {
        let card = live_card_json();
        for field in [
            "\"parent_activity_id\":null,",
            "\"task_id\":null,",
            "\"tool_kind\":\"edit\",",
            "\"working_directory\":null,",
            ",\"summary\":null",
            ",\"omitted_count\":null",
            "\"old_path\":\"example.rs\",",
            ",\"new_line\":null",
        ] {
            shape(decode_card(&card.replacen(field, "", 1)), "missing field");
        }
        shape(
            decode_card(&card.replace(",\"reason\":\"size_limit\"},\"title\"", "},\"title\"")),
            "missing field",
        );
        let event = LIVE.replace("\"last_part\":true,", "");
        assert!(matches!(decode_event(&event), Err(DecodeError::Shape(_))));
    }

    #[test]
    fn unknown_enum_values_and_block_types_are_refused() {
        let card = live_card_json();
        shape(
            decode_card(&card.replace("\"type\":\"diff\"", "\"type\":\"image\"")),
            "unknown variant",
        );
        for (from, to) in [
            ("\"tool_kind\":\"edit\"", "\"tool_kind\":\"hash_edit\""),
            ("\"changes\":\"partial\"", "\"changes\":\"some\""),
            ("\"application\":\"partial\"", "\"application\":\"maybe\""),
            ("\"subject\":\"diff_lines\"", "\"subject\":\"lines\""),
            (
                "\"decision\":\"allowed\"",
                "\"decision\":\"allowed by user\"",
            ),
        ] {
            shape(decode_card(&card.replace(from, to)), "unknown variant");
        }
        shape(
            decode_card(&card.replace("\"revision\":2", "\"revision\":\"2\"")),
            "invalid type",
        );
        shape(decode_card("1"), "invalid type");
    }

    /// Serde's alternative forms (a struct as an array, a unit enum value as an
    /// object) are not the schema's and are refused, although plain serde accepts them.
    #[test]
    fn alternative_serde_forms_are_refused() {
        let card: Value = serde_json::from_str(&live_card_json()).unwrap();
        let array_form = |object: &Value, fields: &[&str]| {
            Value::Array(fields.iter().map(|f| object[*f].clone()).collect())
        };
        let card_fields = [
            "schema_version",
            "card_id",
            "activity_id",
            "parent_activity_id",
            "parent_state",
            "task_id",
            "tool_kind",
            "state",
            "outcome",
            "changes",
            "revision",
            "origin",
            "detail",
            "title",
            "metadata",
            "blocks",
            "omissions",
        ];
        let mut cases = vec![array_form(&card, &card_fields)];
        let mut metadata = card.clone();
        metadata["metadata"] = array_form(
            &card["metadata"],
            &[
                "tool_name",
                "resource_path",
                "working_directory",
                "public_protection",
            ],
        );
        cases.push(metadata);
        let mut kind = card.clone();
        kind["tool_kind"] = serde_json::json!({"edit": null});
        cases.push(kind);
        let mut line = card.clone();
        let first = &card["blocks"][0]["lines"][0];
        line["blocks"][0]["lines"][0] =
            array_form(first, &["kind", "text", "old_line", "new_line"]);
        cases.push(line);
        for case in cases {
            let json = case.to_string();
            assert!(serde_json::from_str::<Card>(&json).is_ok(), "{json}");
            assert!(
                matches!(decode_card(&json), Err(DecodeError::Shape(_))),
                "{json}"
            );
        }
        let descriptor: Value = serde_json::from_str(DESCRIPTOR).unwrap();
        let fields: Vec<&str> = DESCRIPTOR
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .filter_map(|pair| pair.split('"').nth(1))
            .collect();
        let json = array_form(&descriptor, &fields).to_string();
        assert!(serde_json::from_str::<ToolCardsDescriptor>(&json).is_ok());
        assert!(matches!(
            decode_descriptor(&json),
            Err(DecodeError::Shape(_))
        ));
    }

    #[test]
    fn schema_rules_are_checked_after_parsing() {
        let card = live_card_json();
        assert_eq!(
            decode_card(&card.replace("\"schema_version\":1", "\"schema_version\":2")),
            Err(DecodeError::Invalid(CardViolation::SchemaVersion(2)))
        );
        assert_eq!(
            decode_card(&card.replace("\"card_id\":\"a1\"", "\"card_id\":\"a2\"")),
            Err(DecodeError::Invalid(CardViolation::CardIdMismatch))
        );
        assert_eq!(
            decode_event(&LIVE.replace("\"part\":0", "\"part\":1")),
            Err(DecodeError::Invalid(CardViolation::Part))
        );
    }

    #[test]
    fn malformed_text_is_refused() {
        let card = live_card_json();
        for text in [
            "",
            "not json",
            "{",
            &format!("{card} {{}}"),
            &format!("{card}x"),
        ] {
            assert_eq!(decode_card(text), Err(DecodeError::Malformed), "{text}");
        }
        let huge = format!("{card}{}", " ".repeat(LIVE_ENVELOPE_BYTES));
        assert_eq!(decode_card(&huge), Err(DecodeError::TooLarge));
    }

    /// Unknown fields are inert: ignored, but counted toward the size and depth bounds.
    #[test]
    fn unknown_fields_are_ignored_within_bounds() {
        let card = live_card_json();
        let plain = decode_card(&card).unwrap();
        let annotated = card
            .replacen("{", "{\"x_note\":\"shown nowhere\",", 1)
            .replace("\"decision\":", "\"x_hint\":[1,{\"k\":null}],\"decision\":")
            .replace("\"type\":\"diff\",", "\"type\":\"diff\",\"x_rank\":3,");
        assert_eq!(decode_card(&annotated).unwrap(), plain);
        // Whitespace between tokens does not count; unknown content does.
        let spaced = card.replace(',', " ,\n ");
        assert_eq!(decode_card(&spaced).unwrap(), plain);
        let padding = "a".repeat(CARD_BYTES);
        let big = card.replacen("{", &format!("{{\"x_note\":\"{padding}\","), 1);
        assert!(matches!(
            decode_card(&big),
            Err(DecodeError::Invalid(CardViolation::TooLarge { .. }))
        ));
        let nest = |n: usize| {
            card.replacen(
                "{",
                &format!("{{\"x\":{}{},", "[".repeat(n), "]".repeat(n)),
                1,
            )
        };
        assert!(decode_card(&nest(JSON_DEPTH - 1)).is_ok());
        assert_eq!(decode_card(&nest(JSON_DEPTH)), Err(DecodeError::TooDeep));
    }

    #[test]
    fn descriptor_must_be_exactly_schema_1() {
        assert_eq!(
            decode_descriptor(DESCRIPTOR),
            Ok(ToolCardsDescriptor::schema_1())
        );
        assert_eq!(
            decode_descriptor(&DESCRIPTOR.replace("\"card_bytes\":16384", "\"card_bytes\":32768")),
            Err(DecodeError::Descriptor)
        );
        assert!(matches!(
            decode_descriptor(&DESCRIPTOR.replacen("{", "{\"x\":1,", 1)),
            Err(DecodeError::Shape(_))
        ));
        assert_eq!(
            decode_descriptor(&DESCRIPTOR.replacen("{", "{\"event\":\"tool.card\",", 1)),
            Err(DecodeError::DuplicateField("event".to_owned()))
        );
    }

    fn event(revision: u64) -> ToolCardEvent {
        let mut event = decode_event(LIVE).unwrap();
        event.card.revision = revision;
        event
    }

    fn running(revision: u64) -> ToolCardEvent {
        let mut event = event(revision);
        event.card.state = CardState::Running;
        event.card.outcome = None;
        event
    }

    fn with_id(mut event: ToolCardEvent, id: &str) -> ToolCardEvent {
        event.activity_id = id.to_owned();
        event.card.activity_id = id.to_owned();
        event.card.card_id = id.to_owned();
        event
    }

    fn tracked<'a>(cards: &'a LiveCards, id: &str) -> &'a TrackedCard {
        cards.get("example-session", "run-1", id).unwrap()
    }

    #[test]
    fn snapshots_replace_by_increasing_revision() {
        let mut cards = LiveCards::new();
        cards.apply(running(0), true).unwrap();
        assert_eq!(
            tracked(&cards, "a1").card().unwrap().state,
            CardState::Running
        );
        // Gaps are allowed; an identical repeat changes nothing.
        cards.apply(running(3), true).unwrap();
        cards.apply(running(3), true).unwrap();
        cards.apply(event(7), true).unwrap();
        let card = tracked(&cards, "a1");
        assert!(!card.is_unknown());
        assert_eq!(card.card().unwrap().revision, 7);
        assert_eq!(card.card().unwrap().outcome, Some(CardOutcome::Cancelled));
        // A finished card may gain detail at a higher revision.
        let mut more = event(8);
        more.card.title = "Edit example.rs (more)".to_owned();
        cards.apply(more, true).unwrap();
        assert_eq!(cards.run_cards("example-session", "run-1").count(), 1);
    }

    #[test]
    fn unnegotiated_and_malformed_events_are_refused() {
        let mut cards = LiveCards::new();
        assert_eq!(
            cards.apply(event(0), false),
            Err(LiveViolation::NotNegotiated)
        );
        assert!(cards.get("example-session", "run-1", "a1").is_none());
        let mut part = event(0);
        part.part = 1;
        assert_eq!(
            cards.apply(part, true),
            Err(LiveViolation::Card(CardViolation::Part))
        );
        // The refused first snapshot leaves the card unknown, without a snapshot.
        let card = tracked(&cards, "a1");
        assert_eq!(card.unknown(), Some(Unknown::Violation));
        assert!(card.card().is_none());
        assert_eq!(cards.apply(event(1), true), Err(LiveViolation::CardUnknown));

        let mut last = with_id(event(0), "a2");
        last.last_part = false;
        assert_eq!(
            cards.apply(last, true),
            Err(LiveViolation::Card(CardViolation::LastPart))
        );
        let mut mismatch = with_id(event(0), "a3");
        mismatch.card.activity_id = "a4".to_owned();
        mismatch.card.card_id = "a4".to_owned();
        assert_eq!(
            cards.apply(mismatch, true),
            Err(LiveViolation::Card(CardViolation::EventIdMismatch))
        );
        assert!(tracked(&cards, "a3").is_unknown());
        let mut saved = with_id(event(0), "a5");
        saved.card.origin = Origin::Saved;
        assert_eq!(
            cards.apply(saved, true),
            Err(LiveViolation::Card(CardViolation::Origin))
        );
        // An identity that is not well-formed is refused without being tracked.
        let bad = with_id(event(0), "not an id");
        assert!(cards.apply(bad, true).is_err());
        assert!(cards.get("example-session", "run-1", "not an id").is_none());
        let mut scope = with_id(event(0), "a6");
        scope.run_id = String::new();
        assert_eq!(
            cards.apply(scope, true),
            Err(LiveViolation::Card(CardViolation::Scope))
        );
    }

    #[test]
    fn a_revision_that_does_not_increase_fails_the_card_closed() {
        let mut cards = LiveCards::new();
        cards.apply(running(5), true).unwrap();
        assert_eq!(
            cards.apply(running(4), true),
            Err(LiveViolation::RevisionBackwards {
                current: 5,
                received: 4
            })
        );
        let card = tracked(&cards, "a1");
        assert_eq!(card.unknown(), Some(Unknown::Violation));
        assert_eq!(card.card().unwrap().revision, 5);
        // Never updated again, not even by a higher revision.
        assert_eq!(cards.apply(event(9), true), Err(LiveViolation::CardUnknown));
        assert_eq!(tracked(&cards, "a1").card().unwrap().revision, 5);

        let mut changed = with_id(running(5), "a2");
        cards.apply(changed.clone(), true).unwrap();
        changed.card.title = "Different".to_owned();
        assert_eq!(
            cards.apply(changed, true),
            Err(LiveViolation::RevisionConflict { revision: 5 })
        );
        assert!(tracked(&cards, "a2").is_unknown());
        assert_eq!(
            tracked(&cards, "a2").card().unwrap().title,
            "Edit example.rs"
        );
    }

    #[test]
    fn finished_facts_are_not_reversed() {
        let mut cards = LiveCards::new();
        cards.apply(event(1), true).unwrap();
        assert_eq!(cards.apply(running(2), true), Err(LiveViolation::Reopened));

        cards.apply(with_id(event(1), "a2"), true).unwrap();
        let mut success = with_id(event(2), "a2");
        success.card.outcome = Some(CardOutcome::Success);
        assert_eq!(
            cards.apply(success, true),
            Err(LiveViolation::OutcomeChanged)
        );

        cards.apply(with_id(running(1), "a3"), true).unwrap();
        let mut erased = with_id(running(2), "a3");
        erased.card.metadata.public_protection.decision = ProtectionDecision::NotReported;
        assert_eq!(
            cards.apply(erased, true),
            Err(LiveViolation::ProtectionErased)
        );
        for id in ["a1", "a2", "a3"] {
            assert!(tracked(&cards, id).is_unknown(), "{id}");
        }
    }

    #[test]
    fn identities_per_run_are_bounded() {
        let mut cards = LiveCards::new();
        for i in 0..CARDS_PER_RUN {
            cards
                .apply(with_id(running(0), &format!("t{i}")), true)
                .unwrap();
        }
        assert_eq!(
            cards.apply(with_id(running(0), "one-more"), true),
            Err(LiveViolation::TooManyCards)
        );
        // Known identities still update, and another run has its own budget.
        cards.apply(with_id(running(1), "t0"), true).unwrap();
        let mut other = with_id(running(0), "one-more");
        other.run_id = "run-2".to_owned();
        cards.apply(other, true).unwrap();
    }

    #[test]
    fn lost_transport_marks_only_running_cards_unknown() {
        let mut cards = LiveCards::new();
        cards.apply(running(4), true).unwrap();
        cards.apply(with_id(event(2), "a2"), true).unwrap();
        cards.transport_lost();
        let lost = tracked(&cards, "a1");
        assert_eq!(lost.unknown(), Some(Unknown::TransportLost));
        // No revision or outcome is invented.
        assert_eq!(lost.card().unwrap().revision, 4);
        assert_eq!(lost.card().unwrap().outcome, None);
        assert!(!tracked(&cards, "a2").is_unknown());
    }

    #[test]
    fn run_finished_resolves_running_cards_as_unknown() {
        let mut cards = LiveCards::new();
        cards.apply(running(0), true).unwrap();
        cards.apply(with_id(event(0), "a2"), true).unwrap();
        cards.run_finished("example-session", "run-1");
        assert_eq!(tracked(&cards, "a1").unknown(), Some(Unknown::Unresolved));
        assert!(!tracked(&cards, "a2").is_unknown());
        assert_eq!(
            cards.apply(with_id(event(1), "a2"), true),
            Err(LiveViolation::AfterRunFinished)
        );
        cards.remove_run("example-session", "run-1");
        assert!(cards.get("example-session", "run-1", "a2").is_none());
    }
}
