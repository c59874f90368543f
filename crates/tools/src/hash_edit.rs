//! `hash_edit`: several line operations on one file, each anchored on a line number and
//! the hash of that line's content as the model last read it (`read` with
//! `hashes: true`). An operation whose anchor no longer matches is refused, so an edit
//! made from a stale view never lands on the wrong line. The operations that match are
//! applied together, against the file as read; the result says which applied and
//! which did not. Like `write`, it asks before it runs unless a rule allows it.

use std::collections::HashMap;
use std::path::Path;

use magi_protocol::limits::WRITE_TOOL_BYTES;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::editing::{Target, parse_arguments};
use crate::editor::EditorFiles;
use crate::facts::{FACT_STRING_BYTES, Facts, cut};
use crate::{ToolDefinition, ToolOutput, ToolReport, preview};

/// Hex characters of a line hash: enough to tell a changed line, short to read.
const LINE_HASH_HEX: usize = 6;

/// The anchor hash of one line's content (without its line ending).
pub(crate) fn line_hash(line: &str) -> String {
    Sha256::digest(line.as_bytes())
        .iter()
        .flat_map(|b| [b >> 4, b & 0xf])
        .take(LINE_HASH_HEX)
        .map(|nibble| char::from_digit(u32::from(nibble), 16).unwrap_or('0'))
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
    operations: Vec<Operation>,
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Operation {
    /// Replace line `line` with `text` (which may span several lines).
    Replace {
        line: usize,
        hash: String,
        text: String,
    },
    /// Insert `text` after line `line` (0 inserts before the first line; hash "").
    InsertAfter {
        line: usize,
        hash: String,
        text: String,
    },
    /// Delete line `line`.
    Delete { line: usize, hash: String },
    /// Move line `line` to just after line `to_line`.
    MoveAfter {
        line: usize,
        hash: String,
        to_line: usize,
        to_hash: String,
    },
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::HashEdit.name(),
        description: "Edit a file with line operations anchored on `read` with `hashes: true` \
                      (each line shown as `N:hash|text`). Operations: replace, insert_after \
                      (line 0 with hash \"\" inserts at the top), delete, move_after. Every \
                      anchor must still match the file, else that operation is refused; the \
                      others are applied together. Files of at most 1 MiB.",
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "operations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "op": {"enum": ["replace", "insert_after", "delete", "move_after"]},
                            "line": {"type": "integer", "minimum": 0},
                            "hash": {"type": "string"},
                            "text": {"type": "string"},
                            "to_line": {"type": "integer", "minimum": 0},
                            "to_hash": {"type": "string"}
                        },
                        "required": ["op", "line", "hash"]
                    }
                }
            },
            "required": ["path", "operations"],
            "additionalProperties": false
        }),
    }
}

/// The argument shape an `invalid arguments` failure names.
const EXPECTED_ARGUMENTS: &str = r#"{"path": string, "operations": [{"op": "replace" | "insert_after" | "delete" | "move_after", "line": integer, "hash": string, "text"?: string, "to_line"?: integer, "to_hash"?: string}]}"#;

/// What happens at one original line.
#[derive(Default)]
struct LinePlan {
    /// Replaced by this text, or deleted (`Some(None)`), or moved away.
    replace: Option<Option<String>>,
    /// Inserted after it, in operation order.
    after: Vec<String>,
}

#[cfg(test)]
pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    run_with(arguments, cwd, None)
}

