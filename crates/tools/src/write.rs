//! `write`: create or replace a file with the given content. It changes the workspace,
//! so the runner asks before it runs unless a rule allows it.

use std::path::Path;

use magi_protocol::limits::WRITE_TOOL_BYTES;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{ToolDefinition, ToolOutput};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
    content: String,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "write",
        description: "Create or replace a text file with `content` (at most 1 MiB). Parent \
                      directories are created. Paths are relative to the working directory.",
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to write."},
                "content": {"type": "string", "description": "The whole new content."}
            },
            "required": ["path", "content"],
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
                format!("Expected {{\"path\": string, \"content\": string}}: {e}."),
            );
        }
    };
    if args.content.len() > WRITE_TOOL_BYTES {
        return ToolOutput::failed(
            "content too large",
            format!("The content is over the {WRITE_TOOL_BYTES}-byte bound; nothing was written."),
        );
    }
    let path = cwd.join(&args.path);
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, &args.content));
    match written {
        Ok(()) => {
            let lines = args.content.lines().count();
            ToolOutput {
                content: format!("Wrote {} bytes to {}.", args.content.len(), args.path),
                summary: format!(
                    "wrote {lines} {}",
                    if lines == 1 { "line" } else { "lines" }
                ),
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
    fn writes_creates_parents_and_refuses_oversize() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&json!({"path": "a/b.txt", "content": "x\ny\n"}), dir.path());
        assert!(!out.is_error);
        assert_eq!(out.summary, "wrote 2 lines");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b.txt")).unwrap(),
            "x\ny\n"
        );
        let big = "z".repeat(WRITE_TOOL_BYTES + 1);
        let out = run(&json!({"path": "big.txt", "content": big}), dir.path());
        assert!(out.is_error);
        assert!(!dir.path().join("big.txt").exists());
        assert!(run(&json!({"path": "c.txt"}), dir.path()).is_error);
    }
}
