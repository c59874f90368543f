//! The card schema's tests: the spec's examples, each rule of the validator, and
//! generated cards.

use proptest::prelude::*;

use super::*;

/// The data of the spec's live example event (partial cancellation).
const LIVE_EXAMPLE: &str = r#"{"session_id":"example-session","run_id":"run-1","activity_id":"a1","part":0,"last_part":true,"card":{"schema_version":1,"card_id":"a1","activity_id":"a1","parent_activity_id":null,"parent_state":"root","task_id":null,"tool_kind":"edit","state":"finished","outcome":"cancelled","changes":"partial","revision":2,"origin":"live","detail":{"availability":"truncated","reason":"size_limit"},"title":"Edit example.rs","metadata":{"tool_name":"hash_edit","resource_path":"example.rs","working_directory":null,"public_protection":{"decision":"allowed","summary":null}},"blocks":[{"type":"diff","old_path":"example.rs","new_path":"example.rs","application":"partial","lines":[{"kind":"removed","text":"let count = 1;","old_line":4,"new_line":null},{"kind":"added","text":"let count = 2;","old_line":null,"new_line":4}]}],"omissions":[{"subject":"diff_lines","reason":"size_limit","omitted_count":null}]}}"#;

/// The card of the spec's saved example entry (legacy interrupted command).
const SAVED_EXAMPLE: &str = r#"{"schema_version":1,"card_id":"saved-a1","activity_id":"saved-a1","parent_activity_id":null,"parent_state":"missing","task_id":null,"tool_kind":"command","state":"finished","outcome":"interrupted","changes":"unknown","revision":0,"origin":"saved","detail":{"availability":"unavailable","reason":"not_recorded"},"title":"Command","metadata":{"tool_name":null,"resource_path":null,"working_directory":null,"public_protection":{"decision":"not_reported","summary":null}},"blocks":[],"omissions":[{"subject":"blocks","reason":"not_recorded","omitted_count":null},{"subject":"ancestry","reason":"not_recorded","omitted_count":null}]}"#;

const DESCRIPTOR: &str = r#"{"schema_version":1,"event":"tool.card","history_field":"tool_card","snapshot_parts":1,"card_bytes":16384,"core_bytes":2048,"cards_per_run":4096,"snapshots_per_run":16384,"run_snapshot_bytes":33554432,"retained_card_bytes":8388608,"blocks_per_card":16,"rows_per_block":32,"diff_lines_per_block":128,"children_per_block":32,"children_depth":8,"string_bytes":1024,"title_bytes":256,"metadata_bytes":512,"preview_bytes":4096}"#;

fn live() -> ToolCardEvent {
    serde_json::from_str(LIVE_EXAMPLE).unwrap()
}

fn card() -> Card {
    live().card
}

fn with(block: Block) -> Card {
    let mut card = card();
    card.blocks = vec![block];
    card
}

fn diff(lines: Vec<DiffLine>) -> Block {
    Block::Diff(DiffBlock {
        old_path: None,
        new_path: None,
        application: DiffApplication::Unknown,
        lines,
    })
}

fn line(kind: DiffLineKind, old_line: Option<u64>, new_line: Option<u64>) -> DiffLine {
    DiffLine {
        kind,
        text: "x".to_owned(),
        old_line,
        new_line,
    }
}

fn omission(subject: Subject, reason: Reason, omitted_count: Option<u64>) -> Omission {
    Omission {
        subject,
        reason,
        omitted_count,
    }
}

#[test]
fn descriptor_json_is_the_specified_one() {
    let json = serde_json::to_string(&ToolCardsDescriptor::schema_1()).unwrap();
    assert_eq!(json, DESCRIPTOR);
    let parsed: ToolCardsDescriptor = serde_json::from_str(DESCRIPTOR).unwrap();
    assert_eq!(parsed, ToolCardsDescriptor::schema_1());
    let extra = DESCRIPTOR.replace("{\"schema", "{\"x\":1,\"schema");
    assert!(serde_json::from_str::<ToolCardsDescriptor>(&extra).is_err());
    let missing = DESCRIPTOR.replace(",\"preview_bytes\":4096", "");
    assert!(serde_json::from_str::<ToolCardsDescriptor>(&missing).is_err());
}

#[test]
fn spec_examples_parse_validate_and_round_trip() {
    let event = live();
    assert_eq!(validate_event(&event), Ok(()));
    assert_eq!(serde_json::to_string(&event).unwrap(), LIVE_EXAMPLE);
    let saved: Card = serde_json::from_str(SAVED_EXAMPLE).unwrap();
    assert_eq!(validate_saved(&saved, "saved-a1"), Ok(()));
    assert_eq!(serde_json::to_string(&saved).unwrap(), SAVED_EXAMPLE);
    assert_eq!(serialized_len(&saved), SAVED_EXAMPLE.len());
}

