//! `find`: the files of a tree whose paths match a glob, respecting ignore files,
//! sorted and bounded.

use std::path::{Path, PathBuf};

use magi_protocol::limits::FIND_TOOL_FILES;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::facts::Facts;
use crate::walk::{self, GlobFilter};
use crate::{ToolDefinition, ToolOutput, ToolReport};

const EXPECTED: &str = "{\"pattern\": string, \"path\"?: string}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::Find.name(),
        description: "Find files by glob under the working directory or `path`. A glob \
                      without `/` matches file names at any depth (`*.rs`); one with `/` \
                      matches paths relative to `path` (`src/**/*.rs`); `*` stays within one \
                      directory, `**` crosses directories. Skips files excluded by \
                      .gitignore/.ignore and hidden files. Returns sorted paths relative to \
                      the working directory, one a line, at most 1000; a final line says when \
                      the list was cut.",
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The glob files must match."},
                "path": {
                    "type": "string",
                    "description": "Directory to search; default the working directory."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => return walk::invalid_arguments(&e, EXPECTED).into(),
    };
    // A call that fails once its arguments are understood still names its search:
    // nothing was reported and the tree was not examined.
    let failed =
        |output: ToolOutput| ToolReport::with_facts(output, search_facts(&args, &[], false));
    let filter = match GlobFilter::new(&args.pattern) {
        Ok(filter) => filter,
        Err(e) => {
            return failed(ToolOutput::failed(
                "invalid glob",
                format!("Invalid glob: {e}"),
            ));
        }
    };
    let root = walk::resolve(cwd, args.path.as_deref());
    match std::fs::metadata(&root) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return failed(ToolOutput::failed(
                "not a directory",
                format!("{} is not a directory.", walk::shown(cwd, &root)),
            ));
        }
        Err(e) => return failed(walk::cannot_access(cwd, &root, &e)),
    }

    // The walk comes in name order, the order a path sort gives, so stopping one past
    // the bound keeps exactly the first files of the sorted list.
    let mut found: Vec<PathBuf> = Vec::new();
    for entry in walk::walker(&root).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let relative = entry.path().strip_prefix(&root).unwrap_or(entry.path());
        if filter.matches(relative) {
            found.push(entry.into_path());
            if found.len() > FIND_TOOL_FILES {
                break;
            }
        }
    }
    found.sort();
    let cut = found.len() > FIND_TOOL_FILES;
    found.truncate(FIND_TOOL_FILES);

    let shown: Vec<String> = found.iter().map(|p| walk::shown(cwd, p)).collect();
    let facts = search_facts(&args, &shown, !cut);
    let mut lines = shown;
    if lines.is_empty() {
        lines.push("No files found.".to_owned());
    }
    if cut {
        lines.push(format!(
            "[list cut at {FIND_TOOL_FILES} files; narrow the pattern or path to see the rest]"
        ));
    }
    let mut summary = walk::plural(found.len(), "file", "files");
    if cut {
        summary.push_str(", cut at the bound");
    }
    ToolReport::with_facts(
        ToolOutput {
            content: lines.join("\n"),
            summary,
            is_error: false,
        },
        facts,
    )
}

