//! `magi-eval`: runs the eval suite (docs/eval.md) against the configured provider, or
//! with `--mock` against the loopback mock playing each task's scripted solution, and
//! prints a table of the results; `--json FILE` writes them as JSON too.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use magi_eval::runner::{Config, Model};
use magi_eval::{report, tasks};
use magi_protocol::limits::EVAL_TASK_MS;

/// The variable naming the `magi-code` binary to run, when `--magi-code` does not.
const MAGI_CODE_ENV: &str = "MAGI_CODE";

/// Runs magi-code on small generated repositories and checks what it did.
#[derive(Debug, Parser)]
#[command(name = "magi-eval", version)]
struct Args {
    /// Play each task's scripted solution with the loopback mock model instead of
    /// asking a provider (offline; proves the harness).
    #[arg(long, conflicts_with_all = ["provider", "model", "effort", "settings"])]
    mock: bool,
    /// Only the tasks whose name contains one of these comma-separated words, or whose
    /// language is one of them (rust, python, javascript, shell).
    #[arg(long, value_name = "FILTER", default_value = "")]
    tasks: String,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// The magi-code binary; default: $MAGI_CODE, else the magi-code beside magi-eval.
    #[arg(long, value_name = "PATH")]
    magi_code: Option<PathBuf>,
    /// Longest one task's run may take, in seconds; then it is stopped as Ctrl-C would.
    #[arg(long, value_name = "SECS", default_value_t = EVAL_TASK_MS / 1000)]
    timeout: u64,
    /// The provider for every run (`exec --provider`).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// The model for every run (`exec --model`).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// The reasoning effort for every run (`exec --effort`).
    #[arg(long, value_name = "EFFORT")]
    effort: Option<String>,
    /// A settings file every run reads as its global settings (each run has a
    /// throwaway MC_HOME: your own settings, instructions and sessions are not used).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Only run each check on its untouched repository, where it must fail.
    #[arg(long, conflicts_with = "json")]
    baseline: bool,
    /// List the tasks and exit.
    #[arg(long)]
    list: bool,
    /// Keep the repositories and MC_HOMEs of the run, and say where they are.
    #[arg(long)]
    keep: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("magi-eval: cannot start its runtime: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("magi-eval: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs what `args` ask; true when every task passed (or every check failed untouched).
async fn run(args: Args) -> anyhow::Result<bool> {
    let tasks = tasks::select(&args.tasks);
    if tasks.is_empty() {
        bail!(
            "no task matches --tasks {:?} (magi-eval --list shows them)",
            args.tasks
        );
    }
    if args.list {
        print(&report::list(&tasks))?;
        return Ok(true);
    }
    if let Some(settings) = &args.settings
        && !settings.is_file()
    {
        bail!("the settings file {} does not exist", settings.display());
    }
    let scratch = tempfile::Builder::new()
        .prefix("magi-eval-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let outcome = if args.baseline {
        let mut baselines = Vec::new();
        for task in &tasks {
            baselines.push(magi_eval::baseline(task, scratch.path()).await);
        }
        print(&report::baselines(&baselines))?;
        Ok(baselines.iter().all(|b| b.failed))
    } else {
        suite(&args, &tasks, scratch.path()).await
    };
    if args.keep {
        eprintln!("magi-eval: kept {}", scratch.keep().display());
    }
    outcome
}

async fn suite(
    args: &Args,
    tasks: &[magi_eval::Task],
    scratch: &std::path::Path,
) -> anyhow::Result<bool> {
    let magi_code = magi_code(args)?;
    let model = if args.mock {
        Model::Mock
    } else {
        let mut exec_args = Vec::new();
        for (flag, value) in [
            ("--provider", &args.provider),
            ("--model", &args.model),
            ("--effort", &args.effort),
        ] {
            if let Some(value) = value {
                exec_args.extend([flag.to_owned(), value.clone()]);
            }
        }
        Model::Configured(exec_args)
    };
    let config = Config {
        magi_code,
        model,
        bound: Duration::from_secs(args.timeout),
        settings: args.settings.clone(),
    };
    let total = tasks.len();
    let mut done = 0;
    let report = magi_eval::run_suite(tasks, &config, scratch, |task| {
        done += 1;
        let result = if task.passed { "passed" } else { "FAILED" };
        eprintln!(
            "[{done}/{total}] {} {result} ({})",
            task.task,
            report::seconds(task.wall_ms)
        );
    })
    .await;
    print(&report::table(&report))?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(report.passed == report.tasks.len())
}

/// The binary to run: `--magi-code`, else `$MAGI_CODE`, else `magi-code` beside this one.
fn magi_code(args: &Args) -> anyhow::Result<PathBuf> {
    let path = match (&args.magi_code, std::env::var_os(MAGI_CODE_ENV)) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) => PathBuf::from(path),
        (None, None) => std::env::current_exe()
            .context("cannot tell where magi-eval is")?
            .with_file_name("magi-code"),
    };
    if !path.is_file() {
        bail!(
            "there is no magi-code binary at {} (build it, or name it with --magi-code or \
             {MAGI_CODE_ENV})",
            path.display()
        );
    }
    Ok(path)
}

/// Writes `text` to stdout.
fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
