//! `write`: create or replace a file with the given content. It changes the workspace,
//! so the runner asks before it runs unless a rule allows it.

use std::io::Read;
use std::path::Path;

use magi_protocol::limits::WRITE_TOOL_BYTES;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::editing::Target;
use crate::editor::EditorFiles;
use crate::facts::{FACT_STRING_BYTES, Facts, cut};
use crate::{ToolDefinition, ToolOutput, ToolReport, preview};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
    content: String,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::Write.name(),
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

#[cfg(test)]
pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    run_with(arguments, cwd, None)
}

/// Writes through `editor` when it serves the file; its parent directories are still
/// made on the disk.
pub(crate) fn run_with(
    arguments: &Value,
    cwd: &Path,
    editor: Option<&dyn EditorFiles>,
) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => {
            return ToolOutput::failed(
                "invalid arguments",
                format!("Expected {{\"path\": string, \"content\": string}}: {e}."),
            )
            .into();
        }
    };
    // `created` and `changed` are about what this call did: a write that failed
    // created and changed nothing, whatever was there before.
    let facts = |written: bool, created: bool, changed: bool| Facts::Change {
        path: cut(&args.path, FACT_STRING_BYTES),
        created,
        operations: 1,
        applied: u64::from(written),
        changed,
        lines_added: None,
        lines_removed: None,
    };
    let unchanged = |output| ToolReport::with_facts(output, facts(false, false, false));
    if args.content.len() > WRITE_TOOL_BYTES {
        return unchanged(ToolOutput::failed(
            "content too large",
            format!("The content is over the {WRITE_TOOL_BYTES}-byte bound; nothing was written."),
        ));
    }
    let path = cwd.join(&args.path);
    let target = Target::of(editor, cwd, &args.path);
    let before = match &target {
        Target::Editor(..) if path.is_file() => match target.read_within_bound(&args.path) {
            Ok(text) => Before::Content {
                bytes: text.into_bytes(),
                whole: true,
            },
            Err(_) => Before::Unknown,
        },
        _ => Before::read(&path),
    };
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| format!("Cannot write {}: {e}.", args.path))
        .and_then(|()| target.write(&args.path, &args.content));
    match written {
        Ok(()) => {
            let lines = args.content.lines().count();
            let output = ToolOutput {
                content: format!("Wrote {} bytes to {}.", args.content.len(), args.path),
                summary: format!(
                    "wrote {lines} {}",
                    if lines == 1 { "line" } else { "lines" }
                ),
                is_error: false,
            };
            let (old, whole) = match &before {
                Before::Missing => (String::new(), true),
                Before::Content { bytes, whole } => {
                    (String::from_utf8_lossy(bytes).into_owned(), *whole)
                }
                // Unreadable before (write-only, say): the preview shows what was
                // written, and is marked as not the whole story.
                Before::Unknown => (String::new(), false),
            };
            // Only a whole old content can show the write left the file as it was; a
            // longer or unreadable one is taken as changed.
            let changed = match &before {
                Before::Content { bytes, whole: true } => bytes != args.content.as_bytes(),
                _ => true,
            };
            let mut preview = preview::applied(&args.path, &old, &args.content);
            preview.truncated |= !whole;
            ToolReport {
                preview: Some(preview),
                ..ToolReport::with_facts(
                    output,
                    facts(true, matches!(before, Before::Missing), changed),
                )
            }
        }
        Err(why) => unchanged(ToolOutput::failed("cannot write the file", why)),
    }
}

/// The file as it was before the write, read only as far as the facts and the preview
/// can use.
enum Before {
    /// There was no file.
    Missing,
    /// Its first bytes, and whether they are the whole file.
    Content { bytes: Vec<u8>, whole: bool },
    /// It could not be read.
    Unknown,
}

