//! What a task's run cost, read from the session's log under its throwaway `MC_HOME`:
//! one `usage` record per model request (docs/session-log.md), the session's own and
//! those of its subagents' logs. A count the provider did not report stays unreported,
//! never 0.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::Context;
use magi_protocol::limits::{DISCOVERY_DIRECTORY_ENTRIES, OUTPUT_FRAME_BYTES};
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

/// The usage of session `session_id` of working directory `repo` under `mc_home`: its
/// log's records and those of every subagent log in its conversation data.
pub fn read(mc_home: &Path, repo: &Path, session_id: &str) -> anyhow::Result<Usage> {
    let home = Home::prepare(mc_home)
        .with_context(|| format!("cannot open MC_HOME {}", mc_home.display()))?;
    let cwd = repo
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", repo.display()))?;
    let mut usage = Usage::default();
    scan(&home.session_path(&cwd, session_id), session_id, &mut usage)?;
    let calls = home
        .root()
        .join("data/conversations")
        .join(session_id)
        .join("tool-calls");
    for log in subagent_logs(&calls)? {
        let id = first_session_id(&log)?;
        scan(&log, &id, &mut usage)?;
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

/// The `task.jsonl` of each of the session's tool calls that has one.
fn subagent_logs(calls: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(calls) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(error).with_context(|| format!("cannot list {}", calls.display()));
        }
    };
    let mut logs = Vec::new();
    for (seen, entry) in entries.enumerate() {
        anyhow::ensure!(
            seen < DISCOVERY_DIRECTORY_ENTRIES,
            "{} holds more than {DISCOVERY_DIRECTORY_ENTRIES} entries",
            calls.display()
        );
        let log = entry
            .with_context(|| format!("cannot list {}", calls.display()))?
            .path()
            .join("task.jsonl");
        if log.is_file() {
            logs.push(log);
        }
    }
    logs.sort();
    Ok(logs)
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
mod tests {
    use super::*;

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
