//! Capture throughput: the `bash` tool running a command that prints 100 MiB, with an
//! assets directory for its captures, against the same command with its output sent to
//! `/dev/null` by a plain `bash -c`.
//!
//! Run with `cargo bench -p magi-tools --bench capture`. It prints figures; it asserts
//! nothing about them. The peak resident set of this process (`VmHWM`) shows that memory
//! stays bounded while 100 MiB go through, and the tool's own report shows the 16 MiB
//! capture bound.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: figures go to stdout, failures may panic"
)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use magi_protocol::limits::PROCESS_CAPTURE_BYTES;
use magi_tools::{ToolContext, ToolOutput};

/// Bytes the command prints.
const BYTES: u64 = 100 * 1_048_576;
/// Timed runs of each row, of which the median is shown.
const RUNS: usize = 5;
/// Lines of the tool's report shown at the end.
const LAST_LINES: usize = 6;

fn main() {
    // 100-byte lines: 99 letters and a newline, cut at exactly `BYTES`.
    let command = format!("yes {} | head -c {BYTES}", "a".repeat(99));
    let assets = tempfile::tempdir().expect("a temporary directory");
    let cwd = tempfile::tempdir().expect("a temporary directory");
    let ctx = ToolContext {
        cwd: cwd.path(),
        assets_dir: Some(assets.path()),
        cancelled: &|| false,
        hidden_env: &[],
        durable: &|| true,
        live_output: None,
        sandbox_read_only: false,
    };
    let arguments = serde_json::json!({"command": command, "timeout_ms": 120_000}).to_string();

    println!("command: yes <99 letters> | head -c {BYTES}  (100 MiB in 100-byte lines)");
    println!(
        "capture bound: {} MiB per file; median of {RUNS} runs",
        PROCESS_CAPTURE_BYTES / 1_048_576
    );
    println!("peak RSS before: {}", peak_rss());
    println!();

    let baseline = median(|| {
        let status = Command::new("bash")
            .arg("-c")
            .arg(format!("{command} > /dev/null"))
            .stdin(Stdio::null())
            .status()
            .expect("bash runs");
        assert!(status.success());
    });

    let piped = median(|| {
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(&command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("bash starts");
        let mut stdout = child.stdout.take().expect("piped");
        let mut buffer = vec![0; 64 * 1024];
        let mut read = 0u64;
        loop {
            match stdout.read(&mut buffer).expect("a read") {
                0 => break,
                n => read += n as u64,
            }
        }
        assert_eq!(read, BYTES);
        assert!(child.wait().expect("bash ends").success());
    });

    let mut last: Option<ToolOutput> = None;
    let tool = median(|| {
        let out = magi_tools::run_in("bash", &arguments, &ctx);
        assert!(!out.is_error, "{}", out.content);
        last = Some(out);
    });
    let peak_after = peak_rss();

    // Part of the tool's time: the projection of the kept interleaved capture.
    let interleaved = std::fs::read_dir(assets.path())
        .expect("the assets directory")
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("output"))
        })
        .map(|path| std::fs::read_to_string(path).expect("the interleaved capture"));
    let projection = interleaved.as_deref().map(|text| {
        median(|| {
            std::hint::black_box(magi_tools::process_diagnostics(text));
        })
    });

    println!("{:<44} {:>10} {:>10}", "what", "wall ms", "MiB/s");
    for (what, time) in [
        ("bash -c '... > /dev/null' (baseline)", baseline),
        ("bash -c '...', pipe read and dropped here", piped),
        ("bash tool, captured to the assets dir", tool),
    ] {
        println!(
            "{what:<44} {:>10.1} {:>10.0}",
            time.as_secs_f64() * 1_000.0,
            BYTES as f64 / 1_048_576.0 / time.as_secs_f64()
        );
    }
    if let (Some(time), Some(text)) = (projection, &interleaved) {
        println!(
            "{:<44} {:>10.1} {:>10}",
            format!(
                "  of which projecting the {} MiB kept",
                text.len() / 1_048_576
            ),
            time.as_secs_f64() * 1_000.0,
            "-"
        );
    }
    println!(
        "tool/baseline: {:.2}x",
        tool.as_secs_f64() / baseline.as_secs_f64()
    );
    println!();
    println!("peak RSS of this process after the tool runs: {peak_after}");
    let mut kept: Vec<(String, u64)> = std::fs::read_dir(assets.path())
        .expect("the assets directory")
        .flatten()
        .map(|entry| {
            let size = entry.metadata().map_or(0, |m| m.len());
            (entry.file_name().to_string_lossy().into_owned(), size)
        })
        .collect();
    kept.sort();
    for (name, size) in kept {
        println!("kept in the assets dir: {name} {size} bytes");
    }
    let out = last.expect("the tool ran");
    println!();
    println!("tool summary: {}", out.summary);
    println!("last lines of its report:");
    let lines: Vec<&str> = out.content.lines().collect();
    for line in &lines[lines.len().saturating_sub(LAST_LINES)..] {
        println!("  {}", shorten(line, 160));
    }
}

/// The median time of `RUNS` runs of `f`, after one run to warm up.
fn median(mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

/// `VmHWM` from `/proc/self/status`: the peak resident set of this process.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .map(|value| value.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown (no /proc/self/status)".to_owned())
}

/// `line` cut to `max` characters.
fn shorten(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}
