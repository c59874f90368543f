//! What the search tools share: resolving a path argument, showing a path to the model,
//! the ignore-aware walk, the glob filter, and bounded text.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

use crate::ToolOutput;

/// The path a tool works on: `path` joined to the working directory (an absolute `path`
/// replaces it), or the working directory itself. There is no permission model yet, so
/// nothing here decides what may be reached.
pub(crate) fn resolve(cwd: &Path, path: Option<&str>) -> PathBuf {
    match path {
        Some(path) => cwd.join(path),
        None => cwd.to_path_buf(),
    }
}

/// How `path` is shown to the model: relative to the working directory when it is
/// inside it, so the model can pass it straight back to `read`; as it is otherwise.
pub(crate) fn shown(cwd: &Path, path: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
        Ok(relative) => relative.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// The walk of `root` that `grep` and `find` share: `.gitignore`, `.ignore`, git's
/// excludes and hidden entries are skipped as ripgrep skips them, whether or not the
/// tree is a git repository, and entries come in name order so results are stable and a
/// cut always keeps the same first ones.
pub fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// A glob filter over file paths. A glob without `/` matches a file's name at any depth
/// (`*.rs`); one with `/` matches the path relative to the searched directory
/// (`src/**/*.rs`). `*` never crosses a `/`; `**` does.
pub(crate) struct GlobFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl GlobFilter {
    /// Compiles `pattern`, or says why it is not a glob.
    pub(crate) fn new(pattern: &str) -> Result<GlobFilter, String> {
        // A leading `./` or `/` means "from the searched directory", which is what a
        // glob with a `/` already means.
        let pattern = pattern.trim_start_matches("./").trim_start_matches('/');
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(GlobFilter {
            matcher: glob.compile_matcher(),
            by_name: !pattern.contains('/'),
        })
    }

    /// Whether the file at `relative` (to the searched directory) matches.
    pub(crate) fn matches(&self, relative: &Path) -> bool {
        if self.by_name {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(relative)
        }
    }
}

/// `text` cut to at most `max` characters (on a character boundary), with a marker
/// when something was cut.
pub(crate) fn bounded_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{} [… line cut at {max} characters]", &text[..end]),
        None => text.to_owned(),
    }
}

/// The failed call for arguments that do not fit the schema; serde's message names the
/// offending field, which is what the model needs to fix its call.
pub(crate) fn invalid_arguments(error: &serde_json::Error, expected: &str) -> ToolOutput {
    ToolOutput::failed(
        "invalid arguments",
        format!("Invalid arguments: {error}. Expected {expected}."),
    )
}

/// The failed call for a path that cannot be used.
pub(crate) fn cannot_access(cwd: &Path, path: &Path, error: &std::io::Error) -> ToolOutput {
    ToolOutput::failed(
        "cannot access the path",
        format!("Cannot access {}: {error}.", shown(cwd, path)),
    )
}

/// `count` with the noun's singular or plural form.
pub(crate) fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("{count} {one}")
    } else {
        format!("{count} {many}")
    }
}

/// Closes a search's result: its bracketed notes appended to `content`, one a line,
/// and the summary: `N matches in M files`, `, cut at the bound` when it was.
pub(crate) fn close_search(
    content: &mut String,
    notes: Vec<String>,
    matches: usize,
    files: usize,
    cut: bool,
) -> String {
    for note in notes {
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&note);
    }
    let mut summary = format!(
        "{} in {}",
        plural(matches, "match", "matches"),
        plural(files, "file", "files")
    );
    if cut {
        summary.push_str(", cut at the bound");
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_character_boundaries() {
        assert_eq!(bounded_chars("héllo", 5), "héllo");
        assert_eq!(bounded_chars("héllo", 2), "hé [… line cut at 2 characters]");
        assert_eq!(bounded_chars("", 0), "");
    }

    #[test]
    fn globs_match_names_or_relative_paths() {
        let by_name = GlobFilter::new("*.rs").unwrap();
        assert!(by_name.matches(Path::new("a/b/c.rs")));
        assert!(!by_name.matches(Path::new("a/b/c.rsx")));
        let by_path = GlobFilter::new("src/*.rs").unwrap();
        assert!(by_path.matches(Path::new("src/a.rs")));
        assert!(!by_path.matches(Path::new("src/x/a.rs")));
        let deep = GlobFilter::new("./**/*.rs").unwrap();
        assert!(deep.matches(Path::new("a.rs")));
        assert!(deep.matches(Path::new("src/x/a.rs")));
        assert!(GlobFilter::new("a[").is_err());
    }

    #[test]
    fn shows_paths_relative_to_the_working_directory() {
        let cwd = Path::new("/w");
        assert_eq!(shown(cwd, Path::new("/w/src/a.rs")), "src/a.rs");
        assert_eq!(shown(cwd, Path::new("/w")), ".");
        assert_eq!(shown(cwd, Path::new("/other/a.rs")), "/other/a.rs");
    }
}
