//! Card projection cost: how long the selector takes to project typical cards (a
//! read, a cut search, a bash command, an edit with a 40-line diff), serialized as they
//! are sent. Run with `cargo bench -p magi-core --bench cards`; it prints figures and
//! asserts nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::time::Instant;

use magi_core::cards::{CardSource, PreviewSource, Settlement, TranscriptStyles, project};
use magi_protocol::cards::Origin;
use magi_store::records::ToolOutcome;
use serde_json::{Value, json};

const ROUNDS: usize = 20_000;

fn source<'a>(tool: &'a str, label: &'a str, facts: &'a Value) -> CardSource<'a> {
    CardSource {
        activity_id: "tool-1",
        origin: Origin::Live,
        revision: 1,
        tool_name: tool,
        label,
        working_directory: Some("/home/user/project"),
        settlement: Settlement::Settled {
            outcome: ToolOutcome::Completed,
            summary: "done",
        },
        facts: Some(facts),
        protection: Some("allowed automatically"),
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

fn main() {
    let read = json!({"tool": "read", "path": "src/main.rs", "first_line": 1,
        "last_line": 120, "total_lines": 120, "truncated": false, "binary": false});
    let paths: Vec<String> = (0..32).map(|n| format!("src/module_{n}/file.rs")).collect();
    let search = json!({"tool": "search", "pattern": "fn main", "path": null,
        "matches": 200, "files": 57, "complete": false, "paths": paths});
    let bash = json!({"tool": "command", "command": "cargo test -q --workspace",
        "working_directory": "/home/user/project", "timeout_ms": null,
        "effective_timeout_ms": 120000, "timed_out": false, "exit_code": 101,
        "signal": null, "stdout_truncated": false, "stderr_truncated": false,
        "stdout_lines": 240, "stderr_lines": 12,
        "failure_line": "error[E0308]: mismatched types", "cleanup_warning": null,
        "job_id": null, "tracking": {"status": "no_candidates", "entries": []}});
    let edit = json!({"tool": "change", "path": "src/lib.rs", "created": false,
        "operations": 1, "applied": 1, "changed": true});
    let mut diff = "--- src/lib.rs\n+++ src/lib.rs\n@@ -10,20 +10,20 @@\n".to_owned();
    for n in 0..20 {
        diff.push_str(&format!("-    let value_{n} = compute({n});\n"));
        diff.push_str(&format!("+    let value_{n} = compute_checked({n})?;\n"));
    }
    let preview = json!({"schema_version": 1, "diff": diff, "truncated": false});
    let cases: Vec<(&str, CardSource)> = vec![
        ("read", source("read", "read src/main.rs", &read)),
        (
            "grep, cut, 32 paths",
            source("grep", "grep \"fn main\"", &search),
        ),
        ("bash, failed", {
            let mut s = source("bash", "bash cargo test -q --workspace", &bash);
            s.settlement = Settlement::Settled {
                outcome: ToolOutcome::Failed,
                summary: "exit 101",
            };
            s
        }),
        ("edit, 40-line diff", {
            let mut s = source("edit", "edit src/lib.rs", &edit);
            s.preview = PreviewSource::Recorded(&preview);
            s
        }),
    ];
    println!("card projection (median of 5 runs of {ROUNDS} cards each, serialization included)");
    for (name, source) in &cases {
        let mut runs = Vec::new();
        let mut bytes = 0;
        for _ in 0..5 {
            let started = Instant::now();
            for _ in 0..ROUNDS {
                let card = project(source);
                bytes = serde_json::to_vec(&card).unwrap().len();
            }
            runs.push(started.elapsed().as_secs_f64() * 1e6 / ROUNDS as f64);
        }
        runs.sort_by(f64::total_cmp);
        println!("  {name}: {:.2} µs per card, {bytes} bytes", runs[2]);
    }
}
