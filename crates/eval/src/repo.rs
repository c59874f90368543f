//! A task's repository made real: its files written into a fresh directory, then
//! `git init` and one commit, so the agent finds the git state of a real project.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use magi_protocol::limits::{EVAL_CHECK_MS, EVAL_OUTPUT_TAIL_BYTES};
use tokio::process::Command;

use crate::process;
use crate::task::Task;

/// The commit's author and date: fixed, so every generation of a task has the same
/// commit ID, and the person's git settings (identity, signing) play no part.
const GIT_SETTINGS: [&str; 6] = [
    "-c",
    "user.name=magi-eval",
    "-c",
    "user.email=magi-eval@example.invalid",
    "-c",
    "commit.gpgsign=false",
];
const GIT_DATE: &str = "2025-01-01T12:00:00Z";

/// Writes `task`'s files into `dir` (which exists and is empty) and commits them on
/// branch `main`.
pub async fn generate(task: &Task, dir: &Path) -> anyhow::Result<()> {
    for (path, text) in task.files {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
        if text.starts_with("#!") {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("cannot make {} executable", file.display()))?;
        }
    }
    git(dir, &["init", "-q", "-b", "main"]).await?;
    git(dir, &["add", "-A"]).await?;
    git(dir, &["commit", "-q", "-m", "Initial commit"]).await?;
    Ok(())
}

async fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let mut command = Command::new("git");
    command
        .args(GIT_SETTINGS)
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", GIT_DATE)
        .env("GIT_COMMITTER_DATE", GIT_DATE);
    let run = process::run(
        command,
        Duration::from_millis(EVAL_CHECK_MS),
        EVAL_OUTPUT_TAIL_BYTES,
    )
    .await
    .with_context(|| format!("cannot run git {} (is git installed?)", args.join(" ")))?;
    if !run.succeeded() {
        bail!(
            "git {} failed in {}: {}",
            args.join(" "),
            dir.display(),
            run.describe()
        );
    }
    Ok(())
}
