//! The client's file system (`client.files`): when a client such as an editor serves
//! the workspace's files, `read`, `write`, `edit` and `hash_edit` read and write a file
//! inside the workspace through it, so an unsaved buffer is what they see and change.
//! The checks before a call runs (permissions, workspace, sandbox) are the same; only
//! where the bytes come from and go to differs. A path outside the workspace, and
//! every other tool, stays on the disk.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Text a client holds for a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditorText {
    /// The text, at most the bytes asked for.
    pub text: String,
    /// The text went on past the bytes asked for.
    pub truncated: bool,
}

/// Reads and writes files through the client. Each call waits for the client within
/// the extension's bounds (its timeout, the run's cancellation); an error is the
/// message the model is given, naming the client's own words.
pub trait EditorFiles: Sync {
    /// The text of `path` (absolute, inside the workspace), at most `max_bytes`.
    fn read(&self, path: &Path, max_bytes: usize) -> Result<EditorText, String>;
    /// Replaces the text of `path` (absolute, inside the workspace) with `content`.
    fn write(&self, path: &Path, content: &str) -> Result<(), String>;
}

/// The file `given` names, absolute, when the client serves it: inside the workspace
/// `cwd` (links resolved, as the permission check resolves them).
pub(crate) fn served<'e>(
    editor: Option<&'e dyn EditorFiles>,
    cwd: &Path,
    given: &str,
) -> Option<(&'e dyn EditorFiles, PathBuf)> {
    let editor = editor?;
    let resolved = crate::scope::resolve(cwd, given);
    resolved.starts_with(cwd).then_some((editor, resolved))
}

/// Whether the file on disk at `path` starts like a binary file (a NUL in its first
/// 8 KiB): such files, images among them, are read from the disk, never the client,
/// whose text methods cannot carry them.
pub(crate) fn binary_on_disk(path: &Path) -> bool {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(8_192).read_to_end(&mut head))
        .is_ok_and(|_| head.contains(&0))
}

/// The message a failed read or write through the client gives the model.
pub(crate) fn failure(doing: &str, shown: &str, why: &str) -> String {
    format!("The editor could not {doing} {shown}: {why}.")
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;

    /// An editor holding buffers in memory; a path it has no buffer for fails.
    #[derive(Default)]
    pub(crate) struct Buffers {
        pub(crate) files: Mutex<HashMap<PathBuf, String>>,
        pub(crate) asked: Mutex<Vec<String>>,
    }

    impl EditorFiles for Buffers {
        fn read(&self, path: &Path, max_bytes: usize) -> Result<EditorText, String> {
            self.asked
                .lock()
                .unwrap()
                .push(format!("read {}", path.display()));
            let files = self.files.lock().unwrap();
            let text = files.get(path).ok_or("no such buffer")?;
            let mut end = text.len().min(max_bytes);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            Ok(EditorText {
                text: text[..end].to_owned(),
                truncated: end < text.len(),
            })
        }

        fn write(&self, path: &Path, content: &str) -> Result<(), String> {
            self.asked
                .lock()
                .unwrap()
                .push(format!("write {}", path.display()));
            self.files
                .lock()
                .unwrap()
                .insert(path.to_owned(), content.to_owned());
            Ok(())
        }
    }

    #[test]
    fn the_file_tools_use_the_buffer_inside_the_workspace_only() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::write(cwd.join("a.txt"), "disk\n").unwrap();
        let buffers = Buffers::default();
        buffers
            .files
            .lock()
            .unwrap()
            .insert(cwd.join("a.txt"), "buffer one\nbuffer two\n".into());
        let editor: Option<&dyn EditorFiles> = Some(&buffers);
        let run = |name: &str, arguments: serde_json::Value| {
            crate::execute_with(
                name,
                &arguments.to_string(),
                &crate::ToolContext {
                    cwd: &cwd,
                    assets_dir: None,
                    cancelled: &|| false,
                    hidden_env: &[],
                    durable: &|| true,
                    live_output: None,
                    sandbox_read_only: false,
                },
                editor,
            )
        };
        let read = run("read", serde_json::json!({"path": "a.txt"}));
        assert_eq!(read.output.content, "buffer one\nbuffer two");
        let edited = run(
            "edit",
            serde_json::json!({"path": "a.txt", "old_text": "two", "new_text": "2"}),
        );
        assert!(!edited.output.is_error, "{}", edited.output.content);
        assert!(edited.preview.unwrap().diff.contains("+buffer 2"));
        assert_eq!(
            buffers.files.lock().unwrap()[&cwd.join("a.txt")],
            "buffer one\nbuffer 2\n"
        );
        assert_eq!(
            std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
            "disk\n"
        );
        let line = format!("1:{}|buffer one", crate::hash_edit::line_hash("buffer one"));
        let hashed = run("read", serde_json::json!({"path": "a.txt", "hashes": true}));
        assert!(hashed.output.content.starts_with(&line));
        let hash = crate::hash_edit::line_hash("buffer one");
        let hash_edited = run(
            "hash_edit",
            serde_json::json!({"path": "a.txt", "operations": [
                {"op": "replace", "line": 1, "hash": hash, "text": "one"}]}),
        );
        assert!(
            !hash_edited.output.is_error,
            "{}",
            hash_edited.output.content
        );
        assert_eq!(
            buffers.files.lock().unwrap()[&cwd.join("a.txt")],
            "one\nbuffer 2\n"
        );
        let written = run(
            "write",
            serde_json::json!({"path": "b.txt", "content": "new\n"}),
        );
        assert!(!written.output.is_error, "{}", written.output.content);
        assert_eq!(buffers.files.lock().unwrap()[&cwd.join("b.txt")], "new\n");
        assert!(!cwd.join("b.txt").exists());
        // The editor's failure is the call's, in its words.
        let missing = run("read", serde_json::json!({"path": "c.txt"}));
        assert!(missing.output.is_error);
        assert_eq!(
            missing.output.content,
            format!("The editor could not read c.txt: no such buffer.")
        );
        // Outside the workspace, and binary files, the disk.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "out\n").unwrap();
        let path = outside.path().join("o.txt").display().to_string();
        assert_eq!(
            run("read", serde_json::json!({"path": path}))
                .output
                .content,
            "out"
        );
        std::fs::write(cwd.join("bin"), [1, 0, 2]).unwrap();
        assert_eq!(
            run("read", serde_json::json!({"path": "bin"}))
                .output
                .summary,
            "binary file"
        );
        let asked = buffers.asked.lock().unwrap().clone();
        assert!(
            asked
                .iter()
                .all(|a| !a.contains("o.txt") && !a.ends_with("bin")),
            "{asked:?}"
        );
    }
}