#[test]
fn nullable_fields_are_required_and_serialized_as_null() {
    for field in [
        "\"parent_activity_id\":null,",
        "\"task_id\":null,",
        "\"working_directory\":null,",
        ",\"summary\":null",
        ",\"omitted_count\":null",
        ",\"new_line\":null",
    ] {
        let json = LIVE_EXAMPLE.replacen(field, "", 1);
        let err = serde_json::from_str::<ToolCardEvent>(&json).unwrap_err();
        assert!(err.to_string().contains("missing field"), "{field}: {err}");
    }
    let detail = LIVE_EXAMPLE.replace(
        "\"reason\":\"size_limit\"},\"title\"",
        "\"reason\":null},\"title\"",
    );
    assert!(serde_json::from_str::<ToolCardEvent>(&detail).is_ok());
    let no_reason = LIVE_EXAMPLE.replace(",\"reason\":\"size_limit\"},\"title\"", "},\"title\"");
    assert!(serde_json::from_str::<ToolCardEvent>(&no_reason).is_err());
}

#[test]
fn unknown_enums_and_block_types_do_not_parse() {
    for (from, to) in [
        ("\"tool_kind\":\"edit\"", "\"tool_kind\":\"hash_edit\""),
        ("\"outcome\":\"cancelled\"", "\"outcome\":\"aborted\""),
        ("\"type\":\"diff\"", "\"type\":\"html\""),
        ("\"kind\":\"removed\"", "\"kind\":\"deleted\""),
        ("\"decision\":\"allowed\"", "\"decision\":\"maybe\""),
        ("\"revision\":2", "\"revision\":-2"),
        ("\"revision\":2", "\"revision\":2.5"),
    ] {
        let json = LIVE_EXAMPLE.replace(from, to);
        assert!(
            serde_json::from_str::<ToolCardEvent>(&json).is_err(),
            "{to}"
        );
    }
}

#[test]
fn schema_version_and_identity() {
    let mut c = card();
    c.schema_version = 2;
    assert_eq!(validate(&c), Err(CardViolation::SchemaVersion(2)));
    let mut c = card();
    c.card_id = "a2".to_owned();
    assert_eq!(validate(&c), Err(CardViolation::CardIdMismatch));
    for bad in ["", "a b", "é", &"a".repeat(65)] {
        let mut c = card();
        c.card_id = bad.to_owned();
        c.activity_id = bad.to_owned();
        assert_eq!(validate(&c), Err(CardViolation::Id("card_id")), "{bad:?}");
    }
    let mut c = card();
    c.card_id = "a".repeat(64);
    c.activity_id = c.card_id.clone();
    assert_eq!(validate(&c), Ok(()));
    let mut c = card();
    c.parent_state = ParentState::Missing;
    c.task_id = Some("task/1".to_owned());
    assert_eq!(validate(&c), Err(CardViolation::Id("task_id")));
}

#[test]
fn parent_state_and_parent_id() {
    let cases = [
        (ParentState::Root, None, true),
        (ParentState::Root, Some("p"), false),
        (ParentState::Available, Some("p"), true),
        (ParentState::Available, None, false),
        (ParentState::Missing, None, true),
        (ParentState::Missing, Some("p"), true),
        (ParentState::Omitted, None, true),
        (ParentState::Omitted, Some("p"), true),
        (ParentState::Available, Some("a1"), false),
        (ParentState::Available, Some("p q"), false),
    ];
    for (state, parent, ok) in cases {
        let mut c = card();
        c.parent_state = state;
        c.parent_activity_id = parent.map(str::to_owned);
        assert_eq!(validate(&c).is_ok(), ok, "{state:?} {parent:?}");
    }
}

#[test]
fn state_and_outcome() {
    let mut c = card();
    c.state = CardState::Running;
    assert_eq!(validate(&c), Err(CardViolation::Outcome("outcome")));
    c.outcome = None;
    assert_eq!(validate(&c), Ok(()));
    c.state = CardState::Finished;
    assert_eq!(validate(&c), Err(CardViolation::Outcome("outcome")));
}

#[test]
fn detail_reason_follows_availability() {
    for (availability, reason, ok) in [
        (Availability::Complete, None, true),
        (Availability::None, None, true),
        (Availability::Complete, Some(Reason::Redacted), false),
        (Availability::None, Some(Reason::SizeLimit), false),
        (Availability::Truncated, Some(Reason::SizeLimit), true),
        (Availability::Unavailable, Some(Reason::MissingSource), true),
        (Availability::Truncated, None, false),
        (Availability::Unavailable, None, false),
    ] {
        let mut c = card();
        c.detail = Detail {
            availability,
            reason,
        };
        let expected = if ok {
            Ok(())
        } else {
            Err(CardViolation::Detail)
        };
        assert_eq!(validate(&c), expected, "{availability:?} {reason:?}");
    }
}

