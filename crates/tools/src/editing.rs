//! What `edit` and `hash_edit` share before they change anything: their arguments
//! checked against the schema, and the file they change read within its bound, from
//! the disk or through the client that serves it (`client.files`), and written back
//! the same way.

use std::path::{Path, PathBuf};

use magi_protocol::limits::WRITE_TOOL_BYTES;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ToolOutput;
use crate::editor::{self, EditorFiles};

/// Where a change reads and writes its file: the client when it serves the file (a
/// text file inside the workspace), else the disk.
pub(crate) enum Target<'e> {
    /// The file on disk.
    Disk(PathBuf),
    /// The client's text of the file, by its absolute path.
    Editor(&'e dyn EditorFiles, PathBuf),
}

impl<'e> Target<'e> {
    /// The target of path `given` in `cwd`.
    pub(crate) fn of(editor: Option<&'e dyn EditorFiles>, cwd: &Path, given: &str) -> Target<'e> {
        match editor::served(editor, cwd, given) {
            Some((editor, resolved)) if !editor::binary_on_disk(&resolved) => {
                Target::Editor(editor, resolved)
            }
            _ => Target::Disk(cwd.join(given)),
        }
    }

    /// The file's text if it is at most `WRITE_TOOL_BYTES` long (named `shown` to the
    /// model).
    pub(crate) fn read_within_bound(&self, shown: &str) -> Result<String, ToolOutput> {
        match self {
            Target::Disk(path) => read_within_bound(path, shown),
            Target::Editor(editor, path) => match editor.read(path, WRITE_TOOL_BYTES) {
                Ok(text) if text.truncated => Err(ToolOutput::failed(
                    "file too large",
                    format!("{shown} is over the {WRITE_TOOL_BYTES}-byte bound."),
                )),
                Ok(text) => Ok(text.text),
                Err(why) => Err(ToolOutput::failed(
                    "cannot read the file",
                    editor::failure("read", shown, &why),
                )),
            },
        }
    }

    /// Replaces the file's text with `content`; the error is what the model is told.
    pub(crate) fn write(&self, shown: &str, content: &str) -> Result<(), String> {
        match self {
            Target::Disk(path) => {
                std::fs::write(path, content).map_err(|e| format!("Cannot write {shown}: {e}."))
            }
            Target::Editor(editor, path) => editor
                .write(path, content)
                .map_err(|why| editor::failure("write", shown, &why)),
        }
    }
}

/// Parses a tool's arguments; a failure is `invalid arguments`, saying what was wrong
/// and what was `expected`.
pub(crate) fn parse_arguments<T: DeserializeOwned>(
    arguments: &Value,
    expected: &str,
) -> Result<T, ToolOutput> {
    T::deserialize(arguments)
        .map_err(|e| ToolOutput::failed("invalid arguments", format!("Expected {expected}: {e}.")))
}

/// Reads the file at `path` (named `shown` to the model) as text if it is at most
/// `WRITE_TOOL_BYTES` long; a larger file is not read at all.
pub(crate) fn read_within_bound(path: &Path, shown: &str) -> Result<String, ToolOutput> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > WRITE_TOOL_BYTES as u64) {
        return Err(ToolOutput::failed(
            "file too large",
            format!("{shown} is over the {WRITE_TOOL_BYTES}-byte bound."),
        ));
    }
    std::fs::read_to_string(path).map_err(|e| {
        ToolOutput::failed("cannot read the file", format!("Cannot read {shown}: {e}."))
    })
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Named {
        #[allow(dead_code, reason = "only its presence is checked")]
        name: String,
    }

    #[test]
    fn invalid_arguments_say_what_was_expected() {
        let failed = parse_arguments::<Named>(&json!({"nom": "x"}), "{\"name\": string}")
            .expect_err("an unknown field is refused");
        assert_eq!(failed.summary, "invalid arguments");
        assert!(failed.content.starts_with("Expected {\"name\": string}: "));
        assert!(failed.content.contains("nom"), "{}", failed.content);
    }

    #[test]
    fn a_file_over_the_bound_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.txt");
        std::fs::write(&path, vec![b'a'; WRITE_TOOL_BYTES + 1]).unwrap();
        let failed = read_within_bound(&path, "big.txt").expect_err("over the bound");
        assert_eq!(failed.summary, "file too large");
        assert_eq!(
            failed.content,
            format!("big.txt is over the {WRITE_TOOL_BYTES}-byte bound.")
        );
        std::fs::write(&path, "fits").unwrap();
        assert_eq!(read_within_bound(&path, "big.txt").unwrap(), "fits");
    }
}
