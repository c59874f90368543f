//! The cost of the sandbox per command: a `bash` call running `echo` through the real
//! launcher (`magi-code __launch`, this package's binary) under `[sandbox] mode =
//! "workspace-write"` against `mode = "off"`, 1,000 calls each, interleaved so both see
//! the same machine. Run with `cargo bench -p magi-cli --bench sandbox`; it prints the
//! figures and asserts nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use magi_config::{SandboxMode, SandboxSettings};

const CALLS: usize = 1_000;
const WARMUP: usize = 20;

fn main() {
    magi_tools::launcher::enable(PathBuf::from(env!("CARGO_BIN_EXE_magi-code"))).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let cwd = workspace.path().canonicalize().unwrap();
    let modes = [SandboxMode::Off, SandboxMode::WorkspaceWrite];
    let mut times: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    for round in 0..WARMUP + CALLS {
        for (index, mode) in modes.into_iter().enumerate() {
            let settings = SandboxSettings {
                mode,
                ..SandboxSettings::default()
            };
            magi_tools::sandbox::configure(&settings, false);
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
    let mut medians = [Duration::ZERO; 2];
    for (index, mode) in modes.into_iter().enumerate() {
        let sorted = &mut times[index];
        sorted.sort();
        medians[index] = sorted[sorted.len() / 2];
        println!(
            "| {} | {} | {} | {} |",
            mode.as_str(),
            ms(medians[index]),
            ms(sorted[sorted.len() * 9 / 10]),
            ms(sorted[0])
        );
    }
    let extra = medians[1].as_secs_f64() - medians[0].as_secs_f64();
    println!(
        "confinement costs {:+.2} ms per command (median against median)",
        extra * 1_000.0
    );
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1_000.0)
}
