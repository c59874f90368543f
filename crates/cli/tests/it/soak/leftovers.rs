//! Processes a soak session left behind: every process its backends started carries
//! the session's tag in its environment, so any process still carrying it after the
//! session ended outlived it.

use std::time::{Duration, Instant};

use super::TAG;
use super::session::Failed;

/// How long a session's processes get to end after its backend did: a spawn server
/// kills its commands when the backend goes, after their grace period.
const GRACE: Duration = Duration::from_secs(10);

/// The processes whose environment holds `TAG=tag`: (PID, command line).
fn tagged(tag: &str) -> Vec<(u32, String)> {
    let marker = format!("{TAG}={tag}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
        })
        .filter(|pid| !zombie(*pid))
        .map(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            (pid, line)
        })
        .collect()
}

/// Whether `pid` has ended and waits only to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// Waits, at most [`GRACE`], until no process carries `tag`; fails naming those left.
pub async fn wait_for_none(tag: &str) -> Result<(), Failed> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(10);
    loop {
        let left = tagged(tag);
        if left.is_empty() {
            return Ok(());
        }
        if started.elapsed() > GRACE {
            return Err(format!(
                "processes outlived the session {} s after it ended: {left:?}",
                GRACE.as_secs()
            ));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}