/// Each bounded string accepts exactly its bound and rejects one byte more,
/// counting UTF-8 bytes rather than characters.
#[test]
fn string_bounds_in_bytes() {
    type Setter = fn(&mut Card, String);
    let cases: [(&str, usize, Setter); 6] = [
        ("title", TITLE_BYTES, |c, s| c.title = s),
        ("metadata.tool_name", METADATA_BYTES, |c, s| {
            c.metadata.tool_name = Some(s)
        }),
        ("metadata.resource_path", METADATA_BYTES, |c, s| {
            c.metadata.resource_path = Some(s)
        }),
        ("metadata.working_directory", METADATA_BYTES, |c, s| {
            c.metadata.working_directory = Some(s)
        }),
        (
            "metadata.public_protection.summary",
            PROTECTION_SUMMARY_BYTES,
            |c, s| c.metadata.public_protection.summary = Some(s),
        ),
        ("blocks[].lines[].text", STRING_BYTES, |c, s| {
            if let Some(Block::Diff(d)) = c.blocks.first_mut() {
                d.lines[0].text = s;
            }
        }),
    ];
    for (field, max, set) in cases {
        let mut c = card();
        set(&mut c, "é".repeat(max / 2));
        assert_eq!(validate(&c), Ok(()), "{field}");
        set(&mut c, format!("{}a", "é".repeat(max / 2)));
        assert_eq!(
            validate(&c),
            Err(CardViolation::TooLong { field, max }),
            "{field}"
        );
    }
}

#[test]
fn block_string_bounds() {
    let at = |n: usize| "a".repeat(n);
    let text = |t: String, language: Option<String>| {
        Block::Text(TextBlock {
            text: t,
            format: TextFormat::Code,
            language,
            styles: None,
        })
    };
    let command = |command: Option<String>, wd: Option<String>, signal: Option<String>| {
        Block::Command(CommandBlock {
            command,
            working_directory: wd,
            exit_code: Some(-1),
            signal,
        })
    };
    let path = |old: Option<String>, new: Option<String>| {
        Block::Diff(DiffBlock {
            old_path: old,
            new_path: new,
            application: DiffApplication::Applied,
            lines: vec![],
        })
    };
    let resource = |label: String, location: Option<String>| {
        Block::Resources(ResourcesBlock {
            rows: vec![ResourceRow {
                kind: ResourceKind::Url,
                label,
                location,
                availability: ResourceAvailability::Unknown,
            }],
        })
    };
    let result = |label: String, value: Option<String>| {
        Block::Results(ResultsBlock {
            rows: vec![ResultRow {
                label,
                value,
                outcome: RowOutcome::Unknown,
            }],
        })
    };
    let child = |title: String| {
        Block::Children(ChildrenBlock {
            children: vec![Child {
                activity_id: "c1".to_owned(),
                task_id: None,
                title,
                state: CardState::Running,
                outcome: None,
                changes: Changes::Unknown,
            }],
            total: None,
        })
    };
    let progress = |label: String| {
        Block::Progress(ProgressBlock {
            label,
            completed: None,
            total: None,
            unit: ProgressUnit::Unknown,
        })
    };
    type Build = Box<dyn Fn(usize) -> Block>;
    let cases: Vec<(&str, usize, Build)> = vec![
        (
            "blocks[].text",
            TEXT_BLOCK_BYTES,
            Box::new(move |n| text(at(n), None)),
        ),
        (
            "blocks[].language",
            LANGUAGE_BYTES,
            Box::new(move |n| text(at(1), Some(at(n)))),
        ),
        (
            "blocks[].command",
            COMMAND_BYTES,
            Box::new(move |n| command(Some(at(n)), None, None)),
        ),
        (
            "blocks[].working_directory",
            WORKING_DIRECTORY_BYTES,
            Box::new(move |n| command(None, Some(at(n)), None)),
        ),
        (
            "blocks[].signal",
            SIGNAL_BYTES,
            Box::new(move |n| command(None, None, Some(at(n)))),
        ),
        (
            "blocks[].old_path",
            DIFF_PATH_BYTES,
            Box::new(move |n| path(Some(at(n)), None)),
        ),
        (
            "blocks[].new_path",
            DIFF_PATH_BYTES,
            Box::new(move |n| path(None, Some(at(n)))),
        ),
        (
            "blocks[].rows[].label",
            STRING_BYTES,
            Box::new(move |n| resource(at(n), None)),
        ),
        (
            "blocks[].rows[].location",
            STRING_BYTES,
            Box::new(move |n| resource(at(1), Some(at(n)))),
        ),
        (
            "blocks[].rows[].label",
            STRING_BYTES,
            Box::new(move |n| result(at(n), None)),
        ),
        (
            "blocks[].rows[].value",
            STRING_BYTES,
            Box::new(move |n| result(at(1), Some(at(n)))),
        ),
        (
            "blocks[].children[].title",
            TITLE_BYTES,
            Box::new(move |n| child(at(n))),
        ),
        (
            "blocks[].label",
            STRING_BYTES,
            Box::new(move |n| progress(at(n))),
        ),
    ];
    for (field, max, build) in cases {
        assert_eq!(validate(&with(build(max))), Ok(()), "{field}");
        assert_eq!(
            validate(&with(build(max + 1))),
            Err(CardViolation::TooLong { field, max }),
            "{field}"
        );
    }
}

