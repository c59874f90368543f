use std::fs;

use serde_json::json;

use super::*;

fn search(dir: &Path, args: Value) -> ToolReport {
    run(&args, dir)
}

/// Each language: a call matched, the same text in a comment and in a string not.
#[test]
fn each_language_matches_calls_and_not_comments_or_strings() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "rust",
            "a.rs",
            "fn main() {\n    // target(1)\n    let s = \"target(2)\";\n    target(3);\n}\n",
        ),
        (
            "python",
            "a.py",
            "# target(1)\ns = 'target(2)'\ntarget(3)\n",
        ),
        (
            "javascript",
            "a.js",
            "// target(1)\nconst s = 'target(2)';\ntarget(3);\n",
        ),
        (
            "typescript",
            "a.ts",
            "// target(1)\nconst s: string = 'target(2)';\ntarget(3);\n",
        ),
        (
            "tsx",
            "a.tsx",
            "// target(1)\nconst s = <b>{'target(2)'}</b>;\ntarget(3);\n",
        ),
        (
            "go",
            "a.go",
            "package a\n// target(1)\nfunc f() {\n\ts := \"target(2)\"\n\ttarget(3)\n}\n",
        ),
        (
            "java",
            "A.java",
            "class A {\n  // target(1)\n  String s = \"target(2)\";\n  void f() { target(3); }\n}\n",
        ),
        (
            "c",
            "a.c",
            "/* target(1) */\nchar *s = \"target(2)\";\nvoid f(void) { target(3); }\n",
        ),
        (
            "cpp",
            "a.cpp",
            "// target(1)\nauto s = \"target(2)\";\nvoid f() { target(3); }\n",
        ),
        ("bash", "a.sh", "# target 1\necho \"target 2\"\ntarget 3\n"),
    ];
    for &(language, file, source) in cases {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(file), source).unwrap();
        // A bare call at C's top level parses as a macro type: C's pattern is the
        // statement.
        let pattern = match language {
            "bash" => "target $A",
            "c" => "target($A);",
            _ => "target($A)",
        };
        let report = search(
            dir.path(),
            json!({"pattern": pattern, "language": language}),
        );
        let content = &report.output.content;
        assert!(!report.output.is_error, "{language}: {content}");
        let lines: Vec<&str> = content.lines().filter(|l| l.starts_with(file)).collect();
        assert_eq!(lines.len(), 1, "{language}: {content}");
        assert!(
            ["target(3)", "target(3);", "target 3"]
                .iter()
                .any(|end| lines[0].ends_with(end)),
            "{language}: {content}"
        );
        assert!(
            content.contains("[scanned 1 file of"),
            "{language}: {content}"
        );
    }
}

#[test]
fn json_matches_numbers_not_the_same_text_in_strings() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("a.json"),
        "{\"a\": 42, \"b\": \"42\", \"c\": [42]}\n",
    )
    .unwrap();
    let report = search(dir.path(), json!({"pattern": "42", "language": "json"}));
    let content = &report.output.content;
    assert_eq!(
        content,
        "a.json:1:7: 42\na.json:1:28: 42\n[scanned 1 file of json]"
    );
}

#[test]
fn results_are_sorted_by_path_then_position_with_line_spans() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("b")).unwrap();
    fs::write(dir.path().join("b/z.rs"), "fn f() { g(1); g(2); }\n").unwrap();
    fs::write(
        dir.path().join("a.rs"),
        "fn f() {\n    g(\n        3,\n    );\n}\n",
    )
    .unwrap();
    let report = search(dir.path(), json!({"pattern": "g($A)", "language": "rs"}));
    let content = &report.output.content;
    let lines: Vec<&str> = content.lines().collect();
    assert_eq!(lines[0], "a.rs:2:5: g( [lines 2-4]");
    assert_eq!(lines[1], "b/z.rs:1:10: g(1)");
    assert_eq!(lines[2], "b/z.rs:1:16: g(2)");
    assert_eq!(report.output.summary, "3 matches in 2 files");
    assert_eq!(
        report.facts,
        Some(Facts::AstGrep {
            pattern: "g($A)".into(),
            language: "rs".into(),
            path: None,
            matches: 3,
            files: 2,
            files_scanned: 2,
            files_skipped: 0,
            complete: true,
            paths: vec!["a.rs".into(), "b/z.rs".into()],
        })
    );
}

