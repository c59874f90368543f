//! `bash`: run a shell command in the foreground, with a timeout, in its own process
//! group so that a timeout or a cancellation kills everything it started. Its stdout,
//! stderr and both interleaved are captured to files, each bounded, and the model is
//! given the `process_diagnostics` projection of the interleaved capture and a status.
//! It changes the workspace, so the runner asks before it runs unless a rule allows it.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use magi_protocol::limits::{
    BASH_BACKGROUND_AFTER_MS, BASH_TOOL_MAX_TIMEOUT_MS, BASH_TOOL_TIMEOUT_MS, PROCESS_CAPTURE_BYTES,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::diagnostics::process_diagnostics;
use crate::facts::{CommandFacts, Facts};
use crate::process::{
    End, Kept, capture_digests, capture_notes, command_facts, read_bounded, record_end, start, wait,
};
use crate::{ToolContext, ToolDefinition, ToolOutput, ToolReport};

mod reads;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    command: String,
    timeout_ms: Option<u64>,
    background_after_ms: Option<u64>,
    sandbox: Option<crate::sandbox::CallSandbox>,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::Bash.name(),
        description: "Run a command with `bash -c` in the working directory and wait for it. \
                      It is killed, with everything it started, after `timeout_ms` \
                      (default 120000, maximum 600000); processes it leaves in the \
                      background are killed when it ends. Output (stdout and stderr \
                      interleaved) is shown whole up to 84 lines and 12 KB, otherwise as a \
                      summary of its first, last and error-like lines. Each stream is \
                      captured up to 16 MiB. A command still running after \
                      `background_after_ms` (default 60000) moves to the background as a \
                      job: read it with bash_log, stop it with bash_kill; its timeout still \
                      applies and you are told when it ends.",
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": BASH_TOOL_MAX_TIMEOUT_MS,
                    "description": "Milliseconds before the command is killed."
                },
                "background_after_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": BASH_TOOL_MAX_TIMEOUT_MS,
                    "description": "Milliseconds before a command still running moves to \
                                    the background."
                },
                "sandbox": crate::sandbox::call_schema()
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

/// Whether a `bash` call (its arguments as JSON text) only reads: arguments that are
/// not a valid call never do.
pub(crate) fn only_reads(arguments: &str) -> bool {
    serde_json::from_str::<Arguments>(arguments).is_ok_and(|args| reads::only_reads(&args.command))
}

#[cfg(test)]
pub(crate) fn run(arguments: &Value, ctx: &ToolContext) -> ToolOutput {
    execute(arguments, ctx).output
}

/// Runs a `bash` call and reports it with its facts.
pub(crate) fn execute(arguments: &Value, ctx: &ToolContext) -> ToolReport {
    let args = match Arguments::deserialize(arguments) {
        Ok(args) => args,
        Err(e) => return invalid(&e.to_string()).into(),
    };
    let timeout_ms = args.timeout_ms.unwrap_or(BASH_TOOL_TIMEOUT_MS);
    if !(1..=BASH_TOOL_MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return invalid(&format!(
            "timeout_ms must be from 1 to {BASH_TOOL_MAX_TIMEOUT_MS}, not {timeout_ms}"
        ))
        .into();
    }
    let background_after_ms = args.background_after_ms.unwrap_or(BASH_BACKGROUND_AFTER_MS);
    if !(1..=BASH_TOOL_MAX_TIMEOUT_MS).contains(&background_after_ms) {
        return invalid(&format!(
            "background_after_ms must be from 1 to {BASH_TOOL_MAX_TIMEOUT_MS}, not \
             {background_after_ms}"
        ))
        .into();
    }
    let invocation = Invocation {
        command: &args.command,
        timeout_ms,
        timeout_argument: args.timeout_ms,
        background_after_ms: Some(background_after_ms),
        unconfined: args.sandbox.is_some(),
    };
    execute_command(&invocation, ctx, PROCESS_CAPTURE_BYTES as u64)
}

