//! The cost of the sandbox per command: a `bash` call running `echo` through the real
//! launcher (`magi-code __launch`, this package's binary) in a workspace with a `.git`,
//! under `[sandbox] mode = "workspace-write"` (its `.git` made read-only by a mount in
//! namespaces of the launcher's own), the same with `network = "loopback"` (a network
//! namespace too), the same with `git_writable = true` (no namespaces), and `mode =
//! "off"`, 1,000 calls each, interleaved so all see the same machine. Run with `cargo bench -p magi-cli --bench sandbox`; it prints the figures
//! and asserts nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use magi_config::{SandboxMode, SandboxNetwork, SandboxSettings};

const CALLS: usize = 1_000;
const WARMUP: usize = 20;

fn main() {
    magi_tools::launcher::enable(PathBuf::from(env!("CARGO_BIN_EXE_magi-code"))).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let cwd = workspace.path().canonicalize().unwrap();
    std::fs::create_dir(cwd.join(".git")).unwrap();
    let setting = |mode, git_writable| SandboxSettings {
        mode,
        git_writable,
        ..SandboxSettings::default()
    };
    let loopback = SandboxSettings {
        network: SandboxNetwork::Loopback,
        ..setting(SandboxMode::WorkspaceWrite, false)
    };
    let modes = [
        ("off", setting(SandboxMode::Off, false)),
        (
            "workspace-write, git_writable",
            setting(SandboxMode::WorkspaceWrite, true),
        ),
        (
            "workspace-write, .git read-only",
            setting(SandboxMode::WorkspaceWrite, false),
        ),
        (
            "workspace-write, .git read-only, network loopback",
            loopback,
        ),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    for round in 0..WARMUP + CALLS {
        for (index, (_, settings)) in modes.iter().enumerate() {
            magi_tools::sandbox::configure(settings, false);
            let began = Instant::now();
            let output = magi_tools::run("bash", r#"{"command":"echo hi"}"#, &cwd);
            let took = began.elapsed();
            assert!(!output.is_error, "{}", output.content);
            if round >= WARMUP {
                times[index].push(took);
            }
        }
    }
    println!("bash `echo hi` through the launcher, {CALLS} calls each, interleaved");
    println!("| mode | median | p90 | min |");
    println!("| --- | --- | --- | --- |");
    let mut medians = Vec::new();
    for (index, (label, _)) in modes.iter().enumerate() {
        let sorted = &mut times[index];
        sorted.sort();
        medians.push(sorted[sorted.len() / 2].as_secs_f64() * 1_000.0);
        println!(
            "| {label} | {} | {} | {} |",
            ms(sorted[sorted.len() / 2]),
            ms(sorted[sorted.len() * 9 / 10]),
            ms(sorted[0])
        );
    }
    println!(
        "confinement costs {:+.2} ms per command, {:+.2} ms of it for .git; a network of \
         the command's own {:+.2} ms more (medians)",
        medians[2] - medians[0],
        medians[2] - medians[1],
        medians[3] - medians[2]
    );
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1_000.0)
}
