//! Golden cards of the file and web tools: read, grep, ast_grep, find, list, write, edit, hash_edit, web.

use super::*;

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
        lines_added: Some(3),
        lines_removed: Some(0),
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
        lines_added: Some(12),
        lines_removed: Some(5),
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
        lines_added: Some(4),
        lines_removed: Some(4),
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
