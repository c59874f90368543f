//! What the benchmarks share: reading a child's memory, timing figures, stopping a
//! backend.

#![allow(dead_code, reason = "each benchmark uses a different part of it")]

use std::time::Duration;

use magi_client::Backend;

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
