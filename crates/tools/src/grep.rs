//! `grep`: a regex search over the files of a tree with ripgrep's crates, respecting
//! ignore files, skipping binary files, bounded in matches and line length. Files are
//! searched on a few threads, and their results taken in walk order, so the output is
//! that of a search file after file.

use std::collections::BTreeMap;
use std::num::NonZero;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use magi_protocol::limits::{GREP_TOOL_LINE_CHARS, GREP_TOOL_MATCHES};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::facts::{self, FACT_PATHS, FACT_STRING_BYTES, Facts};
use crate::walk::{self, GlobFilter};
use crate::{ToolDefinition, ToolOutput, ToolReport};

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
        name: crate::BuiltinTool::Grep.name(),
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

pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => return walk::invalid_arguments(&e, EXPECTED).into(),
    };
    let facts = |matches: usize, files: usize, complete: bool, paths: Vec<String>| Facts::Search {
        pattern: Some(facts::cut(&args.pattern, FACT_STRING_BYTES)),
        path: args
            .path
            .as_deref()
            .map(|p| facts::cut(p, FACT_STRING_BYTES)),
        matches: matches as u64,
        files: Some(files as u64),
        complete,
        paths,
    };
    // A search that could not start examined nothing.
    let refused = |output: ToolOutput| ToolReport::with_facts(output, facts(0, 0, false, vec![]));
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive)
        // Searching line by line: a pattern that could only match across lines is refused
        // rather than silently never matching.
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
    {
        Ok(matcher) => matcher,
        Err(e) => {
            return refused(ToolOutput::failed(
                "invalid regex",
                format!("Invalid regular expression: {e}"),
            ));
        }
    };
    let filter = match args.glob.as_deref().map(GlobFilter::new).transpose() {
        Ok(filter) => filter,
        Err(e) => {
            return refused(ToolOutput::failed(
                "invalid glob",
                format!("Invalid glob: {e}"),
            ));
        }
    };
    let root = walk::resolve(cwd, args.path.as_deref());
    if let Err(e) = std::fs::metadata(&root) {
        return refused(walk::cannot_access(cwd, &root, &e));
    }
    let limit = args
        .limit
        .unwrap_or(GREP_TOOL_MATCHES)
        .clamp(1, GREP_TOOL_MATCHES);
    let mut builder = SearcherBuilder::new();
    builder
        .line_number(true)
        // NUL marks a binary file, as in ripgrep; the sink drops what it had found.
        .binary_detection(BinaryDetection::quit(b'\x00'));
    let search = Search {
        root: &root,
        filter: filter.as_ref(),
        matcher: &matcher,
        searcher: &builder,
        limit,
        shown: AtomicUsize::new(0),
    };

    let mut content = String::new();
    let mut matches = 0;
    let mut files = 0;
    let mut paths: Vec<String> = Vec::new();
    let mut unreadable = 0;
    let mut cut = false;
    search.each_in_order(|found| {
        let (path, lines) = match found {
            Found::Unreadable => {
                unreadable += 1;
                return ControlFlow::Continue(());
            }
            Found::Nothing => return ControlFlow::Continue(()),
            Found::Lines {
                path,
                lines,
                stopped_at,
            } => {
                // The file may have been searched for more lines than remain. Searched
                // for just one past the bound, it would have seen a NUL byte or a read
                // error found with fewer lines than that, and not one found later.
                let wanted = limit + 1 - matches;
                match stopped_at {
                    Some((at, Stop::Binary)) if at < wanted => return ControlFlow::Continue(()),
                    Some((at, Stop::Failed)) if at < wanted => {
                        unreadable += 1;
                        return ControlFlow::Continue(());
                    }
                    _ if lines.is_empty() => return ControlFlow::Continue(()),
                    _ => (path, lines),
                }
            }
        };
        let shown = walk::shown(cwd, &path);
        // The first line of a file may be the one past the bound: a file counts only
        // when a line of it is shown.
        let mut shown_here = 0;
        for (number, text) in lines {
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
            if paths.len() < FACT_PATHS {
                paths.push(facts::cut(&shown, FACT_STRING_BYTES));
            }
        }
        search.shown.store(matches, Ordering::Relaxed);
        if cut {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });

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
    let summary = walk::close_search(&mut content, notes, matches, files, cut);
    // Paths that could not be read were not examined: the scan is then incomplete too.
    let complete = !cut && unreadable == 0;
    let output = ToolOutput {
        content,
        summary,
        is_error: false,
    };
    ToolReport::with_facts(output, facts(matches, files, complete, paths))
}

