//! Turn benchmark against the loopback mock model answering at once, with the
//! scenarios kept in `magi-testkit` (docs/providers.md): (A) one text reply, (T) one
//! response asking for 10 read-only tool calls then a text reply, (B) the same with 10
//! `bash` calls of `echo hi`, allowed by policy (`exec --allow-all`), which only read
//! and so run side by side, (W) the same with 10 `bash` calls of `echo hi > out.txt`,
//! which write and so run one after another, (S) a reply streamed as 10,000 deltas.
//! Each runs as whole-process `magi-code exec` runs and as turns over `serve --stdio`.
//! For (B) and (W) it also runs the command alone (`bash -c`, started and waited for by
//! this process, in the same directory), and for (B) ten of them started together with
//! no agent around them, the floor of (B)'s tool calls on this machine; for (W) it gives the agent's own time per
//! call: the gap per call less that, over all turns and for the `exec` turns (a fresh
//! process each, whose first command may wait for the kernel probe and the spawn
//! server) and the `serve --stdio` turns (one backend) apart.
//!
//! Scenario A runs twice: with session titles (the default: every `serve --stdio` turn
//! here is a new session's first, so each is followed by a title request the mock
//! answers at once; `exec`, on a loopback server, asks for none) and with `[sessions] titles = "off"`; the
//! turn's terminal should come no later with titles than without.
//!
//! `hooks` runs (B) again with an empty `pre_tool_use` hook (`command = ":"`,
//! docs/hooks.md), the service overhead with and without it (each trivial call then
//! runs the hook: the difference is the hook's cost per call), and the shell's own
//! spawn cost (`bash -c :` started and waited for, nothing else), for comparison.
//!
//! Run with `cargo bench -p magi-cli --bench turns` (append `-- B` for one scenario,
//! `-- hooks` for the hook figures). It prints figures; it asserts nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: failures abort the run, figures go to stdout"
)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use magi_client::BackendCommand;
use magi_testkit::{MockServer, Scenario};
use serde_json::json;
use support::{TURN_METHODS, median, millis, status_kib, stop, timed_turn};

const RUNS: usize = 15;

/// (B)'s command: it only reads, so its calls run side by side.
const READING_COMMAND: &str = "echo hi";

/// (W)'s command: it writes, so each call waits for the one before it.
const WRITING_COMMAND: &str = "echo hi > out.txt";

fn scenarios() -> Vec<(&'static str, Scenario)> {
    vec![
        ("A: one text reply (titles on)", Scenario::Text),
        (
            "T: 10 read-only tool calls, then text",
            Scenario::Tools10 {
                tool: Some("read".into()),
                arguments: "{\"path\":\"bench.txt\"}".into(),
            },
        ),
        (
            "B: 10 bash `echo hi` calls (allowed by policy, side by side), then text",
            Scenario::Tools10 {
                tool: Some("bash".into()),
                arguments: json!({ "command": READING_COMMAND }).to_string(),
            },
        ),
        (
            "W: 10 bash `echo hi > out.txt` calls (allowed by policy, one after another), then text",
            Scenario::Tools10 {
                tool: Some("bash".into()),
                arguments: json!({ "command": WRITING_COMMAND }).to_string(),
            },
        ),
        ("S: 10,000 deltas", Scenario::Deltas10000),
    ]
}

fn command(home: &Path, cwd: &Path, mock: &MockServer) -> BackendCommand {
    // What `exec --allow-all` gives its backend: tools that would ask run at once.
    support::command(home, cwd, mock).env(magi_core::ALLOW_ALL_ENV, "1")
}

/// Whole-process `magi-code exec` runs: wall time from spawn to exit.
async fn exec_runs(home: &Path, cwd: &Path, mock: &MockServer) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_magi-code"))
            .args(["exec", "--allow-all", "Go"])
            .env_clear()
            .env("MC_HOME", home)
            .env("MAGI_PROVIDER", "openai-chat")
            .env("MAGI_MODEL", "bench-model")
            .env("OPENAI_BASE_URL", mock.base_url())
            .current_dir(cwd)
            .output()
            .await
            .unwrap();
        times.push(started.elapsed());
        assert!(output.status.success(), "{output:?}");
    }
    times
}

