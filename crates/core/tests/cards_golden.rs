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
    ROW_COMMAND_TIMEOUT, ROW_OUTPUT_TRUNCATION, Settlement, TaskChildren, core, project,
};
use magi_protocol::cards::{
    Availability, Block, CARD_BYTES, CORE_BYTES, Card, CardOutcome, CardState, Changes, Child,
    MAX_SAFE_INTEGER, Origin, ParentState, ProtectionDecision, Reason, Subject, ToolKind,
    serialized_len, validate, validate_saved,
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

#[test]
fn read_completed() {
    let facts = facts(Facts::Read {
        path: "src/main.rs".into(),
        first_line: Some(12),
        last_line: Some(40),
        total_lines: Some(120),
        truncated: false,
        binary: false,
    });
    let mut s = source("tool-1", "read", "read src/main.rs");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    let card = golden("read_completed", &s);
    assert_eq!(card.changes, Changes::NotApplicable);
}

#[test]
fn read_binary_failed() {
    let facts = facts(Facts::Read {
        path: "assets/logo.png".into(),
        first_line: None,
        last_line: None,
        total_lines: None,
        truncated: false,
        binary: true,
    });
    let mut s = saved(source("m-read-2", "read", "read assets/logo.png"));
    s.settlement = settled(ToolOutcome::Failed, "binary file");
    s.facts = Some(&facts);
    golden("read_binary_failed", &s);
}

#[test]
fn grep_completed_with_cut_results() {
    let paths: Vec<String> = (0..32).map(|i| format!("src/module_{i:02}.rs")).collect();
    let facts = facts(Facts::Search {
        pattern: Some("fn main".into()),
        path: Some("src".into()),
        matches: 200,
        files: Some(40),
        complete: false,
        paths,
    });
    let mut s = source("tool-3", "grep", "grep \"fn main\" in src");
    s.facts = Some(&facts);
    let card = golden("grep_cut", &s);
    let rows = card
        .omissions
        .iter()
        .find(|o| o.subject == Subject::Rows)
        .unwrap();
    assert_eq!(rows.omitted_count, Some(8), "40 files reported, 32 listed");
}

#[test]
fn ast_grep_completed_with_skipped_files() {
    let paths: Vec<String> = (0..32).map(|i| format!("src/module_{i:02}.rs")).collect();
    let cut_facts = facts(Facts::AstGrep {
        pattern: "foo($A, $$$REST)".into(),
        language: "rust".into(),
        path: Some("src".into()),
        matches: 60,
        files: 35,
        files_scanned: 120,
        files_skipped: 2,
        complete: false,
        paths,
    });
    let mut s = source("tool-6", "ast_grep", "ast_grep \"foo($A, $$$REST)\" in src");
    s.facts = Some(&cut_facts);
    let card = golden("ast_grep", &s);
    let rows = card
        .omissions
        .iter()
        .find(|o| o.subject == Subject::Rows)
        .unwrap();
    assert_eq!(
        rows.omitted_count,
        Some(3),
        "35 files with matches, 32 listed"
    );
    let saved_facts = facts(Facts::AstGrep {
        pattern: "print($X)".into(),
        language: "python".into(),
        path: None,
        matches: 0,
        files: 0,
        files_scanned: 7,
        files_skipped: 0,
        complete: true,
        paths: vec![],
    });
    let mut s = saved(source("m-ast-7", "ast_grep", "ast_grep \"print($X)\""));
    s.facts = Some(&saved_facts);
    golden("ast_grep_none", &s);
}

#[test]
fn find_completed() {
    let facts = facts(Facts::Search {
        pattern: Some("**/*.toml".into()),
        path: None,
        matches: 3,
        files: None,
        complete: true,
        paths: vec![
            "Cargo.toml".into(),
            "crates/core/Cargo.toml".into(),
            "crates/tools/Cargo.toml".into(),
        ],
    });
    let mut s = saved(source("m-find-4", "find", "find **/*.toml"));
    s.facts = Some(&facts);
    golden("find", &s);
}

#[test]
fn list_completed() {
    let facts = facts(Facts::Search {
        pattern: None,
        path: Some("crates/core".into()),
        matches: 4,
        files: None,
        complete: true,
        paths: vec![
            "Cargo.toml".into(),
            "src/".into(),
            "target/ (ignored)".into(),
            "tests/".into(),
        ],
    });
    let mut s = source("tool-5", "list", "list crates/core");
    s.facts = Some(&facts);
    golden("list", &s);
}

#[test]
fn write_applied_with_preview() {
    let facts = facts(Facts::Change {
        path: "notes/todo.md".into(),
        created: true,
        operations: 1,
        applied: 1,
        changed: true,
    });
    let diff = "--- notes/todo.md\n+++ notes/todo.md\n@@ -0,0 +1,3 @@\n+# Todo\n+\n+- ship cards\n";
    let payload = preview(diff, false);
    let mut s = source("tool-6", "write", "write notes/todo.md");
    s.facts = Some(&facts);
    s.protection = Some("allowed by user");
    s.preview = PreviewSource::Recorded(&payload);
    let card = golden("write_applied", &s);
    assert_eq!(card.changes, Changes::Applied);
}

#[test]
fn edit_denied() {
    let mut s = saved(source("m-edit-7", "edit", "edit src/lib.rs"));
    s.settlement = settled(ToolOutcome::Denied, "denied by user");
    s.protection = Some("denied by user");
    let card = golden("edit_denied", &s);
    assert_eq!(card.changes, Changes::None);
    assert_eq!(
        card.metadata.public_protection.decision,
        ProtectionDecision::Denied
    );
}

#[test]
fn hash_edit_partial_with_preview() {
    let facts = facts(Facts::Change {
        path: "src/lib.rs".into(),
        created: false,
        operations: 3,
        applied: 2,
        changed: true,
    });
    let diff = "--- src/lib.rs\n+++ src/lib.rs\n@@ -2,4 +2,4 @@\n use std::fmt;\n-let count = 1;\n+let count = 2;\n \n fn main() {}\n@@ -40,2 +40,3 @@\n }\n-// end\n\\ No newline at end of file\n+// end\n+// more\n\\ No newline at end of file\n";
    let payload = preview(diff, true);
    let mut s = source("tool-8", "hash_edit", "hash_edit src/lib.rs");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    s.preview = PreviewSource::Recorded(&payload);
    let card = golden("hash_edit_partial", &s);
    assert_eq!(card.changes, Changes::Partial);
}

#[test]
fn hash_edit_preview_not_recorded() {
    let facts = facts(Facts::Change {
        path: "src/lib.rs".into(),
        created: false,
        operations: 2,
        applied: 2,
        changed: true,
    });
    let mut s = saved(source("m-hash-9", "hash_edit", "hash_edit src/lib.rs"));
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    s.preview = PreviewSource::NotRecorded;
    golden("hash_edit_preview_not_recorded", &s);
}

#[test]
fn web_completed() {
    let facts = facts(Facts::Web {
        url: "https://example.com/docs/start".into(),
        status: Some(200),
        content_type: Some("text/html; charset=utf-8".into()),
        bytes: Some(5_123),
        truncated: false,
    });
    let mut s = source("tool-10", "web_fetch", "web_fetch");
    s.facts = Some(&facts);
    s.protection = Some("allowed automatically");
    golden("web_completed", &s);
}

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

fn task_facts() -> Value {
    facts(Facts::Task {
        task_id: "task-1".into(),
        profile: "reviewer".into(),
        history: "0b6e4a52-5f38-4c39-9d57-6f0f7c1f8f1a".into(),
        model_requests: 3,
        tool_calls: 40,
        ended: "completed".into(),
        report_bytes: Some(1_234),
    })
}

#[test]
fn task_with_children() {
    let facts = task_facts();
    let children = TaskChildren {
        children: (2..34)
            .map(|n| Child {
                activity_id: format!("tool-{n}"),
                task_id: Some("task-1".into()),
                title: format!("read src/file{n}.rs"),
                state: CardState::Finished,
                outcome: Some(CardOutcome::Success),
                changes: Changes::NotApplicable,
            })
            .collect(),
        total: 40,
    };
    let mut s = source("tool-1", "task", "task");
    s.facts = Some(&facts);
    s.task_id = Some("task-1");
    s.children = Some(&children);
    let card = golden("task_with_children", &s);
    assert_eq!(card.tool_kind, ToolKind::Subagent);
    assert_eq!(card.task_id.as_deref(), Some("task-1"));
    let Some(Block::Children(block)) = card.blocks.last() else {
        panic!("no children block: {card:#?}");
    };
    assert_eq!((block.children.len(), block.total), (32, Some(40)));
    assert!(card.omissions.iter().any(|o| o.subject == Subject::Children
        && o.reason == Reason::BudgetLimit
        && o.omitted_count == Some(8)));
}

#[test]
fn saved_task_omits_its_children() {
    let facts = task_facts();
    let mut s = source("m-4", "task", "task");
    s.origin = Origin::Saved;
    s.revision = 0;
    s.facts = Some(&facts);
    let card = golden("saved_task", &s);
    assert!(card.omissions.iter().any(|o| o.subject == Subject::Children
        && o.reason == Reason::NotRecorded
        && o.omitted_count == Some(40)));
}

#[test]
fn subagent_call() {
    let facts = facts(Facts::Read {
        path: "src/lib.rs".into(),
        first_line: Some(1),
        last_line: Some(1),
        total_lines: Some(1),
        truncated: false,
        binary: false,
    });
    let mut s = source("tool-2", "read", "read src/lib.rs");
    s.facts = Some(&facts);
    s.parent_activity_id = Some("tool-1");
    s.task_id = Some("task-1");
    let card = golden("subagent_call", &s);
    assert_eq!(card.parent_state, ParentState::Available);
}

#[test]
fn mcp_tool_answered() {
    let facts = facts(Facts::Mcp {
        server: "tracker".into(),
        server_tool: "create_issue".into(),
        answered: true,
        server_error: Some(false),
        result_bytes: Some(120),
        non_text_items: Some(1),
    });
    let mut s = source(
        "tool-22",
        "mcp__tracker__create_issue",
        "mcp__tracker__create_issue",
    );
    s.facts = Some(&facts);
    s.protection = Some("allowed by user");
    let card = golden("mcp_tool_answered", &s);
    assert_eq!(card.tool_kind, ToolKind::Mcp);
    assert_eq!(card.changes, Changes::Unknown);
    let json = serde_json::to_string(&card).unwrap();
    assert!(json.contains("\"Server\""), "{json}");
    assert!(json.contains("1 item, not shown"), "{json}");
}

#[test]
fn mcp_tool() {
    // An MCP call refused before it was sent records no facts: the card says so, and
    // its effects stay unknown.
    let mut s = source(
        "tool-21",
        "mcp__tracker__create_issue",
        "mcp__tracker__create_issue",
    );
    s.protection = Some("allowed by user");
    let card = golden("mcp_tool", &s);
    assert_eq!(card.tool_kind, ToolKind::Mcp);
    assert_eq!(card.changes, Changes::Unknown);
}

#[test]
fn magi_control_usage() {
    let facts = facts(Facts::Control {
        operation: "usage".into(),
        status: ControlStatus::Answered,
        usage: Some(UsageFigures {
            model_requests: 3,
            tool_calls: 2,
            input_tokens: Some(TokenSum {
                tokens: 1_250,
                requests: 3,
            }),
            cached_input_tokens: Some(TokenSum {
                tokens: 800,
                requests: 2,
            }),
            output_tokens: Some(TokenSum {
                tokens: 96,
                requests: 3,
            }),
            reasoning_tokens: None,
            context_window: Some(200_000),
            context_used: Some(512),
        }),
        title: None,
        title_cut: None,
    });
    let mut s = saved(source("tool-23", "magi_control", "magi_control usage"));
    s.facts = Some(&facts);
    let card = golden("magi_control_usage", &s);
    assert_eq!(card.tool_kind, ToolKind::Other);
    assert_eq!(card.changes, Changes::NotApplicable);
    assert_eq!(card.detail.availability, Availability::Complete);
}

#[test]
fn magi_control_title_and_compact() {
    let facts = facts(Facts::Control {
        operation: "title".into(),
        status: ControlStatus::TitleSet,
        usage: None,
        title: Some(format!("Login {SECRET}")),
        title_cut: Some(0),
    });
    let mut s = source("tool-24", "magi_control", "magi_control title");
    s.facts = Some(&facts);
    let card = golden("magi_control_title", &s);
    // A title is redacted again on its way to the card.
    assert_eq!(card.detail.reason, Some(Reason::Redacted));
    let facts = facts_of_compact();
    let mut s = source("tool-25", "magi_control", "magi_control compact");
    s.facts = Some(&facts);
    golden("magi_control_compact", &s);
    // A call refused for its arguments records nothing.
    let mut s = source("tool-26", "magi_control", "magi_control");
    s.settlement = settled(ToolOutcome::Failed, "invalid arguments");
    let card = golden("magi_control_refused", &s);
    assert_eq!(card.detail.availability, Availability::Unavailable);
    assert_eq!(card.detail.reason, Some(Reason::NotRecorded));
}

#[test]
fn view_image_live_and_saved() {
    let image = |sent| {
        facts(Facts::Image {
            path: "docs/shot.png".into(),
            format: Some("png".into()),
            width: Some(3_000),
            height: Some(1_500),
            bytes: Some(912_345),
            sent,
        })
    };
    let downscaled = image(Some(SentImage {
        media_type: "image/png".into(),
        width: 2_048,
        height: 1_024,
        file: CaptureDigest {
            file: "image.png".into(),
            bytes: 401_002,
            sha256: "0".repeat(64),
        },
    }));
    let mut s = saved(source("tool-27", "view_image", "view_image docs/shot.png"));
    s.facts = Some(&downscaled);
    let card = golden("view_image_saved", &s);
    assert_eq!(card.tool_kind, ToolKind::Read);
    assert_eq!(card.changes, Changes::NotApplicable);
    assert_eq!(card.detail.availability, Availability::Complete);
    let json = serde_json::to_string(&card).unwrap();
    // The card says what the image is, never its digest or bytes.
    assert!(!json.contains(&"0".repeat(64)), "{json}");
    let mut s = source("tool-28", "view_image", "view_image docs/shot.png");
    s.facts = Some(&downscaled);
    golden("view_image_live", &s);
    // A corrupt file: its format and size are known, its dimensions are not.
    let corrupt = facts(Facts::Image {
        path: "broken.png".into(),
        format: Some("png".into()),
        width: None,
        height: None,
        bytes: Some(40),
        sent: None,
    });
    let mut s = source("tool-29", "view_image", "view_image broken.png");
    s.settlement = settled(ToolOutcome::Failed, "cannot decode the image");
    s.facts = Some(&corrupt);
    golden("view_image_failed", &s);
}

#[test]
fn code_mode_live_saved_and_stopped() {
    let execution = |limit, error_line| {
        facts(Facts::CodeMode {
            nested_started: 3,
            nested_completed: 2,
            nested_failed: 1,
            wall_ms: 412,
            output_bytes: 1_234,
            limit,
            error_line,
        })
    };
    let transcript = ["ALPHA".to_owned(), "BETA".to_owned()];
    let completed = execution(None, None);
    let mut s = saved(source(
        "tool-30",
        "code_mode",
        "code_mode const words = [];",
    ));
    s.facts = Some(&completed);
    s.transcript = &transcript;
    let card = golden("code_mode_saved", &s);
    assert_eq!(card.tool_kind, ToolKind::CodeMode);
    assert_eq!(card.changes, Changes::NotApplicable);
    assert_eq!(card.detail.availability, Availability::Complete);
    let mut s = source("tool-31", "code_mode", "code_mode const words = [];");
    s.facts = Some(&completed);
    s.transcript = &transcript;
    golden("code_mode_live", &s);
    // Stopped by a limit, and failed at a line.
    let stopped = execution(Some(CodeModeLimit::Time), None);
    let mut s = source("tool-32", "code_mode", "code_mode while (true) {}");
    s.settlement = settled(ToolOutcome::Failed, "stopped: time limit");
    s.facts = Some(&stopped);
    golden("code_mode_stopped", &s);
    let threw = execution(None, Some(7));
    let mut s = source("tool-33", "code_mode", "code_mode x.field");
    s.settlement = settled(ToolOutcome::Failed, "script error");
    s.facts = Some(&threw);
    golden("code_mode_failed", &s);
}

fn facts_of_compact() -> Value {
    facts(Facts::Control {
        operation: "compact".into(),
        status: ControlStatus::CompactionRequested,
        usage: None,
        title: None,
        title_cut: None,
    })
}

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

/// A small deterministic generator, so the fuzz loop needs no dependency and every
/// failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn flag(&mut self) -> bool {
        self.next() & 1 == 1
    }

    fn string(&mut self) -> String {
        let count = match self.below(8) {
            0 => 0,
            1 | 2 => 2_000 + self.below(4_000),
            _ => self.below(12),
        };
        self.pieces(count)
    }

    /// Mostly short strings, for the lines of long diffs.
    fn short_string(&mut self) -> String {
        let count = if self.below(4) == 0 {
            400
        } else {
            self.below(6)
        };
        self.pieces(count)
    }

    fn pieces(&mut self, count: u64) -> String {
        let pieces = [
            "src/main.rs",
            " ",
            "\n",
            "\r\n",
            "\t",
            "\u{1b}[31m",
            "\u{0}",
            "\u{7f}",
            "\u{9b}",
            "\"",
            "\\",
            "é",
            "😀",
            "plain words",
            "@@ -1,2 +1,2 @@",
            "--- a",
        ];
        let secrets = [
            SECRET,
            " token=sk-abcdefghijklmnopqrstuvwxyz123456 ",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ];
        // A quarter of the strings carry secrets, so that other reasons are seen too.
        let secret = self.below(4) == 0;
        let mut text = String::new();
        for _ in 0..count {
            if secret && self.below(8) == 0 {
                text.push_str(secrets[self.below(secrets.len() as u64) as usize]);
            } else {
                text.push_str(pieces[self.below(pieces.len() as u64) as usize]);
            }
        }
        text
    }

    fn maybe_string(&mut self) -> Option<String> {
        self.flag().then(|| self.string())
    }

    fn number(&mut self) -> u64 {
        match self.below(4) {
            0 => 0,
            1 => u64::MAX - self.below(3),
            _ => self.below(300),
        }
    }

    fn maybe_number(&mut self) -> Option<u64> {
        self.flag().then(|| self.number())
    }

    fn json(&mut self, depth: u32) -> Value {
        match self.below(if depth > 2 { 4 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.number()),
            2 => json!(self.string()),
            3 => json!(self.flag()),
            4 => Value::Array((0..self.below(5)).map(|_| self.json(depth + 1)).collect()),
            _ => {
                let keys = ["tool", "path", "command", "status", "entries", "diff", "x"];
                let mut object = serde_json::Map::new();
                for _ in 0..self.below(6) {
                    object.insert((*self.pick(&keys)).to_owned(), self.json(depth + 1));
                }
                Value::Object(object)
            }
        }
    }

    fn tracking(&mut self) -> Value {
        match self.below(6) {
            0 => Value::Null,
            1 => json!({"status": "guessed"}),
            2 => self.json(1),
            _ => {
                let statuses = ["completed", "no_candidates", "command_limit", "redacted"];
                let operations = ["read", "write", "edit", "read_write", "delete"];
                let entries: Vec<Value> = (0..self.below(300))
                    .map(|_| match self.below(5) {
                        0 => self.json(2),
                        _ => json!({"path": self.string(), "operation": *self.pick(&operations)}),
                    })
                    .collect();
                let mut tracking = json!({
                    "status": *self.pick(&statuses),
                    "unsupported_segments": self.number(),
                });
                if self.flag() {
                    tracking["entries"] = Value::Array(entries);
                }
                tracking
            }
        }
    }

    /// Facts for `tool`: mostly of its own kind, sometimes absent, malformed or of
    /// another tool.
    fn facts(&mut self, tool: &str) -> Option<Value> {
        let own = match tool {
            "read" => 2,
            "grep" | "find" | "list" => 3,
            "write" | "edit" | "hash_edit" => 4,
            "web_fetch" => 5,
            "bash_log" | "bash_kill" => 6,
            "magi_control" => 8,
            "view_image" => 9,
            "ast_grep" => 10,
            "code_mode" => 11,
            _ => 7,
        };
        let which = match self.below(12) {
            0 => 0,
            1 => 1,
            2 | 3 => 2 + self.below(6),
            _ => own,
        };
        let facts = match which {
            0 => return None,
            1 => return Some(self.json(0)),
            2 => Facts::Read {
                path: self.string(),
                first_line: self.maybe_number(),
                last_line: self.maybe_number(),
                total_lines: self.maybe_number(),
                truncated: self.flag(),
                binary: self.flag(),
            },
            3 => Facts::Search {
                pattern: self.maybe_string(),
                path: self.maybe_string(),
                matches: self.number(),
                files: self.maybe_number(),
                complete: self.flag(),
                paths: (0..self.below(40)).map(|_| self.string()).collect(),
            },
            4 => Facts::Change {
                path: self.string(),
                created: self.flag(),
                operations: self.number(),
                applied: self.number(),
                changed: self.flag(),
            },
            5 => Facts::Web {
                url: self.string(),
                status: self.flag().then(|| self.below(600) as u16),
                content_type: self.maybe_string(),
                bytes: self.maybe_number(),
                truncated: self.flag(),
            },
            6 => Facts::Job {
                job_id: self.string(),
                state: self.maybe_string(),
                first_line: self.maybe_number(),
                lines: self.maybe_number(),
                total_lines: self.maybe_number(),
            },
            8 => {
                let mut sum = || {
                    self.flag().then(|| TokenSum {
                        tokens: self.number(),
                        requests: self.number(),
                    })
                };
                let usage = UsageFigures {
                    input_tokens: sum(),
                    cached_input_tokens: sum(),
                    output_tokens: sum(),
                    reasoning_tokens: sum(),
                    model_requests: self.number(),
                    tool_calls: self.number(),
                    context_window: self.maybe_number(),
                    context_used: self.maybe_number(),
                };
                Facts::Control {
                    operation: if self.flag() {
                        "title".to_owned()
                    } else {
                        self.string()
                    },
                    status: ControlStatus::Answered,
                    usage: self.flag().then_some(usage),
                    title: self.maybe_string(),
                    title_cut: self.maybe_number(),
                }
            }
            10 => Facts::AstGrep {
                pattern: self.string(),
                language: self.string(),
                path: self.maybe_string(),
                matches: self.number(),
                files: self.number(),
                files_scanned: self.number(),
                files_skipped: self.number(),
                complete: self.flag(),
                paths: (0..self.below(40)).map(|_| self.string()).collect(),
            },
            11 => Facts::CodeMode {
                nested_started: self.number(),
                nested_completed: self.number(),
                nested_failed: self.number(),
                wall_ms: self.number(),
                output_bytes: self.number(),
                limit: self.flag().then_some(CodeModeLimit::Memory),
                error_line: self.maybe_number().map(|n| n as u32),
            },
            9 => Facts::Image {
                path: self.string(),
                format: self.maybe_string(),
                width: self.maybe_number().map(|n| n as u32),
                height: self.maybe_number().map(|n| n as u32),
                bytes: self.maybe_number(),
                sent: self.flag().then(|| SentImage {
                    media_type: self.string(),
                    width: self.number() as u32,
                    height: self.number() as u32,
                    file: CaptureDigest {
                        file: self.string(),
                        bytes: self.number(),
                        sha256: self.string(),
                    },
                }),
            },
            _ => {
                let maybe_bool = |rng: &mut Rng| rng.flag().then(|| rng.flag());
                let facts = CommandFacts {
                    command: self.string(),
                    working_directory: self.string(),
                    timeout_ms: self.maybe_number(),
                    effective_timeout_ms: self.maybe_number(),
                    timed_out: maybe_bool(self),
                    exit_code: self.flag().then(|| self.next() as i32),
                    signal: self.maybe_string(),
                    stdout_truncated: maybe_bool(self),
                    stderr_truncated: maybe_bool(self),
                    stdout_lines: self.maybe_number(),
                    stderr_lines: self.maybe_number(),
                    failure_line: self.maybe_string(),
                    cleanup_warning: self.maybe_string(),
                    job_id: self.maybe_string(),
                    tracking: None,
                    ..CommandFacts::default()
                };
                let mut value = serde_json::to_value(Facts::Command(Box::new(facts))).unwrap();
                value["tracking"] = self.tracking();
                return Some(value);
            }
        };
        Some(serde_json::to_value(facts).unwrap())
    }

    fn diff(&mut self) -> String {
        let lines = match self.below(4) {
            0 => 10_000,
            _ => self.below(200),
        };
        let mut diff = String::new();
        for _ in 0..lines {
            let line = match self.below(40) {
                0 => format!(
                    "@@ -{},{} +{},{} @@",
                    self.number(),
                    self.number(),
                    self.number(),
                    self.number()
                ),
                1 | 2 => {
                    let old = self.below(300) + 1;
                    let new = self.below(300) + 1;
                    format!(
                        "@@ -{old},{} +{new},{} @@ fn x()",
                        self.below(80),
                        self.below(80)
                    )
                }
                3 => "--- a.txt".to_owned(),
                4 => "+++ a.txt".to_owned(),
                5 => "\\ No newline at end of file".to_owned(),
                6..=12 => format!("+{}", self.short_string()),
                13..=19 => format!("-{}", self.short_string()),
                20 => self.short_string(),
                _ => format!(" {}", self.short_string()),
            };
            diff.push_str(&line);
            diff.push('\n');
        }
        diff
    }
}

