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
    let policy = match crate::sandbox::prepare(ctx.cwd, invocation.unconfined, &mut facts) {
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
    record_end(&mut facts, &end, &kept, drained, &started, capture_bytes);
    if ctx.assets_dir.is_some() {
        facts.captures = capture_digests(&started.paths);
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
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use std::path::Path;

    use super::*;

    fn never() -> bool {
        false
    }

    fn ctx<'a>(cwd: &'a Path, cancelled: &'a (dyn Fn() -> bool + Sync)) -> ToolContext<'a> {
        ToolContext {
            cwd,
            assets_dir: None,
            cancelled,
            hidden_env: &[],
        }
    }

    fn bash(cwd: &Path, command: &str, timeout_ms: u64) -> ToolOutput {
        run(
            &json!({"command": command, "timeout_ms": timeout_ms}),
            &ctx(cwd, &never),
        )
    }

    /// Whether a process is gone: no entry, or a zombie waiting for its parent.
    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        }
    }

    /// Waits at most a second for a killed process to be gone; killing is asynchronous.
    fn eventually_gone(pid: i32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if gone(pid) {
                return true;
            }
            std::thread::yield_now();
        }
        gone(pid)
    }

    #[test]
    fn hidden_variables_never_reach_the_command() {
        let dir = tempfile::tempdir().unwrap();
        // HOME is set in the test process; hiding it shows the mechanism without
        // touching this process's environment (bash does not invent a HOME).
        assert!(std::env::var_os("HOME").is_some());
        let hidden = ["HOME".to_owned()];
        let mut context = ctx(dir.path(), &never);
        context.hidden_env = &hidden;
        let args = json!({"command": "echo \"[${HOME:-}]\""});
        let out = run(&args, &context);
        assert!(out.content.contains("[]"), "{}", out.content);
    }

    #[test]
    fn reports_exit_code_and_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "hello\n").unwrap();
        let out = bash(dir.path(), "cat f.txt", 5_000);
        assert!(!out.is_error);
        assert_eq!(out.summary, "exit 0");
        assert_eq!(out.content, "hello\n[exit code 0]");
        let out = bash(dir.path(), "echo oops; exit 2", 5_000);
        assert!(out.is_error);
        assert_eq!(out.summary, "exit 2");
        assert_eq!(out.content, "oops\n[exit code 2]");
        let out = bash(dir.path(), "true", 5_000);
        assert_eq!(out.content, "(no output)\n[exit code 0]");
        let out = bash(dir.path(), "kill -9 $$", 5_000);
        assert!(out.is_error);
        assert_eq!(out.summary, "killed by signal 9");
    }

    #[test]
    fn stderr_is_captured_separately_and_interleaved() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("assets/call-1");
        let out = run(
            &json!({"command": "echo one; echo two >&2; echo three"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert_eq!(out.summary, "exit 0");
        assert!(out.content.contains("two"));
        let read = |name: &str| std::fs::read_to_string(assets.join(name)).unwrap();
        assert_eq!(read("stdout.txt"), "one\nthree\n");
        assert_eq!(read("stderr.txt"), "two\n");
        // Chunks of the two streams interleave in arrival order, each kept whole.
        let mut output: Vec<String> = read("output.txt").lines().map(str::to_owned).collect();
        output.sort();
        assert_eq!(output, ["one", "three", "two"]);
        // Inline output names no file.
        assert!(!out.content.contains("stdout.txt"));
    }

    #[test]
    fn a_stream_that_stays_empty_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("tool-calls/call-1");
        let report = execute(
            &json!({"command": "echo hi"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert_eq!(report.output.content, "hi\n[exit code 0]");
        let mut files: Vec<String> = std::fs::read_dir(&assets)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files, ["output.txt", "stdout.txt"]);
        let Some(Facts::Command(facts)) = report.facts else {
            panic!("a command's facts");
        };
        assert_eq!((facts.stdout_lines, facts.stderr_lines), (Some(1), Some(0)));
        let digested: Vec<&str> = facts.captures.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(digested, ["stdout.txt", "output.txt"]);
        // A command with no output at all makes no directory either.
        let quiet = dir.path().join("tool-calls/call-2");
        let report = execute(
            &json!({"command": "true"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&quiet),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert_eq!(report.output.content, "(no output)\n[exit code 0]");
        assert!(!quiet.exists());
        // Nor does one that cannot start, though its files were made as it started.
        let unstarted = dir.path().join("tool-calls/call-3");
        let report = execute(
            &json!({"command": "echo hi"}),
            &ToolContext {
                cwd: &dir.path().join("missing"),
                assets_dir: Some(&unstarted),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert_eq!(report.output.summary, "cannot start the command");
        assert!(!unstarted.exists());
    }

    #[test]
    fn long_output_is_summarized_with_the_capture_paths() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("assets");
        let command = "for i in $(seq 1 200); do echo line $i; done; echo 'error: boom' >&2; \
                       exit 1";
        let out = run(
            &json!({"command": command}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert!(out.is_error);
        assert_eq!(out.summary, "exit 1");
        assert!(out.content.contains("lines omitted"));
        assert!(out.content.contains("error: boom"));
        assert!(
            out.content
                .contains(&assets.join("output.txt").display().to_string())
        );
        assert!(out.content.ends_with(&format!(
            ", {} and {}; use read or grep]",
            assets.join("stdout.txt").display(),
            assets.join("stderr.txt").display()
        )));
        // A stream that wrote nothing is not named.
        let quiet = dir.path().join("quiet");
        let out = run(
            &json!({"command": "seq 1 200"}),
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&quiet),
                cancelled: &never,
                hidden_env: &[],
            },
        );
        assert!(out.content.ends_with(&format!(
            "[full output: {} (interleaved) and {}; use read or grep]",
            quiet.join("output.txt").display(),
            quiet.join("stdout.txt").display()
        )));
        // Without an assets directory nothing is left behind to point at.
        let out = bash(dir.path(), command, 5_000);
        assert!(out.content.ends_with("[the full output was not kept]"));
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = bash(dir.path(), "sleep 30 & echo $! > bg.pid; sleep 30", 200);
        // Well before the sleeps end: nothing waited for them.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(out.is_error);
        assert_eq!(out.summary, "timed out after 200 ms");
        assert!(
            out.content
                .contains("[timed out after 200 ms; the process group was killed]")
        );
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(eventually_gone(pid), "background child {pid} survived");
    }

    #[test]
    fn background_children_do_not_outlive_a_finished_command() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let out = bash(dir.path(), "sleep 30 & echo $! > bg.pid; echo done", 5_000);
        // Well before the background sleep ends: nothing waited for it.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(out.summary, "exit 0");
        assert_eq!(out.content, "done\n[exit code 0]");
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(eventually_gone(pid), "background child {pid} survived");
    }

    #[test]
    fn cancellation_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("started");
        // Cancelled once the command says it started, so no timing is guessed.
        let seen = AtomicBool::new(false);
        let cancelled = || {
            let started = marker.exists();
            seen.store(started, Ordering::Relaxed);
            started
        };
        let started = Instant::now();
        let out = run(
            &json!({"command": "sleep 30 & echo $! > bg.pid; touch started; sleep 30"}),
            &ctx(dir.path(), &cancelled),
        );
        // Well before the sleeps end: nothing waited for them.
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(seen.load(Ordering::Relaxed));
        assert!(out.is_error);
        assert_eq!(out.summary, "cancelled");
        let pid: i32 = std::fs::read_to_string(dir.path().join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(eventually_gone(pid), "background child {pid} survived");
    }

    /// Runs `command` until it has touched `started`, then cancels it; says what the
    /// call's facts record as the signal that ended it.
    fn cancel_once_started(dir: &Path, command: &str) -> (ToolOutput, Option<String>) {
        let marker = dir.join("started");
        let cancelled = || marker.exists();
        let report = execute(&json!({"command": command}), &ctx(dir, &cancelled));
        let Some(Facts::Command(facts)) = report.facts else {
            panic!("a command's facts");
        };
        (report.output, facts.signal)
    }

    #[test]
    fn cancellation_asks_with_sigterm_first() {
        let dir = tempfile::tempdir().unwrap();
        // The trap writes where the command can tell it was asked to stop, and stops.
        let (out, signal) = cancel_once_started(
            dir.path(),
            "trap 'echo asked > termed; exit 3' TERM; touch started; \
             while :; do sleep 0.05; done",
        );
        assert_eq!(out.summary, "cancelled");
        assert_eq!(signal.as_deref(), Some("SIGTERM"));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("termed")).unwrap(),
            "asked\n"
        );
    }

    #[test]
    fn a_command_that_ignores_sigterm_is_killed_after_the_grace_period() {
        let dir = tempfile::tempdir().unwrap();
        let (out, signal) = cancel_once_started(
            dir.path(),
            "trap '' TERM; touch started; while :; do sleep 0.05; done",
        );
        assert_eq!(out.summary, "cancelled");
        assert_eq!(signal.as_deref(), Some("SIGKILL"));
    }

    #[test]
    fn captures_past_the_bound_are_counted_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let assets = dir.path().join("assets");
        let out = run_command(
            "head -c 5000 /dev/zero | tr '\\0' a; echo; echo err >&2",
            5_000,
            &ToolContext {
                cwd: dir.path(),
                assets_dir: Some(&assets),
                cancelled: &never,
                hidden_env: &[],
            },
            1_000,
        );
        assert_eq!(out.summary, "exit 0, output truncated");
        assert!(!out.is_error);
        assert!(
            out.content
                .contains("[stdout capture cut: 1000 bytes kept, 4001 more")
        );
        assert!(
            out.content
                .contains("[output capture cut: 1000 bytes kept, ")
        );
        assert!(!out.content.contains("[stderr capture cut"));
        assert_eq!(
            std::fs::metadata(assets.join("stdout.txt")).unwrap().len(),
            1_000
        );
        assert_eq!(
            std::fs::read_to_string(assets.join("stderr.txt")).unwrap(),
            "err\n"
        );
        assert_eq!(PROCESS_CAPTURE_BYTES, 16 * 1024 * 1024);
    }

    #[test]
    fn a_flood_past_16_mib_is_cut_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        // Lines of a realistic length; debug builds scan one-byte lines slowly.
        let out = bash(
            dir.path(),
            "yes 'Compiling some-crate v1.2.3 (/work/some/path)' | head -c 20971520",
            10_000,
        );
        assert_eq!(out.summary, "exit 0, output truncated");
        let dropped = 20_971_520 - PROCESS_CAPTURE_BYTES;
        assert!(out.content.contains(&format!(
            "[stdout capture cut: {PROCESS_CAPTURE_BYTES} bytes kept, {dropped} more"
        )));
        assert!(out.content.contains("[the full output was not kept]"));
    }

    #[test]
    fn refuses_bad_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path(), &never);
        for arguments in [
            json!({}),
            json!({"command": 1}),
            json!({"command": "true", "timeout_ms": 0}),
            json!({"command": "true", "timeout_ms": BASH_TOOL_MAX_TIMEOUT_MS + 1}),
            json!({"command": "true", "timeout_ms": -5}),
            json!({"command": "true", "extra": 1}),
        ] {
            let out = run(&arguments, &c);
            assert!(out.is_error, "{arguments}");
            assert_eq!(out.summary, "invalid arguments");
        }
    }
}