#[test]
fn control_characters_are_refused_but_lf_and_tab_kept() {
    let mut c = card();
    c.title = "a\tb\nc".to_owned();
    assert_eq!(validate(&c), Ok(()));
    for bad in ["\u{1b}[31mred", "a\rb", "a\u{7f}", "a\u{9b}b"] {
        c.title = bad.to_owned();
        assert_eq!(
            validate(&c),
            Err(CardViolation::Control("title")),
            "{bad:?}"
        );
    }
}

#[test]
fn array_bounds() {
    let text = Block::Text(TextBlock {
        text: String::new(),
        format: TextFormat::Plain,
        language: None,
        styles: None,
    });
    let mut c = card();
    c.blocks = vec![text.clone(); BLOCKS_PER_CARD];
    assert_eq!(validate(&c), Ok(()));
    c.blocks.push(text);
    assert_eq!(
        validate(&c),
        Err(CardViolation::TooMany {
            field: "blocks",
            max: BLOCKS_PER_CARD
        })
    );

    let row = ResultRow {
        label: "l".to_owned(),
        value: None,
        outcome: RowOutcome::Success,
    };
    let rows = |n| {
        Block::Results(ResultsBlock {
            rows: vec![row.clone(); n],
        })
    };
    assert_eq!(validate(&with(rows(ROWS_PER_BLOCK))), Ok(()));
    assert_eq!(
        validate(&with(rows(ROWS_PER_BLOCK + 1))),
        Err(CardViolation::TooMany {
            field: "blocks[].rows",
            max: ROWS_PER_BLOCK
        })
    );
    let resource = ResourceRow {
        kind: ResourceKind::File,
        label: "l".to_owned(),
        location: None,
        availability: ResourceAvailability::Available,
    };
    let resources = Block::Resources(ResourcesBlock {
        rows: vec![resource; ROWS_PER_BLOCK + 1],
    });
    assert!(validate(&with(resources)).is_err());

    let lines = |n| diff(vec![line(DiffLineKind::Context, Some(1), Some(1)); n]);
    assert_eq!(validate(&with(lines(DIFF_LINES_PER_BLOCK))), Ok(()));
    assert_eq!(
        validate(&with(lines(DIFF_LINES_PER_BLOCK + 1))),
        Err(CardViolation::TooMany {
            field: "blocks[].lines",
            max: DIFF_LINES_PER_BLOCK
        })
    );

    let child = Child {
        activity_id: "c".to_owned(),
        task_id: Some("t".to_owned()),
        title: "t".to_owned(),
        state: CardState::Finished,
        outcome: Some(CardOutcome::Success),
        changes: Changes::None,
    };
    let children = |n| {
        Block::Children(ChildrenBlock {
            children: vec![child.clone(); n],
            total: None,
        })
    };
    assert_eq!(validate(&with(children(CHILDREN_PER_BLOCK))), Ok(()));
    assert_eq!(
        validate(&with(children(CHILDREN_PER_BLOCK + 1))),
        Err(CardViolation::TooMany {
            field: "blocks[].children",
            max: CHILDREN_PER_BLOCK
        })
    );
}

#[test]
fn diff_line_numbers_follow_the_kind() {
    use DiffLineKind::*;
    let cases = [
        (Context, Some(3), Some(4), true),
        (Context, None, Some(4), true),
        (Context, None, None, true),
        (Added, None, Some(4), true),
        (Added, None, None, true),
        (Added, Some(3), Some(4), false),
        (Removed, Some(3), None, true),
        (Removed, Some(3), Some(4), false),
        (Removed, None, Some(4), false),
        (FileHeader, None, None, true),
        (FileHeader, Some(1), None, false),
        (HunkHeader, None, Some(1), false),
        (NoNewline, None, None, true),
        (NoNewline, Some(1), None, false),
        (Context, Some(0), Some(1), false),
        (Added, None, Some(0), false),
    ];
    for (kind, old, new, ok) in cases {
        let expected = if ok {
            Ok(())
        } else {
            Err(CardViolation::LineNumbers)
        };
        assert_eq!(
            validate(&with(diff(vec![line(kind, old, new)]))),
            expected,
            "{kind:?} {old:?} {new:?}"
        );
    }
    assert_eq!(
        validate(&with(diff(vec![line(
            Added,
            None,
            Some(MAX_SAFE_INTEGER + 1)
        )]))),
        Err(CardViolation::UnsafeInteger("blocks[].lines[].new_line"))
    );
    assert_eq!(
        validate(&with(diff(vec![line(Added, None, Some(MAX_SAFE_INTEGER))]))),
        Ok(())
    );
}

