//! What a task's run cost, read from the session's log under its throwaway `MC_HOME`:
//! one `usage` record per model request (docs/session-log.md), the session's own and
//! those of its subagents' logs. A count the provider did not report stays unreported,
//! never 0.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::Context;
use magi_protocol::limits::{DISCOVERY_DIRECTORY_ENTRIES, OUTPUT_FRAME_BYTES};
use magi_protocol::names::is_valid_session_id;
use magi_store::records::RecordBody;
use magi_store::{Home, ReadLimits};
use serde::Serialize;

/// The model requests of a run and their tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Model requests made (each `usage` record is one, reported or not).
    pub requests: u64,
    /// Input tokens, cached ones included.
    pub input_tokens: Tokens,
    /// Of the input tokens, those read from the provider's prompt cache.
    pub cached_input_tokens: Tokens,
    /// Output tokens, reasoning ones included.
    pub output_tokens: Tokens,
}

/// A token count over several requests: the sum of what the provider reported, and how
/// many requests reported nothing for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    /// The sum over the requests that reported it.
    pub reported: u64,
    /// Requests that did not report it: with any, the true total is unknown.
    pub unreported_requests: u64,
}

impl Tokens {
    fn add(&mut self, count: Option<u64>) {
        match count {
            Some(count) => self.reported += count,
            None => self.unreported_requests += 1,
        }
    }

    /// Whether every request reported it.
    pub fn complete(self) -> bool {
        self.unreported_requests == 0
    }

    /// Sums two counts.
    pub fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            reported: self.reported + other.reported,
            unreported_requests: self.unreported_requests + other.unreported_requests,
        }
    }
}

impl Usage {
    /// Sums two usages.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            requests: self.requests + other.requests,
            input_tokens: self.input_tokens.plus(other.input_tokens),
            cached_input_tokens: self.cached_input_tokens.plus(other.cached_input_tokens),
            output_tokens: self.output_tokens.plus(other.output_tokens),
        }
    }

    fn take(&mut self, record: &RecordBody) {
        if let RecordBody::Usage {
            input_tokens,
            cached_input_tokens,
            output_tokens,
            ..
        } = record
        {
            self.requests += 1;
            self.input_tokens.add(*input_tokens);
            self.cached_input_tokens.add(*cached_input_tokens);
            self.output_tokens.add(*output_tokens);
        }
    }
}

/// The usage of every session of working directory `repo` under `mc_home` (a run's
/// throwaway `MC_HOME` holds its one session): each log's records and those of every
/// subagent log in its conversation data. No log, no request: a session's log is
/// created before its first model request.
pub fn read(mc_home: &Path, repo: &Path) -> anyhow::Result<Usage> {
    let home = Home::prepare(mc_home)
        .with_context(|| format!("cannot open MC_HOME {}", mc_home.display()))?;
    let cwd = repo
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", repo.display()))?;
    let mut usage = Usage::default();
    for log in logs_in(&home.workspace_dir(&cwd), |path| {
        path.extension().is_some_and(|e| e == "jsonl")
    })? {
        // Only `<session ID>.jsonl` is a session's log.
        let Some(session_id) = log
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|id| is_valid_session_id(id))
        else {
            continue;
        };
        scan(&log, session_id, &mut usage)?;
        let calls = home
            .root()
            .join("data/conversations")
            .join(session_id)
            .join("tool-calls");
        let tasks = logs_in(&calls, |path| path.is_dir())?;
        for task in tasks.iter().map(|call| call.join("task.jsonl")) {
            if task.is_file() {
                let id = first_session_id(&task)?;
                scan(&task, &id, &mut usage)?;
            }
        }
    }
    Ok(usage)
}

fn scan(log: &Path, session_id: &str, usage: &mut Usage) -> anyhow::Result<()> {
    magi_store::log::scan_log(log, session_id, ReadLimits::STORED, |record| {
        usage.take(&record.body)
    })
    .with_context(|| format!("cannot read the session log {}", log.display()))?;
    Ok(())
}

/// The entries of `dir` that `keep` takes, in name order; none when `dir` does not
/// exist.
fn logs_in(dir: &Path, keep: impl Fn(&Path) -> bool) -> anyhow::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(error).with_context(|| format!("cannot list {}", dir.display()));
        }
    };
    let mut kept = Vec::new();
    for (seen, entry) in entries.enumerate() {
        anyhow::ensure!(
            seen < DISCOVERY_DIRECTORY_ENTRIES,
            "{} holds more than {DISCOVERY_DIRECTORY_ENTRIES} entries",
            dir.display()
        );
        let path = entry
            .with_context(|| format!("cannot list {}", dir.display()))?
            .path();
        if keep(&path) {
            kept.push(path);
        }
    }
    kept.sort();
    Ok(kept)
}