/// The facts of a `bash` call whose command runs: what runs, where and with what
/// timeout, and the static reading of its command line (its end, captures and
/// execution notices are not known yet). `None` for arguments it would refuse.
pub fn running_facts(arguments: &str, cwd: &std::path::Path) -> Option<Facts> {
    let value: Value = serde_json::from_str(arguments).ok()?;
    let args = Arguments::deserialize(&value).ok()?;
    let timeout_ms = args.timeout_ms.unwrap_or(BASH_TOOL_TIMEOUT_MS);
    let facts =
        crate::process::command_facts_in(&args.command, cwd, args.timeout_ms, Some(timeout_ms));
    Some(Facts::Command(Box::new(facts)))
}

/// One foreground command, as asked for.
pub(crate) struct Invocation<'a> {
    pub(crate) command: &'a str,
    /// The timeout that applies.
    pub(crate) timeout_ms: u64,
    /// The timeout the call gave, if it gave one.
    pub(crate) timeout_argument: Option<u64>,
    /// When a command still running moves to the background; never when none.
    pub(crate) background_after_ms: Option<u64>,
    /// The call asked to run outside the sandbox (`"sandbox": "off"`).
    pub(crate) unconfined: bool,
}

fn invalid(why: &str) -> ToolOutput {
    ToolOutput::failed(
        "invalid arguments",
        format!(
            "Expected {{\"command\": string, \"timeout_ms\"?: integer, \
             \"background_after_ms\"?: integer, \"sandbox\"?: \"off\"}}: {why}."
        ),
    )
}

/// Runs `command`, keeping at most `capture_bytes` of each captured file; the bound is a
/// parameter so tests can reach it without writing 16 MiB.
#[cfg(test)]
pub(crate) fn run_command(
    command: &str,
    timeout_ms: u64,
    ctx: &ToolContext,
    capture_bytes: u64,
) -> ToolOutput {
    let invocation = Invocation {
        command,
        timeout_ms,
        timeout_argument: Some(timeout_ms),
        background_after_ms: None,
        unconfined: false,
    };
    execute_command(&invocation, ctx, capture_bytes).output
}

/// Runs a foreground command to its end, or until it moves to the background.
pub(crate) fn execute_command(
    invocation: &Invocation,
    ctx: &ToolContext,
    capture_bytes: u64,
) -> ToolReport {
    let mut facts = command_facts(
        invocation.command,
        ctx,
        invocation.timeout_argument,
        Some(invocation.timeout_ms),
    );
    let policy = match crate::sandbox::prepare(
        ctx.cwd,
        invocation.unconfined,
        ctx.sandbox_read_only,
        &mut facts,
    ) {
        Ok(policy) => policy,
        Err(refused) => return ToolReport::with_facts(refused, Facts::Command(Box::new(facts))),
    };
    let mut started = match start(invocation.command, ctx, capture_bytes, policy.as_ref()) {
        Ok(started) => started,
        Err(refused) => return ToolReport::with_facts(refused, Facts::Command(Box::new(facts))),
    };
    let began = Instant::now();
    let timeout = Duration::from_millis(invocation.timeout_ms);
    let background_after = invocation
        .background_after_ms
        .map(Duration::from_millis)
        .filter(|after| *after < timeout);
    let mut end = wait(&mut started, timeout, background_after, ctx.cancelled);
    if let End::Background = end {
        let so_far = read_bounded(&started.paths[2], capture_bytes);
        let paths = ctx.assets_dir.map(|_| started.paths.clone());
        let sandbox = facts.sandbox.as_deref();
        match crate::jobs::adopt(started, invocation.command, sandbox, began + timeout, ctx) {
            Ok(job_id) => {
                facts.job_id = Some(job_id.clone());
                return backgrounded(&job_id, &so_far, paths.as_ref(), facts);
            }
            // No room for another job: it stays in the foreground until its timeout.
            Err(kept) => {
                started = *kept;
                let left = timeout.saturating_sub(began.elapsed());
                end = wait(&mut started, left, None, ctx.cancelled);
            }
        }
    }
    let (kept, drained) = started.finish(matches!(end, End::Exited(_)));
    let text = read_bounded(&started.paths[2], capture_bytes);
    record_end(&mut facts, &end, &kept, drained, &started);
    if ctx.assets_dir.is_some() {
        facts.captures = capture_digests(&started.paths, &kept);
    }
    let mut output = report(
        &end,
        invocation.timeout_ms,
        &text,
        kept,
        drained,
        ctx.assets_dir.map(|_| &started.paths),
    );
    if output.is_error
        && let Some(applied) = &facts.sandbox
        && let Some(hint) =
            crate::sandbox::denial_hint(applied, &read_bounded(&started.paths[1], capture_bytes))
    {
        output.content.push('\n');
        output.content.push_str(&hint);
    }
    ToolReport {
        cancelled: matches!(end, End::Cancelled),
        ..ToolReport::with_facts(output, Facts::Command(Box::new(facts)))
    }
}

