//! Long-turn benchmark against the loopback mock model answering at once, over
//! `serve --stdio`: (P) the bytes a 40-round read-heavy turn sends the model (each
//! round one `read` of about 48 KiB) with pruning at its default and with pruning off
//! (`[context] prune_protect_tokens = 0`); (L) a 300-round turn (each round one small
//! `read`), its wall time per round.
//!
//! Run with `cargo bench -p magi-cli --bench long_turns` (append `-- P` or `-- L` for
//! one). It prints figures; it asserts nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: failures abort the run, figures go to stdout"
)]

mod support;

use std::path::Path;
use std::time::Duration;

use magi_testkit::{MockServer, Reply};
use support::{TURN_METHODS, command, median, millis, stop, timed_turn};

/// Rounds of the read-heavy turn.
const READ_ROUNDS: usize = 40;
/// Rounds of the long turn.
const LONG_ROUNDS: usize = 300;

/// Queues `rounds` replies each asking for one `read` of `path` at a new offset (so no
/// round repeats the one before), then a text reply.
fn enqueue_reads(mock: &MockServer, path: &str, rounds: usize) {
    for n in 1..=rounds {
        let arguments = format!("{{\"path\":\"{path}\",\"offset\":{n}}}");
        mock.enqueue(Reply::stream().tool_call(format!("c{n}"), "read", [arguments.as_str()]));
    }
    mock.enqueue(Reply::stream().text(["Done."]));
}

/// One turn in a new session over a fresh `serve --stdio` child: its wall time from
/// `turn.start` to `run.finished`.
async fn one_turn(home: &Path, cwd: &Path, mock: &MockServer) -> Duration {
    let mut backend = command(home, cwd, mock).spawn().unwrap();
    backend.initialize(&TURN_METHODS).await.unwrap().unwrap();
    let elapsed = timed_turn(&mut backend, "Go").await;
    stop(backend).await;
    elapsed
}

/// The bytes of the request bodies the turn sent, total and largest.
async fn read_heavy(home: &Path, cwd: &Path) -> (usize, usize) {
    let mock = MockServer::start().await;
    enqueue_reads(&mock, "big.txt", READ_ROUNDS);
    one_turn(home, cwd, &mock).await;
    let sizes: Vec<usize> = mock
        .requests()
        .iter()
        .map(|r| r.body.to_string().len())
        .collect();
    assert_eq!(sizes.len(), READ_ROUNDS + 1);
    (sizes.iter().sum(), sizes.iter().copied().max().unwrap_or(0))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let cwd = root.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    // 48 KiB from any offset up to 40: 808 lines of 64 bytes.
    std::fs::write(
        cwd.join("big.txt"),
        format!("{}\n", "r".repeat(63)).repeat(808),
    )
    .unwrap();
    std::fs::write(cwd.join("small.txt"), "line\n".repeat(LONG_ROUNDS + 10)).unwrap();
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |letter: &str| only.is_empty() || only.iter().any(|o| o == letter);
    println!("magi-code long-turn benchmark (mock model answering at once)");
    // A window that holds each whole turn unpruned, so that compaction never starts
    // and (P)'s two runs differ only in pruning.
    let settings = home.join("settings.toml");
    std::fs::create_dir_all(&home).unwrap();
    let window = "[models.\"openai-chat/bench-model\"]\ncontext_window = 1000000\n";
    std::fs::write(&settings, window).unwrap();
    if wanted("P") {
        let (pruned, pruned_max) = read_heavy(&home, &cwd).await;
        let unpruned = format!("[context]\nprune_protect_tokens = 0\n\n{window}");
        std::fs::write(&settings, unpruned).unwrap();
        let (whole, whole_max) = read_heavy(&home, &cwd).await;
        std::fs::write(&settings, window).unwrap();
        let mib = |b: usize| b as f64 / (1024.0 * 1024.0);
        println!(
            "  P: {READ_ROUNDS} rounds of one 48 KiB read: sent {:.1} MiB with pruning (largest request {:.0} KiB), {:.1} MiB without (largest {:.0} KiB)",
            mib(pruned),
            pruned_max as f64 / 1024.0,
            mib(whole),
            whole_max as f64 / 1024.0
        );
    }
    if wanted("L") {
        let mut per_round = Vec::new();
        for _ in 0..3 {
            let mock = MockServer::start().await;
            enqueue_reads(&mock, "small.txt", LONG_ROUNDS);
            per_round.push(one_turn(&home, &cwd, &mock).await / (LONG_ROUNDS as u32 + 1));
        }
        println!(
            "  L: a {LONG_ROUNDS}-round turn: {:.3} ms per round (median of 3)",
            millis(median(per_round))
        );
    }
}
