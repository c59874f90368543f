//! `edit`: replace one exact piece of a file's text. It refuses when the old text is
//! absent or occurs more than once, so an edit never lands somewhere the model did not
//! mean. Like `write`, it asks before it runs unless a rule allows it.

use std::path::Path;

use magi_protocol::limits::WRITE_TOOL_BYTES;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::editing::{Target, parse_arguments};
use crate::editor::EditorFiles;
use crate::facts::{FACT_STRING_BYTES, Facts, cut};
use crate::{ToolDefinition, ToolOutput, ToolReport, preview};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
    old_text: String,
    new_text: String,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::Edit.name(),
        description: "Replace `old_text` with `new_text` in a file. `old_text` must occur \
                      exactly once; include enough surrounding lines to make it unique. The \
                      file may hold at most 1 MiB before and after.",
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to edit."},
                "old_text": {"type": "string", "description": "The exact text to replace."},
                "new_text": {"type": "string", "description": "The replacement."}
            },
            "required": ["path", "old_text", "new_text"],
            "additionalProperties": false
        }),
    }
}

#[cfg(test)]
pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    run_with(arguments, cwd, None)
}

/// Reads and writes through `editor` when it serves the file.
pub(crate) fn run_with(
    arguments: &Value,
    cwd: &Path,
    editor: Option<&dyn EditorFiles>,
) -> ToolReport {
    let args: Arguments = match parse_arguments(
        arguments,
        r#"{"path": string, "old_text": string, "new_text": string}"#,
    ) {
        Ok(args) => args,
        Err(output) => return output.into(),
    };
    // An edit changes an existing file or nothing: it never creates one.
    let facts = |written: bool, changed: bool| Facts::Change {
        path: cut(&args.path, FACT_STRING_BYTES),
        created: false,
        operations: 1,
        applied: u64::from(written),
        changed,
        lines_added: None,
        lines_removed: None,
    };
    let unchanged = |output| ToolReport::with_facts(output, facts(false, false));
    if args.old_text.is_empty() {
        return unchanged(ToolOutput::failed(
            "empty old text",
            "`old_text` must not be empty.".into(),
        ));
    }
    let target = Target::of(editor, cwd, &args.path);
    let text = match target.read_within_bound(&args.path) {
        Ok(text) => text,
        Err(output) => return unchanged(output),
    };
    let found = text.matches(&args.old_text).count();
    if found != 1 {
        let (summary, content) = if found == 0 {
            (
                "old text not found",
                format!(
                    "`old_text` does not occur in {}; nothing changed.",
                    args.path
                ),
            )
        } else {
            (
                "old text ambiguous",
                format!(
                    "`old_text` occurs {found} times in {}; nothing changed.",
                    args.path
                ),
            )
        };
        return unchanged(ToolOutput::failed(summary, content));
    }
    let edited = text.replacen(&args.old_text, &args.new_text, 1);
    if edited.len() > WRITE_TOOL_BYTES {
        return unchanged(ToolOutput::failed(
            "file too large",
            "The edited file would be over the bound; nothing changed.".into(),
        ));
    }
    match target.write(&args.path, &edited) {
        Ok(()) => {
            let (removed, added) = (args.old_text.lines().count(), args.new_text.lines().count());
            let output = ToolOutput {
                content: format!(
                    "Edited {}: replaced {removed} lines with {added}.",
                    args.path
                ),
                summary: format!("-{removed} +{added} lines"),
                is_error: false,
            };
            ToolReport {
                preview: Some(preview::applied(&args.path, &text, &edited)),
                ..ToolReport::with_facts(output, facts(true, edited != text))
            }
        }
        Err(why) => unchanged(ToolOutput::failed("cannot write the file", why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_exactly_one_occurrence_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.rs");
        std::fs::write(&file, "let a = 1;\nlet b = 1;\n").unwrap();
        let run_edit = |old: &str, new: &str| {
            run(
                &json!({"path": "a.rs", "old_text": old, "new_text": new}),
                dir.path(),
            )
            .output
        };
        let out = run_edit("= 1;", "= 2;");
        assert_eq!(out.summary, "old text ambiguous");
        let out = run_edit("let c", "x");
        assert_eq!(out.summary, "old text not found");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "let a = 1;\nlet b = 1;\n"
        );
        let out = run_edit("let b = 1;", "let b = 2;\nlet c = 3;");
        assert!(!out.is_error);
        assert_eq!(out.summary, "-1 +2 lines");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "let a = 1;\nlet b = 2;\nlet c = 3;\n"
        );
        assert!(run_edit("", "x").is_error);
        assert!(
            run(
                &json!({"path": "missing.rs", "old_text": "a", "new_text": "b"}),
                dir.path()
            )
            .output
            .is_error
        );
    }

    #[test]
    fn facts_and_preview_record_the_edit() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("a.rs"), &body).unwrap();
        let edit = |old: &str, new: &str| {
            run(
                &json!({"path": "a.rs", "old_text": old, "new_text": new}),
                dir.path(),
            )
        };
        let facts = |applied: u64, changed: bool| {
            Some(Facts::Change {
                path: "a.rs".into(),
                created: false,
                operations: 1,
                applied,
                changed,
                lines_added: None,
                lines_removed: None,
            })
        };
        let report = edit("line 5\n", "five\n");
        assert_eq!(report.facts, facts(1, true));
        let preview = report.preview.unwrap();
        assert_eq!(
            preview.diff,
            "--- a.rs\n+++ a.rs\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n \
             line 6\n line 7\n line 8\n"
        );
        assert!(!preview.truncated);
        // Replaced with itself: written, but the file is as it was.
        let report = edit("five", "five");
        assert_eq!(report.facts, facts(1, false));
        assert_eq!(report.preview.unwrap().diff, "");
        let report = edit("absent", "x");
        assert_eq!(report.facts, facts(0, false));
        assert_eq!(report.preview, None);
        assert_eq!(run(&json!({"path": "a.rs"}), dir.path()).facts, None);
    }
}
