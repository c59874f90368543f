//! The change a `write` or `edit` call would make, worked out before it runs so that a
//! person asked to approve it can see it. Nothing is written: the file is read (a
//! regular file within the write bound only) and the call's effect diffed in memory,
//! bounded and made safe like the preview of an applied change.

use std::path::Path;

use magi_protocol::limits::WRITE_TOOL_BYTES;
use serde::Deserialize;
use serde_json::Value;

use crate::{AppliedPreview, BuiltinTool, preview};

#[derive(Deserialize)]
struct WriteArguments {
    path: String,
    content: String,
}

#[derive(Deserialize)]
struct EditArguments {
    path: String,
    old_text: String,
    new_text: String,
}

/// The diff a call of `name` with `arguments` would apply in `cwd`: for `write` and
/// `edit` only, and none when the arguments do not parse, the file cannot be read as
/// text within the bound, or the edit would not apply (its old text absent or
/// ambiguous).
pub fn proposed_change(name: &str, arguments: &str, cwd: &Path) -> Option<AppliedPreview> {
    let arguments: Value = serde_json::from_str(arguments).ok()?;
    match BuiltinTool::from_name(name)? {
        BuiltinTool::Write => {
            let args = WriteArguments::deserialize(&arguments).ok()?;
            if args.content.len() > WRITE_TOOL_BYTES {
                return None;
            }
            let path = cwd.join(&args.path);
            let old = match std::fs::symlink_metadata(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                _ => read_text(&path)?,
            };
            Some(preview::applied(&args.path, &old, &args.content))
        }
        BuiltinTool::Edit => {
            let args = EditArguments::deserialize(&arguments).ok()?;
            let text = read_text(&cwd.join(&args.path))?;
            if args.old_text.is_empty() || text.matches(&args.old_text).count() != 1 {
                return None;
            }
            let edited = text.replacen(&args.old_text, &args.new_text, 1);
            Some(preview::applied(&args.path, &text, &edited))
        }
        _ => None,
    }
}

/// A regular file's text, if it is at most the write bound and valid UTF-8. Anything
/// else (a pipe that would block, a device, a large file) is not read.
fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > WRITE_TOOL_BYTES as u64 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    #[test]
    fn a_write_and_an_edit_show_their_diff_and_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let write = proposed_change(
            "write",
            r#"{"path":"a.txt","content":"one\nthree\n"}"#,
            dir.path(),
        )
        .unwrap();
        assert_eq!(write.path, "a.txt");
        assert!(write.diff.contains("-two\n+three\n"), "{}", write.diff);
        let edit = proposed_change(
            "edit",
            r#"{"path":"a.txt","old_text":"two","new_text":"2"}"#,
            dir.path(),
        )
        .unwrap();
        assert!(edit.diff.contains("-two\n+2\n"), "{}", edit.diff);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\ntwo\n"
        );
        let new_file =
            proposed_change("write", r#"{"path":"b.txt","content":"x\n"}"#, dir.path()).unwrap();
        assert!(new_file.diff.contains("+x\n"));
        assert!(!dir.path().join("b.txt").exists());
    }

    #[test]
    fn nothing_is_proposed_when_the_change_cannot_be_known() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x x\n").unwrap();
        for (name, arguments) in [
            ("edit", r#"{"path":"a.txt","old_text":"x","new_text":"y"}"#),
            ("edit", r#"{"path":"a.txt","old_text":"z","new_text":"y"}"#),
            (
                "edit",
                r#"{"path":"missing.txt","old_text":"x","new_text":"y"}"#,
            ),
            ("write", r#"{"path":"a.txt"}"#),
            ("bash", r#"{"command":"ls"}"#),
            ("write", "not json"),
        ] {
            assert_eq!(
                proposed_change(name, arguments, dir.path()),
                None,
                "{arguments}"
            );
        }
    }
}