#[test]
fn progress_counts() {
    let progress = |completed, total| {
        with(Block::Progress(ProgressBlock {
            label: "files".to_owned(),
            completed,
            total,
            unit: ProgressUnit::Items,
        }))
    };
    assert_eq!(validate(&progress(Some(3), Some(3))), Ok(()));
    assert_eq!(validate(&progress(Some(4), None)), Ok(()));
    assert_eq!(validate(&progress(None, Some(0))), Ok(()));
    assert_eq!(
        validate(&progress(Some(4), Some(3))),
        Err(CardViolation::Progress)
    );
    assert_eq!(
        validate(&progress(Some(MAX_SAFE_INTEGER + 1), None)),
        Err(CardViolation::UnsafeInteger("blocks[].completed"))
    );
}

#[test]
fn children_rules() {
    let child = |state, outcome| Child {
        activity_id: "c1".to_owned(),
        task_id: None,
        title: "sub".to_owned(),
        state,
        outcome,
        changes: Changes::Unknown,
    };
    let block =
        |children: Vec<Child>, total| with(Block::Children(ChildrenBlock { children, total }));
    let ok = child(CardState::Finished, Some(CardOutcome::Failure));
    assert_eq!(validate(&block(vec![ok.clone()], Some(5))), Ok(()));
    assert_eq!(validate(&block(vec![ok.clone()], Some(1))), Ok(()));
    assert_eq!(
        validate(&block(vec![ok.clone(), ok.clone()], Some(1))),
        Err(CardViolation::ChildrenTotal)
    );
    assert_eq!(
        validate(&block(
            vec![child(CardState::Running, Some(CardOutcome::Success))],
            None
        )),
        Err(CardViolation::Outcome("blocks[].children[].outcome"))
    );
    assert_eq!(
        validate(&block(vec![child(CardState::Finished, None)], None)),
        Err(CardViolation::Outcome("blocks[].children[].outcome"))
    );
    let mut bad_id = ok;
    bad_id.activity_id = String::new();
    assert_eq!(
        validate(&block(vec![bad_id], None)),
        Err(CardViolation::Id("blocks[].children[].activity_id"))
    );
}

#[test]
fn omissions_one_per_subject_with_safe_counts() {
    let mut c = card();
    c.omissions
        .push(omission(Subject::DiffLines, Reason::Redacted, Some(1)));
    assert_eq!(
        validate(&c),
        Err(CardViolation::DuplicateOmission(Subject::DiffLines))
    );
    let mut c = card();
    c.omissions[0].omitted_count = Some(MAX_SAFE_INTEGER + 1);
    assert_eq!(
        validate(&c),
        Err(CardViolation::UnsafeInteger("omissions[].omitted_count"))
    );
    c.revision = MAX_SAFE_INTEGER + 1;
    c.omissions.clear();
    assert_eq!(validate(&c), Err(CardViolation::UnsafeInteger("revision")));
}

#[test]
fn serialized_size_bound_counts_escaping() {
    // Quotes double in size when escaped: 15 text blocks of 1024 quotes each fit
    // every string bound but not the card bound.
    let mut c = card();
    c.blocks = vec![
        Block::Text(TextBlock {
            text: "\"".repeat(1024),
            format: TextFormat::Plain,
            language: None,
            styles: None,
        });
        15
    ];
    let bytes = serialized_len(&c);
    assert_eq!(bytes, serde_json::to_vec(&c).unwrap().len());
    assert!(bytes > CARD_BYTES);
    assert_eq!(validate(&c), Err(CardViolation::TooLarge { bytes }));
}

#[test]
fn event_rules() {
    let mut e = live();
    e.part = 1;
    assert_eq!(validate_event(&e), Err(CardViolation::Part));
    let mut e = live();
    e.last_part = false;
    assert_eq!(validate_event(&e), Err(CardViolation::LastPart));
    let mut e = live();
    e.activity_id = "a2".to_owned();
    assert_eq!(validate_event(&e), Err(CardViolation::EventIdMismatch));
    let mut e = live();
    e.card.origin = Origin::Saved;
    assert_eq!(validate_event(&e), Err(CardViolation::Origin));
    let mut e = live();
    e.session_id = "a.b".to_owned();
    assert_eq!(validate_event(&e), Err(CardViolation::Scope));
    let mut e = live();
    e.card.title = "\u{1b}".to_owned();
    assert_eq!(validate_event(&e), Err(CardViolation::Control("title")));
}

