//! What a card keeps at its bounds: unknown labels, unknown tracking, oversized detail, a huge command, a long preview.

use super::*;

#[test]
fn unknown_protection_labels_are_never_copied() {
    let facts = facts(Facts::Command(Box::new(command_facts())));
    let mut s = source("tool-20", "bash", "bash");
    s.facts = Some(&facts);
    s.protection = Some("allowed because the model said so");
    let card = project(&s);
    check(&card, &s);
    let json = serde_json::to_string(&card).unwrap();
    assert!(!json.contains("the model said so"), "{json}");
    assert_eq!(
        card.metadata.public_protection.decision,
        ProtectionDecision::NotReported
    );
    assert!(
        card.omissions
            .iter()
            .any(|o| o.subject == Subject::Metadata && o.reason == Reason::UnsupportedSource)
    );
}

#[test]
fn unknown_tracking_status_suppresses_both_tracking_rows() {
    let mut facts = facts(Facts::Command(Box::new(command_facts())));
    facts["tracking"] =
        json!({"status": "guessed", "entries": [{"path": "a", "operation": "read"}]});
    let mut s = source("tool-21", "bash", "bash");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    let card = project(&s);
    check(&card, &s);
    let Block::Results(notices) = &card.blocks[0] else {
        panic!("notices first");
    };
    assert_eq!(notices.rows[2].value, None);
    assert_eq!(notices.rows[3].value, None);
    let rows = card
        .omissions
        .iter()
        .find(|o| o.subject == Subject::Rows)
        .unwrap();
    assert_eq!(rows.reason, Reason::UnsupportedSource);
    assert_eq!(rows.omitted_count, Some(2));
}

#[test]
fn oversized_detail_is_reduced_in_order() {
    // Quotes double when escaped: 32 rows of 1,000 quotes are far over the card.
    let paths: Vec<String> = (0..32)
        .map(|i| format!("{i}{}", "\"".repeat(1_000)))
        .collect();
    let facts = facts(Facts::Search {
        pattern: Some("x".into()),
        path: None,
        matches: 32,
        files: None,
        complete: true,
        paths,
    });
    let mut s = source("tool-22", "find", "find x");
    s.facts = Some(&facts);
    let card = project(&s);
    check(&card, &s);
    let Some(Block::Resources(resources)) = card.blocks.get(1) else {
        panic!("resources are shortened, not dropped: {card:#?}");
    };
    let rows = card
        .omissions
        .iter()
        .find(|o| o.subject == Subject::Rows)
        .unwrap();
    assert_eq!(rows.reason, Reason::SizeLimit);
    assert_eq!(rows.omitted_count, Some(32 - resources.rows.len() as u64));
    assert_eq!(card.detail.reason, Some(Reason::SizeLimit));

    // A diff of 128 long escaped lines is shortened from its end.
    let change = self::facts(Facts::Change {
        path: "a.txt".into(),
        created: false,
        operations: 1,
        applied: 1,
        changed: true,
        lines_added: None,
        lines_removed: None,
    });
    let mut diff = "--- a.txt\n+++ a.txt\n@@ -1,125 +1,125 @@\n".to_owned();
    for _ in 0..125 {
        diff.push_str(&format!(" {}\n", "\\".repeat(600)));
    }
    let payload = preview(&diff, false);
    let mut s = source("tool-23", "edit", "edit a.txt");
    s.facts = Some(&change);
    s.preview = PreviewSource::Recorded(&payload);
    let card = project(&s);
    check(&card, &s);
    let Some(Block::Diff(shown)) = card.blocks.get(1) else {
        panic!("the diff is shortened, not dropped: {card:#?}");
    };
    let lines = card
        .omissions
        .iter()
        .find(|o| o.subject == Subject::DiffLines)
        .unwrap();
    assert_eq!(lines.omitted_count, Some(128 - shown.lines.len() as u64));
}

#[test]
fn a_huge_command_keeps_its_exit_code_and_safety_rows() {
    // Quotes and backslashes double when escaped: these strings fill the card.
    let facts = facts(Facts::Command(Box::new(CommandFacts {
        command: "\"".repeat(4_096),
        working_directory: "\"".repeat(600),
        timed_out: Some(true),
        timeout_ms: Some(1_500),
        exit_code: Some(137),
        stdout_truncated: Some(true),
        stderr_truncated: Some(true),
        failure_line: Some("\\".repeat(2_000)),
        cleanup_warning: Some(format!("{}\nsecond line", "\"\\".repeat(1_000))),
        ..command_facts()
    })));
    let label = "\"".repeat(300);
    let mut s = source("tool-24", "bash", &label);
    s.settlement = settled(ToolOutcome::Failed, "timed out");
    s.facts = Some(&facts);
    s.protection = Some("allowed by user");
    let card = project(&s);
    check(&card, &s);
    let Some(Block::Command(command)) = card.blocks.get(1) else {
        panic!("the command block stays: {card:#?}");
    };
    assert_eq!(command.exit_code, Some(137));
    let Some(Block::Results(notices)) = card.blocks.last() else {
        panic!("execution notices stay: {card:#?}");
    };
    assert_eq!(
        notices.rows[0].value.as_deref(),
        Some("timed out after 1.5s")
    );
    assert_eq!(
        notices.rows[1].value.as_deref(),
        Some("stdout truncated, stderr truncated")
    );
    assert!(notices.rows[2].value.is_some());
    // The optional failure explanation gave way first, with its omission.
    assert_eq!(notices.rows[3].value, None);
    assert!(
        card.omissions
            .iter()
            .any(|o| o.subject == Subject::Rows && o.reason == Reason::SizeLimit)
    );
}

#[test]
fn a_long_preview_keeps_its_first_lines_and_counts_the_rest() {
    let change = facts(Facts::Change {
        path: "a.txt".into(),
        created: false,
        operations: 1,
        applied: 1,
        changed: true,
        lines_added: None,
        lines_removed: None,
    });
    let mut diff = "--- a.txt\n+++ a.txt\n@@ -1,10000 +1,10000 @@\n".to_owned();
    for i in 0..10_000 {
        diff.push_str(&format!(" line {i}\n"));
    }
    let payload = preview(&diff, false);
    let mut s = saved(source("m-edit-25", "edit", "edit a.txt"));
    s.facts = Some(&change);
    s.preview = PreviewSource::Recorded(&payload);
    let card = project(&s);
    check(&card, &s);
    let Some(Block::Diff(shown)) = card.blocks.get(1) else {
        panic!("{card:#?}");
    };
    assert_eq!(shown.lines.len(), 128);
    let last = shown.lines.last().unwrap();
    assert_eq!((last.old_line, last.new_line), (Some(125), Some(125)));
    assert_eq!(last.text, "line 124");
    let lines = card
        .omissions
        .iter()
        .find(|o| o.subject == Subject::DiffLines)
        .unwrap();
    assert_eq!(lines.omitted_count, Some(10_003 - 128));
    assert_eq!(card.detail.reason, Some(Reason::SizeLimit));
}
