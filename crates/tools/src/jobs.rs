//! Background commands: `async_bash` starts one and returns at once, `bash_log` reads
//! its captured output, `bash_kill` stops it. Jobs belong to the backend process: they
//! live until they exit, are killed, or the backend ends ([`stop_all`]).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use magi_protocol::limits::{
    BACKGROUND_JOBS, BASH_LOG_LINES, BASH_LOG_MAX_LINES, PROCESS_CAPTURE_BYTES,
};
use nix::sys::signal::{Signal, killpg};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::bash::{Started, read_bounded, start};
use crate::{ToolContext, ToolDefinition, ToolOutput};

struct Job {
    started: Started,
    killed: bool,
}

#[derive(Default)]
struct Jobs {
    next: u64,
    running: BTreeMap<String, Job>,
}

fn jobs() -> MutexGuard<'static, Jobs> {
    static JOBS: OnceLock<Mutex<Jobs>> = OnceLock::new();
    JOBS.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Kills every background job's process group: the backend is ending.
pub fn stop_all() {
    for job in jobs().running.values_mut() {
        let _ = killpg(job.started.group, Signal::SIGKILL);
        let _ = job.started.child.wait();
    }
}

pub(crate) fn definitions() -> [ToolDefinition; 3] {
    [
        ToolDefinition {
            name: "async_bash",
            description: "Start a shell command in the background and return at once with a \
                          job ID. Read its output with bash_log and stop it with bash_kill.",
            parameters: json!({
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
                "additionalProperties": false
            }),
        },
        ToolDefinition {
            name: "bash_log",
            description: "Read a background job's output: `limit` lines (default 100, at most \
                          500) from line `offset` (1-based), or the last lines when `offset` \
                          is omitted; also says whether the job still runs.",
            parameters: json!({
                "type": "object",
                "properties": {
                    "job": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": BASH_LOG_MAX_LINES}
                },
                "required": ["job"],
                "additionalProperties": false
            }),
        },
        ToolDefinition {
            name: "bash_kill",
            description: "Stop a background job and everything it started.",
            parameters: json!({
                "type": "object",
                "properties": {"job": {"type": "string"}},
                "required": ["job"],
                "additionalProperties": false
            }),
        },
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartArguments {
    command: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogArguments {
    job: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArguments {
    job: String,
}

pub(crate) fn run_start(arguments: &Value, ctx: &ToolContext) -> ToolOutput {
    let Ok(args) = StartArguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"command\": string}.".into(),
        );
    };
    let mut jobs = jobs();
    if jobs.running.len() >= BACKGROUND_JOBS {
        return ToolOutput::failed(
            "too many jobs",
            format!("{BACKGROUND_JOBS} background jobs exist; stop one with bash_kill first."),
        );
    }
    let started = match start(&args.command, ctx, PROCESS_CAPTURE_BYTES as u64) {
        Ok(started) => started,
        Err(refused) => return refused,
    };
    jobs.next += 1;
    let id = format!("job-{}", jobs.next);
    let where_kept = if ctx.assets_dir.is_some() {
        format!(" Its output is kept in {}.", started.paths[2].display())
    } else {
        String::new()
    };
    jobs.running.insert(
        id.clone(),
        Job {
            started,
            killed: false,
        },
    );
    ToolOutput {
        content: format!(
            "Started {id}.{where_kept} Read it with bash_log; stop it with bash_kill."
        ),
        summary: format!("started {id}"),
        is_error: false,
    }
}

/// How a job stands now.
fn state(job: &mut Job) -> String {
    if job.killed {
        return "killed".into();
    }
    match job.started.child.try_wait() {
        Ok(None) => "running".into(),
        Ok(Some(status)) => match status.code() {
            Some(code) => format!("exited with code {code}"),
            None => "ended by a signal".into(),
        },
        Err(_) => "unknown".into(),
    }
}

pub(crate) fn run_log(arguments: &Value) -> ToolOutput {
    let Ok(args) = LogArguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"job\": string, \"offset\"?: integer, \"limit\"?: integer}.".into(),
        );
    };
    let mut jobs = jobs();
    let Some(job) = jobs.running.get_mut(&args.job) else {
        return ToolOutput::failed("unknown job", format!("There is no job {:?}.", args.job));
    };
    let state = state(job);
    let text = read_bounded(&job.started.paths[2], PROCESS_CAPTURE_BYTES as u64);
    let lines: Vec<&str> = text.lines().collect();
    let limit = args
        .limit
        .unwrap_or(BASH_LOG_LINES)
        .clamp(1, BASH_LOG_MAX_LINES);
    let first = match args.offset {
        Some(offset) => offset.max(1),
        None => lines.len().saturating_sub(limit) + 1,
    };
    let shown: Vec<&str> = lines.iter().skip(first - 1).take(limit).copied().collect();
    let last = first + shown.len().saturating_sub(1);
    let range = if shown.is_empty() {
        format!("no lines from {first}")
    } else {
        format!("lines {first}-{last}")
    };
    let mut content = format!("[{} {state}; {range} of {}]", args.job, lines.len());
    for line in &shown {
        content.push('\n');
        content.push_str(line);
    }
    ToolOutput {
        content,
        summary: format!("{} {state}, {range} of {}", args.job, lines.len()),
        is_error: false,
    }
}