#[test]
fn saved_rules() {
    let saved: Card = serde_json::from_str(SAVED_EXAMPLE).unwrap();
    assert_eq!(
        validate_saved(&saved, "saved-a2"),
        Err(CardViolation::EventIdMismatch)
    );
    let mut c = saved.clone();
    c.origin = Origin::Live;
    assert_eq!(validate_saved(&c, "saved-a1"), Err(CardViolation::Origin));
    let mut c = saved.clone();
    c.revision = 1;
    assert_eq!(validate_saved(&c, "saved-a1"), Err(CardViolation::Saved));
    let mut c = saved;
    c.state = CardState::Running;
    c.outcome = None;
    assert_eq!(validate_saved(&c, "saved-a1"), Err(CardViolation::Saved));
}

#[test]
fn reason_priority() {
    assert_eq!(strongest_reason([]), None);
    assert_eq!(
        strongest_reason([Reason::SizeLimit, Reason::BudgetLimit]),
        Some(Reason::BudgetLimit)
    );
    assert_eq!(
        strongest_reason([
            Reason::SizeLimit,
            Reason::NotRecorded,
            Reason::MissingSource,
            Reason::UnsupportedSource
        ]),
        Some(Reason::MissingSource)
    );
    assert_eq!(
        strongest_reason(Reason::PRIORITY.iter().rev().copied()),
        Some(Reason::Redacted)
    );
    for (rank, reason) in Reason::PRIORITY.iter().enumerate() {
        assert_eq!(reason.rank(), rank);
    }
}

#[test]
fn merging_omissions() {
    use Reason::*;
    use Subject::*;
    let merged = merge_omissions([
        omission(Rows, SizeLimit, Some(2)),
        omission(Text, BudgetLimit, Some(10)),
        omission(Rows, UnsupportedSource, Some(3)),
        omission(Text, SizeLimit, None),
        omission(Ancestry, NotRecorded, None),
        omission(Rows, SizeLimit, Some(1)),
    ]);
    assert_eq!(
        merged,
        vec![
            omission(Rows, UnsupportedSource, Some(6)),
            omission(Text, BudgetLimit, None),
            omission(Ancestry, NotRecorded, None),
        ]
    );
    assert_eq!(
        omission(Rows, Redacted, Some(1)).merge(omission(Text, Redacted, Some(1))),
        None
    );
    assert_eq!(
        omission(Rows, Redacted, Some(MAX_SAFE_INTEGER)).merge(omission(Rows, Redacted, Some(1))),
        Some(omission(Rows, Redacted, None))
    );
    assert_eq!(merge_omissions([]), vec![]);
}

fn string(max_chars: usize) -> impl Strategy<Value = String> {
    // Multi-byte scalars and characters JSON escapes, so byte bounds and escaping
    // are both exercised; at most 4 bytes each, so `4 * max_chars` bounds bytes.
    let chars = prop::sample::select(vec![
        'a', 'Z', '0', ' ', '.', '/', '"', '\\', '\n', '\t', 'é', '✓', '𝄞',
    ]);
    prop::collection::vec(chars, 0..=max_chars).prop_map(|v| v.into_iter().collect())
}

fn id_strategy() -> impl Strategy<Value = String> {
    "[A-Za-z0-9._-]{1,64}"
}

fn positive() -> impl Strategy<Value = u64> {
    prop_oneof![1..=10_000u64, Just(MAX_SAFE_INTEGER)]
}

fn count_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![0..=10_000u64, Just(MAX_SAFE_INTEGER)]
}

fn lifecycle_strategy() -> impl Strategy<Value = (CardState, Option<CardOutcome>)> {
    prop_oneof![
        Just((CardState::Running, None)),
        prop::sample::select(vec![
            CardOutcome::Success,
            CardOutcome::Failure,
            CardOutcome::Cancelled,
            CardOutcome::Interrupted,
            CardOutcome::Unknown,
        ])
        .prop_map(|o| (CardState::Finished, Some(o))),
    ]
}

fn changes_strategy() -> impl Strategy<Value = Changes> {
    prop::sample::select(vec![
        Changes::NotApplicable,
        Changes::None,
        Changes::Applied,
        Changes::Partial,
        Changes::Unknown,
    ])
}

fn reason_strategy() -> impl Strategy<Value = Reason> {
    prop::sample::select(Reason::PRIORITY.to_vec())
}

