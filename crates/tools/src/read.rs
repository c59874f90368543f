//! `read`: a file's lines, bounded, refusing binary files.

use std::io::Read;
use std::path::Path;

use magi_protocol::limits::{READ_TOOL_BYTES, READ_TOOL_LINES};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::editor::{self, EditorFiles};
use crate::facts::{FACT_STRING_BYTES, Facts, cut};
use crate::{ToolDefinition, ToolOutput, ToolReport};

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
        name: crate::BuiltinTool::Read.name(),
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

#[cfg(test)]
pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    run_with(arguments, cwd, None)
}

/// Reads from `editor` when it serves the file (a text file inside the workspace).
pub(crate) fn run_with(
    arguments: &Value,
    cwd: &Path,
    editor: Option<&dyn EditorFiles>,
) -> ToolReport {
    let Ok(args) = Arguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"path\": string, \"offset\"?: integer, \"limit\"?: integer}.".into(),
        )
        .into();
    };
    // What is known before anything is read; each outcome fills in what it saw.
    let facts = |first_line, last_line, total_lines, truncated, binary| Facts::Read {
        path: cut(&args.path, FACT_STRING_BYTES),
        first_line,
        last_line,
        total_lines,
        truncated,
        binary,
    };
    let path = cwd.join(&args.path);
    let mut bytes = Vec::new();
    // The editor cuts its text at the bound itself and says so.
    let mut editor_cut = false;
    let served = editor::served(editor, cwd, &args.path)
        .filter(|(_, resolved)| !editor::binary_on_disk(resolved));
    let read = match served {
        Some((editor, resolved)) => match editor.read(&resolved, READ_TOOL_BYTES) {
            Ok(text) => {
                bytes = text.text.into_bytes();
                editor_cut = text.truncated;
                Ok(())
            }
            Err(why) => Err(editor::failure("read", &args.path, &why)),
        },
        None => std::fs::File::open(&path)
            .and_then(|f| f.take(READ_TOOL_BYTES as u64 + 1).read_to_end(&mut bytes))
            .map(drop)
            .map_err(|e| format!("Cannot read {}: {e}.", args.path)),
    };
    if let Err(why) = read {
        return ToolReport::with_facts(
            ToolOutput::failed("cannot read the file", why),
            facts(None, None, None, false, false),
        );
    }
    if bytes.contains(&0) {
        return ToolReport::with_facts(
            ToolOutput::failed("binary file", format!("{} is a binary file.", args.path)),
            facts(None, None, None, false, true),
        );
    }
    let cut_at_bound = bytes.len() > READ_TOOL_BYTES || editor_cut;
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
    let total = text.lines().count();
    let more = total > offset - 1 + shown || cut_at_bound;
    if more {
        content.push_str(&format!(
            "\n[showing lines {offset}-{}; the file continues: read again with a larger offset]",
            offset + shown.saturating_sub(1)
        ));
    }
    // The range asked for ends after `limit` lines, or at the end of the file when no
    // limit was given; the text stopped short of it at a bound when the file goes on
    // and fewer lines came back than were asked for.
    let truncated = more && args.limit.is_none_or(|asked| shown < asked);
    let (first_line, last_line) = if shown == 0 {
        (None, None)
    } else {
        (Some(offset as u64), Some((offset + shown - 1) as u64))
    };
    // Past the byte bound the file's length in lines is not known.
    let total_lines = (!cut_at_bound).then_some(total as u64);
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary: format!("{shown} {}", if shown == 1 { "line" } else { "lines" }),
            is_error: false,
        },
        facts(first_line, last_line, total_lines, truncated, false),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_facts(
        first_line: Option<u64>,
        last_line: Option<u64>,
        total_lines: Option<u64>,
        truncated: bool,
    ) -> Facts {
        Facts::Read {
            path: "a.txt".into(),
            first_line,
            last_line,
            total_lines,
            truncated,
            binary: false,
        }
    }

    #[test]
    fn hashes_anchor_each_line_for_hash_edit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let out = run(
            &json!({"path": "a.txt", "offset": 2, "hashes": true}),
            dir.path(),
        )
        .output;
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
        )
        .output;
        assert_eq!(
            out.content,
            "two\n[showing lines 2-2; the file continues: read again with a larger offset]"
        );
        assert!(!out.is_error);
        assert_eq!(
            run(&json!({"path": "a.txt"}), dir.path()).output.content,
            "one\ntwo\nthree"
        );
        assert!(run(&json!({"path": "b.bin"}), dir.path()).output.is_error);
        assert!(run(&json!({"path": "missing"}), dir.path()).output.is_error);
        assert!(run(&json!({"file": "a.txt"}), dir.path()).output.is_error);
        assert!(crate::run("read", "not json", dir.path()).is_error);
        assert!(crate::run("write", "{}", dir.path()).is_error);
    }

    #[test]
    fn facts_record_the_lines_returned_and_what_stopped_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(dir.path().join("b.bin"), [1, 0, 2]).unwrap();
        let facts = |arguments: Value| run(&arguments, dir.path()).facts;

        // The whole file, and a range the model asked for, stop at no bound.
        assert_eq!(
            facts(json!({"path": "a.txt"})),
            Some(read_facts(Some(1), Some(3), Some(3), false))
        );
        assert_eq!(
            facts(json!({"path": "a.txt", "offset": 2, "limit": 1})),
            Some(read_facts(Some(2), Some(2), Some(3), false))
        );
        // Past the end nothing is returned, but the length is still known.
        assert_eq!(
            facts(json!({"path": "a.txt", "offset": 9})),
            Some(read_facts(None, None, Some(3), false))
        );
        assert_eq!(
            facts(json!({"path": "b.bin"})),
            Some(Facts::Read {
                path: "b.bin".into(),
                first_line: None,
                last_line: None,
                total_lines: None,
                truncated: false,
                binary: true,
            })
        );
        assert_eq!(
            facts(json!({"path": "missing"})),
            Some(Facts::Read {
                path: "missing".into(),
                first_line: None,
                last_line: None,
                total_lines: None,
                truncated: false,
                binary: false,
            })
        );
        assert_eq!(facts(json!({"file": "a.txt"})), None);
        // The report `execute` gives is the tool's own.
        let report = crate::execute(
            "read",
            r#"{"path": "a.txt", "limit": 2}"#,
            &crate::ToolContext {
                cwd: dir.path(),
                assets_dir: None,
                cancelled: &|| false,
                hidden_env: &[],
                durable: &|| true,
                live_output: None,
                sandbox_read_only: false,
            },
        );
        assert_eq!(
            report.facts,
            Some(read_facts(Some(1), Some(2), Some(3), false))
        );
    }

    #[test]
    fn facts_say_when_a_bound_cut_the_range_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let long: String = (1..=READ_TOOL_LINES + 5)
            .map(|i| format!("{i}\n"))
            .collect();
        std::fs::write(dir.path().join("a.txt"), &long).unwrap();
        let total = Some((READ_TOOL_LINES + 5) as u64);
        let last = Some(READ_TOOL_LINES as u64);
        // No limit asks for the whole file: the line bound stopped it.
        assert_eq!(
            run(&json!({"path": "a.txt"}), dir.path()).facts,
            Some(read_facts(Some(1), last, total, true))
        );
        // A limit over the bound is clamped to it.
        assert_eq!(
            run(
                &json!({"path": "a.txt", "limit": READ_TOOL_LINES + 3}),
                dir.path()
            )
            .facts,
            Some(read_facts(Some(1), last, total, true))
        );
        // Exactly the bound was asked for and given.
        assert_eq!(
            run(
                &json!({"path": "a.txt", "limit": READ_TOOL_LINES}),
                dir.path()
            )
            .facts,
            Some(read_facts(Some(1), last, total, false))
        );
        // Past the byte bound the file's length in lines is unknown.
        let wide = format!("{}\n", "x".repeat(READ_TOOL_BYTES)).repeat(2);
        std::fs::write(dir.path().join("a.txt"), wide).unwrap();
        assert_eq!(
            run(
                &json!({"path": "a.txt", "offset": 2, "limit": 1}),
                dir.path()
            )
            .facts,
            Some(read_facts(None, None, None, true))
        );
    }
}
