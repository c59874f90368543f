//! Property: every card the backend's selector projects, from any recorded source,
//! passes the client's fail-closed decoder and its serialized size bound, live and
//! saved.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use magi_core::cards::{CardSource, PreviewSource, Settlement, TranscriptStyles, project};
use magi_protocol::cards::{CARD_BYTES, Origin};
use magi_store::records::ToolOutcome;
use proptest::prelude::*;
use serde_json::{Value, json};

const TOOLS: [&str; 13] = [
    "read",
    "grep",
    "find",
    "list",
    "write",
    "edit",
    "hash_edit",
    "web_fetch",
    "bash",
    "async_bash",
    "bash_log",
    "bash_kill",
    "made_up_tool",
];

/// Text with the hard parts: controls, quotes, non-ASCII, secret-like tokens.
fn awkward_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ./_-]{0,40}",
        "[\\PC]{0,200}",
        Just("sk-abcdefghijklmnopqrstuvwxyz0123456789".to_owned()),
        Just("line\u{1b}[31m red \u{7} \"quoted\" \\ back".to_owned()),
        (1usize..5000).prop_map(|n| "é".repeat(n)),
    ]
}

/// Facts in every recorded shape, valid or not.
fn facts() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        (awkward_text(), any::<u16>(), any::<bool>()).prop_map(|(path, n, binary)| Some(json!({
            "tool": "read", "path": path, "first_line": 1, "last_line": n,
            "total_lines": null, "truncated": !binary, "binary": binary
        }))),
        (
            awkward_text(),
            proptest::collection::vec(awkward_text(), 0..40),
            any::<bool>()
        )
            .prop_map(|(pattern, paths, complete)| Some(json!({
                "tool": "search", "pattern": pattern, "path": null,
                "matches": paths.len() * 3, "files": paths.len(), "complete": complete,
                "paths": paths
            }))),
        (awkward_text(), 0u64..10, 0u64..10, any::<bool>()).prop_map(
            |(path, ops, applied, changed)| {
                Some(json!({
                    "tool": "change", "path": path, "created": false,
                    "operations": ops, "applied": applied.min(ops), "changed": changed
                }))
            }
        ),
        (
            awkward_text(),
            awkward_text(),
            proptest::option::of(-300i32..300),
            any::<bool>()
        )
            .prop_map(|(command, line, exit, timed_out)| Some(json!({
                "tool": "command", "command": command, "working_directory": "/w",
                "timeout_ms": 1500, "effective_timeout_ms": 1500, "timed_out": timed_out,
                "exit_code": exit, "signal": null, "stdout_truncated": true,
                "stderr_truncated": null, "stdout_lines": 3, "stderr_lines": null,
                "failure_line": line, "cleanup_warning": null, "job_id": null,
                "tracking": {"status": "completed", "entries": [
                    {"path": "a.txt", "operation": "read"},
                    {"path": "b.txt", "operation": "write"}
                ]}
            }))),
        awkward_text().prop_map(|url| Some(json!({
            "tool": "web", "url": url, "status": 200, "content_type": "text/html",
            "bytes": 10, "truncated": false
        }))),
        Just(Some(json!({"tool": "hologram"}))),
        Just(Some(json!([1, 2, 3]))),
    ]
}

fn outcome() -> impl Strategy<Value = Option<ToolOutcome>> {
    prop_oneof![
        Just(None),
        Just(Some(ToolOutcome::Completed)),
        Just(Some(ToolOutcome::Failed)),
        Just(Some(ToolOutcome::Cancelled)),
        Just(Some(ToolOutcome::Indeterminate)),
        Just(Some(ToolOutcome::Denied)),
    ]
}

fn preview() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        (1usize..400, awkward_text()).prop_map(|(lines, t)| {
            let mut diff = "--- a\n+++ a\n@@ -1,2 +1,2 @@\n".to_owned();
            for n in 0..lines {
                diff.push_str(&format!("-{t}{n}\n+{n}{t}\n"));
            }
            Some(json!({"schema_version": 1, "diff": diff, "truncated": false}))
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn projected_cards_pass_the_client_decoder_within_their_bound(
        tool in proptest::sample::select(&TOOLS[..]),
        label in awkward_text(),
        facts in facts(),
        outcome in outcome(),
        protection in proptest::option::of(proptest::sample::select(&[
            "allowed automatically", "allowed by user", "denied by user",
            "denied; approval unavailable", "made-up label",
        ][..])),
        preview in preview(),
        saved in any::<bool>(),
        awaiting in any::<bool>(),
        // The result's lines: up to six, each up to the facts' string bound.
        transcript in proptest::collection::vec(awkward_text(), 0..7),
    ) {
        let settlement = match outcome {
            Some(outcome) => Settlement::Settled { outcome, summary: "summary" },
            None if saved => Settlement::Interrupted,
            None => Settlement::Running,
        };
        let preview = match &preview {
            Some(payload) => PreviewSource::Recorded(payload),
            None => PreviewSource::NotApplicable,
        };
        let source = CardSource {
            activity_id: if saved { "m7" } else { "tool-7" },
            origin: if saved { Origin::Saved } else { Origin::Live },
            revision: if saved { 0 } else { 3 },
            tool_name: tool,
            label: &label,
            working_directory: Some("/w"),
            settlement,
            facts: facts.as_ref(),
            protection,
            awaiting_approval: awaiting && !saved,
            preview,
            // A subagent's call, sometimes: its lineage survives every reduction.
            parent_activity_id: (!saved && awaiting).then_some("tool-1"),
            task_id: (!saved && awaiting).then_some("task-1"),
            children: None,
            transcript: &transcript,
            transcript_styles: TranscriptStyles::Off,
            hook: None,
        };
        let card = project(&source);
        let text = serde_json::to_string(&card).unwrap();
        prop_assert!(text.len() <= CARD_BYTES, "{} bytes", text.len());
        prop_assert!(!text.contains("sk-abcdefghijklmnopqrstuvwxyz"));
        let decoded = if saved {
            magi_client::cards::decode_saved_card(&text, "m7")
        } else {
            magi_client::cards::decode_card(&text)
        };
        prop_assert_eq!(
            card.parent_activity_id.as_deref(),
            source.parent_activity_id
        );
        prop_assert_eq!(card.task_id.as_deref(), source.task_id);
        prop_assert_eq!(decoded.map_err(|e| e.to_string()), Ok(card));
    }
}