/// Turns over one `serve --stdio` child: wall time from `turn.start` to `run.finished`,
/// and the child's peak memory.
async fn serve_runs(home: &Path, cwd: &Path, mock: &MockServer) -> (Vec<Duration>, u64) {
    let mut backend = command(home, cwd, mock).spawn().unwrap();
    backend.initialize(&TURN_METHODS).await.unwrap().unwrap();
    let mut times = Vec::new();
    for _ in 0..RUNS {
        // A fresh session per turn keeps every turn the same size.
        times.push(timed_turn(&mut backend, "Go").await);
    }
    let peak = status_kib(backend.pid().unwrap(), "VmHWM:");
    stop(backend).await;
    (times, peak)
}

/// Calls in the service-overhead measurement.
const TRIVIAL_CALLS: usize = 1_000;

/// The tool-call service's own cost: one response asking for 1,000 trivial calls
/// (`bash_log` of a job that does not exist: read-only, fails at once, touches no
/// file), then a text reply, over `serve --stdio`. Every call still gets its records
/// (created in one batch, claimed, settled; the claims of calls that start together
/// and the results of calls that end together share a sync), its activities
/// and its dispatch to a tool thread. Returns the agent gap per call, median of 3.
async fn service_overhead(home: &Path, cwd: &Path) -> Duration {
    let mut per_call = Vec::new();
    for _ in 0..3 {
        let mock = MockServer::start().await;
        let mut reply = magi_testkit::Reply::stream();
        for n in 0..TRIVIAL_CALLS {
            reply = reply.tool_call(format!("t{n}"), "bash_log", ["{\"job\":\"job-0\"}"]);
        }
        mock.enqueue(reply);
        mock.enqueue(magi_testkit::Reply::stream().text(["Done."]));
        let mut backend = command(home, cwd, &mock).spawn().unwrap();
        backend.initialize(&TURN_METHODS).await.unwrap().unwrap();
        timed_turn(&mut backend, "Go").await;
        stop(backend).await;
        per_call.push(mock.gaps()[0] / TRIVIAL_CALLS as u32);
    }
    median(per_call)
}

/// Runs of a plain `bash -c` in the shell-cost measurements.
const SHELL_SPAWNS: usize = 200;

/// The hook figures: (B) with an empty `pre_tool_use` hook, the service overhead with
/// and without it, and the shell's own spawn cost.
async fn hook_figures(root: &Path, home: &Path, cwd: &Path) {
    let home_hook = root.join("home-hook");
    std::fs::create_dir_all(&home_hook).unwrap();
    std::fs::write(
        home_hook.join("settings.toml"),
        "[[hooks.pre_tool_use]]\ncommand = \":\"\n",
    )
    .unwrap();
    let (_, b) = scenarios().swap_remove(2);
    for (label, home) in [("without a hook", home), ("with an empty hook", &home_hook)] {
        let mock = MockServer::start_scenario(b.clone()).await.unwrap();
        let exec = median(exec_runs(home, cwd, &mock).await);
        let (serve, peak) = serve_runs(home, cwd, &mock).await;
        let gaps: Vec<Duration> = mock.gaps().into_iter().step_by(2).collect();
        println!(
            "  B {label}: exec {:.1} ms; over serve --stdio {:.1} ms; agent gap per bash call {:.3} ms; peak backend memory {:.1} MiB",
            millis(exec),
            millis(median(serve)),
            millis(median(gaps) / 10),
            peak as f64 / 1024.0
        );
    }
    let without = service_overhead(home, cwd).await;
    let with = service_overhead(&home_hook, cwd).await;
    let alone = plain_shell(":", cwd);
    println!(
        "  trivial calls: {:.3} ms per call without a hook, {:.3} ms with an empty pre_tool_use hook: the hook costs {:.3} ms per call; `bash -c :` alone (median of {SHELL_SPAWNS}) {:.3} ms",
        millis(without),
        millis(with),
        millis(with.saturating_sub(without)),
        millis(alone)
    );
}

/// A shell command run the plainest way, by this process: `bash -c script` started in
/// `cwd`, its output read through a pipe to the end, waited for. Median of
/// [`SHELL_SPAWNS`].
fn plain_shell(script: &str, cwd: &Path) -> Duration {
    let mut runs = Vec::new();
    for _ in 0..SHELL_SPAWNS {
        let started = Instant::now();
        let output = std::process::Command::new("bash")
            .args(["-c", script])
            .current_dir(cwd)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        runs.push(started.elapsed());
        assert!(output.status.success());
    }
    median(runs)
}

