use std::time::Duration;

use magi_client::fold::ActivityItem;
use magi_protocol::cards::DiffLineKind;
use magi_protocol::messages::ActivityKind;
use serde_json::{Value, json};

use super::*;
use crate::tui::render::diff::{diff_lines, parse_unified};

const COLLAPSED: Look = Look {
    expanded: false,
    approval_pending: false,
};
const EXPANDED: Look = Look {
    expanded: true,
    approval_pending: false,
};

fn text(lines: &[Line<'static>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

/// A card of `tool` (`kind`) titled `title` with `blocks`, finished with `outcome`
/// (running when null).
fn card(tool: &str, kind: &str, title: &str, outcome: Value, blocks: Value) -> Card {
    let state = if outcome.is_null() {
        "running"
    } else {
        "finished"
    };
    let path = match kind {
        "read" | "edit" | "write" => json!("src/a.rs"),
        _ => Value::Null,
    };
    serde_json::from_value(json!({
        "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
        "parent_activity_id": null, "parent_state": "root", "task_id": null,
        "tool_kind": kind, "state": state, "outcome": outcome,
        "changes": if kind == "command" { "unknown" } else { "not_applicable" },
        "revision": 1, "origin": "live",
        "detail": {"availability": "complete", "reason": null}, "title": title,
        "metadata": {"tool_name": tool, "resource_path": path, "working_directory": null,
                     "public_protection": {"decision": "allowed", "summary": null}},
        "blocks": blocks, "omissions": []
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn activity(card: Card, state: ActivityDisplay) -> ActivityItem {
    ActivityItem {
        run_id: "r".into(),
        activity_id: "tool-1".into(),
        kind: ActivityKind::Tool,
        name: card.metadata.tool_name.clone().unwrap_or_default(),
        summary: card.title.clone(),
        state,
        card: CardView::Card(Box::new(card)),
    }
}

fn command_block(command: &str, exit: Value, signal: Value) -> Value {
    json!({"type": "command", "command": command, "working_directory": "/w",
           "exit_code": exit, "signal": signal})
}

#[test]
fn a_running_command_names_its_command_and_its_time() {
    // No facts yet: the title (the call's label) names the command.
    let running = card(
        "bash",
        "command",
        "bash cargo test -q",
        Value::Null,
        json!([]),
    );
    let lines = activity_lines(
        &activity(running, ActivityDisplay::Started),
        Timing::Running(Duration::from_secs(12)),
        COLLAPSED,
    );
    assert_eq!(text(&lines), ["… bash cargo test -q  running 12s"]);
}

#[test]
fn a_finished_command_shows_its_exit_and_at_most_six_lines() {
    let output = (1..=6)
        .map(|n| format!("line {n}"))
        .collect::<Vec<_>>()
        .join("\n");
    let done = card(
        "bash",
        "command",
        "bash cargo test -q",
        json!("failure"),
        json!([command_block("cargo test -q\necho done", json!(1), Value::Null),
               {"type": "text", "text": output, "format": "plain", "language": null}]),
    );
    let lines = activity_lines(
        &activity(done.clone(), ActivityDisplay::Failed),
        Timing::Took(Duration::from_millis(1500)),
        COLLAPSED,
    );
    assert_eq!(
        text(&lines),
        [
            "✗ bash cargo test -q …  failed · exit 1 · 1.5s",
            "    line 1",
            "    line 2",
            "    line 3",
            "    line 4",
            "    line 5",
            "    line 6",
        ]
    );
    // Expanded: the whole command, where it ran, and the lines.
    let lines = text(&activity_lines(
        &activity(done, ActivityDisplay::Failed),
        Timing::Unknown,
        EXPANDED,
    ));
    assert_eq!(
        lines[..4],
        [
            "✗ bash cargo test -q …  failed · exit 1",
            "    $ cargo test -q",
            "      echo done",
            "    in /w",
        ]
    );
}

#[test]
fn signals_and_timeouts_are_said_in_words() {
    let killed = card(
        "bash",
        "command",
        "bash sleep 100",
        json!("failure"),
        json!([command_block("sleep 100", Value::Null, json!("SIGKILL"))]),
    );
    assert_eq!(
        text(&[header(&killed, None, Timing::Unknown, COLLAPSED)]),
        ["✗ bash sleep 100  failed · killed by signal 9 (KILL)"]
    );
    let timed_out = card(
        "bash",
        "command",
        "bash sleep 100",
        json!("failure"),
        json!([command_block("sleep 100", Value::Null, json!("SIGKILL")),
               {"type": "results", "rows": [
                   {"label": "Command timeout", "value": "timed out after 5s", "outcome": "unknown"}]}]),
    );
    assert_eq!(
        text(&[header(&timed_out, None, Timing::Unknown, COLLAPSED)]),
        ["✗ bash sleep 100  failed · timed out"]
    );
}

#[test]
fn each_tool_names_its_main_argument() {
    let read = card("read", "read", "read src/a.rs", json!("success"), json!([]));
    assert_eq!(main_argument(&read).as_deref(), Some("src/a.rs"));
    let grep = card(
        "grep",
        "search",
        "grep \"fn main\"",
        json!("success"),
        json!([{"type": "results", "rows": [
            {"label": "Pattern", "value": "fn main", "outcome": "unknown"}]}]),
    );
    assert_eq!(main_argument(&grep).as_deref(), Some("fn main"));
    let web = card(
        "web_fetch",
        "web",
        "web_fetch https://example.com",
        json!("success"),
        json!([{"type": "resources", "rows": [
            {"kind": "url", "label": "https://example.com/a", "location": null,
             "availability": "available"}]}]),
    );
    assert_eq!(
        main_argument(&web).as_deref(),
        Some("https://example.com/a")
    );
    let task = card(
        "task",
        "subagent",
        "task reviewer: Review the diff.",
        Value::Null,
        json!([]),
    );
    assert_eq!(
        main_argument(&task).as_deref(),
        Some("reviewer: Review the diff.")
    );
    // A fixed title names nothing.
    let bare = card("bash", "command", "Command", Value::Null, json!([]));
    assert_eq!(main_argument(&bare), None);
}

#[test]
fn a_diff_is_numbered_from_its_hunk_headers() {
    let diff = "--- a.rs\n+++ a.rs\n@@ -10,3 +10,4 @@ fn x\n a\n-b\n+c\n+d\n e\n--- x\n";
    let lines = parse_unified(diff);
    let numbers: Vec<(DiffLineKind, Option<u64>, Option<u64>)> = lines
        .iter()
        .map(|l| (l.kind, l.old_line, l.new_line))
        .collect();
    use DiffLineKind::*;
    assert_eq!(
        numbers,
        [
            (FileHeader, None, None),
            (FileHeader, None, None),
            (HunkHeader, None, None),
            (Context, Some(10), Some(10)),
            (Removed, Some(11), None),
            (Added, None, Some(11)),
            (Added, None, Some(12)),
            (Context, Some(12), Some(13)),
            // The hunk's counts are spent: this is a header again.
            (FileHeader, None, None),
        ]
    );
    assert_eq!(
        text(&diff_lines(lines[3..6].iter(), None)),
        [
            "      10   10 │ a",
            "      11      │-b",
            "           11 │+c",
        ]
    );
}

#[test]
fn an_edit_shows_its_diff_and_the_rest_waits_for_ctrl_o() {
    let lines: Vec<Value> = (1..=8)
        .map(|n| json!({"kind": "added", "text": format!("new {n}"), "old_line": null, "new_line": n}))
        .collect();
    let edit = card(
        "edit",
        "edit",
        "edit src/a.rs",
        json!("success"),
        json!([{"type": "diff", "old_path": "src/a.rs", "new_path": "src/a.rs",
                "application": "applied", "lines": lines}]),
    );
    let shown = text(&saved_lines(
        &edit,
        "edit: completed. applied",
        Timing::Unknown,
        COLLAPSED,
    ));
    // Not seen run here: no time.
    assert_eq!(shown[0], "✓ edit src/a.rs  done");
    let seen = saved_lines(
        &edit,
        "edit: completed. applied",
        Timing::Took(Duration::from_millis(1_040)),
        COLLAPSED,
    );
    assert_eq!(text(&seen)[0], "✓ edit src/a.rs  done · 1.0s");
    assert_eq!(shown.len(), 1 + RESULT_LINES + 1);
    assert_eq!(shown[1], "            1 │+new 1");
    assert_eq!(shown[7], "    … more lines · Ctrl-O expands");
    let all = text(&saved_lines(
        &edit,
        "edit: completed. applied",
        Timing::Unknown,
        EXPANDED,
    ));
    assert_eq!(all[1], "    diff src/a.rs (applied)");
    assert_eq!(all.len(), 2 + 8);
}

#[test]
fn omissions_and_missing_detail_are_words_not_wire_names() {
    let mut saved = card(
        "bash",
        "command",
        "Command",
        json!("interrupted"),
        json!([]),
    );
    saved.detail.availability = magi_protocol::cards::Availability::Unavailable;
    saved.detail.reason = Some(magi_protocol::cards::Reason::NotRecorded);
    saved.omissions = vec![magi_protocol::cards::Omission {
        subject: magi_protocol::cards::Subject::Blocks,
        reason: magi_protocol::cards::Reason::NotRecorded,
        omitted_count: None,
    }];
    let collapsed = text(&saved_lines(&saved, "", Timing::Unknown, COLLAPSED));
    assert_eq!(
        collapsed,
        [
            "✗ bash  interrupted",
            "    no detail available: not recorded in the session"
        ]
    );
    let expanded = text(&saved_lines(&saved, "", Timing::Unknown, EXPANDED)).join("\n");
    assert!(
        expanded.contains("(detail not shown: not recorded in the session)"),
        "{expanded}"
    );
    assert!(!expanded.contains("not_recorded"), "{expanded}");
}

#[test]
fn a_failed_call_without_detail_says_why_and_approval_waits_only_while_pending() {
    let mut failed = card("edit", "edit", "edit src/a.rs", json!("failure"), json!([]));
    failed.detail.availability = magi_protocol::cards::Availability::Unavailable;
    failed.detail.reason = Some(magi_protocol::cards::Reason::NotRecorded);
    assert_eq!(
        text(&saved_lines(
            &failed,
            "edit: failed. invalid arguments",
            Timing::Unknown,
            COLLAPSED
        )),
        ["✗ edit src/a.rs  failed", "    invalid arguments"]
    );
    let mut asking = card("bash", "command", "bash make", Value::Null, json!([]));
    asking.metadata.public_protection.decision = ProtectionDecision::ApprovalRequired;
    let waiting = Look {
        approval_pending: true,
        ..COLLAPSED
    };
    assert_eq!(
        text(&[header(&asking, None, Timing::Unknown, waiting)]),
        ["… bash make  waiting for your approval"]
    );
    let mut denied = card(
        "bash",
        "command",
        "bash rm -rf build",
        json!("failure"),
        json!([]),
    );
    denied.changes = magi_protocol::cards::Changes::None;
    denied.metadata.public_protection.decision = ProtectionDecision::Denied;
    denied.metadata.public_protection.summary = Some("denied by user".into());
    assert_eq!(
        text(&[header(&denied, None, Timing::Unknown, COLLAPSED)]),
        ["✗ bash rm -rf build  denied by user"]
    );
    // Answered: the same snapshot now means it runs.
    assert_eq!(
        text(&[header(&asking, None, Timing::Unknown, COLLAPSED)]),
        ["… bash make  running"]
    );
}

#[test]
fn a_hooks_block_is_the_refusal_and_replaced_arguments_are_said_beside_the_end() {
    let hook = |value: &str| {
        json!([{"type": "results", "rows": [
            {"label": "Hook", "value": value, "outcome": "unknown"}]}])
    };
    let mut blocked = card(
        "bash",
        "command",
        "bash git push",
        json!("failure"),
        hook("denied by hook ./policy: not on main"),
    );
    blocked.changes = magi_protocol::cards::Changes::None;
    blocked.metadata.public_protection.decision = ProtectionDecision::Denied;
    assert_eq!(
        text(&[header(&blocked, None, Timing::Unknown, COLLAPSED)]),
        ["✗ bash git push  denied by hook ./policy: not on main"]
    );
    let mut blocks = hook("arguments replaced by hook ./offline");
    blocks.as_array_mut().unwrap().insert(
        0,
        command_block("cargo test --offline", json!(0), Value::Null),
    );
    let replaced = card(
        "bash",
        "command",
        "bash cargo test --offline",
        json!("success"),
        blocks,
    );
    assert_eq!(
        text(&[header(&replaced, None, Timing::Unknown, COLLAPSED)]),
        ["✓ bash cargo test --offline  done · exit 0 · arguments replaced by hook ./offline"]
    );
}