fn diff_line_strategy() -> impl Strategy<Value = DiffLine> {
    use DiffLineKind::*;
    let kind = prop::sample::select(vec![
        FileHeader, HunkHeader, Context, Added, Removed, NoNewline,
    ]);
    (
        kind,
        string(24),
        prop::option::of(positive()),
        prop::option::of(positive()),
    )
        .prop_map(|(kind, text, old, new)| {
            let (old_line, new_line) = match kind {
                Context => (old, new),
                Added => (None, new),
                Removed => (old, None),
                FileHeader | HunkHeader | NoNewline => (None, None),
            };
            DiffLine {
                kind,
                text,
                old_line,
                new_line,
            }
        })
}

fn block_strategy() -> impl Strategy<Value = Block> {
    let text = (
        string(48),
        prop::sample::select(vec![TextFormat::Plain, TextFormat::Code]),
        prop::option::of(string(12)),
    )
        .prop_map(|(text, format, language)| {
            Block::Text(TextBlock {
                text,
                format,
                language,
                styles: None,
            })
        });
    let resource = (
        prop::sample::select(vec![
            ResourceKind::File,
            ResourceKind::Url,
            ResourceKind::Resource,
        ]),
        string(24),
        prop::option::of(string(24)),
        prop::sample::select(vec![
            ResourceAvailability::Available,
            ResourceAvailability::Unavailable,
            ResourceAvailability::Unknown,
        ]),
    )
        .prop_map(|(kind, label, location, availability)| ResourceRow {
            kind,
            label,
            location,
            availability,
        });
    let resources = prop::collection::vec(resource, 0..=6)
        .prop_map(|rows| Block::Resources(ResourcesBlock { rows }));
    let result = (
        string(24),
        prop::option::of(string(24)),
        prop::sample::select(vec![
            RowOutcome::Success,
            RowOutcome::Failure,
            RowOutcome::Partial,
            RowOutcome::Unknown,
        ]),
    )
        .prop_map(|(label, value, outcome)| ResultRow {
            label,
            value,
            outcome,
        });
    let results =
        prop::collection::vec(result, 0..=6).prop_map(|rows| Block::Results(ResultsBlock { rows }));
    let command = (
        prop::option::of(string(48)),
        prop::option::of(string(24)),
        prop::option::of(any::<i32>()),
        prop::option::of(string(12)),
    )
        .prop_map(|(command, working_directory, exit_code, signal)| {
            Block::Command(CommandBlock {
                command,
                working_directory,
                exit_code,
                signal,
            })
        });
    let diff = (
        prop::option::of(string(24)),
        prop::option::of(string(24)),
        prop::sample::select(vec![
            DiffApplication::Proposed,
            DiffApplication::Applied,
            DiffApplication::Partial,
            DiffApplication::Unknown,
        ]),
        prop::collection::vec(diff_line_strategy(), 0..=8),
    )
        .prop_map(|(old_path, new_path, application, lines)| {
            Block::Diff(DiffBlock {
                old_path,
                new_path,
                application,
                lines,
            })
        });
    let child = (
        id_strategy(),
        prop::option::of(id_strategy()),
        string(24),
        lifecycle_strategy(),
        changes_strategy(),
    )
        .prop_map(
            |(activity_id, task_id, title, (state, outcome), changes)| Child {
                activity_id,
                task_id,
                title,
                state,
                outcome,
                changes,
            },
        );
    let children = (
        prop::collection::vec(child, 0..=6),
        prop::option::of(0..=100u64),
    )
        .prop_map(|(children, extra)| {
            let total = extra.map(|e| children.len() as u64 + e);
            Block::Children(ChildrenBlock { children, total })
        });
    let progress = (
        string(24),
        prop::option::of(count_strategy()),
        prop::option::of(count_strategy()),
        prop::sample::select(vec![
            ProgressUnit::Items,
            ProgressUnit::Bytes,
            ProgressUnit::Steps,
            ProgressUnit::Unknown,
        ]),
    )
        .prop_map(|(label, a, b, unit)| {
            let (completed, total) = match (a, b) {
                (Some(a), Some(b)) => (Some(a.min(b)), Some(a.max(b))),
                other => other,
            };
            Block::Progress(ProgressBlock {
                label,
                completed,
                total,
                unit,
            })
        });
    prop_oneof![text, resources, results, command, diff, children, progress]
}

