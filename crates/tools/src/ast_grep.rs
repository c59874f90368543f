//! `ast_grep`: structural search with `ast-grep-core` and the tree-sitter grammars of
//! [`languages`]. The files of one language under a path are walked with `grep`'s ignore
//! rules, parsed on a few threads, and every node matching the pattern reported as
//! `path:line:column: text`, sorted by path then position. The whole tree is scanned
//! before the bound is applied, so the order and the counts do not depend on which
//! thread finished first.

mod languages;

use std::num::NonZero;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ast_grep_core::matcher::Pattern;
use ast_grep_core::tree_sitter::LanguageExt;
use ignore::WalkState;
use magi_protocol::limits::{AST_GREP_FILE_BYTES, AST_GREP_TOOL_MATCHES, GREP_TOOL_LINE_CHARS};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::facts::{self, FACT_PATHS, FACT_STRING_BYTES, Facts};
use crate::walk::{self, GlobFilter};
use crate::{ToolDefinition, ToolOutput, ToolReport};
use languages::AstLanguage;

const EXPECTED: &str = "{\"pattern\": string, \"language\": string, \"path\"?: string, \
                        \"globs\"?: [string], \"max_results\"?: integer}";

/// Most threads parsing files at once.
const MAX_PARSERS: usize = 8;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    pattern: String,
    language: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    globs: Vec<String>,
    #[serde(default)]
    max_results: Option<usize>,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::AstGrep.name(),
        description: "Structural code search: find syntax-tree nodes matching a code \
                      pattern (ast-grep syntax: `$NAME` matches one node, `$$$ARGS` any \
                      number, e.g. `foo($A, $$$REST)`), so text in comments and strings \
                      never matches. Searches the `language`'s files under the working \
                      directory or `path`, skipping files excluded by .gitignore/.ignore, \
                      hidden files and files over 2 MiB. Returns `path:line:column: text` \
                      lines (first line of each match) sorted by path then position, up to \
                      `max_results` (default and maximum 200), then what was scanned and \
                      skipped.",
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The code pattern to find."},
                "language": {
                    "type": "string",
                    "enum": AstLanguage::ALL.iter().map(|l| l.names()[0]).collect::<Vec<_>>(),
                    "description": "The pattern's language; only its files are searched."
                },
                "path": {
                    "type": "string",
                    "description": "Directory or file to search; default the working directory."
                },
                "globs": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only search files matching one of these globs: `*.rs` \
                                    matches names at any depth, `src/**/*.rs` paths under \
                                    `path`."
                },
                "max_results": {"type": "integer", "minimum": 1, "maximum": AST_GREP_TOOL_MATCHES}
            },
            "required": ["pattern", "language"],
            "additionalProperties": false
        }),
    }
}

/// One match: where it starts (line and column from 1, the column in characters), the
/// line it ends on, and its first line.
struct Match {
    line: usize,
    column: usize,
    end_line: usize,
    text: String,
}

/// What the scan of the tree gave: each file's matches (at most one past the bound per
/// file, which is all a cut needs), and the files it looked at or passed over.
#[derive(Default)]
struct Scan {
    found: Vec<(PathBuf, Vec<Match>)>,
    scanned: usize,
    too_large: usize,
    not_text: usize,
    unreadable: usize,
    /// Entries the walk could not read (a directory, say): what they hold is unknown.
    walk_errors: usize,
    /// Parsed with syntax errors: searched, but a match may hide in what did not parse.
    syntax_errors: usize,
}

