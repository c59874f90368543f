//! Background commands: `async_bash` starts one and returns at once, a foreground `bash`
//! that runs too long moves here, `bash_log` reads a job's captured output, `bash_kill`
//! stops it. Jobs belong to the backend process: they live until they exit, reach the
//! timeout they were given, are killed, or the backend ends ([`stop_all`]).
//!
//! A watcher thread per job notices its end. A job whose captures live in a
//! conversation's assets then has a notice waiting for that conversation
//! ([`take_notices`]), which the runner gives the model before its next request: the
//! completion arrives as a queued event, never as a second result of the call that
//! started the job.
//!
//! This file holds the registry of jobs and their lifecycle (adopted or started,
//! watched, concluded); `notices` tells a conversation of its jobs' ends, and `tools`
//! holds the three tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use magi_protocol::limits::{BACKGROUND_JOBS, PROCESS_TERM_GRACE_MS};
use nix::sys::signal::Signal;

use crate::ToolContext;
use crate::facts::CommandFacts;
use crate::process::{End, Kept, Started, command_facts, record_end, wait_until_exited};

mod control;
mod notices;
mod tools;

pub use control::{JobLookup, JobTail, job_tail, stop_job};
pub use notices::{JobNotice, take_notices};
pub(crate) use tools::{
    kill_definition, log_definition, run_kill, run_log, run_start, start_definition,
};

/// How often a watcher looks at its job.
const WATCH_INTERVAL: Duration = Duration::from_millis(50);

/// How a job ended.
struct Ended {
    /// `exit 0`, `killed`, `timed out`, …
    state: String,
    /// Its facts, completed.
    facts: CommandFacts,
    kept: [Kept; 3],
    drained: bool,
}

struct Job {
    started: Started,
    /// The facts of the call that started it, completed when it ends.
    facts: CommandFacts,
    /// When the timeout kills it, if it has one.
    deadline: Option<Instant>,
    /// Where its captures live; a conversation's jobs are found by this.
    assets_dir: Option<PathBuf>,
    /// Set once it ended.
    ended: Option<Ended>,
    /// `bash_kill` stopped it.
    killed: bool,
    /// Its end was told to its conversation.
    noticed: bool,
    /// Order of start, to evict the oldest ended jobs first.
    serial: u64,
}

impl Job {
    fn state(&self) -> String {
        match &self.ended {
            Some(ended) => ended.state.clone(),
            None => "running".into(),
        }
    }
}

#[derive(Default)]
struct Jobs {
    next: u64,
    all: BTreeMap<String, Job>,
}

impl Jobs {
    fn running(&self) -> usize {
        self.all.values().filter(|j| j.ended.is_none()).count()
    }

    /// Makes room for one more job's record: ended jobs beyond [`BACKGROUND_JOBS`] are
    /// forgotten, those already told to their conversation first, oldest first.
    fn evict(&mut self) {
        while self.all.len() >= 2 * BACKGROUND_JOBS {
            let oldest = self
                .all
                .iter()
                .filter(|(_, j)| j.ended.is_some())
                .min_by_key(|(_, j)| (!j.noticed, j.serial))
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => {
                    self.all.remove(&id);
                }
                None => break,
            }
        }
    }
}

fn static_jobs() -> &'static Mutex<Jobs> {
    static JOBS: OnceLock<Mutex<Jobs>> = OnceLock::new();
    JOBS.get_or_init(Mutex::default)
}

fn jobs() -> MutexGuard<'static, Jobs> {
    static_jobs().lock().unwrap_or_else(PoisonError::into_inner)
}

/// The registry when nobody holds it, else none: what the protocol loop may wait for.
fn try_jobs() -> Option<MutexGuard<'static, Jobs>> {
    static_jobs().try_lock().map_or_else(
        |e| match e {
            std::sync::TryLockError::Poisoned(poisoned) => Some(poisoned.into_inner()),
            std::sync::TryLockError::WouldBlock => None,
        },
        Some,
    )
}

