//! What a client may do with the backend's background jobs (`jobs.control`): read a
//! job's newest output and stop it, as the model does with `bash_log` and `bash_kill`.
//!
//! Both are answered on the backend's protocol loop, so neither waits: the registry is
//! only tried (a job concluding holds it for up to its grace period, and then the
//! answer is [`JobLookup::Busy`]), and a stop hands the kill and its grace period to a
//! thread of its own.

use std::path::Path;

use magi_protocol::limits::PROCESS_CAPTURE_BYTES;

use super::{conclude, try_jobs};
use crate::process::{End, read_bounded};

/// What a look-up of a job found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobLookup<T> {
    /// The job, and the answer.
    Found(T),
    /// No job of this backend has that ID (never started here, or forgotten after many
    /// newer ones ended).
    Unknown,
    /// The registry is held by a job that is ending: ask again.
    Busy,
}

/// A job's state and the newest lines of its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTail {
    /// `running`, `stopping`, or how it ended (`exit 0`, `killed`, …).
    pub state: String,
    /// The newest lines, joined by `\n`, as captured (not yet made safe for a client).
    pub text: String,
    /// The 0-based number of the first line of `text`.
    pub first_line: u64,
    /// Lines the capture holds.
    pub total_lines: u64,
}

/// The state of job `id` and its newest output: at most `max_lines` lines and
/// `max_bytes` bytes (a longer newest line keeps its end).
pub fn job_tail(id: &str, max_lines: usize, max_bytes: usize) -> JobLookup<JobTail> {
    let Some(jobs) = try_jobs() else {
        return JobLookup::Busy;
    };
    let Some(job) = jobs.all.get(id) else {
        return JobLookup::Unknown;
    };
    let state = if job.killed && job.ended.is_none() {
        "stopping".to_owned()
    } else {
        job.state()
    };
    let path = job.started.paths[2].clone();
    drop(jobs);
    let (text, first_line, total_lines) = newest_lines(&path, max_lines, max_bytes);
    JobLookup::Found(JobTail {
        state,
        text,
        first_line,
        total_lines,
    })
}

/// Stops job `id` as `bash_kill` does (`SIGTERM` to its group, `SIGKILL` after the
/// grace period), on a thread of its own. The state after the request: `stopping`, or
/// the state an already ended job ended in.
pub fn stop_job(id: &str) -> JobLookup<String> {
    let Some(mut jobs) = try_jobs() else {
        return JobLookup::Busy;
    };
    let Some(job) = jobs.all.get_mut(id) else {
        return JobLookup::Unknown;
    };
    if job.ended.is_some() {
        return JobLookup::Found(job.state());
    }
    if !job.killed {
        job.killed = true;
        let id = id.to_owned();
        let stopper = std::thread::Builder::new()
            .name("magi-job-stop".into())
            .spawn(move || {
                let _ = magi_crash::contain(|| {
                    let mut jobs = super::jobs();
                    if let Some(job) = jobs.all.get_mut(&id)
                        && job.ended.is_none()
                    {
                        conclude(job, &End::Cancelled);
                    }
                });
            });
        if stopper.is_err() {
            // No thread to stop it on: it is not stopping, and says so.
            job.killed = false;
            return JobLookup::Busy;
        }
    }
    JobLookup::Found("stopping".to_owned())
}

/// The newest lines of the capture at `path`: the text, the number of its first line
/// and how many lines there are.
fn newest_lines(path: &Path, max_lines: usize, max_bytes: usize) -> (String, u64, u64) {
    let captured = read_bounded(path, PROCESS_CAPTURE_BYTES as u64);
    let lines: Vec<&str> = captured.lines().collect();
    let total = lines.len();
    let mut first = total.saturating_sub(max_lines);
    // Whole lines from the newest back while they fit, the newline between them counted.
    let mut bytes = 0;
    let mut fitting = total;
    while fitting > first {
        let next = lines[fitting - 1].len() + usize::from(fitting < total);
        if bytes + next > max_bytes {
            break;
        }
        bytes += next;
        fitting -= 1;
    }
    first = fitting;
    if first == total && total > 0 {
        // The newest line alone is longer than the bound: its end is kept.
        let line = lines[total - 1];
        let mut start = line.len() - max_bytes.min(line.len());
        while !line.is_char_boundary(start) {
            start += 1;
        }
        return (line[start..].to_owned(), (total - 1) as u64, total as u64);
    }
    (lines[first..].join("\n"), first as u64, total as u64)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_lines_are_kept_within_both_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let text: String = (0..300).map(|n| format!("line {n}\n")).collect();
        std::fs::write(&path, &text).unwrap();
        let (kept, first, total) = newest_lines(&path, 200, 1_000_000);
        assert_eq!((first, total), (100, 300));
        assert!(kept.starts_with("line 100\nline 101\n") && kept.ends_with("line 299"));
        // The byte bound takes whole lines from the newest back.
        let (kept, first, _) = newest_lines(&path, 200, 20);
        assert_eq!((kept.as_str(), first), ("line 298\nline 299", 298));
        // One line longer than the bound keeps its end, on a character boundary.
        std::fs::write(&path, format!("{}é-end\n", "x".repeat(100))).unwrap();
        let (kept, first, total) = newest_lines(&path, 200, 5);
        assert_eq!((kept.as_str(), first, total), ("-end", 0, 1));
        std::fs::write(&path, "").unwrap();
        assert_eq!(newest_lines(&path, 200, 10), (String::new(), 0, 0));
    }
}