pub(crate) fn run(arguments: &Value, cwd: &Path) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => return walk::invalid_arguments(&e, EXPECTED).into(),
    };
    let facts = |matches: usize, files: usize, scanned: usize, skipped: usize, complete, paths| {
        Facts::AstGrep {
            pattern: facts::cut(&args.pattern, FACT_STRING_BYTES),
            language: facts::cut(&args.language, FACT_STRING_BYTES),
            path: args
                .path
                .as_deref()
                .map(|p| facts::cut(p, FACT_STRING_BYTES)),
            matches: matches as u64,
            files: files as u64,
            files_scanned: scanned as u64,
            files_skipped: skipped as u64,
            complete,
            paths,
        }
    };
    // A search that could not start examined nothing.
    let refused =
        |output: ToolOutput| ToolReport::with_facts(output, facts(0, 0, 0, 0, false, vec![]));
    let Some(language) = AstLanguage::from_name(&args.language) else {
        return refused(ToolOutput::failed(
            "unknown language",
            format!(
                "Unknown language {:?}. ast_grep supports: {}.",
                args.language,
                AstLanguage::listed()
            ),
        ));
    };
    let pattern = match Pattern::try_new(&args.pattern, language) {
        Ok(pattern) => pattern,
        Err(e) => {
            return refused(ToolOutput::failed(
                "invalid pattern",
                format!(
                    "Invalid {} pattern: {e} The pattern must be one piece of {} code, with \
                     `$NAME` for one node and `$$$NAME` for any number. Supported languages: {}.",
                    language.names()[0],
                    language.names()[0],
                    AstLanguage::listed()
                ),
            ));
        }
    };
    let mut filters = Vec::with_capacity(args.globs.len());
    for glob in &args.globs {
        match GlobFilter::new(glob) {
            Ok(filter) => filters.push(filter),
            Err(e) => {
                return refused(ToolOutput::failed(
                    "invalid glob",
                    format!("Invalid glob {glob:?}: {e}"),
                ));
            }
        }
    }
    let root = walk::resolve(cwd, args.path.as_deref());
    let root_is_file = match std::fs::metadata(&root) {
        Ok(meta) => meta.is_file(),
        Err(e) => return refused(walk::cannot_access(cwd, &root, &e)),
    };
    let limit = args
        .max_results
        .unwrap_or(AST_GREP_TOOL_MATCHES)
        .clamp(1, AST_GREP_TOOL_MATCHES);

    let scan = scan(&root, root_is_file, language, &filters, &pattern, limit);
    let mut found = scan.found;
    found.sort_by(|a, b| a.0.cmp(&b.0));

    let mut content = String::new();
    let mut matches = 0;
    let mut files = 0;
    let mut paths = Vec::new();
    let mut cut = false;
    'files: for (path, file_matches) in &found {
        let shown = walk::shown(cwd, path);
        let mut shown_here = 0;
        for m in file_matches {
            if matches == limit {
                cut = true;
                break 'files;
            }
            if matches > 0 {
                content.push('\n');
            }
            let text = walk::bounded_chars(&m.text, GREP_TOOL_LINE_CHARS);
            content.push_str(&format!("{shown}:{}:{}: {text}", m.line, m.column));
            if m.end_line > m.line {
                content.push_str(&format!(" [lines {}-{}]", m.line, m.end_line));
            }
            matches += 1;
            shown_here += 1;
        }
        if shown_here > 0 {
            files += 1;
            if paths.len() < FACT_PATHS {
                paths.push(facts::cut(&shown, FACT_STRING_BYTES));
            }
        }
    }

    let skipped = scan.too_large + scan.not_text + scan.unreadable;
    let mut notes = Vec::new();
    if matches == 0 {
        notes.push("No matches.".to_owned());
    }
    if cut {
        notes.push(format!(
            "[results cut at {limit} matches; narrow the pattern, path or globs to see the rest]"
        ));
    }
    let mut scanned = format!(
        "[scanned {} of {}",
        walk::plural(scan.scanned, "file", "files"),
        language.names()[0]
    );
    if skipped > 0 {
        let mut reasons = Vec::new();
        if scan.too_large > 0 {
            reasons.push(format!("{} over 2 MiB", scan.too_large));
        }
        if scan.not_text > 0 {
            reasons.push(format!("{} not UTF-8 text", scan.not_text));
        }
        if scan.unreadable > 0 {
            reasons.push(format!("{} unreadable", scan.unreadable));
        }
        scanned.push_str(&format!(
            "; skipped {} ({})",
            walk::plural(skipped, "file", "files"),
            reasons.join(", ")
        ));
    }
    if scan.syntax_errors > 0 {
        scanned.push_str(&format!(
            "; {} with syntax errors, where a match may be missed",
            walk::plural(scan.syntax_errors, "file", "files")
        ));
    }
    if scan.walk_errors > 0 {
        scanned.push_str(&format!(
            "; {} could not be read by the walk",
            walk::plural(scan.walk_errors, "path", "paths")
        ));
    }
    scanned.push(']');
    notes.push(scanned);
    let summary = walk::close_search(&mut content, notes, matches, files, cut);
    // Files skipped, and whatever a path the walk could not read holds, were not
    // examined: the scan is then incomplete too.
    let complete = !cut && skipped == 0 && scan.walk_errors == 0;
    let output = ToolOutput {
        content,
        summary,
        is_error: false,
    };
    ToolReport::with_facts(
        output,
        facts(matches, files, scan.scanned, skipped, complete, paths),
    )
}