/// Most threads searching files at once.
const MAX_SEARCHERS: usize = 8;
/// Most files handed to a searching thread at once. The first batches are smaller
/// (1, 2, 4, ...), so that a search that ends early is not held up by files it will
/// not need; later ones are larger, so the threads seldom wait on each other.
const MAX_BATCH: usize = 128;
/// Batches the walk may list ahead of the searching threads.
const QUEUED_BATCHES: usize = 64;

/// Entries of the walk numbered in walk order: a file to search, or `None` for an entry
/// the walk could not read.
type Batch = Vec<(usize, Option<PathBuf>)>;

/// A search of the files under `root`: one thread walks the tree in name order, a few
/// search the files it lists in parallel, and what they find is handed back in walk
/// order, so the results are those of a search file after file.
struct Search<'a> {
    root: &'a Path,
    filter: Option<&'a GlobFilter>,
    matcher: &'a RegexMatcher,
    searcher: &'a SearcherBuilder,
    limit: usize,
    /// Matches shown so far: a file is searched for at most one more than the rest.
    shown: AtomicUsize,
}

/// What one entry of the walk gave.
enum Found {
    /// The entry could not be read by the walk.
    Unreadable,
    /// A file searched without a match.
    Nothing,
    /// A file with matching lines, or whose search stopped on binary data or an error.
    Lines {
        path: PathBuf,
        lines: Vec<(u64, String)>,
        /// Why the search stopped early, with how many lines were found by then.
        stopped_at: Option<(usize, Stop)>,
    },
}

/// Why the search of a file stopped before its end.
enum Stop {
    /// A NUL byte: a binary file.
    Binary,
    /// The file could not be read.
    Failed,
}