/// Reads and writes through `editor` when it serves the file: the operations apply to
/// its text, and the result goes back to it.
pub(crate) fn run_with(
    arguments: &Value,
    cwd: &Path,
    editor: Option<&dyn EditorFiles>,
) -> ToolReport {
    let args: Arguments = match parse_arguments(arguments, EXPECTED_ARGUMENTS) {
        Ok(args) => args,
        Err(output) => return output.into(),
    };
    // Counted before the operations are consumed below; a hash_edit changes an
    // existing file or nothing, so it never creates one.
    let operations = args.operations.len() as u64;
    let fact_path = cut(&args.path, FACT_STRING_BYTES);
    let facts = |applied: u64, changed: bool| Facts::Change {
        path: fact_path.clone(),
        created: false,
        operations,
        applied,
        changed,
        lines_added: None,
        lines_removed: None,
    };
    let unchanged = |output| ToolReport::with_facts(output, facts(0, false));
    let target = Target::of(editor, cwd, &args.path);
    let text = match target.read_within_bound(&args.path) {
        Ok(text) => text,
        Err(output) => return unchanged(output),
    };
    let lines: Vec<&str> = text.lines().collect();
    let anchored = |line: usize, hash: &str| {
        (line == 0 && hash.is_empty())
            || lines
                .get(line.wrapping_sub(1))
                .is_some_and(|l| line_hash(l) == hash)
    };
    // Index 0 stands for "before the first line".
    let mut plan: HashMap<usize, LinePlan> = HashMap::new();
    let mut applied = Vec::new();
    let mut refused = Vec::new();
    for (index, operation) in args.operations.into_iter().enumerate() {
        let number = index + 1;
        let outcome = match operation {
            Operation::Replace { line, hash, text } if line > 0 && anchored(line, &hash) => {
                claim(&mut plan, line, Some(text))
                    .map(|()| format!("{number}: replaced line {line}"))
            }
            Operation::Delete { line, hash } if line > 0 && anchored(line, &hash) => {
                claim(&mut plan, line, None).map(|()| format!("{number}: deleted line {line}"))
            }
            Operation::InsertAfter { line, hash, text } if anchored(line, &hash) => {
                plan.entry(line).or_default().after.push(text);
                Ok(format!("{number}: inserted after line {line}"))
            }
            Operation::MoveAfter {
                line,
                hash,
                to_line,
                to_hash,
            } if line > 0
                && line != to_line
                && anchored(line, &hash)
                && anchored(to_line, &to_hash) =>
            {
                let moved = lines[line - 1].to_owned();
                claim(&mut plan, line, None).map(|()| {
                    plan.entry(to_line).or_default().after.push(moved);
                    format!("{number}: moved line {line} after line {to_line}")
                })
            }
            _ => Err(format!(
                "{number}: its anchor does not match the file (stale or out of range)"
            )),
        };
        match outcome {
            Ok(done) => applied.push(done),
            Err(why) => refused.push(why),
        }
    }
    if applied.is_empty() {
        return unchanged(ToolOutput::failed(
            "no operation applied",
            format!(
                "Nothing changed in {}. Refused: {}.",
                args.path,
                refused.join("; ")
            ),
        ));
    }
    let inserted = |line: usize| plan.get(&line).map(|p| p.after.clone()).unwrap_or_default();
    let mut out: Vec<String> = inserted(0);
    for (index, line) in lines.iter().enumerate() {
        let number = index + 1;
        match plan.get(&number).and_then(|p| p.replace.as_ref()) {
            Some(Some(replacement)) => out.push(replacement.clone()),
            Some(None) => {}
            None => out.push((*line).to_owned()),
        }
        out.extend(inserted(number));
    }
    let mut edited = out.join("\n");
    if text.ends_with('\n') || text.is_empty() {
        edited.push('\n');
    }
    if edited.len() > WRITE_TOOL_BYTES {
        return unchanged(ToolOutput::failed(
            "file too large",
            "The edited file would be over 1 MiB; nothing changed.".into(),
        ));
    }
    if let Err(why) = target.write(&args.path, &edited) {
        return unchanged(ToolOutput::failed("cannot write the file", why));
    }
    let total = applied.len() + refused.len();
    let mut content = format!(
        "Applied {} of {total} operations to {}: {}.",
        applied.len(),
        args.path,
        applied.join("; ")
    );
    if !refused.is_empty() {
        content.push_str(&format!(" Refused: {}.", refused.join("; ")));
    }
    let output = ToolOutput {
        content,
        summary: format!("applied {} of {total} operations", applied.len()),
        is_error: false,
    };
    // The refused operations left nothing in the file, so the diff of what was read
    // against what was written is exactly what applied.
    ToolReport {
        preview: Some(preview::applied(&args.path, &text, &edited)),
        ..ToolReport::with_facts(output, facts(applied.len() as u64, edited != text))
    }
}

