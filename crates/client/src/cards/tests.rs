//! The card decoder's and live tracker's tests.

use magi_protocol::cards::{
    CARDS_PER_RUN, CardOutcome, CardState, LIVE_ENVELOPE_BYTES, Origin, ProtectionDecision,
};

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
    line["blocks"][0]["lines"][0] = array_form(first, &["kind", "text", "old_line", "new_line"]);
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