#[test]
fn a_bad_pattern_or_language_fails_and_lists_the_languages() {
    let dir = tempfile::tempdir().unwrap();
    let report = search(
        dir.path(),
        json!({"pattern": "f(1); g(2);", "language": "rust"}),
    );
    assert!(report.output.is_error);
    assert!(
        report.output.content.starts_with("Invalid rust pattern"),
        "{}",
        report.output.content
    );
    assert!(
        report
            .output
            .content
            .contains("rust, python, javascript, typescript, tsx, go, java, c, cpp, json, bash")
    );
    for empty in ["", "$$$"] {
        let report = search(dir.path(), json!({"pattern": empty, "language": "rust"}));
        assert!(report.output.is_error, "{empty:?}");
    }
    let report = search(dir.path(), json!({"pattern": "$A", "language": "cobol"}));
    assert!(report.output.is_error);
    assert!(report.output.content.contains("Unknown language \"cobol\""));
    assert!(report.output.content.contains("rust, python"));
    let report = search(
        dir.path(),
        json!({"pattern": "$A", "language": "rust", "globs": ["a["]}),
    );
    assert!(report.output.is_error);
    let report = search(
        dir.path(),
        json!({"pattern": "$A", "language": "rust", "path": "missing"}),
    );
    assert!(report.output.is_error);
    let report = search(dir.path(), json!({"pattern": "$A"}));
    assert!(report.output.is_error);
    assert!(report.facts.is_none());
}

#[test]
fn ignored_hidden_and_other_languages_files_are_not_searched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    fs::create_dir(root.join("ignored")).unwrap();
    fs::create_dir(root.join(".hidden")).unwrap();
    fs::create_dir(root.join("src")).unwrap();
    for file in ["ignored/a.rs", ".hidden/a.rs", "src/a.rs", "b.rs"] {
        fs::write(root.join(file), "fn f() { g(1); }\n").unwrap();
    }
    fs::write(root.join("src/a.py"), "g(1)\n").unwrap();
    let report = search(root, json!({"pattern": "g($A)", "language": "rust"}));
    let content = &report.output.content;
    assert!(
        content.starts_with("b.rs:1:10: g(1)\nsrc/a.rs:1:10: g(1)\n"),
        "{content}"
    );
    assert!(content.ends_with("[scanned 2 files of rust]"), "{content}");
    // Globs narrow the files; a file named as `path` is searched whatever they say.
    let report = search(
        root,
        json!({"pattern": "g($A)", "language": "rust", "globs": ["src/*.rs"]}),
    );
    assert!(
        report
            .output
            .content
            .starts_with("src/a.rs:1:10: g(1)\n[scanned 1 file")
    );
    let report = search(
        root,
        json!({"pattern": "g($A)", "language": "rust", "path": "ignored/a.rs"}),
    );
    assert!(
        report.output.content.starts_with("ignored/a.rs:1:10"),
        "{}",
        report.output.content
    );
}

#[test]
fn bounds_cut_results_and_skip_large_or_non_text_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("a.rs"), "fn f() { g(1); g(2); g(3); }\n").unwrap();
    let report = search(
        root,
        json!({"pattern": "g($A)", "language": "rust", "max_results": 2}),
    );
    let content = &report.output.content;
    assert_eq!(content.lines().filter(|l| l.starts_with("a.rs")).count(), 2);
    assert!(content.contains("[results cut at 2 matches"), "{content}");
    assert!(matches!(
        report.facts,
        Some(Facts::AstGrep {
            complete: false,
            matches: 2,
            ..
        })
    ));

    let mut large = String::from("fn f() { g(1); }\n");
    while (large.len() as u64) <= AST_GREP_FILE_BYTES {
        large.push_str("// padding padding padding padding padding padding padding\n");
    }
    fs::write(root.join("large.rs"), large).unwrap();
    fs::write(root.join("latin1.rs"), b"fn f() { g(1); } // \xe9\n").unwrap();
    fs::write(root.join("nul.rs"), b"fn f() { g(1); }\0\n").unwrap();
    let report = search(root, json!({"pattern": "g($A)", "language": "rust"}));
    let content = &report.output.content;
    assert!(
        content.ends_with(
            "[scanned 1 file of rust; skipped 3 files (1 over 2 MiB, 2 not UTF-8 text)]"
        ),
        "{content}"
    );
    assert!(matches!(
        report.facts,
        Some(Facts::AstGrep {
            complete: false,
            files_scanned: 1,
            files_skipped: 3,
            ..
        })
    ));
}

#[test]
fn syntax_errors_are_told() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.rs"), "fn f() { g(1); \n fn {{\n").unwrap();
    let report = search(dir.path(), json!({"pattern": "g($A)", "language": "rust"}));
    assert!(
        report
            .output
            .content
            .contains("1 file with syntax errors, where a match may be missed"),
        "{}",
        report.output.content
    );
}