/// Marks an original line as replaced or deleted; one such change per line.
fn claim(
    plan: &mut HashMap<usize, LinePlan>,
    line: usize,
    text: Option<String>,
) -> Result<(), String> {
    let entry = plan.entry(line).or_default();
    if entry.replace.is_some() {
        return Err(format!(
            "line {line} is already changed by an earlier operation"
        ));
    }
    entry.replace = Some(text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(text: &str) -> (tempfile::TempDir, impl Fn(Value) -> (ToolOutput, String)) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), text).unwrap();
        let root = dir.path().to_path_buf();
        let edit = move |operations: Value| {
            let out = run(&json!({"path": "f.txt", "operations": operations}), &root).output;
            (out, std::fs::read_to_string(root.join("f.txt")).unwrap())
        };
        (dir, edit)
    }

    #[test]
    fn operations_apply_against_the_file_as_read() {
        let (_dir, edit) = setup("a\nb\nc\n");
        let (out, text) = edit(json!([
            {"op": "replace", "line": 2, "hash": line_hash("b"), "text": "B"},
            {"op": "insert_after", "line": 0, "hash": "", "text": "top"},
            {"op": "delete", "line": 3, "hash": line_hash("c")},
            {"op": "insert_after", "line": 3, "hash": line_hash("c"), "text": "end"}
        ]));
        assert_eq!(text, "top\na\nB\nend\n");
        assert_eq!(out.summary, "applied 4 of 4 operations");
    }

    #[test]
    fn stale_anchors_are_refused_and_the_rest_applied() {
        let (_dir, edit) = setup("a\nb\nc\n");
        let (out, text) = edit(json!([
            {"op": "replace", "line": 1, "hash": line_hash("a"), "text": "A"},
            {"op": "replace", "line": 2, "hash": line_hash("not b"), "text": "X"},
            {"op": "delete", "line": 9, "hash": line_hash("c")},
            {"op": "delete", "line": 1, "hash": line_hash("a")}
        ]));
        assert_eq!(text, "A\nb\nc\n");
        assert_eq!(out.summary, "applied 1 of 4 operations");
        assert!(
            out.content.contains("2: its anchor does not match"),
            "{}",
            out.content
        );
        assert!(out.content.contains("already changed"), "{}", out.content);
    }

    #[test]
    fn moves_and_all_refused() {
        let (_dir, edit) = setup("a\nb\nc");
        let (_, text) = edit(json!([
            {"op": "move_after", "line": 1, "hash": line_hash("a"), "to_line": 3, "to_hash": line_hash("c")}
        ]));
        assert_eq!(text, "b\nc\na");
        let (out, text) = edit(json!([{"op": "delete", "line": 1, "hash": "000000"}]));
        assert!(out.is_error);
        assert_eq!(text, "b\nc\na");
    }

    #[test]
    fn facts_and_preview_cover_only_what_applied() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "a\nb\nc\n").unwrap();
        let edit = |operations: Value| {
            run(
                &json!({"path": "f.txt", "operations": operations}),
                dir.path(),
            )
        };
        let facts = |operations: u64, applied: u64, changed: bool| {
            Some(Facts::Change {
                path: "f.txt".into(),
                created: false,
                operations,
                applied,
                changed,
                lines_added: None,
                lines_removed: None,
            })
        };
        let report = edit(json!([
            {"op": "replace", "line": 1, "hash": line_hash("a"), "text": "A"},
            {"op": "replace", "line": 2, "hash": line_hash("stale"), "text": "X"},
            {"op": "delete", "line": 3, "hash": line_hash("c")}
        ]));
        assert_eq!(report.facts, facts(3, 2, true));
        let preview = report.preview.unwrap();
        // The refused replacement of `b` is not in the preview.
        assert_eq!(
            preview.diff,
            "--- f.txt\n+++ f.txt\n@@ -1,3 +1,2 @@\n-a\n+A\n b\n-c\n"
        );
        assert!(!preview.truncated);

        // Applied, yet the same text: nothing on disk changed.
        let report = edit(json!([
            {"op": "replace", "line": 2, "hash": line_hash("b"), "text": "b"}
        ]));
        assert_eq!(report.facts, facts(1, 1, false));
        assert_eq!(report.preview.unwrap().diff, "");

        let report = edit(json!([
            {"op": "delete", "line": 1, "hash": "000000"},
            {"op": "delete", "line": 7, "hash": line_hash("a")}
        ]));
        assert!(report.output.is_error);
        assert_eq!(report.facts, facts(2, 0, false));
        assert_eq!(report.preview, None);
        assert_eq!(edit(json!("not a list")).facts, None);
    }
}