/// Runs `rounds` generated sources through the selector and checks every card;
/// returns how many cards carried each omission subject, and the largest card.
fn fuzz(
    seed: u64,
    rounds: u64,
    tools: &[&str],
) -> (std::collections::BTreeMap<String, u64>, usize) {
    let outcomes = [
        ToolOutcome::Completed,
        ToolOutcome::Failed,
        ToolOutcome::Cancelled,
        ToolOutcome::Indeterminate,
        ToolOutcome::Denied,
    ];
    let mut rng = Rng(seed);
    let mut seen = std::collections::BTreeMap::new();
    let mut largest = 0;
    for round in 0..rounds {
        let tool = *rng.pick(tools);
        let label = rng.string();
        let summary = rng.string();
        let working_directory = rng.maybe_string();
        let facts = rng.facts(tool);
        let payload = match rng.below(4) {
            0 | 1 => json!({"schema_version": 1, "diff": rng.diff(), "truncated": rng.flag()}),
            2 => {
                json!({"schema_version": rng.below(3), "diff": rng.string(), "truncated": rng.flag()})
            }
            _ => rng.json(0),
        };
        let garbage = rng.string();
        let protection = match rng.below(4) {
            0 => None,
            1 => Some(garbage.as_str()),
            _ => Some(*rng.pick(&PUBLIC_PROTECTION_LABELS)),
        };
        let origin = if rng.flag() {
            Origin::Live
        } else {
            Origin::Saved
        };
        let settlement = match rng.below(6) {
            0 if origin == Origin::Live => Settlement::Running,
            1 => Settlement::Interrupted,
            _ => Settlement::Settled {
                outcome: *rng.pick(&outcomes),
                summary: &summary,
            },
        };
        let activity_id = format!("tool-{round}");
        let source = CardSource {
            activity_id: &activity_id,
            origin,
            revision: if origin == Origin::Saved {
                0
            } else {
                rng.below(MAX_SAFE_INTEGER)
            },
            tool_name: tool,
            label: &label,
            working_directory: working_directory.as_deref(),
            settlement,
            facts: facts.as_ref(),
            protection,
            awaiting_approval: rng.flag(),
            preview: match rng.below(5) {
                0 => PreviewSource::NotApplicable,
                1 => PreviewSource::NotRecorded,
                2 => PreviewSource::Malformed,
                _ => PreviewSource::Recorded(&payload),
            },
            parent_activity_id: None,
            task_id: None,
            children: None,
            transcript: &[],
            hook: None,
        };
        let card = project(&source);
        check(&card, &source);
        if card.detail.availability == Availability::Complete {
            assert!(card.omissions.is_empty(), "{round}: {card:#?}");
        }
        for o in &card.omissions {
            *seen.entry(format!("{:?}", o.subject)).or_insert(0) += 1;
        }
        largest = largest.max(serialized_len(&card));
    }
    (seen, largest)
}

