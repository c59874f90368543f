//! The three tools of background jobs: `async_bash` starts one, `bash_log` reads its
//! output by pages, `bash_kill` stops it.

use magi_protocol::limits::{
    BACKGROUND_JOBS, BASH_LOG_LINES, BASH_LOG_MAX_LINES, PROCESS_CAPTURE_BYTES,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{conclude, insert, jobs};
use crate::diagnostics::process_diagnostics;
use crate::facts::{CommandFacts, Facts};
use crate::process::{End, command_facts, read_bounded, start};
use crate::{ToolContext, ToolDefinition, ToolOutput, ToolReport};

pub(crate) fn start_definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::AsyncBash.name(),
        description: "Start a shell command in the background and return at once with a \
                      job ID. Read its output with bash_log and stop it with bash_kill; \
                      you are told when it ends.",
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "sandbox": crate::sandbox::call_schema()
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn log_definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::BashLog.name(),
        description: "Read a background job's output (stdout and stderr interleaved): \
                      `limit` lines (default 100, at most 500) from line `offset` \
                      (0-based), or the last lines when `offset` is omitted. Says whether \
                      the job still runs and where the next page starts.",
        parameters: json!({
            "type": "object",
            "properties": {
                "job": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": BASH_LOG_MAX_LINES}
            },
            "required": ["job"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn kill_definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::BashKill.name(),
        description: "Stop a background job and everything it started.",
        parameters: json!({
            "type": "object",
            "properties": {"job": {"type": "string"}},
            "required": ["job"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartArguments {
    command: String,
    sandbox: Option<crate::sandbox::CallSandbox>,
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

pub(crate) fn run_start(arguments: &Value, ctx: &ToolContext) -> ToolReport {
    let Ok(args) = StartArguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"command\": string, \"sandbox\"?: \"off\"}.".into(),
        )
        .into();
    };
    let mut facts = command_facts(&args.command, ctx, None, None);
    let mut jobs = jobs();
    if jobs.running() >= BACKGROUND_JOBS {
        let refused = ToolOutput::failed(
            "too many jobs",
            format!("{BACKGROUND_JOBS} background jobs run; stop one with bash_kill first."),
        );
        return ToolReport::with_facts(refused, Facts::Command(Box::new(facts)));
    }
    let policy = match crate::sandbox::prepare(
        ctx.cwd,
        args.sandbox.is_some(),
        ctx.sandbox_read_only,
        &mut facts,
    ) {
        Ok(policy) => policy,
        Err(refused) => {
            return ToolReport::with_facts(refused, Facts::Command(Box::new(facts)));
        }
    };
    let started = match start(
        &args.command,
        ctx,
        PROCESS_CAPTURE_BYTES as u64,
        policy.as_ref(),
    ) {
        Ok(started) => started,
        Err(refused) => {
            return ToolReport::with_facts(refused, Facts::Command(Box::new(facts)));
        }
    };
    let where_kept = if ctx.assets_dir.is_some() {
        format!(" Its output is kept in {}.", started.paths[2].display())
    } else {
        String::new()
    };
    let id = insert(&mut jobs, started, facts.clone(), None, ctx);
    let facts = CommandFacts {
        job_id: Some(id.clone()),
        ..facts
    };
    ToolReport::with_facts(
        ToolOutput {
            content: format!(
                "Started {id}.{where_kept} Read it with bash_log; stop it with bash_kill. \
                 You will be told when it ends."
            ),
            summary: format!("started {id}"),
            is_error: false,
        },
        Facts::Command(Box::new(facts)),
    )
}

pub(crate) fn run_log(arguments: &Value) -> ToolReport {
    let Ok(args) = LogArguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"job\": string, \"offset\"?: integer, \"limit\"?: integer}.".into(),
        )
        .into();
    };
    let jobs = jobs();
    let Some(job) = jobs.all.get(&args.job) else {
        return ToolOutput::failed("unknown job", format!("There is no job {:?}.", args.job))
            .into();
    };
    let state = job.state();
    let path = job.started.paths[2].clone();
    drop(jobs);
    let text = read_bounded(&path, PROCESS_CAPTURE_BYTES as u64);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let limit = args
        .limit
        .unwrap_or(BASH_LOG_LINES)
        .clamp(1, BASH_LOG_MAX_LINES);
    let first = args
        .offset
        .unwrap_or_else(|| total.saturating_sub(limit))
        .min(total);
    let shown = &lines[first..(first + limit).min(total)];
    let end = first + shown.len();
    let range = if shown.is_empty() {
        format!("no lines from {first}")
    } else {
        format!("lines {first}-{}", end - 1)
    };
    let page = shown.join("\n");
    let projection = process_diagnostics(&page);
    let mut content = format!("[{} {state}; {range} of {total} (0-based)]", args.job);
    if !page.is_empty() {
        content.push('\n');
        content.push_str(&projection.text);
    }
    if end < total {
        content.push_str(&format!("\n[next offset: {end}]"));
    }
    if first > 0 || end < total || !projection.inline {
        content.push_str(&format!("\n[full output: {}]", path.display()));
    }
    let facts = Facts::Job {
        job_id: args.job.clone(),
        state: Some(state.clone()),
        first_line: Some(first as u64),
        lines: Some(shown.len() as u64),
        total_lines: Some(total as u64),
    };
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary: format!("{} {state}, {range} of {total}", args.job),
            is_error: false,
        },
        facts,
    )
}

pub(crate) fn run_kill(arguments: &Value) -> ToolReport {
    let Ok(args) = KillArguments::deserialize(arguments) else {
        return ToolOutput::failed("invalid arguments", "Expected {\"job\": string}.".into())
            .into();
    };
    let mut jobs = jobs();
    let Some(job) = jobs.all.get_mut(&args.job) else {
        return ToolOutput::failed("unknown job", format!("There is no job {:?}.", args.job))
            .into();
    };
    let was_running = job.ended.is_none();
    if was_running {
        job.killed = true;
        conclude(job, &End::Cancelled);
    }
    let state = job.state();
    let facts = Facts::Job {
        job_id: args.job.clone(),
        state: Some(state.clone()),
        first_line: None,
        lines: None,
        total_lines: None,
    };
    let (content, summary) = if was_running {
        (
            format!("{}: killed.", args.job),
            format!("{} killed", args.job),
        )
    } else {
        (
            format!("{}: already ended ({state}).", args.job),
            format!("{} already ended", args.job),
        )
    };
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary,
            is_error: false,
        },
        facts,
    )
}