fn card_strategy() -> impl Strategy<Value = Card> {
    // Parent IDs start with `p` and card IDs with `a`, so a card is never its own
    // parent (a cycle the validator refuses).
    let parent_id = || "p[A-Za-z0-9._-]{0,63}";
    let parent = prop_oneof![
        Just((ParentState::Root, None)),
        parent_id().prop_map(|p| (ParentState::Available, Some(p))),
        prop::option::of(parent_id()).prop_map(|p| (ParentState::Missing, p)),
        prop::option::of(parent_id()).prop_map(|p| (ParentState::Omitted, p)),
    ];
    let detail = prop_oneof![
        Just(Detail {
            availability: Availability::Complete,
            reason: None
        }),
        Just(Detail {
            availability: Availability::None,
            reason: None
        }),
        reason_strategy().prop_map(|r| Detail {
            availability: Availability::Truncated,
            reason: Some(r)
        }),
        reason_strategy().prop_map(|r| Detail {
            availability: Availability::Unavailable,
            reason: Some(r)
        }),
    ];
    let tool_kind = prop::sample::select(vec![
        ToolKind::Read,
        ToolKind::Search,
        ToolKind::Write,
        ToolKind::Edit,
        ToolKind::Command,
        ToolKind::Web,
        ToolKind::Mcp,
        ToolKind::CodeMode,
        ToolKind::Subagent,
        ToolKind::Other,
    ]);
    let metadata = (
        prop::option::of(string(24)),
        prop::option::of(string(24)),
        prop::option::of(string(24)),
        prop::sample::select(vec![
            ProtectionDecision::NotReported,
            ProtectionDecision::Allowed,
            ProtectionDecision::Blocked,
            ProtectionDecision::ApprovalRequired,
            ProtectionDecision::Denied,
        ]),
        prop::option::of(string(24)),
    )
        .prop_map(
            |(tool_name, resource_path, working_directory, decision, summary)| Metadata {
                tool_name,
                resource_path,
                working_directory,
                public_protection: PublicProtection { decision, summary },
            },
        );
    let subjects = vec![
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
    let omissions =
        prop::sample::subsequence(subjects, 0..=Subject::COUNT).prop_flat_map(|subjects| {
            let n = subjects.len();
            (
                Just(subjects),
                prop::collection::vec((reason_strategy(), prop::option::of(count_strategy())), n),
            )
                .prop_map(|(subjects, rest)| {
                    subjects
                        .into_iter()
                        .zip(rest)
                        .map(|(subject, (reason, omitted_count))| Omission {
                            subject,
                            reason,
                            omitted_count,
                        })
                        .collect::<Vec<_>>()
                })
        });
    (
        (
            "a[A-Za-z0-9._-]{0,63}",
            parent,
            prop::option::of(id_strategy()),
            tool_kind,
        ),
        (
            lifecycle_strategy(),
            changes_strategy(),
            0..=MAX_SAFE_INTEGER,
        ),
        (
            prop::sample::select(vec![Origin::Live, Origin::Saved]),
            detail,
            string(48),
            metadata,
        ),
        prop::collection::vec(block_strategy(), 0..=6),
        omissions,
    )
        .prop_map(
            |(
                (id, (parent_state, parent), task_id, tool_kind),
                ((state, outcome), changes, revision),
                (origin, detail, title, metadata),
                blocks,
                omissions,
            )| Card {
                schema_version: SCHEMA_VERSION,
                card_id: id.clone(),
                activity_id: id,
                parent_activity_id: parent,
                parent_state,
                task_id,
                tool_kind,
                state,
                outcome,
                changes,
                revision,
                origin,
                detail,
                title,
                metadata,
                blocks,
                omissions,
            },
        )
}

proptest! {
    #[test]
    fn generated_cards_validate_fit_and_round_trip(card in card_strategy()) {
        prop_assert_eq!(validate(&card), Ok(()));
        let json = serde_json::to_string(&card).unwrap();
        prop_assert!(json.len() <= CARD_BYTES);
        prop_assert_eq!(json.len(), serialized_len(&card));
        let back: Card = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, card);
    }

    #[test]
    fn breaking_a_bound_is_rejected(card in card_strategy(), which in 0..8usize) {
        let mut card = card;
        let filler = Block::Progress(ProgressBlock {
            label: String::new(),
            completed: None,
            total: None,
            unit: ProgressUnit::Unknown,
        });
        match which {
            0 => card.blocks.resize(BLOCKS_PER_CARD + 1, filler),
            1 => card.title = "a".repeat(TITLE_BYTES + 1),
            2 => card.schema_version = 2,
            3 => card.card_id.push('!'),
            4 => {
                card.state = CardState::Running;
                card.outcome = Some(CardOutcome::Success);
            }
            5 => {
                card.omissions = vec![
                    omission(Subject::Rows, Reason::SizeLimit, None),
                    omission(Subject::Rows, Reason::Redacted, None),
                ];
            }
            6 => card.revision = MAX_SAFE_INTEGER + 1,
            _ => card.blocks.push(Block::Results(ResultsBlock {
                rows: vec![
                    ResultRow {
                        label: String::new(),
                        value: None,
                        outcome: RowOutcome::Unknown,
                    };
                    ROWS_PER_BLOCK + 1
                ],
            })),
        }
        prop_assert!(validate(&card).is_err());
    }
}
