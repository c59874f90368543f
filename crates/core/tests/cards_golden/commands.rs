//! Golden cards of commands: bash in each outcome, a hook's decision, the background, bash_log, an unknown tool.

use super::*;

#[test]
fn bash_completed_exit_0() {
    let facts = facts(Facts::Command(Box::new(command_facts())));
    let mut s = source("tool-11", "bash", "bash");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    let card = golden("bash_exit_0", &s);
    assert_eq!(card.changes, Changes::Unknown);
}

#[test]
fn bash_denied_by_hook() {
    let mut s = saved(source("m-bash-8", "bash", "bash: git push origin main"));
    s.settlement = settled(
        ToolOutcome::Denied,
        "denied by hook: pushes to main are held",
    );
    s.hook = Some(HookSource {
        hook: "scripts/check-command",
        decision: HookDecision::Blocked,
        reason: Some("pushes to main are held"),
    });
    let card = golden("bash_denied_by_hook", &s);
    // The protection decision is the refusal's, with no label: the hook's is a row.
    let protection = &card.metadata.public_protection;
    assert_eq!(protection.decision, ProtectionDecision::Denied);
    assert_eq!(protection.summary, None);
    assert_eq!(card.blocks.len(), 1);
}

#[test]
fn bash_arguments_replaced_by_hook() {
    let facts = facts(Facts::Command(Box::new(command_facts())));
    let mut s = source("tool-12", "bash", "bash: cargo test --offline");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    s.hook = Some(HookSource {
        hook: "scripts/offline",
        decision: HookDecision::ArgumentsReplaced,
        reason: None,
    });
    let card = golden("bash_arguments_replaced_by_hook", &s);
    // The Bash notices stay first and as they are; the hook's row comes last.
    let Some(Block::Results(last)) = card.blocks.last() else {
        panic!("{card:?}");
    };
    assert_eq!(last.rows[0].label, "Hook");
    assert_eq!(
        last.rows[0].value.as_deref(),
        Some("arguments replaced by hook scripts/offline")
    );
}

#[test]
fn bash_shows_the_last_lines_it_printed() {
    let facts = facts(Facts::Command(Box::new(command_facts())));
    let printed: Vec<String> = ["test a ... ok", "test b ... ok", "key sk-abcdefghijklmnop"]
        .map(str::to_owned)
        .to_vec();
    let mut s = source("tool-16", "bash", "bash cargo test");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    s.transcript = &printed;
    let card = golden("bash_transcript", &s);
    // The result's lines come last, as plain text, a secret redacted and said so.
    let Some(Block::Text(text)) = card.blocks.last() else {
        panic!("{card:#?}");
    };
    assert_eq!(text.text, "test a ... ok\ntest b ... ok\nkey [redacted]");
    assert!(
        card.omissions
            .iter()
            .any(|o| o.subject == Subject::Text && o.reason == Reason::Redacted)
    );
    // A running call has no facts yet, so no lines either.
    let mut running = source("tool-17", "bash", "bash cargo test");
    running.settlement = Settlement::Running;
    running.transcript = &printed;
    assert!(project(&running).blocks.is_empty());
}

/// Spans of one colour over `ranges` of a text.
fn red_spans(ranges: &[(usize, usize)]) -> Vec<StyleSpan> {
    let red = Style {
        fg: Some(Colour::Indexed(1)),
        ..Style::default()
    };
    ranges
        .iter()
        .map(|&(start, end)| StyleSpan::new(start, end, &red))
        .collect()
}

#[test]
fn bash_lines_keep_their_colour_when_asked_and_never_otherwise() {
    let facts = facts(Facts::Command(Box::new(command_facts())));
    let printed: Vec<String> = ["error: one", "ok"].map(str::to_owned).to_vec();
    let spans = red_spans(&[(0, 5)]);
    let mut s = source("tool-18", "bash", "bash cargo test");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    s.transcript = &printed;
    let text = |card: &Card| match card.blocks.last() {
        Some(Block::Text(text)) => text.clone(),
        _ => panic!("{card:#?}"),
    };
    // Not negotiated: no field at all, the card as schema 1 has it.
    let plain = project(&s);
    assert_eq!(text(&plain).styles, None);
    assert!(!serde_json::to_string(&plain).unwrap().contains("styles"));
    s.transcript_styles = TranscriptStyles::Spans(&spans);
    let coloured = project(&s);
    check(&coloured, &s);
    assert_eq!(text(&coloured).styles, Some(Some(spans.clone())));
    assert_eq!(text(&coloured).text, text(&plain).text);
    s.transcript_styles = TranscriptStyles::LeftOut;
    assert_eq!(text(&project(&s)).styles, Some(None));
    // Spans past a cut text end at the cut; spans that do not fit the text are not
    // trusted.
    let long: Vec<String> = vec!["x".repeat(TEXT_BLOCK_BYTES + 100)];
    let across = red_spans(&[(TEXT_BLOCK_BYTES - 10, TEXT_BLOCK_BYTES + 10)]);
    s.transcript = &long;
    s.transcript_styles = TranscriptStyles::Spans(&across);
    assert_eq!(
        text(&project(&s)).styles,
        Some(Some(red_spans(&[(
            TEXT_BLOCK_BYTES - 10,
            TEXT_BLOCK_BYTES
        )])))
    );
    let off_the_text = red_spans(&[(3, 2)]);
    s.transcript = &printed;
    s.transcript_styles = TranscriptStyles::Spans(&off_the_text);
    assert_eq!(text(&project(&s)).styles, Some(None));
}

