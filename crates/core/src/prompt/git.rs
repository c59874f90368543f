//! The git state a turn's context note tells: the repository the working directory is
//! in, its branch and how many files differ from the last commit.
//!
//! The repository is found by looking for `.git` (a directory, or a worktree's file)
//! from the working directory up; the rest comes from `git status`, run without taking
//! the index's lock (`--no-optional-locks`, so it changes nothing), in its own process
//! group, within [`TURN_GIT_STATUS_MS`], its output bounded: a repository too big to
//! answer in time, or a machine without git, has its state said to be unknown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use magi_protocol::limits::TURN_GIT_STATUS_MS;
use magi_tools::{HookCommand, HookEnd};

/// The command that tells the branch and the changed files, one a line.
const STATUS: &str = "git --no-optional-locks status --porcelain=v1 --branch";

/// The git state of the working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum GitState {
    /// It is in no repository.
    None,
    /// The repository's root, and what `git status` told (or why it told nothing).
    Repository {
        root: PathBuf,
        status: Result<Status, String>,
    },
}

/// What `git status` told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Status {
    /// The branch; none when the head is detached.
    pub(super) branch: Option<String>,
    /// Files changed, staged or not, and untracked ones.
    pub(super) changed: usize,
    /// The output was cut: there are more changed files than counted.
    pub(super) more: bool,
}

/// The repository `cwd` is in: the nearest directory from it up holding `.git`.
pub(super) fn repository_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_owned)
}

/// The git state of `cwd`, `git status` killed with its group once `cancelled`.
pub(super) fn state(
    cwd: &Path,
    cancelled: &(dyn Fn() -> bool + Sync),
    hidden_env: &[String],
) -> GitState {
    let Some(root) = repository_root(cwd) else {
        return GitState::None;
    };
    let run = magi_tools::run_hook(&HookCommand {
        command: STATUS,
        shell: None,
        cwd,
        input: Vec::new(),
        timeout: Duration::from_millis(TURN_GIT_STATUS_MS),
        cancelled,
        hidden_env,
    });
    let status = match run.end {
        HookEnd::Exited(0) => Ok(parse(&run.stdout, run.stdout_cut)),
        HookEnd::Exited(127) => Err("git is not installed".to_owned()),
        HookEnd::Exited(code) => Err(format!("git status exited {code}")),
        HookEnd::TimedOut => Err(format!("git status took over {TURN_GIT_STATUS_MS} ms")),
        HookEnd::Cancelled => Err("the turn was cancelled".to_owned()),
        HookEnd::Signalled(signal) => Err(format!("git status ended by {signal}")),
        HookEnd::NotStarted(why) => Err(why),
    };
    GitState::Repository { root, status }
}

/// What `git status --porcelain=v1 --branch` printed: `## branch...upstream` first,
/// then a line per changed file.
fn parse(output: &str, cut: bool) -> Status {
    let mut lines = output.lines();
    let branch = lines
        .next()
        .and_then(|head| head.strip_prefix("## "))
        .and_then(|head| {
            let head = head.strip_prefix("No commits yet on ").unwrap_or(head);
            let name = head.split("...").next().unwrap_or(head);
            let name = name.split(' ').next().unwrap_or(name);
            // `HEAD (no branch)`: detached.
            (name != "HEAD").then(|| name.to_owned())
        });
    // A line cut by the bound is a file all the same.
    let changed = lines.filter(|line| !line.is_empty()).count();
    Status {
        branch,
        changed,
        more: cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_branch_and_the_changed_files_are_read_from_the_porcelain() {
        let status = parse(
            "## main...origin/main [ahead 1]\n M src/a.rs\n?? new.txt\n",
            false,
        );
        assert_eq!(
            status,
            Status {
                branch: Some("main".into()),
                changed: 2,
                more: false
            }
        );
        assert_eq!(
            parse("## No commits yet on trunk\n", false)
                .branch
                .as_deref(),
            Some("trunk")
        );
        assert_eq!(parse("## HEAD (no branch)\n", false).branch, None);
        assert!(parse("## feature\n", true).more);
    }

    #[test]
    fn a_real_repository_tells_its_branch_and_changes_and_a_plain_folder_none() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        assert_eq!(state(&plain, &|| false, &[]), GitState::None);
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(&repo)
                .output()
                .map(|out| out.status.success())
                .unwrap_or(false)
        };
        if !git(&["init", "-q", "-b", "work"]) {
            // No git on this machine: what the state then says is tested above.
            return;
        }
        std::fs::write(repo.join("a.txt"), "a").unwrap();
        let GitState::Repository { root, status } = state(&repo, &|| false, &[]) else {
            panic!("a repository");
        };
        assert_eq!(root, repo);
        let status = status.unwrap();
        assert_eq!(status.branch.as_deref(), Some("work"));
        assert_eq!(status.changed, 1);
        // From a folder inside it, the same root.
        std::fs::create_dir(repo.join("sub")).unwrap();
        assert_eq!(repository_root(&repo.join("sub")), Some(repo));
    }
}
