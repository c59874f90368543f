//! Golden cards of the card selector, one per tool kind and representative outcome, and
//! the properties every selected card keeps: it validates, fits its bounds, and never
//! carries a secret.
//!
//! `MAGI_UPDATE_GOLDEN=1 cargo test -p magi-core --test cards_golden` rewrites the
//! files under `tests/golden/cards/`; they are the reviewed form of the contract in
//! `docs/protocol/cards.md`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken fixture"
)]

use std::path::PathBuf;

use magi_core::cards::{
    CardSource, HookSource, PUBLIC_PROTECTION_LABELS, PreviewSource, ROW_CLEANUP_WARNING,
    ROW_COMMAND_TIMEOUT, ROW_OUTPUT_TRUNCATION, Settlement, TaskChildren, TranscriptStyles, core,
    project,
};
use magi_protocol::cards::{
    Availability, Block, CARD_BYTES, CORE_BYTES, Card, CardOutcome, CardState, Changes, Child,
    Colour, MAX_SAFE_INTEGER, Origin, ParentState, ProtectionDecision, Reason,
    STYLE_SPANS_PER_BLOCK, Style, StyleSpan, Subject, TEXT_BLOCK_BYTES, ToolKind, serialized_len,
    validate, validate_saved,
};
use magi_store::records::{HookDecision, ToolOutcome};
use magi_tools::facts::{
    CaptureDigest, CodeModeLimit, CommandFacts, ControlStatus, Facts, SentImage, TokenSum,
    UsageFigures,
};
use magi_tools::tracking::track;
use serde_json::{Value, json};

const SECRET: &str = "sk-abcdefghijklmnopqrstuvwxyz123456";

fn source<'a>(activity_id: &'a str, tool_name: &'a str, label: &'a str) -> CardSource<'a> {
    CardSource {
        activity_id,
        origin: Origin::Live,
        revision: 1,
        tool_name,
        label,
        working_directory: None,
        settlement: Settlement::Settled {
            outcome: ToolOutcome::Completed,
            summary: "",
        },
        facts: None,
        protection: None,
        awaiting_approval: false,
        preview: PreviewSource::NotApplicable,
        parent_activity_id: None,
        task_id: None,
        children: None,
        transcript: &[],
        transcript_styles: TranscriptStyles::Off,
        hook: None,
    }
}

fn saved(mut source: CardSource<'_>) -> CardSource<'_> {
    source.origin = Origin::Saved;
    source.revision = 0;
    source
}

fn settled(outcome: ToolOutcome, summary: &str) -> Settlement<'_> {
    Settlement::Settled { outcome, summary }
}

fn facts(facts: Facts) -> Value {
    serde_json::to_value(facts).unwrap()
}

fn preview(diff: &str, truncated: bool) -> Value {
    json!({"schema_version": 1, "diff": diff, "truncated": truncated})
}

/// Checks the rules every card keeps, then compares it with its golden file.
fn golden(name: &str, source: &CardSource) -> Card {
    let card = project(source);
    check(&card, source);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/cards")
        .join(format!("{name}.json"));
    let json = format!("{}\n", serde_json::to_string_pretty(&card).unwrap());
    if std::env::var_os("MAGI_UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &json).unwrap();
    } else {
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run with MAGI_UPDATE_GOLDEN=1", path.display()));
        assert_eq!(
            json, expected,
            "{name}: the card differs from its golden file"
        );
    }
    card
}

/// What every selected card must satisfy.
fn check(card: &Card, source: &CardSource) {
    assert_eq!(validate(card), Ok(()), "{card:#?}");
    assert!(serialized_len(card) <= CARD_BYTES);
    if source.origin == Origin::Saved && card.state == CardState::Finished {
        assert_eq!(validate_saved(card, source.activity_id), Ok(()));
    }
    let json = serde_json::to_string(card).unwrap();
    assert!(!json.contains(SECRET), "a secret leaked: {json}");
    assert!(!json.contains("abcdefghijklmnopqrstuvwxyz123456"), "{json}");
    let reduced = core(card);
    assert_eq!(validate(&reduced), Ok(()), "{reduced:#?}");
    assert!(
        serialized_len(&reduced) <= CORE_BYTES,
        "core is {} bytes: {reduced:#?}",
        serialized_len(&reduced)
    );
    assert_eq!(reduced.outcome, card.outcome);
    assert_eq!(reduced.changes, card.changes);
    assert_eq!(
        reduced.metadata.public_protection.decision,
        card.metadata.public_protection.decision
    );
    assert_eq!(core(&reduced), reduced, "core is stable");
    assert_eq!(project(source), *card, "selection is deterministic");
}

fn command_facts() -> CommandFacts {
    CommandFacts {
        command: "cat Cargo.toml | tee build.log".into(),
        working_directory: "/home/dev/project".into(),
        timeout_ms: None,
        effective_timeout_ms: Some(120_000),
        timed_out: Some(false),
        exit_code: Some(0),
        signal: None,
        stdout_truncated: Some(false),
        stderr_truncated: Some(false),
        stdout_lines: Some(42),
        stderr_lines: Some(0),
        failure_line: None,
        cleanup_warning: None,
        job_id: None,
        tracking: Some(track("cat Cargo.toml | tee build.log")),
        ..CommandFacts::default()
    }
}

mod agents;
mod bounds;
mod commands;
mod files;
mod generated;