pub(crate) fn run_kill(arguments: &Value) -> ToolOutput {
    let Ok(args) = KillArguments::deserialize(arguments) else {
        return ToolOutput::failed("invalid arguments", "Expected {\"job\": string}.".into());
    };
    let mut jobs = jobs();
    let Some(job) = jobs.running.get_mut(&args.job) else {
        return ToolOutput::failed("unknown job", format!("There is no job {:?}.", args.job));
    };
    let before = state(job);
    if before == "running" {
        let _ = killpg(job.started.group, Signal::SIGKILL);
        let _ = job.started.child.wait();
        job.killed = true;
    }
    ToolOutput {
        content: format!(
            "{}: {}.",
            args.job,
            if job.killed { "killed" } else { &before }
        ),
        summary: format!(
            "{} {}",
            args.job,
            if job.killed {
                "killed"
            } else {
                "already ended"
            }
        ),
        is_error: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never() -> bool {
        false
    }

    fn job_id(out: &ToolOutput) -> String {
        out.summary.trim_start_matches("started ").to_owned()
    }

    #[test]
    fn a_background_job_is_read_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext {
            cwd: dir.path(),
            assets_dir: Some(&dir.path().join("assets")),
            cancelled: &never,
            hidden_env: &[],
        };
        // The job writes its lines, then signals through a file and keeps running.
        let out = run_start(
            &json!({"command": "for i in $(seq 1 150); do echo line$i; done; touch ready; sleep 30"}),
            &ctx,
        );
        assert!(!out.is_error, "{}", out.content);
        let id = job_id(&out);
        let ready = dir.path().join("ready");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ready.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the job never got ready"
            );
            std::thread::yield_now();
        }
        let tail = run_log(&json!({"job": id}));
        assert!(
            tail.content
                .starts_with(&format!("[{id} running; lines 51-150 of 150]")),
            "{}",
            tail.content
        );
        assert!(tail.content.ends_with("line150"));
        let head = run_log(&json!({"job": id, "offset": 1, "limit": 2}));
        assert_eq!(
            head.content,
            format!("[{id} running; lines 1-2 of 150]\nline1\nline2")
        );
        let killed = run_kill(&json!({"job": id}));
        assert_eq!(killed.summary, format!("{id} killed"));
        assert!(run_log(&json!({"job": id})).content.contains("killed"));
        assert_eq!(run_log(&json!({"job": "job-0"})).summary, "unknown job");
    }
}
