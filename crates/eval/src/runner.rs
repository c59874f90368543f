//! Running the tasks: for each, its repository generated into a fresh directory, the
//! agent run in it with a throwaway `MC_HOME`, then its check; and the baseline, each
//! check run on the untouched repository, where it must fail.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use magi_protocol::limits::{EVAL_CHECK_MS, EVAL_OUTPUT_TAIL_BYTES};
use magi_protocol::messages::RunOutcome;
use serde::Serialize;
use tokio::process::Command;

use crate::agent::{self, AgentRun, Invocation};
use crate::mock::{MOCK_MODEL, MockModel};
use crate::process;
use crate::repo;
use crate::task::{Language, Task};
use crate::usage::{self, Usage};

/// How the suite runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The `magi-code` binary.
    pub magi_code: PathBuf,
    /// Which model answers.
    pub model: Model,
    /// How long one task's run may take.
    pub bound: Duration,
    /// A settings file given to every run as its global settings (`MC_HOME` is
    /// throwaway, so the person's own are not read).
    pub settings: Option<PathBuf>,
}

/// Which model answers.
#[derive(Debug, Clone)]
pub enum Model {
    /// Each task's scripted solution, played by the loopback mock (Chat Completions).
    Mock,
    /// The provider and model the environment and settings select, with these
    /// arguments for `exec` (`--provider`, `--model`, `--effort`).
    Configured(Vec<String>),
}

/// How one task went.
#[derive(Debug, Clone, Serialize)]
pub struct TaskReport {
    /// The task's name.
    pub task: &'static str,
    /// Its language.
    pub language: Language,
    /// Its kind of work.
    pub kind: &'static str,
    /// Whether its check passed.
    pub passed: bool,
    /// The run's outcome (`run.finished`); `null` when the run ended without one.
    pub outcome: Option<RunOutcome>,
    /// `exec`'s exit status code; `null` when it was killed or did not start.
    pub exit_code: Option<i32>,
    /// Whether the run outlived its bound and was stopped.
    pub timed_out: bool,
    /// The session the run was saved in (under `<scratch>/<task>/mc-home`, which
    /// `--keep` keeps); `null` when `exec` said none.
    pub session_id: Option<String>,
    /// The model requests and tokens; `null` when they could not be read.
    pub usage: Option<Usage>,
    /// The run's wall time, from the start of `exec` to its end, in milliseconds.
    pub wall_ms: u64,
    /// With the mock, the replies of the scripted solution no request asked for.
    pub replies_left: Option<usize>,
    /// What went wrong, when something did: the check's output (its newest part), why
    /// the run or the harness failed, why the usage is unknown.
    pub problems: Vec<String>,
}

/// How a check did on the untouched repository.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// The task's name.
    pub task: &'static str,
    /// Whether the check failed, as it must.
    pub failed: bool,
    /// The check's output (its newest part), or why it could not run.
    pub output: String,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteReport {
    /// Each task's report, in order.
    pub tasks: Vec<TaskReport>,
    /// Tasks whose check passed.
    pub passed: usize,
    /// The usage of every task whose usage is known.
    pub usage: Usage,
    /// Tasks whose usage could not be read (not in `usage`).
    pub usage_unknown: usize,
    /// The runs' wall time together, in milliseconds.
    pub wall_ms: u64,
}

/// Runs `tasks` in order under `scratch`, telling `progress` each report as it is made.
pub async fn run_suite(
    tasks: &[Task],
    config: &Config,
    scratch: &Path,
    mut progress: impl FnMut(&TaskReport),
) -> SuiteReport {
    let mut reports = Vec::with_capacity(tasks.len());
    for task in tasks {
        let report = run_task(task, config, scratch).await;
        progress(&report);
        reports.push(report);
    }
    let known: Vec<Usage> = reports.iter().filter_map(|r| r.usage).collect();
    SuiteReport {
        passed: reports.iter().filter(|r| r.passed).count(),
        usage: known.iter().fold(Usage::default(), |sum, u| sum.plus(*u)),
        usage_unknown: reports.len() - known.len(),
        wall_ms: reports.iter().map(|r| r.wall_ms).sum(),
        tasks: reports,
    }
}

/// Runs one task under `scratch/<task>`: generate, run the agent, check.
pub async fn run_task(task: &Task, config: &Config, scratch: &Path) -> TaskReport {
    let mut report = TaskReport {
        task: task.name,
        language: task.language,
        kind: task.kind,
        passed: false,
        outcome: None,
        exit_code: None,
        timed_out: false,
        session_id: None,
        usage: None,
        wall_ms: 0,
        replies_left: None,
        problems: Vec::new(),
    };
    if let Err(error) = attempt(task, config, scratch, &mut report).await {
        report.problems.push(format!("{error:#}"));
    }
    report
}