/// Stops every background job's process group, the backend is ending: `SIGTERM` to
/// all at once, then `SIGKILL` to those whose leader has not exited when one grace
/// period is over.
pub fn stop_all() {
    let mut jobs = jobs();
    let running: Vec<&mut Job> = jobs
        .all
        .values_mut()
        .filter(|job| job.ended.is_none())
        .collect();
    for job in &running {
        job.started.child.signal_group(Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_millis(PROCESS_TERM_GRACE_MS);
    for job in running {
        let left = deadline.saturating_duration_since(Instant::now());
        wait_until_exited(&mut job.started.child, left);
        job.started.child.signal_group(Signal::SIGKILL);
        let _ = job.started.child.wait();
    }
}

/// Takes over a foreground command that ran too long. Refused, with the command handed
/// back, when [`BACKGROUND_JOBS`] jobs run already.
pub(crate) fn adopt(
    started: Started,
    command: &str,
    sandbox: Option<&str>,
    deadline: Instant,
    ctx: &ToolContext,
) -> Result<String, Box<Started>> {
    let mut jobs = jobs();
    if jobs.running() >= BACKGROUND_JOBS {
        return Err(Box::new(started));
    }
    let mut facts = command_facts(command, ctx, None, None);
    // The job runs in the sandbox the call started it in; its end says so too.
    facts.sandbox = sandbox.map(str::to_owned);
    Ok(insert(&mut jobs, started, facts, Some(deadline), ctx))
}

/// Registers a started job and its watcher; returns its ID.
fn insert(
    jobs: &mut Jobs,
    started: Started,
    mut facts: CommandFacts,
    deadline: Option<Instant>,
    ctx: &ToolContext,
) -> String {
    jobs.evict();
    jobs.next += 1;
    let serial = jobs.next;
    let id = format!("job-{serial}");
    facts.job_id = Some(id.clone());
    jobs.all.insert(
        id.clone(),
        Job {
            started,
            facts,
            deadline,
            assets_dir: ctx.assets_dir.map(Path::to_owned),
            ended: None,
            killed: false,
            noticed: false,
            serial,
        },
    );
    let watched = id.clone();
    // Without a watcher the job would only be seen to end when someone looks.
    let _ = std::thread::Builder::new()
        .name("magi-job".into())
        .spawn(move || watch_contained(&watched));
    id
}

/// [`watch`], with a panic in it contained: a watcher that panics must not leave its
/// job running unseen, so the job ends as cancelled, its group killed, and says so when
/// next looked at.
fn watch_contained(id: &str) {
    if magi_crash::contain(|| watch(id)).is_err() {
        let _ = magi_crash::contain(|| {
            let mut jobs = jobs();
            if let Some(job) = jobs.all.get_mut(id)
                && job.ended.is_none()
            {
                conclude(job, &End::Cancelled);
            }
        });
    }
}

/// Looks at a job until it ends, killing it at its deadline.
fn watch(id: &str) {
    loop {
        std::thread::sleep(WATCH_INTERVAL);
        let mut jobs = jobs();
        let Some(job) = jobs.all.get_mut(id) else {
            return;
        };
        if job.ended.is_some() {
            return;
        }
        let end = match job.started.child.try_wait() {
            Ok(Some(status)) => End::Exited(status),
            Ok(None) if job.deadline.is_some_and(|d| Instant::now() >= d) => End::TimedOut,
            Ok(None) => continue,
            Err(_) => End::Cancelled,
        };
        conclude(job, &end);
        return;
    }
}

/// Records a job's end: its group is killed, its captures drained, its facts completed.
fn conclude(job: &mut Job, end: &End) {
    let (kept, drained) = job.started.finish(matches!(end, End::Exited(_)));
    let mut facts = job.facts.clone();
    record_end(&mut facts, end, &kept, drained, &job.started);
    if job.assets_dir.is_some() {
        facts.captures = crate::process::capture_digests(&job.started.paths, &kept);
    }
    let state = match end {
        End::Exited(status) => match status.code() {
            Some(code) => format!("exit {code}"),
            None => "ended by a signal".into(),
        },
        End::TimedOut => "timed out".into(),
        End::Cancelled if job.killed => "killed".into(),
        End::Cancelled | End::Background => "ended; status unknown".into(),
    };
    job.ended = Some(Ended {
        state,
        facts,
        kept,
        drained,
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ToolOutput;
    use crate::facts::Facts;

    fn never() -> bool {
        false
    }

    fn job_id(out: &ToolOutput) -> String {
        out.summary.trim_start_matches("started ").to_owned()
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "{what} never happened");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_background_job_is_read_by_0_based_pages_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext {
            cwd: dir.path(),
            assets_dir: Some(&dir.path().join("assets")),
            cancelled: &never,
            hidden_env: &[],
            durable: &|| true,
            live_output: None,
            sandbox_read_only: false,
        };
        // The job writes its lines, then signals through a file and keeps running.
        let out = run_start(
            &json!({"command": "for i in $(seq 0 149); do echo line$i; done; touch ready; sleep 30"}),
            &ctx,
        )
        .output;
        assert!(!out.is_error, "{}", out.content);
        let id = job_id(&out);
        // The command wrote everything before `ready`; the capture may still be catching
        // up with the pipe.
        wait_for("the job's output", || {
            dir.path().join("ready").exists()
                && run_log(&json!({"job": id}))
                    .output
                    .content
                    .contains("of 150 (0-based)")
        });
        let tail = run_log(&json!({"job": id})).output;
        assert!(
            tail.content
                .starts_with(&format!("[{id} running; lines 50-149 of 150 (0-based)]")),
            "{}",
            tail.content
        );
        assert!(tail.content.contains("\nline149\n[full output: "));
        let head = run_log(&json!({"job": id, "offset": 0, "limit": 2})).output;
        assert!(
            head.content.starts_with(&format!(
                "[{id} running; lines 0-1 of 150 (0-based)]\nline0\nline1\n[next offset: 2]"
            )),
            "{}",
            head.content
        );
        let past = run_log(&json!({"job": id, "offset": 500})).output;
        assert!(
            past.content.contains("no lines from 150"),
            "{}",
            past.content
        );
        let killed = run_kill(&json!({"job": id})).output;
        assert_eq!(killed.summary, format!("{id} killed"));
        assert!(
            run_log(&json!({"job": id}))
                .output
                .content
                .contains("killed")
        );
        assert_eq!(
            run_kill(&json!({"job": id})).output.summary,
            format!("{id} already ended")
        );
        assert_eq!(
            run_log(&json!({"job": "job-0"})).output.summary,
            "unknown job"
        );
    }

    #[test]
    fn a_confined_job_refused_by_the_sandbox_says_so_in_its_notice() {
        let dir = tempfile::tempdir().unwrap();
        let conversation = dir.path().join("conversations/s1");
        let assets = conversation.join("tool-calls/c1");
        let ctx = ToolContext {
            cwd: dir.path(),
            assets_dir: Some(&assets),
            cancelled: &never,
            hidden_env: &[],
            durable: &|| true,
            live_output: None,
            sandbox_read_only: false,
        };
        let command = "echo 'bash: /etc/x: Permission denied' >&2; exit 1";
        let id = job_id(&run_start(&json!({ "command": command }), &ctx).output);
        wait_for("the end", || jobs().all[&id].ended.is_some());
        // As `sandbox::prepare` records it for a confined command; this test's process
        // has no sandbox settings, which are the process's own.
        if let Some(ended) = jobs().all.get_mut(&id).and_then(|job| job.ended.as_mut()) {
            ended.facts.sandbox = Some("workspace-write; network none".to_owned());
        }
        let notices = take_notices(&conversation);
        assert_eq!(notices.len(), 1);
        assert!(
            notices[0]
                .text
                .contains("[the sandbox (workspace-write; network none) may have refused this"),
            "{}",
            notices[0].text
        );
    }

    #[test]
    fn an_ended_job_is_noticed_once_by_its_conversation() {
        let dir = tempfile::tempdir().unwrap();
        let conversation = dir.path().join("conversations/s1");
        let assets = conversation.join("tool-calls/c1");
        let ctx = ToolContext {
            cwd: dir.path(),
            assets_dir: Some(&assets),
            cancelled: &never,
            hidden_env: &[],
            durable: &|| true,
            live_output: None,
            sandbox_read_only: false,
        };
        let out = run_start(&json!({"command": "echo done; exit 3"}), &ctx);
        let id = job_id(&out.output);
        let Some(Facts::Command(facts)) = &out.facts else {
            panic!("command facts")
        };
        assert_eq!(facts.job_id.as_deref(), Some(id.as_str()));
        let mut notices = Vec::new();
        wait_for("the notice", || {
            notices.extend(take_notices(&conversation));
            !notices.is_empty()
        });
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].job_id, id);
        assert_eq!(notices[0].state, "exit 3");
        assert_eq!(
            notices[0].text,
            format!("[background job {id} ended: exit 3]\ndone")
        );
        let Facts::Command(facts) = &notices[0].facts else {
            panic!("command facts")
        };
        assert_eq!(facts.exit_code, Some(3));
        assert_eq!(facts.stdout_lines, Some(1));
        assert!(take_notices(&conversation).is_empty());
        assert!(take_notices(&dir.path().join("conversations/s2")).is_empty());
    }
}