/// The wall time of `script` run as ten `bash -c` processes started together and
/// waited for (the processes (B)'s calls start, with no agent around them: its floor on
/// this machine), median of [`RUNS`] rounds.
fn plain_shells_side_by_side(script: &str, cwd: &Path) -> Duration {
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let children: Vec<std::process::Child> = (0..10)
            .map(|_| {
                std::process::Command::new("bash")
                    .args(["-c", script])
                    .current_dir(cwd)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        runs.push(started.elapsed());
    }
    median(runs)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let cwd = root.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("bench.txt"), "line\n".repeat(200)).unwrap();

    println!("magi-code turn benchmark (mock model answering at once; median of {RUNS})");
    // `cargo bench -p magi-cli --bench turns -- B` runs the scenarios whose name starts
    // with one of the given letters.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if only.is_empty() || only.iter().any(|o| o == "overhead") {
        println!(
            "  service overhead, {TRIVIAL_CALLS} trivial calls in one response: {:.3} ms per call",
            millis(service_overhead(&home, &cwd).await)
        );
    }
    for (name, scenario) in scenarios() {
        if !only.is_empty() && !only.iter().any(|o| name.starts_with(o.as_str())) {
            continue;
        }
        let tools = matches!(scenario, Scenario::Tools10 { .. });
        let mock = MockServer::start_scenario(scenario).await.unwrap();
        let exec = median(exec_runs(&home, &cwd, &mock).await);
        let (serve, peak) = serve_runs(&home, &cwd, &mock).await;
        println!(
            "  {name}: exec {:.1} ms; over serve --stdio {:.1} ms; peak backend memory {:.1} MiB",
            millis(exec),
            millis(median(serve)),
            peak as f64 / 1024.0
        );
        if tools {
            // Each turn makes two requests; the gap before the second holds the ten
            // tool calls, the gap before the next turn's first is the client's.
            let gaps: Vec<Duration> = mock.gaps().into_iter().step_by(2).collect();
            // The `exec` runs came first, each a process of its own (its first command
            // waits for the kernel probe and the spawn server if they are not ready);
            // the `serve --stdio` turns share one backend.
            let (fresh, warm) = gaps.split_at(RUNS.min(gaps.len()));
            let (fresh, warm) = (median(fresh.to_vec()) / 10, median(warm.to_vec()) / 10);
            let per_call = median(gaps) / 10;
            println!(
                "     agent gap per tool call (end of the model response to the next request, on the mock's clock): {:.3} ms (exec turns {:.3} ms, serve --stdio turns {:.3} ms)",
                millis(per_call),
                millis(fresh),
                millis(warm)
            );
            // Measured now, beside the gaps, as the machine is now.
            if name.starts_with('B') {
                let alone = plain_shell(READING_COMMAND, &cwd);
                let together = plain_shells_side_by_side(READING_COMMAND, &cwd);
                println!(
                    "     the command alone (`bash -c '{READING_COMMAND}'` run by this benchmark, median of {SHELL_SPAWNS}): {:.3} ms; ten of them started together and waited for, no agent (median of {RUNS}): {:.1} ms (the calls run side by side)",
                    millis(alone),
                    millis(together)
                );
            }
            if name.starts_with('W') {
                let alone = plain_shell(WRITING_COMMAND, &cwd);
                println!(
                    "     the command alone (`bash -c '{WRITING_COMMAND}'` run by this benchmark, median of {SHELL_SPAWNS}): {:.3} ms; the agent's own time per call (the gap less the command): {:.3} ms (exec turns {:.3} ms, serve --stdio turns {:.3} ms)",
                    millis(alone),
                    millis(per_call.saturating_sub(alone)),
                    millis(fresh.saturating_sub(alone)),
                    millis(warm.saturating_sub(alone))
                );
            }
        }
    }
    if only.is_empty() || only.iter().any(|o| o == "hooks") {
        hook_figures(root.path(), &home, &cwd).await;
    }
    if only.is_empty() || only.iter().any(|o| o.starts_with('A')) {
        // The same turns with titles off: their own home, whose settings say so.
        let home_off = root.path().join("home-titles-off");
        std::fs::create_dir_all(&home_off).unwrap();
        std::fs::write(
            home_off.join("settings.toml"),
            "[sessions]\ntitles = \"off\"\n",
        )
        .unwrap();
        let mock = MockServer::start_scenario(Scenario::Text).await.unwrap();
        let exec = median(exec_runs(&home_off, &cwd, &mock).await);
        let (serve, peak) = serve_runs(&home_off, &cwd, &mock).await;
        println!(
            "  A: one text reply (titles off): exec {:.1} ms; over serve --stdio {:.1} ms; peak backend memory {:.1} MiB",
            millis(exec),
            millis(median(serve)),
            peak as f64 / 1024.0
        );
    }
}