impl Before {
    fn read(path: &Path) -> Before {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Before::Missing,
            // Not a regular file (a pipe would block the read), or not reachable: the
            // write itself says what becomes of it.
            _ => return Before::Unknown,
        }
        let mut bytes = Vec::new();
        // The new content is within the write bound, so an old file longer than it
        // changes for certain; reading further would only cost memory.
        let read = std::fs::File::open(path)
            .and_then(|f| f.take(WRITE_TOOL_BYTES as u64 + 1).read_to_end(&mut bytes));
        match read {
            Ok(_) => {
                let whole = bytes.len() <= WRITE_TOOL_BYTES;
                bytes.truncate(WRITE_TOOL_BYTES);
                Before::Content { bytes, whole }
            }
            Err(_) => Before::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(created: bool, applied: u64, changed: bool) -> Option<Facts> {
        Some(Facts::Change {
            path: "a.txt".into(),
            created,
            operations: 1,
            applied,
            changed,
            lines_added: None,
            lines_removed: None,
        })
    }

    #[test]
    fn writes_creates_parents_and_refuses_oversize() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&json!({"path": "a/b.txt", "content": "x\ny\n"}), dir.path()).output;
        assert!(!out.is_error);
        assert_eq!(out.summary, "wrote 2 lines");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b.txt")).unwrap(),
            "x\ny\n"
        );
        let big = "z".repeat(WRITE_TOOL_BYTES + 1);
        let out = run(&json!({"path": "big.txt", "content": big}), dir.path()).output;
        assert!(out.is_error);
        assert!(!dir.path().join("big.txt").exists());
        assert!(run(&json!({"path": "c.txt"}), dir.path()).output.is_error);
    }

    #[test]
    fn facts_and_preview_record_what_the_write_did() {
        let dir = tempfile::tempdir().unwrap();
        let write = |content: &str| run(&json!({"path": "a.txt", "content": content}), dir.path());

        let report = write("one\ntwo\n");
        assert_eq!(report.facts, change(true, 1, true));
        let preview = report.preview.unwrap();
        assert_eq!(preview.path, "a.txt");
        assert_eq!(
            preview.diff,
            "--- a.txt\n+++ a.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
        assert!(!preview.truncated);

        let report = write("one\n2\n");
        assert_eq!(report.facts, change(false, 1, true));
        assert_eq!(
            report.preview.unwrap().diff,
            "--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        );

        // Written again as it was: applied, but the file did not change.
        let report = write("one\n2\n");
        assert_eq!(report.facts, change(false, 1, false));
        assert_eq!(report.preview.unwrap().diff, "");

        let report = write(&"z".repeat(WRITE_TOOL_BYTES + 1));
        assert_eq!(report.facts, change(false, 0, false));
        assert_eq!(report.preview, None);
        assert_eq!(run(&json!({"path": "a.txt"}), dir.path()).facts, None);
    }

    #[test]
    fn the_preview_is_bounded_and_redacted() {
        let dir = tempfile::tempdir().unwrap();
        let content: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let content = format!(
            "token = sk-live-9aF3kQ7zR2mX8pL4vB6nC1dW\n{}\n{content}",
            "y".repeat(5_000)
        );
        let report = run(&json!({"path": "a.txt", "content": content}), dir.path());
        let preview = report.preview.unwrap();
        assert!(preview.truncated);
        assert!(preview.diff.lines().count() <= preview::PREVIEW_LINES);
        assert!(
            preview.diff.contains("+token = [redacted]\n"),
            "{}",
            preview.diff
        );
        assert!(!preview.diff.contains("sk-live"));
        let long = preview
            .diff
            .lines()
            .find(|l| l.starts_with("+yyy"))
            .unwrap();
        assert_eq!(long.len(), preview::PREVIEW_LINE_BYTES);
        let payload = serde_json::json!({
            "schema_version": preview::PREVIEW_SCHEMA_VERSION,
            "diff": preview.diff,
            "truncated": preview.truncated,
        });
        assert!(serde_json::to_string(&payload).unwrap().len() <= preview::PREVIEW_PAYLOAD_BYTES);
    }
}
