//! Transport benchmark of `magi-code serve --stdio`, through the client library:
//! cold start to the `initialize` response, 4,000 pipelined `status` requests, and
//! resident memory once initialized and idle.
//!
//! Run with `cargo bench -p magi-cli --bench transport`. It prints figures; it asserts
//! nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: failures abort the run, figures go to stdout"
)]

mod support;

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use magi_client::{Backend, BackendCommand, PendingCall};
use magi_protocol::limits::PENDING_OUTPUT_FRAMES;
use magi_protocol::messages::EmptyParams;
use magi_protocol::methods;
use support::{millis, status_kib, stop};

const COLD_STARTS: usize = 20;
const PIPELINED: usize = 4_000;
/// Requests in flight at once: the protocol leaves bounding in-flight work to the
/// caller, and a caller that reads only while it waits for an answer (as this one,
/// on one thread) must keep its unread answers within the backend's output queue,
/// whose overflow ends the backend.
const WINDOW: usize = PENDING_OUTPUT_FRAMES;
const ROUNDS: usize = 5;

fn command(home: &Path, work: &Path) -> BackendCommand {
    BackendCommand::new(env!("CARGO_BIN_EXE_magi-code"))
        .env_clear()
        .env("MC_HOME", home)
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "bench-model")
        .current_dir(work)
}

async fn initialized(home: &Path, work: &Path) -> (Backend, Duration) {
    let started = Instant::now();
    let mut backend = command(home, work).spawn().unwrap();
    backend
        .initialize(&["status", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    (backend, started.elapsed())
}

fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let median = samples[samples.len() / 2];
    format!(
        "median {:.2} ms (min {:.2}, max {:.2}, n={})",
        millis(median),
        millis(samples[0]),
        millis(samples[samples.len() - 1]),
        samples.len()
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir(&work).unwrap();

    // Cold start: a fresh MC_HOME each time, so startup creates its directories.
    let mut cold = Vec::new();
    for n in 0..COLD_STARTS {
        let home = root.path().join(format!("home-{n}"));
        let (backend, elapsed) = initialized(&home, &work).await;
        cold.push(elapsed);
        stop(backend).await;
    }

    // Pipelined status: the time from the first request written to the last answer.
    let home = root.path().join("home-pipelined");
    let mut pipelined = Vec::new();
    for _ in 0..ROUNDS {
        let (mut backend, _) = initialized(&home, &work).await;
        let started = Instant::now();
        let mut in_flight = VecDeque::with_capacity(WINDOW);
        let mut answered = 0;
        for _ in 0..PIPELINED {
            if in_flight.len() == WINDOW {
                let pending: PendingCall<methods::Status> = in_flight.pop_front().unwrap();
                pending.result().await.unwrap().unwrap();
                answered += 1;
            }
            in_flight.push_back(
                backend
                    .send::<methods::Status>(&EmptyParams {})
                    .await
                    .unwrap(),
            );
        }
        for pending in in_flight {
            pending.result().await.unwrap().unwrap();
            answered += 1;
        }
        assert_eq!(answered, PIPELINED);
        pipelined.push(started.elapsed());
        stop(backend).await;
    }

    // Idle memory: initialized, one status answered, nothing running.
    let (mut backend, _) = initialized(&home, &work).await;
    backend.status().await.unwrap().unwrap();
    let pid = backend.pid().unwrap();
    let rss = status_kib(pid, "VmRSS:");
    let hwm = status_kib(pid, "VmHWM:");
    stop(backend).await;

    println!("magi-code serve --stdio transport benchmark");
    println!(
        "  cold start, spawn to initialize response: {}",
        summary(cold)
    );
    println!(
        "  {PIPELINED} pipelined status requests ({WINDOW} in flight): {}",
        summary(pipelined)
    );
    println!(
        "  idle resident memory after initialization: {:.1} MiB (peak {:.1} MiB)",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
}
