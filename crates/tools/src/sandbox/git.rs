//! The workspace's `.git` under the sandbox: Landlock cannot keep it from a command
//! allowed to write the workspace, so under `workspace-write` (unless `git_writable`)
//! the launcher makes it read-only with a mount (`process::confine`), where the kernel
//! offers user namespaces; where it does not, the card and a notice say that `.git` is
//! protected from the file tools only.

use std::io::Read;
use std::path::{Path, PathBuf};

use magi_config::{SandboxMode, SandboxSettings};

use super::{Decision, Support};

/// Whether commands and the file tools may change the workspace's `.git` under
/// `settings` with what the kernel offers, for doctor.
pub fn describe_git(settings: &SandboxSettings, support: &Support) -> &'static str {
    match settings.mode {
        SandboxMode::Off => "nothing keeps .git from commands or the file tools",
        SandboxMode::ReadOnly => ".git is read-only like the whole workspace",
        SandboxMode::WorkspaceWrite if settings.git_writable => {
            "commands and the file tools may change .git (git_writable)"
        }
        SandboxMode::WorkspaceWrite if support.userns.is_ok() => {
            ".git is read-only for commands (a read-only mount) and the file tools"
        }
        SandboxMode::WorkspaceWrite => {
            ".git is protected from the file tools only: commands may change it, since \
             user namespaces are unavailable"
        }
    }
}

/// What a confined command in the workspace is kept from changing beyond Landlock's
/// roots: its `.git`, under `workspace-write` unless `git_writable`.
pub(super) struct GitProtection {
    /// The paths made read-only, when the kernel allows it.
    read_only: Vec<PathBuf>,
    /// Why `.git` stays writable for commands though it should not.
    unprotected: Option<String>,
}

impl GitProtection {
    pub(super) fn of(settings: &SandboxSettings, support: &Support, cwd: &Path) -> GitProtection {
        let wanted = settings.mode == SandboxMode::WorkspaceWrite && !settings.git_writable;
        let paths = if wanted { git_paths(cwd) } else { Vec::new() };
        match (&support.userns, paths.is_empty()) {
            (_, true) => GitProtection {
                read_only: Vec::new(),
                unprotected: None,
            },
            (Ok(()), false) => GitProtection {
                read_only: paths,
                unprotected: None,
            },
            (Err(why), false) => GitProtection {
                read_only: Vec::new(),
                unprotected: Some(why.clone()),
            },
        }
    }

    /// `decision` (a confined one) with `.git` read-only, or saying that it is not.
    pub(super) fn added_to(self, mut decision: Decision) -> Decision {
        if let Some(policy) = &mut decision.policy {
            policy.read_only = self.read_only;
        }
        if let Some(why) = self.unprotected {
            decision.applied.push_str("; .git not protected");
            let notice = format!(
                "The sandbox cannot keep .git read-only for commands: {why}. .git is \
                 protected from the file tools only."
            );
            decision.notice = Some(match decision.notice {
                Some(first) => format!("{first} {notice}"),
                None => notice,
            });
        }
        decision
    }
}

/// The workspace's `.git` as a command could change it, each path canonical: the
/// directory; or, for the `.git` file of a worktree or a submodule, the file, the git
/// directory it names and that directory's common directory (the main repository's
/// `.git`, where objects and branches live). None without a `.git`.
fn git_paths(cwd: &Path) -> Vec<PathBuf> {
    let Ok(dot_git) = cwd.join(".git").canonicalize() else {
        return Vec::new();
    };
    let mut paths = vec![dot_git.clone()];
    if dot_git.is_file()
        && let Some(text) = read_small(&dot_git)
        && let Some(named) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:"))
        && let Some(base) = dot_git.parent()
        && let Ok(git_dir) = base.join(named.trim()).canonicalize()
    {
        if let Some(common) = read_small(&git_dir.join("commondir"))
            && let Ok(common) = git_dir.join(common.trim()).canonicalize()
        {
            paths.push(common);
        }
        paths.push(git_dir);
    }
    // A directory before what lies inside it, so no mount hides another.
    paths.sort();
    paths.dedup();
    paths
}

/// The start of a small text file git writes (a `.git` file, `commondir`); none when
/// it cannot be read.
fn read_small(path: &Path) -> Option<String> {
    const SMALL: u64 = 4_096;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(SMALL)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worktrees_git_file_protects_its_git_directories() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        let common = root.join("main/.git");
        let git_dir = common.join("worktrees/wt");
        std::fs::create_dir_all(&git_dir).unwrap();
        std::fs::write(git_dir.join("commondir"), "../..\n").unwrap();
        let worktree = root.join("wt");
        std::fs::create_dir(&worktree).unwrap();
        std::fs::write(worktree.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        assert_eq!(
            git_paths(&worktree),
            [common, git_dir, worktree.join(".git")]
        );
        assert!(git_paths(&root).is_empty());
    }
}