async fn attempt(
    task: &Task,
    config: &Config,
    scratch: &Path,
    report: &mut TaskReport,
) -> anyhow::Result<()> {
    let place = scratch.join(task.name);
    let repo = place.join("repo");
    let mc_home = place.join("mc-home");
    std::fs::create_dir_all(&repo).with_context(|| format!("cannot create {}", repo.display()))?;
    std::fs::create_dir_all(&mc_home)
        .with_context(|| format!("cannot create {}", mc_home.display()))?;
    repo::generate(task, &repo).await?;
    if let Some(settings) = &config.settings {
        std::fs::copy(settings, mc_home.join("settings.toml"))
            .with_context(|| format!("cannot copy the settings {}", settings.display()))?;
    }

    let mut invocation = Invocation {
        magi_code: config.magi_code.clone(),
        repo: repo.clone(),
        args: Vec::new(),
        set: vec![
            ("MC_HOME".into(), mc_home.clone().into()),
            cargo_target(scratch),
        ],
        removed: Vec::new(),
        prompt: task.prompt.to_owned(),
        bound: config.bound,
    };
    let mock = match &config.model {
        Model::Mock => {
            let mock = MockModel::start((task.solution)())
                .await
                .context("cannot start the mock model")?;
            invocation.set.extend([
                ("MAGI_PROVIDER".into(), "openai-chat".into()),
                ("MAGI_MODEL".into(), MOCK_MODEL.into()),
                ("OPENAI_BASE_URL".into(), mock.base_url().into()),
            ]);
            // No key goes to the mock, whatever the environment holds.
            invocation.removed.push("OPENAI_API_KEY");
            Some(mock)
        }
        Model::Configured(args) => {
            invocation.args = args.clone();
            None
        }
    };
    let run = agent::run(&invocation).await.with_context(|| {
        format!(
            "cannot start {} (set --magi-code or MAGI_CODE to the binary)",
            config.magi_code.display()
        )
    })?;
    report.outcome = run.outcome;
    report.exit_code = run.exit_code;
    report.timed_out = run.timed_out;
    report.wall_ms = u64::try_from(run.wall.as_millis()).unwrap_or(u64::MAX);
    report.replies_left = mock.as_ref().map(MockModel::replies_left);
    if let Some(problem) = describe_run(&run) {
        report.problems.push(problem);
    }
    report.session_id = run.session_id.clone();
    report.usage = match usage::read(&mc_home, &repo) {
        Ok(usage) => Some(usage),
        Err(error) => {
            report
                .problems
                .push(format!("the usage is unknown: {error:#}"));
            None
        }
    };

    let answer = place.join("answer.txt");
    std::fs::write(&answer, &run.answer)
        .with_context(|| format!("cannot write {}", answer.display()))?;
    let check = check(task, &repo, &answer, scratch).await?;
    report.passed = check.succeeded();
    if !report.passed {
        report
            .problems
            .push(format!("the check failed:\n{}", check.describe()));
    }
    Ok(())
}

/// Runs `task`'s check on its untouched repository under `scratch/baseline/<task>`.
pub async fn baseline(task: &Task, scratch: &Path) -> Baseline {
    let place = scratch.join("baseline").join(task.name);
    let repo = place.join("repo");
    let answer = place.join("answer.txt");
    let outcome = async {
        std::fs::create_dir_all(&repo)
            .with_context(|| format!("cannot create {}", repo.display()))?;
        repo::generate(task, &repo).await?;
        std::fs::write(&answer, "")
            .with_context(|| format!("cannot write {}", answer.display()))?;
        check(task, &repo, &answer, scratch).await
    }
    .await;
    match outcome {
        Ok(run) => Baseline {
            task: task.name,
            failed: !run.succeeded(),
            output: run.describe(),
        },
        Err(error) => Baseline {
            task: task.name,
            failed: false,
            output: format!("the check could not run: {error:#}"),
        },
    }
}

/// Runs `task`'s check in `repo`, the answer in file `answer`.
async fn check(
    task: &Task,
    repo: &Path,
    answer: &Path,
    scratch: &Path,
) -> anyhow::Result<process::Run> {
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", task.check])
        .current_dir(repo)
        .env("EVAL_ANSWER", answer)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let (name, value) = cargo_target(scratch);
    command.env(name, value);
    process::run(
        command,
        Duration::from_millis(EVAL_CHECK_MS),
        EVAL_OUTPUT_TAIL_BYTES,
    )
    .await
    .context("cannot run the check with bash")
}

/// The build directory every Rust task shares, runs and checks alike, so the suite
/// builds in one place and nothing lands in the repositories.
fn cargo_target(scratch: &Path) -> (OsString, OsString) {
    (
        "CARGO_TARGET_DIR".into(),
        scratch.join("cargo-target").into(),
    )
}

/// What went wrong with the run itself, if anything: stopped at its bound, ended
/// without completing, `exec` failing, frames that could not be read.
fn describe_run(run: &AgentRun) -> Option<String> {
    let mut said = Vec::new();
    if run.timed_out {
        said.push("the run outlived its time bound and was stopped".to_owned());
    }
    match run.outcome {
        Some(RunOutcome::Completed) => {}
        Some(outcome) => said.push(format!("the run ended {outcome:?}").to_lowercase()),
        None => said.push("the run ended without run.finished".to_owned()),
    }
    match run.exit_code {
        Some(0) => {}
        Some(code) => said.push(format!("magi-code exec exited with status {code}")),
        None if !run.timed_out => said.push("magi-code exec was killed by a signal".to_owned()),
        None => {}
    }
    if run.unreadable_lines > 0 {
        said.push(format!(
            "{} lines of exec's output were not event frames",
            run.unreadable_lines
        ));
    }
    if run.answer_cut {
        said.push("the answer was cut at the bound of a run's reply".to_owned());
    }
    if said.is_empty() {
        return None;
    }
    let stderr = run.stderr.text();
    Some(format!("{}; its stderr:\n{stderr}", said.join("; ")))
}
