//! `grep`: a regex search over the files of a tree with ripgrep's crates, respecting
//! ignore files, skipping binary files, bounded in matches and line length.

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use magi_protocol::limits::{GREP_TOOL_LINE_CHARS, GREP_TOOL_MATCHES};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::walk::{self, GlobFilter};
use crate::{ToolDefinition, ToolOutput};

const EXPECTED: &str = "{\"pattern\": string, \"path\"?: string, \"glob\"?: string, \
                        \"case_insensitive\"?: boolean, \"limit\"?: integer}";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    limit: Option<usize>,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: "grep",
        description: "Search file contents with a regular expression (Rust regex syntax) under \
                      the working directory or `path` (a directory or a file). Skips files \
                      excluded by .gitignore/.ignore, hidden files and binary files. Returns \
                      `path:line:text` lines, paths relative to the working directory, up to \
                      `limit` matches (default and maximum 200); a final line says when \
                      results were cut.",
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression to find."},
                "path": {
                    "type": "string",
                    "description": "Directory or file to search; default the working directory."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob: `*.rs` matches names \
                                    at any depth, `src/**/*.rs` paths under `path`."
                },
                "case_insensitive": {"type": "boolean", "description": "Ignore case; default false."},
                "limit": {"type": "integer", "minimum": 1, "maximum": GREP_TOOL_MATCHES}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolOutput {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => return walk::invalid_arguments(&e, EXPECTED),
    };
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        // Searching line by line: a pattern that could only match across lines is refused
        // rather than silently never matching.
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
    {
        Ok(matcher) => matcher,
        Err(e) => {
            return ToolOutput::failed("invalid regex", format!("Invalid regular expression: {e}"));
        }
    };
    let filter = match args.glob.as_deref().map(GlobFilter::new).transpose() {
        Ok(filter) => filter,
        Err(e) => return ToolOutput::failed("invalid glob", format!("Invalid glob: {e}")),
    };
    let root = walk::resolve(cwd, args.path.as_deref());
    if let Err(e) = std::fs::metadata(&root) {
        return walk::cannot_access(cwd, &root, &e);
    }
    let limit = args
        .limit
        .unwrap_or(GREP_TOOL_MATCHES)
        .clamp(1, GREP_TOOL_MATCHES);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        // NUL marks a binary file, as in ripgrep; the sink drops what it had found.
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build();

    let mut content = String::new();
    let mut matches = 0;
    let mut files = 0;
    let mut unreadable = 0;
    let mut cut = false;
    for entry in walk::walker(&root).build() {
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        // A file named as `path` is searched whatever the glob says.
        if entry.depth() > 0
            && let Some(filter) = &filter
            && !filter.matches(entry.path().strip_prefix(&root).unwrap_or(entry.path()))
        {
            continue;
        }
        // One more than fits, to know whether the results go on past the bound.
        let mut sink = FileMatches {
            lines: Vec::new(),
            wanted: limit + 1 - matches,
            binary: false,
        };
        if searcher
            .search_path(&matcher, entry.path(), &mut sink)
            .is_err()
        {
            unreadable += 1;
            continue;
        }
        if sink.binary || sink.lines.is_empty() {
            continue;
        }
        let shown = walk::shown(cwd, entry.path());
        // The first line of a file may be the one past the bound: a file counts only
        // when a line of it is shown.
        let mut shown_here = 0;
        for (number, text) in sink.lines {
            if matches == limit {
                cut = true;
                break;
            }
            if matches > 0 {
                content.push('\n');
            }
            content.push_str(&format!("{shown}:{number}:{text}"));
            matches += 1;
            shown_here += 1;
        }
        if shown_here > 0 {
            files += 1;
        }
        if cut {
            break;
        }
    }

    let mut notes = Vec::new();
    if matches == 0 {
        notes.push("No matches.".to_owned());
    }
    if cut {
        notes.push(format!(
            "[results cut at {limit} matches; narrow the pattern, path or glob to see the rest]"
        ));
    }
    if unreadable > 0 {
        notes.push(format!(
            "[skipped {} that could not be read]",
            walk::plural(unreadable, "path", "paths")
        ));
    }
    for note in notes {
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&note);
    }
    let mut summary = format!(
        "{} in {}",
        walk::plural(matches, "match", "matches"),
        walk::plural(files, "file", "files")
    );
    if cut {
        summary.push_str(", cut at the bound");
    }
    ToolOutput {
        content,
        summary,
        is_error: false,
    }
}

/// The matching lines of one file, kept until the file is known not to be binary.
struct FileMatches {
    lines: Vec<(u64, String)>,
    wanted: usize,
    binary: bool,
}

