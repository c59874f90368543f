//! `read`: a file's lines, bounded, refusing binary files.

use std::io::Read;
use std::path::Path;

use magi_protocol::limits::{READ_TOOL_BYTES, READ_TOOL_LINES};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{ToolDefinition, ToolOutput};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    /// Show each line as `N:hash|text`, the anchors `hash_edit` takes.
    #[serde(default)]
    hashes: bool,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "read",
        description: "Read a text file. Returns up to `limit` lines (default and maximum 2000) \
                      starting at line `offset` (1-based, default 1). Paths are relative to \
                      the working directory.",
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to read."},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": READ_TOOL_LINES},
                "hashes": {"type": "boolean", "description": "Prefix each line with `N:hash|` for hash_edit."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolOutput {
    let Ok(args) = Arguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"path\": string, \"offset\"?: integer, \"limit\"?: integer}.".into(),
        );
    };
    let path = cwd.join(&args.path);
    let mut bytes = Vec::new();
    let read = std::fs::File::open(&path)
        .and_then(|f| f.take(READ_TOOL_BYTES as u64 + 1).read_to_end(&mut bytes));
    if let Err(e) = read {
        return ToolOutput::failed(
            "cannot read the file",
            format!("Cannot read {}: {e}.", args.path),
        );
    }
    if bytes.contains(&0) {
        return ToolOutput::failed("binary file", format!("{} is a binary file.", args.path));
    }
    let cut_at_bound = bytes.len() > READ_TOOL_BYTES;
    bytes.truncate(READ_TOOL_BYTES);
    let text = String::from_utf8_lossy(&bytes);
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args
        .limit
        .unwrap_or(READ_TOOL_LINES)
        .clamp(1, READ_TOOL_LINES);
    let lines: Vec<&str> = text.lines().skip(offset - 1).take(limit).collect();
    let mut content = if args.hashes {
        lines
            .iter()
            .enumerate()
            .map(|(i, line)| {
                format!(
                    "{}:{}|{line}",
                    offset + i,
                    crate::hash_edit::line_hash(line)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        lines.join("\n")
    };
    let shown = lines.len();
    let more = text.lines().count() > offset - 1 + shown || cut_at_bound;
    if more {
        content.push_str(&format!(
            "\n[showing lines {offset}-{}; the file continues: read again with a larger offset]",
            offset + shown.saturating_sub(1)
        ));
    }
    ToolOutput {
        content,
        summary: format!("{shown} {}", if shown == 1 { "line" } else { "lines" }),
        is_error: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_anchor_each_line_for_hash_edit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let out = run(
            &json!({"path": "a.txt", "offset": 2, "hashes": true}),
            dir.path(),
        );
        assert_eq!(
            out.content,
            format!("2:{}|two", crate::hash_edit::line_hash("two"))
        );
    }

    #[test]
    fn reads_ranges_and_refuses_binary() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.path().join("b.bin"), [1, 0, 2]).unwrap();
        let out = run(
            &json!({"path": "a.txt", "offset": 2, "limit": 1}),
            dir.path(),
        );
        assert_eq!(
            out.content,
            "two\n[showing lines 2-2; the file continues: read again with a larger offset]"
        );
        assert!(!out.is_error);
        assert_eq!(
            run(&json!({"path": "a.txt"}), dir.path()).content,
            "one\ntwo\nthree"
        );
        assert!(run(&json!({"path": "b.bin"}), dir.path()).is_error);
        assert!(run(&json!({"path": "missing"}), dir.path()).is_error);
        assert!(run(&json!({"file": "a.txt"}), dir.path()).is_error);
        assert!(crate::run("read", "not json", dir.path()).is_error);
        assert!(crate::run("write", "{}", dir.path()).is_error);
    }
}