/// The facts of a search that reported `shown` (paths as the model sees them).
fn search_facts(args: &Arguments, shown: &[String], complete: bool) -> Facts {
    Facts::listing(Some(&args.pattern), args.path.as_deref(), shown, complete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::FACT_PATHS;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["src/x", "target", "a"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join(".ignore"), "target\n").unwrap();
        for f in [
            "src/lib.rs",
            "src/x/mod.rs",
            "src/x/data.json",
            "target/gen.rs",
            "a.rs",
            "a/z.rs",
            ".hidden.rs",
            "B.rs",
        ] {
            std::fs::write(root.join(f), "").unwrap();
        }
        dir
    }

    #[test]
    fn finds_sorted_paths_skipping_ignored_and_hidden_files() {
        let dir = tree();
        let out = run(&json!({"pattern": "*.rs"}), dir.path()).output;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "B.rs\na/z.rs\na.rs\nsrc/lib.rs\nsrc/x/mod.rs");
        assert_eq!(out.summary, "5 files");
        let out = run(&json!({"pattern": "**/*.rs"}), dir.path()).output;
        assert_eq!(out.summary, "5 files");
        let out = run(&json!({"pattern": "src/*.rs"}), dir.path()).output;
        assert_eq!(out.content, "src/lib.rs");
        let out = run(&json!({"pattern": "*.rs", "path": "src"}), dir.path()).output;
        assert_eq!(out.content, "src/lib.rs\nsrc/x/mod.rs");
        let out = run(&json!({"pattern": "x/*", "path": "src"}), dir.path()).output;
        assert_eq!(out.content, "src/x/data.json\nsrc/x/mod.rs");
        let out = run(&json!({"pattern": "*.md"}), dir.path()).output;
        assert_eq!(out.content, "No files found.");
        assert_eq!(out.summary, "0 files");
    }

    #[test]
    fn cuts_at_the_bound_with_an_explicit_line() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=FIND_TOOL_FILES {
            std::fs::write(dir.path().join(format!("f{i:05}.txt")), "").unwrap();
        }
        let out = run(&json!({"pattern": "*.txt"}), dir.path()).output;
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), FIND_TOOL_FILES + 1);
        assert_eq!(lines[0], "f00000.txt");
        assert_eq!(lines[FIND_TOOL_FILES - 1], "f00999.txt");
        assert!(lines[FIND_TOOL_FILES].starts_with("[list cut at 1000 files"));
        assert_eq!(out.summary, "1000 files, cut at the bound");
        std::fs::remove_file(dir.path().join("f01000.txt")).unwrap();
        let out = run(&json!({"pattern": "*.txt"}), dir.path()).output;
        assert_eq!(out.summary, "1000 files");
    }

    #[test]
    fn refuses_bad_globs_arguments_and_paths() {
        let dir = tree();
        assert_eq!(
            run(&json!({"pattern": "a["}), dir.path()).output.summary,
            "invalid glob"
        );
        let out = run(&json!({"pattern": "*", "depth": 1}), dir.path()).output;
        assert!(out.is_error);
        assert!(out.content.contains("unknown field `depth`"));
        assert!(
            run(&json!({"pattern": "*", "path": "a.rs"}), dir.path())
                .output
                .is_error
        );
        assert!(
            run(&json!({"pattern": "*", "path": "missing"}), dir.path())
                .output
                .is_error
        );
    }

    #[test]
    fn facts_record_the_paths_shown_and_whether_the_walk_finished() {
        let dir = tree();
        let report = run(&json!({"pattern": "*.rs", "path": "src"}), dir.path());
        assert_eq!(
            report.facts,
            Some(Facts::Search {
                pattern: Some("*.rs".into()),
                path: Some("src".into()),
                matches: 2,
                files: None,
                complete: true,
                paths: vec!["src/lib.rs".into(), "src/x/mod.rs".into()],
            })
        );
        assert_eq!(report.preview, None);
        let report = run(&json!({"pattern": "*.md"}), dir.path());
        assert!(matches!(
            report.facts,
            Some(Facts::Search { matches: 0, complete: true, ref path, ref paths, .. })
                if path.is_none() && paths.is_empty()
        ));
        // A failure after the arguments parsed names the search; it examined nothing.
        assert!(matches!(
            run(&json!({"pattern": "*", "path": "missing"}), dir.path()).facts,
            Some(Facts::Search {
                matches: 0,
                complete: false,
                ..
            })
        ));
        assert_eq!(run(&json!({"glob": "*"}), dir.path()).facts, None);
    }

    #[test]
    fn facts_keep_the_first_paths_and_mark_a_cut_search_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..=FIND_TOOL_FILES {
            std::fs::write(dir.path().join(format!("f{i:05}.txt")), "").unwrap();
        }
        let Some(Facts::Search {
            matches,
            complete,
            paths,
            ..
        }) = run(&json!({"pattern": "*.txt"}), dir.path()).facts
        else {
            panic!("find reports search facts");
        };
        assert_eq!(matches, FIND_TOOL_FILES as u64);
        assert!(!complete);
        assert_eq!(paths.len(), FACT_PATHS);
        assert_eq!(paths[0], "f00000.txt");
        assert_eq!(paths[FACT_PATHS - 1], format!("f{:05}.txt", FACT_PATHS - 1));
    }
}
