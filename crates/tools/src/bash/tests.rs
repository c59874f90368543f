//! The `bash` tool's tests: output, captures and their bounds, timeouts, cancellation
//! and the move to the background.

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
        durable: &|| true,
        live_output: None,
        sandbox_read_only: false,
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

/// Waits (bounded) for a killed process to be gone: killing is asynchronous. It is not
/// this test's child, so its end is watched through its pidfd.
fn eventually_gone(pid: i32) -> bool {
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let pidfd = Pid::from_raw(pid).and_then(|pid| pidfd_open(pid, PidfdFlags::empty()).ok());
    if let Some(pidfd) = pidfd {
        crate::process::ended_within(&pidfd, Duration::from_secs(10));
    }
    gone(pid)
}

/// Asserts that the background child whose ID the command wrote to `bg.pid` is gone.
fn assert_background_child_gone(dir: &Path) {
    let pid: i32 = std::fs::read_to_string(dir.join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(eventually_gone(pid), "background child {pid} survived");
}

/// A context whose captures go to `assets`.
fn with_assets<'a>(cwd: &'a Path, assets: &'a Path) -> ToolContext<'a> {
    ToolContext {
        assets_dir: Some(assets),
        ..ctx(cwd, &never)
    }
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
        &with_assets(dir.path(), &assets),
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
        &with_assets(dir.path(), &assets),
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
        &with_assets(dir.path(), &quiet),
    );
    assert_eq!(report.output.content, "(no output)\n[exit code 0]");
    assert!(!quiet.exists());
    // Nor does one that cannot start.
    let (missing, unstarted) = (
        dir.path().join("missing"),
        dir.path().join("tool-calls/call-3"),
    );
    let report = execute(
        &json!({"command": "echo hi"}),
        &with_assets(&missing, &unstarted),
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
        &with_assets(dir.path(), &assets),
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
        &with_assets(dir.path(), &quiet),
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
    assert_background_child_gone(dir.path());
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
    assert_background_child_gone(dir.path());
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
    assert_background_child_gone(dir.path());
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
        &with_assets(dir.path(), &assets),
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
