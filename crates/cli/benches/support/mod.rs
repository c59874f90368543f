//! What the benchmarks share: the backend against the mock model, a turn run to its
//! end, reading a child's memory, timing figures, stopping a backend.

#![allow(dead_code, reason = "each benchmark uses a different part of it")]

use std::path::Path;
use std::time::{Duration, Instant};

use magi_client::{Backend, BackendCommand, Incoming};
use magi_protocol::messages::{EmptyParams, Event, RunOutcome, TurnStartParams};
use magi_protocol::methods;
use magi_testkit::MockServer;

/// The methods a turn benchmark's backend is initialized with.
pub const TURN_METHODS: [&str; 3] = ["session.create", "turn.start", "shutdown"];

/// `serve --stdio` with `MC_HOME` at `home`, in `cwd`, asking `mock` as `bench-model`
/// of the keyless `openai-chat` provider.
pub fn command(home: &Path, cwd: &Path, mock: &MockServer) -> BackendCommand {
    BackendCommand::new(env!("CARGO_BIN_EXE_magi-code"))
        .env_clear()
        .env("MC_HOME", home)
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "bench-model")
        .env("OPENAI_BASE_URL", mock.base_url())
        .current_dir(cwd)
}

/// Starts a turn of `prompt` in a new session of `backend` and waits until its run
/// finishes, completed. Returns the wall time from `turn.start` to `run.finished`.
pub async fn timed_turn(backend: &mut Backend, prompt: &str) -> Duration {
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap();
    let started = Instant::now();
    let params = TurnStartParams {
        session_id: session.session_id,
        prompt: prompt.into(),
        attachments: None,
    };
    backend
        .call::<methods::TurnStart>(&params)
        .await
        .unwrap()
        .unwrap();
    loop {
        if let Some(Incoming::Event {
            event: Event::RunFinished(finished),
            ..
        }) = backend.next_incoming().await
        {
            assert_eq!(finished.outcome, RunOutcome::Completed, "{finished:?}");
            return started.elapsed();
        }
    }
}

/// A `/proc/<pid>/status` field in KiB, e.g. `"VmRSS:"` or `"VmHWM:"`.
pub fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Milliseconds, for printing.
pub fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The median of the samples.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Shuts the backend down and waits for it to exit.
pub async fn stop(mut backend: Backend) {
    backend.shutdown().await.unwrap().unwrap();
    backend.wait_within(Duration::from_secs(10)).await.unwrap();
}
