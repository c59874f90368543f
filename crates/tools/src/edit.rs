//! `edit`: replace one exact piece of a file's text. It refuses when the old text is
//! absent or occurs more than once, so an edit never lands somewhere the model did not
//! mean. Like `write`, it asks before it runs unless a rule allows it.

use std::path::Path;

use magi_protocol::limits::WRITE_TOOL_BYTES;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{ToolDefinition, ToolOutput};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
    old_text: String,
    new_text: String,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "edit",
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

pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolOutput {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => {
            return ToolOutput::failed(
                "invalid arguments",
                format!(
                    "Expected {{\"path\": string, \"old_text\": string, \"new_text\": string}}: {e}."
                ),
            );
        }
    };
    if args.old_text.is_empty() {
        return ToolOutput::failed("empty old text", "`old_text` must not be empty.".into());
    }
    let path = cwd.join(&args.path);
    let metadata = std::fs::metadata(&path);
    if metadata
        .as_ref()
        .is_ok_and(|m| m.len() > WRITE_TOOL_BYTES as u64)
    {
        return ToolOutput::failed(
            "file too large",
            format!("{} is over the {WRITE_TOOL_BYTES}-byte bound.", args.path),
        );
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            return ToolOutput::failed(
                "cannot read the file",
                format!("Cannot read {}: {e}.", args.path),
            );
        }
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
        return ToolOutput::failed(summary, content);
    }
    let edited = text.replacen(&args.old_text, &args.new_text, 1);
    if edited.len() > WRITE_TOOL_BYTES {
        return ToolOutput::failed(
            "file too large",
            "The edited file would be over the bound; nothing changed.".into(),
        );
    }
    match std::fs::write(&path, &edited) {
        Ok(()) => {
            let (removed, added) = (args.old_text.lines().count(), args.new_text.lines().count());
            ToolOutput {
                content: format!(
                    "Edited {}: replaced {removed} lines with {added}.",
                    args.path
                ),
                summary: format!("-{removed} +{added} lines"),
                is_error: false,
            }
        }
        Err(e) => ToolOutput::failed(
            "cannot write the file",
            format!("Cannot write {}: {e}.", args.path),
        ),
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
            .is_error
        );
    }
}
