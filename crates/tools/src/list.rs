//! `list`: one directory's entries, sorted and bounded, hidden entries included and
//! ignored ones marked.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::Path;

use magi_protocol::limits::LIST_TOOL_ENTRIES;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::facts::Facts;
use crate::walk;
use crate::{ToolDefinition, ToolOutput, ToolReport};

const EXPECTED: &str = "{\"path\"?: string}";
/// Appended to an entry that `.gitignore`/`.ignore` exclude. Such entries are marked
/// rather than skipped: a listing answers "what is here", and `target/` being there
/// matters even when the search tools skip it.
const IGNORED_MARK: &str = " (ignored)";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    #[serde(default)]
    path: Option<String>,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::List.name(),
        description: "List one directory (default the working directory): its entries sorted \
                      by name, one a line, directories ending in `/`, hidden entries \
                      included, entries excluded by .gitignore/.ignore marked `(ignored)`. At \
                      most 1000 entries; a final line says when the list was cut.",
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory to list; default the working directory."
                }
            },
            "additionalProperties": false
        }),
    }
}

pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => return walk::invalid_arguments(&e, EXPECTED).into(),
    };
    // A listing that fails once its arguments are understood still names its
    // directory: nothing was reported and the directory was not read.
    let failed = |output: ToolOutput| ToolReport::with_facts(output, list_facts(&args, &[], false));
    let root = walk::resolve(cwd, args.path.as_deref());
    let read = match std::fs::read_dir(&root) {
        Ok(read) => read,
        Err(_) if root.is_file() => {
            return failed(ToolOutput::failed(
                "not a directory",
                format!("{} is not a directory.", walk::shown(cwd, &root)),
            ));
        }
        Err(e) => return failed(walk::cannot_access(cwd, &root, &e)),
    };
    let mut entries: Vec<(OsString, bool)> = read
        .flatten()
        .map(|entry| {
            // Followed, so a link to a directory reads as one, as it does to a path.
            let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
            (entry.file_name(), is_dir)
        })
        .collect();
    entries.sort();
    let total = entries.len();
    let cut = total > LIST_TOOL_ENTRIES;
    entries.truncate(LIST_TOOL_ENTRIES);

    // What a walk of depth one yields is what the ignore rules keep; hidden entries are
    // not filtered here, only ignored ones.
    let kept: HashSet<OsString> = walk::walker(&root)
        .hidden(false)
        .max_depth(Some(1))
        .build()
        .flatten()
        .filter(|entry| entry.depth() == 1)
        .map(|entry| entry.file_name().to_owned())
        .collect();

    let mut lines: Vec<String> = entries
        .iter()
        .map(|(name, is_dir)| {
            let mut line = name.to_string_lossy().into_owned();
            if *is_dir {
                line.push('/');
            }
            if !kept.contains(name) {
                line.push_str(IGNORED_MARK);
            }
            line
        })
        .collect();
    let facts = list_facts(&args, &lines, !cut);
    if lines.is_empty() {
        lines.push("(empty directory)".to_owned());
    }
    if cut {
        lines.push(format!(
            "[list cut at {LIST_TOOL_ENTRIES} of {total} entries; use find or grep to look further]"
        ));
    }
    let summary = if cut {
        format!("{LIST_TOOL_ENTRIES} of {total} entries")
    } else {
        walk::plural(total, "entry", "entries")
    };
    ToolReport::with_facts(
        ToolOutput {
            content: lines.join("\n"),
            summary,
            is_error: false,
        },
        facts,
    )
}

/// The facts of a listing that reported `shown`: entries exactly as the model sees
/// them, with a directory's `/` and the `(ignored)` mark.
fn list_facts(args: &Arguments, shown: &[String], complete: bool) -> Facts {
    Facts::listing(None, args.path.as_deref(), shown, complete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::FACT_PATHS;

    #[test]
    fn lists_sorted_entries_marking_directories_and_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/inner")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        std::fs::write(root.join("a.log"), "").unwrap();
        std::fs::write(root.join(".env"), "").unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        let out = run(&json!({}), root).output;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            ".env\n.git/\n.gitignore\na.log (ignored)\nb.txt\nsrc/\ntarget/ (ignored)"
        );
        assert_eq!(out.summary, "7 entries");
        let out = run(&json!({"path": "src"}), root).output;
        assert_eq!(out.content, "inner/\nlib.rs");
        let out = run(&json!({"path": "src/inner"}), root).output;
        assert_eq!(out.content, "(empty directory)");
        assert_eq!(out.summary, "0 entries");
    }

    #[test]
    fn cuts_at_the_bound_with_an_explicit_line() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..LIST_TOOL_ENTRIES + 2 {
            std::fs::write(dir.path().join(format!("f{i:05}")), "").unwrap();
        }
        let out = run(&json!({}), dir.path()).output;
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), LIST_TOOL_ENTRIES + 1);
        assert_eq!(lines[LIST_TOOL_ENTRIES - 1], "f00999");
        assert_eq!(
            lines[LIST_TOOL_ENTRIES],
            "[list cut at 1000 of 1002 entries; use find or grep to look further]"
        );
        assert_eq!(out.summary, "1000 of 1002 entries");
    }

    #[test]
    fn refuses_files_missing_paths_and_unknown_arguments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        assert_eq!(
            run(&json!({"path": "a.txt"}), dir.path()).output.summary,
            "not a directory"
        );
        assert!(run(&json!({"path": "missing"}), dir.path()).output.is_error);
        let out = run(&json!({"path": ".", "all": true}), dir.path()).output;
        assert!(out.is_error);
        assert!(out.content.contains("unknown field `all`"));
    }

    #[test]
    fn facts_record_the_entries_shown_and_whether_the_listing_finished() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        std::fs::write(root.join("a.log"), "").unwrap();
        assert_eq!(
            run(&json!({}), root).facts,
            Some(Facts::Search {
                pattern: None,
                path: None,
                matches: 3,
                files: None,
                complete: true,
                paths: vec![".gitignore".into(), "a.log (ignored)".into(), "src/".into()],
            })
        );
        assert!(matches!(
            run(&json!({"path": "src"}), root).facts,
            Some(Facts::Search { matches: 0, complete: true, ref path, .. })
                if path.as_deref() == Some("src")
        ));
        assert!(matches!(
            run(&json!({"path": "missing"}), root).facts,
            Some(Facts::Search {
                matches: 0,
                complete: false,
                ..
            })
        ));
        assert_eq!(run(&json!({"all": true}), root).facts, None);

        for i in 0..=LIST_TOOL_ENTRIES {
            std::fs::write(root.join(format!("src/f{i:05}")), "").unwrap();
        }
        let Some(Facts::Search {
            matches,
            complete,
            paths,
            ..
        }) = run(&json!({"path": "src"}), root).facts
        else {
            panic!("list reports search facts");
        };
        assert_eq!(matches, LIST_TOOL_ENTRIES as u64);
        assert!(!complete);
        assert_eq!(paths.len(), FACT_PATHS);
        assert_eq!(paths[0], "f00000");
    }
}