/// Scans the files of `language` under `root` (or `root` itself, when it is a file,
/// whatever its extension and the globs) on a few threads.
fn scan(
    root: &Path,
    root_is_file: bool,
    language: AstLanguage,
    filters: &[GlobFilter],
    pattern: &Pattern,
    limit: usize,
) -> Scan {
    let scan = Mutex::new(Scan::default());
    let record = |path: PathBuf, outcome: FileOutcome| {
        let mut scan = match scan.lock() {
            Ok(scan) => scan,
            Err(poisoned) => poisoned.into_inner(),
        };
        match outcome {
            FileOutcome::Unreadable => scan.unreadable += 1,
            FileOutcome::WalkError => scan.walk_errors += 1,
            FileOutcome::TooLarge => scan.too_large += 1,
            FileOutcome::NotText => scan.not_text += 1,
            FileOutcome::Parsed {
                matches,
                syntax_errors,
            } => {
                scan.scanned += 1;
                scan.syntax_errors += usize::from(syntax_errors);
                if !matches.is_empty() {
                    scan.found.push((path, matches));
                }
            }
        }
    };
    if root_is_file {
        let outcome = search_file(root, language, pattern, limit);
        record(root.to_path_buf(), outcome);
    } else {
        let threads = std::thread::available_parallelism()
            .map_or(1, NonZero::get)
            .min(MAX_PARSERS);
        walk::walker(root)
            .threads(threads)
            .build_parallel()
            .run(|| {
                Box::new(|entry| {
                    let entry = match entry {
                        Ok(entry) => entry,
                        Err(_) => {
                            // An entry the walk could not read: counted, not guessed at.
                            record(PathBuf::new(), FileOutcome::WalkError);
                            return WalkState::Continue;
                        }
                    };
                    if !entry.file_type().is_some_and(|t| t.is_file())
                        || !language.covers(entry.path())
                    {
                        return WalkState::Continue;
                    }
                    let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
                    if !filters.is_empty() && !filters.iter().any(|f| f.matches(relative)) {
                        return WalkState::Continue;
                    }
                    let outcome = search_file(entry.path(), language, pattern, limit);
                    record(entry.into_path(), outcome);
                    WalkState::Continue
                })
            });
    }
    match scan.into_inner() {
        Ok(scan) => scan,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// What one file gave.
enum FileOutcome {
    Unreadable,
    WalkError,
    TooLarge,
    NotText,
    Parsed {
        matches: Vec<Match>,
        syntax_errors: bool,
    },
}

/// Parses the file at `path` and finds the pattern in it: at most `limit + 1` matches,
/// in source order.
fn search_file(path: &Path, language: AstLanguage, pattern: &Pattern, limit: usize) -> FileOutcome {
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > AST_GREP_FILE_BYTES => return FileOutcome::TooLarge,
        Ok(_) => {}
        Err(_) => return FileOutcome::Unreadable,
    }
    let Ok(bytes) = std::fs::read(path) else {
        return FileOutcome::Unreadable;
    };
    // A NUL marks a binary file, as for `grep`.
    if bytes.contains(&0) {
        return FileOutcome::NotText;
    }
    let Ok(source) = String::from_utf8(bytes) else {
        return FileOutcome::NotText;
    };
    let grep = language.ast_grep(&source);
    let root = grep.root();
    let syntax_errors = root.get_inner_node().has_error();
    let mut matches = Vec::new();
    for found in root.find_all(pattern).take(limit + 1) {
        let start = found.start_pos();
        let end = found.end_pos();
        let text = found.text();
        let first = text.lines().next().unwrap_or_default().to_owned();
        matches.push(Match {
            line: start.line() + 1,
            column: start.column(&found) + 1,
            end_line: end.line() + 1,
            text: first,
        });
    }
    FileOutcome::Parsed {
        matches,
        syntax_errors,
    }
}

#[cfg(test)]
mod tests;