#[test]
fn colour_is_the_first_thing_a_full_card_gives_up() {
    // Text that doubles when escaped, and a span on every other character: the text
    // fits the card alone, not with its colour.
    let facts = facts(Facts::Command(Box::new(command_facts())));
    let quotes: Vec<String> = vec!["\"".repeat(TEXT_BLOCK_BYTES)];
    let ranges: Vec<(usize, usize)> = (0..STYLE_SPANS_PER_BLOCK)
        .map(|i| (2 * i, 2 * i + 1))
        .collect();
    let spans = red_spans(&ranges);
    let mut s = source("tool-19", "bash", "bash cat quotes");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    s.transcript = &quotes;
    s.transcript_styles = TranscriptStyles::Spans(&spans);
    let card = project(&s);
    check(&card, &s);
    let Some(Block::Text(text)) = card.blocks.last() else {
        panic!("the text was dropped: {card:#?}");
    };
    assert_eq!(text.text.len(), TEXT_BLOCK_BYTES, "the text is whole");
    assert_eq!(text.styles, Some(None), "its colour left out, and said so");
    // The same card without colour is the same card but for the field.
    s.transcript_styles = TranscriptStyles::Off;
    let plain = project(&s);
    let Some(Block::Text(plain_text)) = plain.blocks.last() else {
        panic!("{plain:#?}");
    };
    assert_eq!(plain_text.text, text.text);
    assert_eq!(plain.omissions, card.omissions);
}

#[test]
fn bash_failed_exit_2() {
    let facts = facts(Facts::Command(Box::new(CommandFacts {
        command: "cargo build --release".into(),
        exit_code: Some(2),
        stdout_lines: Some(3),
        stderr_lines: Some(12),
        failure_line: Some("error: could not compile `demo` (bin \"demo\")".into()),
        tracking: Some(track("cargo build --release")),
        ..command_facts()
    })));
    let mut s = saved(source("m-bash-12", "bash", "bash"));
    s.settlement = settled(ToolOutcome::Failed, "exit 2");
    s.facts = Some(&facts);
    s.protection = Some("allowed by user");
    golden("bash_failed_exit_2", &s);
}

#[test]
fn bash_timed_out() {
    let facts = facts(Facts::Command(Box::new(CommandFacts {
        command: "sleep 30 > /dev/null".into(),
        timeout_ms: Some(5_000),
        effective_timeout_ms: Some(5_000),
        timed_out: Some(true),
        exit_code: None,
        signal: Some("SIGKILL".into()),
        stdout_truncated: Some(true),
        stderr_truncated: None,
        stdout_lines: Some(0),
        stderr_lines: None,
        failure_line: None,
        cleanup_warning: Some("a process outside the group kept the output open".into()),
        tracking: Some(track("sleep 30 > /dev/null")),
        ..command_facts()
    })));
    let mut s = source("tool-13", "bash", "bash");
    s.settlement = settled(ToolOutcome::Failed, "timed out after 5 s");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    let card = golden("bash_timed_out", &s);
    let reduced = core(&card);
    let Some(Block::Results(notices)) = reduced.blocks.last() else {
        panic!("the core keeps the execution notices: {reduced:#?}");
    };
    for label in [
        ROW_COMMAND_TIMEOUT,
        ROW_OUTPUT_TRUNCATION,
        ROW_CLEANUP_WARNING,
    ] {
        let row = notices.rows.iter().find(|r| r.label == label).unwrap();
        assert!(row.value.is_some(), "{label} survives the core");
    }
    assert!(
        reduced
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Command(c) if c.signal.as_deref() == Some("SIGKILL")))
    );
}

#[test]
fn bash_moved_to_background() {
    let facts = facts(Facts::Command(Box::new(CommandFacts {
        command: "npm run dev".into(),
        timed_out: None,
        exit_code: None,
        stdout_truncated: None,
        stderr_truncated: None,
        stdout_lines: None,
        stderr_lines: None,
        job_id: Some("job-3".into()),
        tracking: Some(track("npm run dev")),
        ..command_facts()
    })));
    let mut s = source("tool-14", "bash", "bash");
    s.settlement = settled(ToolOutcome::Completed, "moved to the background as job-3");
    s.facts = Some(&facts);
    s.protection = Some("allowed by user");
    golden("bash_background", &s);
}

#[test]
fn bash_running_live() {
    let mut s = source("tool-15", "bash", "bash");
    s.settlement = Settlement::Running;
    s.working_directory = Some("/home/dev/project");
    s.protection = Some("allowed automatically");
    let card = golden("bash_running", &s);
    assert_eq!(card.outcome, None);
}

#[test]
fn bash_awaiting_approval_live() {
    let mut s = source("tool-16", "bash", "bash");
    s.settlement = Settlement::Running;
    s.awaiting_approval = true;
    let card = golden("bash_awaiting_approval", &s);
    assert_eq!(
        card.metadata.public_protection.decision,
        ProtectionDecision::ApprovalRequired
    );
}

#[test]
fn bash_interrupted_saved() {
    let mut s = saved(source("saved-a1", "bash", ""));
    s.settlement = Settlement::Interrupted;
    golden("bash_interrupted", &s);
}

#[test]
fn bash_log() {
    let facts = facts(Facts::Job {
        job_id: "job-3".into(),
        state: Some("running".into()),
        first_line: Some(50),
        lines: Some(100),
        total_lines: Some(150),
    });
    let mut s = source("tool-18", "bash_log", "bash_log");
    s.facts = Some(&facts);
    let card = golden("bash_log", &s);
    assert_eq!(card.changes, Changes::NotApplicable);
}

#[test]
fn unknown_tool() {
    let facts = json!({"tool": "issue", "number": 7});
    let mut s = source("tool-19", "tracker_create_issue", "create issue");
    s.facts = Some(&facts);
    s.protection = Some("allowed by user");
    golden("unknown_tool", &s);
}