impl Sink for FileMatches {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (offset, line) in (0..).zip(mat.lines()) {
            let line = String::from_utf8_lossy(line);
            let line = line.trim_end_matches(['\n', '\r']);
            self.lines.push((
                first + offset,
                walk::bounded_chars(line, GREP_TOOL_LINE_CHARS),
            ));
        }
        Ok(self.lines.len() < self.wanted)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(
            root.join("src/a.rs"),
            "fn main() {}\nlet x = 1;\nfn helper() {}\n",
        )
        .unwrap();
        std::fs::write(root.join("src/deep/b.rs"), "// fn in a comment\n").unwrap();
        std::fs::write(root.join("notes.txt"), "FN upper\n").unwrap();
        std::fs::write(root.join("target/out.rs"), "fn ignored() {}\n").unwrap();
        std::fs::write(root.join("run.log"), "fn logged\n").unwrap();
        std::fs::write(root.join("blob.bin"), b"fn x\0binary\n").unwrap();
        std::fs::write(root.join(".hidden.rs"), "fn hidden() {}\n").unwrap();
        dir
    }

    #[test]
    fn finds_lines_in_order_skipping_ignored_hidden_and_binary_files() {
        let dir = tree();
        let out = run(&json!({"pattern": "fn"}), dir.path());
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "src/a.rs:1:fn main() {}\nsrc/a.rs:3:fn helper() {}\nsrc/deep/b.rs:1:// fn in a comment"
        );
        assert_eq!(out.summary, "3 matches in 2 files");
    }

    #[test]
    fn case_glob_and_path_narrow_the_search() {
        let dir = tree();
        let out = run(
            &json!({"pattern": "^fn", "case_insensitive": true}),
            dir.path(),
        );
        assert_eq!(
            out.content,
            "notes.txt:1:FN upper\nsrc/a.rs:1:fn main() {}\nsrc/a.rs:3:fn helper() {}"
        );
        let out = run(&json!({"pattern": "fn", "glob": "*.txt"}), dir.path());
        assert_eq!(out.content, "No matches.");
        assert_eq!(out.summary, "0 matches in 0 files");
        let out = run(&json!({"pattern": "fn", "path": "src/deep"}), dir.path());
        assert_eq!(out.content, "src/deep/b.rs:1:// fn in a comment");
        assert_eq!(out.summary, "1 match in 1 file");
        let out = run(&json!({"pattern": "x", "path": "src/a.rs"}), dir.path());
        assert_eq!(out.content, "src/a.rs:2:let x = 1;");
    }

    #[test]
    fn cuts_at_the_limit_with_an_explicit_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hit\nhit\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "hit\n").unwrap();
        let out = run(&json!({"pattern": "hit", "limit": 2}), dir.path());
        assert_eq!(
            out.content,
            "a.txt:1:hit\na.txt:2:hit\n\
             [results cut at 2 matches; narrow the pattern, path or glob to see the rest]"
        );
        assert_eq!(out.summary, "2 matches in 1 file, cut at the bound");
        // Exactly the limit is not a cut.
        let out = run(&json!({"pattern": "hit", "limit": 3}), dir.path());
        assert_eq!(out.summary, "3 matches in 2 files");
        // Past the maximum is clamped to it.
        let many = "hit\n".repeat(GREP_TOOL_MATCHES + 5);
        std::fs::write(dir.path().join("c.txt"), many).unwrap();
        let out = run(&json!({"pattern": "hit", "limit": 100_000}), dir.path());
        assert_eq!(out.content.lines().count(), GREP_TOOL_MATCHES + 1);
        assert!(out.content.ends_with("the rest]"));
    }

    #[test]
    fn drops_early_matches_of_a_file_found_binary_later() {
        let dir = tempfile::tempdir().unwrap();
        // Past the searcher's first buffer, so the match is seen before the NUL.
        let mut bytes = b"needle\n".to_vec();
        bytes.extend(b"filler line\n".repeat(30_000));
        bytes.extend(b"\0needle\n");
        std::fs::write(dir.path().join("late.bin"), bytes).unwrap();
        std::fs::write(dir.path().join("text.txt"), "needle\n").unwrap();
        let out = run(&json!({"pattern": "needle"}), dir.path());
        assert_eq!(out.content, "text.txt:1:needle");
        assert_eq!(out.summary, "1 match in 1 file");
    }

    #[test]
    fn cuts_long_lines_on_a_character_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let line = "é".repeat(GREP_TOOL_LINE_CHARS + 10);
        std::fs::write(dir.path().join("a.txt"), format!("{line}\n")).unwrap();
        let out = run(&json!({"pattern": "é"}), dir.path());
        let expected = format!(
            "a.txt:1:{} [… line cut at {GREP_TOOL_LINE_CHARS} characters]",
            "é".repeat(GREP_TOOL_LINE_CHARS)
        );
        assert_eq!(out.content, expected);
    }

    #[test]
    fn refuses_bad_regexes_globs_arguments_and_paths() {
        let dir = tree();
        let out = run(&json!({"pattern": "fn("}), dir.path());
        assert!(out.is_error);
        assert_eq!(out.summary, "invalid regex");
        assert!(out.content.starts_with("Invalid regular expression"));
        let out = run(&json!({"pattern": "a", "glob": "a["}), dir.path());
        assert!(out.is_error);
        let out = run(&json!({"pattern": "a", "regex": true}), dir.path());
        assert!(out.is_error);
        assert!(
            out.content.contains("unknown field `regex`"),
            "{}",
            out.content
        );
        // Searching is line by line, so a pattern needing a newline is refused, not
        // silently never matched.
        assert!(run(&json!({"pattern": "a\\nb"}), dir.path()).is_error);
        assert!(run(&json!({}), dir.path()).is_error);
        assert!(run(&json!({"pattern": "a", "path": "missing"}), dir.path()).is_error);
    }
}