/// The report of a command that moved to the background as `job_id`.
fn backgrounded(
    job_id: &str,
    so_far: &str,
    paths: Option<&[PathBuf; 3]>,
    facts: CommandFacts,
) -> ToolReport {
    let projection = process_diagnostics(so_far);
    let mut content = if so_far.is_empty() {
        "(no output yet)\n".to_owned()
    } else {
        let mut text = projection.text;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text
    };
    content.push_str(&format!(
        "[still running; moved to the background as {job_id}: read its output with \
         bash_log, stop it with bash_kill; you will be told when it ends]"
    ));
    if let Some([_, _, output]) = paths {
        content.push_str(&format!("\n[output so far: {}]", output.display()));
    }
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary: format!("moved to the background as {job_id}"),
            is_error: false,
        },
        Facts::Command(Box::new(facts)),
    )
}

/// `120 s`, or `200 ms` when not whole seconds.
fn duration_label(ms: u64) -> String {
    if ms.is_multiple_of(1_000) {
        format!("{} s", ms / 1_000)
    } else {
        format!("{ms} ms")
    }
}

/// The lines that say what the captures lost: bytes past the bound or unwritable, a
/// capture file that could not be created, output a process outside the group kept
/// The output of the call: the projection, then status lines.
fn report(
    end: &End,
    timeout_ms: u64,
    text: &str,
    kept: [Kept; 3],
    drained: bool,
    paths: Option<&[PathBuf; 3]>,
) -> ToolOutput {
    let (mut summary, status, is_error) = match end {
        End::Exited(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (
                format!("exit {code}"),
                format!("exit code {code}"),
                code != 0,
            ),
            (None, Some(signal)) => (
                format!("killed by signal {signal}"),
                format!("killed by signal {signal}"),
                true,
            ),
            (None, None) => (
                "ended".to_owned(),
                "ended without a status".to_owned(),
                true,
            ),
        },
        End::TimedOut => {
            let after = duration_label(timeout_ms);
            (
                format!("timed out after {after}"),
                format!("timed out after {after}; the process group was killed"),
                true,
            )
        }
        End::Cancelled => (
            "cancelled".to_owned(),
            "cancelled; the process group was killed".to_owned(),
            true,
        ),
        End::Background => (
            "moved to the background".to_owned(),
            "moved to the background".to_owned(),
            false,
        ),
    };
    let projection = process_diagnostics(text);
    let mut content = if text.is_empty() {
        "(no output)".to_owned()
    } else {
        projection.text
    };
    if !content.ends_with('\n') {
        content.push('\n');
    }
    content.push_str(&format!("[{status}]"));
    let truncated = !drained || kept.iter().any(|k| k.dropped > 0);
    for note in capture_notes(&kept, drained) {
        content.push('\n');
        content.push_str(&note);
    }
    if !projection.inline {
        match paths {
            Some([stdout, stderr, output]) => {
                // A stream that wrote nothing has no file to point at.
                let streams: Vec<String> = [(stdout, &kept[0]), (stderr, &kept[1])]
                    .into_iter()
                    .filter(|(_, kept)| kept.written > 0)
                    .map(|(path, _)| path.display().to_string())
                    .collect();
                let files = match streams.as_slice() {
                    [] => String::new(),
                    [one] => format!(" and {one}"),
                    [first, second, ..] => format!(", {first} and {second}"),
                };
                content.push_str(&format!(
                    "\n[full output: {} (interleaved){files}; use read or grep]",
                    output.display()
                ));
            }
            None => content.push_str("\n[the full output was not kept]"),
        }
    }
    if truncated {
        summary.push_str(", output truncated");
    }
    ToolOutput {
        content,
        summary,
        is_error,
    }
}

#[cfg(test)]
mod tests;