impl Search<'_> {
    /// Calls `each` with what every entry of the walk gave, in walk order, until it
    /// breaks.
    fn each_in_order(&self, mut each: impl FnMut(Found) -> ControlFlow<()>) {
        let searchers = std::thread::available_parallelism()
            .map_or(1, NonZero::get)
            .min(MAX_SEARCHERS);
        let stop = AtomicBool::new(false);
        let (queue, batches) = mpsc::sync_channel(QUEUED_BATCHES);
        let batches = Mutex::new(batches);
        let (found, results) = mpsc::channel::<Vec<(usize, Found)>>();
        std::thread::scope(|scope| {
            let stop = &stop;
            scope.spawn(move || self.walk(&queue, stop));
            for _ in 0..searchers {
                let found = found.clone();
                let batches = &batches;
                scope.spawn(move || self.search_batches(batches, &found, stop));
            }
            drop(found);
            // Entries found ahead of the next one in walk order wait here.
            let mut waiting = BTreeMap::new();
            let mut next = 0;
            for batch in &results {
                waiting.extend(batch);
                while let Some(entry) = waiting.remove(&next) {
                    next += 1;
                    if each(entry).is_break() {
                        // The walk and the searching threads end at their next look.
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            }
        });
    }

    /// Walks the tree, queueing in batches the files to search and the entries it could
    /// not read.
    fn walk(&self, queue: &mpsc::SyncSender<Batch>, stop: &AtomicBool) {
        let mut size = 1;
        let mut batch = Batch::with_capacity(size);
        let mut index = 0;
        for entry in walk::walker(self.root).build() {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let path = match entry {
                Ok(entry) => {
                    if !entry.file_type().is_some_and(|t| t.is_file()) {
                        continue;
                    }
                    // A file named as `path` is searched whatever the glob says.
                    if entry.depth() > 0
                        && let Some(filter) = self.filter
                        && !filter
                            .matches(entry.path().strip_prefix(self.root).unwrap_or(entry.path()))
                    {
                        continue;
                    }
                    Some(entry.into_path())
                }
                Err(_) => None,
            };
            batch.push((index, path));
            index += 1;
            if batch.len() == size {
                size = (size * 2).min(MAX_BATCH);
                let full = std::mem::replace(&mut batch, Batch::with_capacity(size));
                if queue.send(full).is_err() {
                    return;
                }
            }
        }
        if !batch.is_empty() {
            let _ = queue.send(batch);
        }
    }

    /// Searches queued batches until the walk is over, reporting what each entry gave,
    /// a batch at a time.
    fn search_batches(
        &self,
        batches: &Mutex<mpsc::Receiver<Batch>>,
        found: &mpsc::Sender<Vec<(usize, Found)>>,
        stop: &AtomicBool,
    ) {
        // Each thread its own matcher, so they share no scratch space.
        let matcher = self.matcher.clone();
        let mut searcher = self.searcher.build();
        loop {
            let next = match batches.lock() {
                Ok(batches) => batches.recv(),
                Err(poisoned) => poisoned.into_inner().recv(),
            };
            let Ok(batch) = next else {
                return;
            };
            let mut results = Vec::with_capacity(batch.len());
            for (index, path) in batch {
                // Once stopped, the queue is only drained so that the walk never waits.
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let entry = match path {
                    Some(path) => self.search_file(&mut searcher, &matcher, path),
                    None => Found::Unreadable,
                };
                results.push((index, entry));
            }
            let _ = found.send(results);
        }
    }

    /// What searching the file at `path` gives.
    fn search_file(&self, searcher: &mut Searcher, matcher: &RegexMatcher, path: PathBuf) -> Found {
        let shown = self.shown.load(Ordering::Relaxed);
        // One more than fits, to know whether the results go on past the bound.
        let mut sink = FileMatches {
            lines: Vec::new(),
            wanted: (self.limit + 1).saturating_sub(shown),
            binary: false,
        };
        let failed = searcher.search_path(matcher, &path, &mut sink).is_err();
        let at = sink.lines.len();
        let stopped_at = if failed {
            Some((at, Stop::Failed))
        } else if sink.binary {
            Some((at, Stop::Binary))
        } else {
            None
        };
        if stopped_at.is_none() && sink.lines.is_empty() {
            return Found::Nothing;
        }
        Found::Lines {
            path,
            lines: sink.lines,
            stopped_at,
        }
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

    /// The output of a search; the facts have their own test.
    fn run(arguments: &Value, cwd: &Path) -> ToolOutput {
        super::run(arguments, cwd).output
    }

    #[test]
    fn facts_count_matches_files_and_say_whether_the_scan_was_whole() {
        let dir = tree();
        let report = super::run(&json!({"pattern": "fn", "path": "src"}), dir.path());
        assert_eq!(
            report.facts,
            Some(Facts::Search {
                pattern: Some("fn".into()),
                path: Some("src".into()),
                matches: 3,
                files: Some(2),
                complete: true,
                paths: vec!["src/a.rs".into(), "src/deep/b.rs".into()],
            })
        );
        let cut = super::run(&json!({"pattern": "fn", "limit": 1}), dir.path());
        assert!(matches!(
            cut.facts,
            Some(Facts::Search {
                complete: false,
                matches: 1,
                ..
            })
        ));
        let refused = super::run(&json!({"pattern": "("}), dir.path());
        assert!(matches!(
            refused.facts,
            Some(Facts::Search {
                matches: 0,
                files: Some(0),
                complete: false,
                ..
            })
        ));
    }

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
    fn many_files_come_in_walk_order_and_cut_at_the_same_place() {
        let dir = tempfile::tempdir().unwrap();
        let mut expected = Vec::new();
        for d in 0..12 {
            let sub = dir.path().join(format!("d{d:02}"));
            std::fs::create_dir(&sub).unwrap();
            for f in 0..30 {
                let hits = (d + f) % 3;
                let mut text = String::new();
                for line in 0..4 {
                    if line < hits {
                        text.push_str("hit\n");
                        expected.push(format!("d{d:02}/f{f:02}.txt:{}:hit", line + 1));
                    } else {
                        text.push_str("miss\n");
                    }
                }
                std::fs::write(sub.join(format!("f{f:02}.txt")), text).unwrap();
            }
        }
        assert!(expected.len() > GREP_TOOL_MATCHES);
        for _ in 0..5 {
            let out = run(&json!({"pattern": "hit"}), dir.path());
            let lines: Vec<&str> = out.content.lines().collect();
            assert_eq!(lines[..GREP_TOOL_MATCHES], expected[..GREP_TOOL_MATCHES]);
            assert!(lines[GREP_TOOL_MATCHES].starts_with("[results cut at"));
            let out = run(&json!({"pattern": "hit", "path": "d03"}), dir.path());
            assert_eq!(out.content.lines().count(), 30);
        }
    }

    #[test]
    fn a_file_cut_at_the_bound_before_its_nul_byte_is_shown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hit\n").unwrap();
        // Past the searcher's first buffer, so the lines are seen before the NUL.
        let mut bytes = b"hit\nhit\n".to_vec();
        bytes.extend(b"filler line\n".repeat(30_000));
        bytes.extend(b"\0hit\n");
        std::fs::write(dir.path().join("b.bin"), bytes).unwrap();
        // One match is left for b.bin: searched for two, it stops before the NUL.
        let out = run(&json!({"pattern": "hit", "limit": 2}), dir.path());
        assert_eq!(
            out.content,
            "a.txt:1:hit\nb.bin:1:hit\n\
             [results cut at 2 matches; narrow the pattern, path or glob to see the rest]"
        );
        // With room for all its lines, it reaches the NUL and is dropped.
        let out = run(&json!({"pattern": "hit", "limit": 3}), dir.path());
        assert_eq!(out.content, "a.txt:1:hit");
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