/// The session ID of a subagent log, from its first record.
fn first_session_id(log: &Path) -> anyhow::Result<String> {
    let file =
        std::fs::File::open(log).with_context(|| format!("cannot open {}", log.display()))?;
    let mut line = Vec::new();
    BufReader::new(file.take(OUTPUT_FRAME_BYTES as u64))
        .read_until(b'\n', &mut line)
        .with_context(|| format!("cannot read {}", log.display()))?;
    let record: serde_json::Value = serde_json::from_slice(&line)
        .with_context(|| format!("{}: its first line is not a record", log.display()))?;
    record["session_id"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("{}: its first record names no session", log.display()))
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use magi_store::Appender;
    use magi_store::records::Record;

    use super::*;

    fn usage(input: Option<u64>) -> RecordBody {
        RecordBody::Usage {
            turn_id: Some("t".into()),
            input_tokens: input,
            cached_input_tokens: input.map(|i| i / 2),
            cache_write_tokens: None,
            output_tokens: Some(10),
            reasoning_tokens: None,
            context_window: None,
            context_used: None,
        }
    }

    fn append(path: &Path, session_id: &str, bodies: Vec<RecordBody>) {
        let mut log = Appender::open(path, session_id).unwrap();
        let records: Vec<Record> = bodies
            .into_iter()
            .map(|body| Record {
                v: 1,
                session_id: session_id.into(),
                ts: "2025-01-01T12:00:00.000Z".into(),
                body,
            })
            .collect();
        log.append_all(&records).unwrap();
    }

    #[test]
    fn the_session_and_its_subagents_are_read_and_no_log_is_no_request() {
        let root = tempfile::tempdir().unwrap();
        let (mc_home, repo) = (root.path().join("home"), root.path().join("repo"));
        std::fs::create_dir(&repo).unwrap();
        assert_eq!(read(&mc_home, &repo).unwrap(), Usage::default());

        let home = Home::prepare(&mc_home).unwrap();
        let folder = home.workspace_dir(&repo.canonicalize().unwrap());
        append(
            &folder.join("s-1.jsonl"),
            "s-1",
            vec![usage(Some(100)), usage(None)],
        );
        // Not a session's log: skipped.
        std::fs::write(folder.join("s-1.jsonl.tmp"), "not a log\n").unwrap();
        let task = home
            .root()
            .join("data/conversations/s-1/tool-calls/call_1/task.jsonl");
        append(
            &task,
            "h-1",
            vec![
                RecordBody::TaskLink {
                    task_id: "task-1".into(),
                    parent_session_id: "s-1".into(),
                    parent_call_id: "call_1".into(),
                    profile: "general".into(),
                },
                usage(Some(40)),
            ],
        );
        let read = read(&mc_home, &repo).unwrap();
        assert_eq!(read.requests, 3);
        assert_eq!(
            read.input_tokens,
            Tokens {
                reported: 140,
                unreported_requests: 1
            }
        );
        assert_eq!(read.cached_input_tokens.reported, 70);
        assert_eq!(read.output_tokens.reported, 30);
        assert!(read.output_tokens.complete());
    }

    #[test]
    fn unreported_counts_are_counted_apart_never_as_zero() {
        let mut usage = Usage::default();
        let record = |input: Option<u64>, cached: Option<u64>| RecordBody::Usage {
            turn_id: Some("t".into()),
            input_tokens: input,
            cached_input_tokens: cached,
            cache_write_tokens: None,
            output_tokens: input.map(|_| 7),
            reasoning_tokens: None,
            context_window: None,
            context_used: None,
        };
        usage.take(&record(Some(100), Some(60)));
        usage.take(&record(None, None));
        usage.take(&RecordBody::Unknown);
        assert_eq!(usage.requests, 2);
        assert_eq!(
            usage.input_tokens,
            Tokens {
                reported: 100,
                unreported_requests: 1
            }
        );
        assert!(!usage.cached_input_tokens.complete());
        assert_eq!(usage.output_tokens.reported, 7);
    }
}