#[test]
fn generated_sources_always_give_valid_bounded_safe_cards() {
    let tools = [
        "read",
        "grep",
        "find",
        "list",
        "ast_grep",
        "write",
        "edit",
        "hash_edit",
        "bash",
        "async_bash",
        "bash_log",
        "bash_kill",
        "web_fetch",
        "magi_control",
        "view_image",
        "code_mode",
        "mystery",
        SECRET,
        "",
    ];
    let (seen, largest) = fuzz(0x9e37_79b9_7f4a_7c15, 400, &tools);
    for subject in ["Title", "Metadata", "Blocks", "Rows", "Text"] {
        assert!(
            seen.contains_key(subject),
            "{subject} never omitted: {seen:?}"
        );
    }
    assert!(largest > 12_000, "no large card was generated: {largest}");
}

#[test]
fn generated_changes_and_commands_stay_valid() {
    let (seen, largest) = fuzz(0x2545_f491_4f6c_dd1d, 300, &["write", "edit", "hash_edit"]);
    assert!(seen.contains_key("DiffLines"), "{seen:?}");
    assert!(largest > 12_000, "{largest}");
    let (seen, largest) = fuzz(0x1234_5678_9abc_def1, 300, &["bash", "async_bash"]);
    assert!(
        seen.contains_key("Rows") && seen.contains_key("Text"),
        "{seen:?}"
    );
    assert!(largest > 6_000, "{largest}");
}
