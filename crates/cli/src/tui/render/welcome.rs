//! The empty screen's orientation: which magi-code, in which directory and branch,
//! with which model, and how to begin.

use std::io::Read;
use std::path::{Path, PathBuf};

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

/// Most bytes read of a `HEAD` (or `.git` file): a ref or an object name, a line.
const HEAD_BYTES: u64 = 1_024;
/// Most directories walked up from the working directory to find the repository.
const PARENTS: usize = 64;

/// Where Mission Control runs: the directory as a person reads it and its git branch.
#[derive(Debug, Clone, Default)]
pub(in crate::tui) struct Place {
    directory: String,
    branch: Option<String>,
}

impl Place {
    /// The working directory (`~` for the home directory) and the branch checked out
    /// there, read from the repository's `HEAD` without running git.
    pub(in crate::tui) fn here() -> Place {
        let cwd = std::env::current_dir().unwrap_or_default();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Place {
            directory: shown_directory(&cwd, home.as_deref()),
            branch: branch(&cwd),
        }
    }
}

/// `dir` with the home directory written `~`.
fn shown_directory(dir: &Path, home: Option<&Path>) -> String {
    match home.and_then(|home| dir.strip_prefix(home).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Some(rest) => format!("~/{}", rest.display()),
        None => dir.display().to_string(),
    }
}

/// The first bytes of a small file, as text.
fn read_head(path: &Path) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(HEAD_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// The branch checked out in the repository holding `dir`: the name `HEAD` refers to,
/// `detached at <short name>` for a detached head; `None` outside a repository.
fn branch(dir: &Path) -> Option<String> {
    let git = dir
        .ancestors()
        .take(PARENTS)
        .map(|d| d.join(".git"))
        .find(|git| git.exists())?;
    // A worktree's or submodule's `.git` is a file naming the real directory.
    let git_dir = if git.is_file() {
        let pointer = read_head(&git)?;
        let target = PathBuf::from(pointer.strip_prefix("gitdir:")?.trim());
        if target.is_absolute() {
            target
        } else {
            git.parent()?.join(target)
        }
    } else {
        git
    };
    let head = read_head(&git_dir.join("HEAD"))?;
    let head = head.trim();
    match head.strip_prefix("ref:") {
        Some(reference) => {
            let reference = reference.trim();
            Some(
                reference
                    .strip_prefix("refs/heads/")
                    .unwrap_or(reference)
                    .to_owned(),
            )
        }
        None => Some(format!("detached at {}", head.get(..7).unwrap_or(head))),
    }
}

/// The empty screen's lines.
pub(super) fn lines(place: &Place, model: Option<&str>) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let mut directory = place.directory.clone();
    if let Some(branch) = &place.branch {
        directory.push_str(&format!(" · branch {branch}"));
    }
    vec![
        Line::from(Span::styled(
            format!("magi-code {}", env!("CARGO_PKG_VERSION")),
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Line::from(Span::styled(directory, dim)),
        Line::from(Span::styled(
            format!("model {}", model.unwrap_or("unknown")),
            dim,
        )),
        Line::default(),
        Line::from(Span::styled(
            "Type a prompt and press Enter · @ names a file · /help lists commands and keys",
            dim,
        )),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branch_is_read_from_head_without_git() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(branch(dir.path()), None);
        let git = dir.path().join(".git");
        std::fs::create_dir(&git).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(git.join("HEAD"), "ref: refs/heads/feature/x\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let inner = dir.path().join("src/deep");
        std::fs::create_dir_all(&inner).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(branch(&inner).as_deref(), Some("feature/x"));
        std::fs::write(git.join("HEAD"), "0123456789abcdef\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(branch(&inner).as_deref(), Some("detached at 0123456"));
        // A worktree's `.git` file points at its own directory.
        let other = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(
            other.path().join(".git"),
            format!("gitdir: {}\n", git.display()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(branch(other.path()).as_deref(), Some("detached at 0123456"));
        assert_eq!(
            shown_directory(Path::new("/home/ada/src"), Some(Path::new("/home/ada"))),
            "~/src"
        );
        assert_eq!(
            shown_directory(Path::new("/srv"), Some(Path::new("/home/ada"))),
            "/srv"
        );
    }
}
