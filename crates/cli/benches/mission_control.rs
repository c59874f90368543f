//! Mission Control while a reply streams 10,000 deltas: the frame time (from the
//! statistics the TUI writes to `MAGI_TUI_STATS`) and how soon a key typed during the
//! stream shows on screen, measured from outside through tmux (`send-keys`, then
//! `capture-pane` until the character appears). Run with
//! `cargo bench -p magi-cli --bench mission_control`; it prints figures and asserts
//! nothing about them. Needs tmux.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::process::Command;
use std::time::{Duration, Instant};

use magi_testkit::{MockServer, Scenario};

const KEYS: usize = 10;

fn tmux(socket: &str, args: &[&str]) -> String {
    let output = Command::new("tmux")
        .args(["-L", socket])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn wait_for(socket: &str, text: &str, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if tmux(socket, &["capture-pane", "-p", "-t", "mc"]).contains(text) {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mock = MockServer::start_scenario(Scenario::Deltas10000)
        .await
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let stats = root.path().join("stats.json");
    let socket = format!("magi-bench-{}", std::process::id());
    let status = Command::new("tmux")
        .args([
            "-L",
            &socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "mc",
        ])
        .args(["-x", "160", "-y", "50", "-c"])
        .arg(&work)
        .arg("-e")
        .arg(format!("MC_HOME={}", root.path().join("home").display()))
        .args([
            "-e",
            "MAGI_PROVIDER=openai-chat",
            "-e",
            "MAGI_MODEL=bench-model",
        ])
        .arg("-e")
        .arg(format!("OPENAI_BASE_URL={}", mock.base_url()))
        .arg("-e")
        .arg(format!("MAGI_TUI_STATS={}", stats.display()))
        .arg(env!("CARGO_BIN_EXE_magi-code"))
        .status()
        .unwrap();
    assert!(status.success());
    wait_for(&socket, "idle", Duration::from_secs(10)).unwrap();
    tmux(&socket, &["send-keys", "-t", "mc", "-l", "stream please"]);
    tmux(&socket, &["send-keys", "-t", "mc", "Enter"]);
    let started = Instant::now();
    // Keys typed while the reply streams: each must show in the composer.
    let mut latencies = Vec::new();
    for n in 0..KEYS {
        let typed: String = (0..=n).map(|i| char::from(b'a' + i as u8)).collect();
        tmux(&socket, &["send-keys", "-t", "mc", "-l", &typed[n..]]);
        if let Some(took) = wait_for(&socket, &format!("› {typed}"), Duration::from_secs(5)) {
            latencies.push(took);
        }
    }
    let streamed = wait_for(&socket, "w9999", Duration::from_secs(60));
    let total = started.elapsed();
    tmux(&socket, &["send-keys", "-t", "mc", "C-c"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stats.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    tmux(&socket, &["kill-server"]);
    latencies.sort();
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    println!(
        "Mission Control while a reply streams 10,000 deltas (mock model, 160x50 tmux window)"
    );
    println!(
        "  key to screen, {} keys during the stream: median {:.1} ms, max {:.1} ms (includes tmux capture polling)",
        latencies.len(),
        latencies.get(latencies.len() / 2).map_or(0.0, ms),
        latencies.last().map_or(0.0, ms)
    );
    println!(
        "  stream fully shown after {:.0} ms (since Enter){}",
        ms(&total),
        if streamed.is_some() {
            ""
        } else {
            " (end not seen)"
        }
    );
    let stats = std::fs::read_to_string(&stats).unwrap_or_default();
    println!("  frame statistics: {stats}");
}
