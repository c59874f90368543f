//! Golden cards of tasks, subagents, MCP tools, magi_control, view_image and Code Mode.

use super::*;

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
