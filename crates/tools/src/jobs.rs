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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use magi_protocol::limits::{
    BACKGROUND_JOBS, BASH_LOG_LINES, BASH_LOG_MAX_LINES, PROCESS_CAPTURE_BYTES,
};
use nix::sys::signal::{Signal, killpg};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::bash::{
    End, Kept, Started, capture_notes, command_facts, read_bounded, record_end, start,
};
use crate::diagnostics::process_diagnostics;
use crate::facts::{CommandFacts, Facts};
use crate::{ToolContext, ToolDefinition, ToolOutput, ToolReport};

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

fn jobs() -> MutexGuard<'static, Jobs> {
    static JOBS: OnceLock<Mutex<Jobs>> = OnceLock::new();
    JOBS.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// Kills every background job's process group: the backend is ending.
pub fn stop_all() {
    let mut jobs = jobs();
    for job in jobs.all.values_mut() {
        if job.ended.is_none() {
            let _ = killpg(job.started.group, Signal::SIGKILL);
            let _ = job.started.child.wait();
        }
    }
}

/// A job's end, told to the conversation that started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobNotice {
    /// The job.
    pub job_id: String,
    /// How it ended (`exit 0`, `killed`, `timed out after 60 s`, …).
    pub state: String,
    /// What the model is told: the state and the `process_diagnostics` projection of
    /// its whole output, with the capture's path when the projection is a summary.
    pub text: String,
    /// The facts of the command, completed with its end.
    pub facts: Facts,
}

/// Takes the notices of jobs that ended and whose captures live under
/// `conversation_dir`; each is given once.
pub fn take_notices(conversation_dir: &Path) -> Vec<JobNotice> {
    let mut jobs = jobs();
    let mut notices = Vec::new();
    for (id, job) in jobs.all.iter_mut() {
        let owned = job
            .assets_dir
            .as_deref()
            .is_some_and(|dir| dir.starts_with(conversation_dir));
        let Some(ended) = job.ended.as_ref().filter(|_| owned && !job.noticed) else {
            continue;
        };
        job.noticed = true;
        let output = read_bounded(&job.started.paths[2], PROCESS_CAPTURE_BYTES as u64);
        let projection = process_diagnostics(&output);
        let mut text = format!("[background job {id} ended: {}]", ended.state);
        if !output.is_empty() {
            text.push('\n');
            text.push_str(projection.text.trim_end_matches('\n'));
        }
        for note in capture_notes(&ended.kept, ended.drained) {
            text.push('\n');
            text.push_str(&note);
        }
        if !projection.inline {
            text.push_str(&format!(
                "\n[full output: {}; use read or grep]",
                job.started.paths[2].display()
            ));
        }
        notices.push(JobNotice {
            job_id: id.clone(),
            state: ended.state.clone(),
            text,
            facts: Facts::Command(Box::new(ended.facts.clone())),
        });
    }
    notices
}

/// Takes over a foreground command that ran too long. Refused, with the command handed
/// back, when [`BACKGROUND_JOBS`] jobs run already.
pub(crate) fn adopt(
    started: Started,
    command: &str,
    deadline: Instant,
    ctx: &ToolContext,
) -> Result<String, Box<Started>> {
    let mut jobs = jobs();
    if jobs.running() >= BACKGROUND_JOBS {
        return Err(Box::new(started));
    }
    let facts = command_facts(command, ctx, None, None);
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
        .spawn(move || watch(&watched));
    id
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
    record_end(
        &mut facts,
        end,
        &kept,
        drained,
        &job.started.paths,
        PROCESS_CAPTURE_BYTES as u64,
    );
    if job.assets_dir.is_some() {
        facts.captures = crate::bash::capture_digests(&job.started.paths);
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

pub(crate) fn start_definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::AsyncBash.name(),
        description: "Start a shell command in the background and return at once with a \
                      job ID. Read its output with bash_log and stop it with bash_kill; \
                      you are told when it ends.",
        parameters: json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn log_definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::BashLog.name(),
        description: "Read a background job's output (stdout and stderr interleaved): \
                      `limit` lines (default 100, at most 500) from line `offset` \
                      (0-based), or the last lines when `offset` is omitted. Says whether \
                      the job still runs and where the next page starts.",
        parameters: json!({
            "type": "object",
            "properties": {
                "job": {"type": "string"},
                "offset": {"type": "integer", "minimum": 0},
                "limit": {"type": "integer", "minimum": 1, "maximum": BASH_LOG_MAX_LINES}
            },
            "required": ["job"],
            "additionalProperties": false
        }),
    }
}

pub(crate) fn kill_definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::BashKill.name(),
        description: "Stop a background job and everything it started.",
        parameters: json!({
            "type": "object",
            "properties": {"job": {"type": "string"}},
            "required": ["job"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartArguments {
    command: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogArguments {
    job: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArguments {
    job: String,
}

pub(crate) fn run_start(arguments: &Value, ctx: &ToolContext) -> ToolReport {
    let Ok(args) = StartArguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"command\": string}.".into(),
        )
        .into();
    };
    let facts = command_facts(&args.command, ctx, None, None);
    let mut jobs = jobs();
    if jobs.running() >= BACKGROUND_JOBS {
        let refused = ToolOutput::failed(
            "too many jobs",
            format!("{BACKGROUND_JOBS} background jobs run; stop one with bash_kill first."),
        );
        return ToolReport::with_facts(refused, Facts::Command(Box::new(facts)));
    }
    let started = match start(&args.command, ctx, PROCESS_CAPTURE_BYTES as u64) {
        Ok(started) => started,
        Err(refused) => {
            return ToolReport::with_facts(refused, Facts::Command(Box::new(facts)));
        }
    };
    let where_kept = if ctx.assets_dir.is_some() {
        format!(" Its output is kept in {}.", started.paths[2].display())
    } else {
        String::new()
    };
    let id = insert(&mut jobs, started, facts.clone(), None, ctx);
    let facts = CommandFacts {
        job_id: Some(id.clone()),
        ..facts
    };
    ToolReport::with_facts(
        ToolOutput {
            content: format!(
                "Started {id}.{where_kept} Read it with bash_log; stop it with bash_kill. \
                 You will be told when it ends."
            ),
            summary: format!("started {id}"),
            is_error: false,
        },
        Facts::Command(Box::new(facts)),
    )
}

pub(crate) fn run_log(arguments: &Value) -> ToolReport {
    let Ok(args) = LogArguments::deserialize(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "Expected {\"job\": string, \"offset\"?: integer, \"limit\"?: integer}.".into(),
        )
        .into();
    };
    let jobs = jobs();
    let Some(job) = jobs.all.get(&args.job) else {
        return ToolOutput::failed("unknown job", format!("There is no job {:?}.", args.job))
            .into();
    };
    let state = job.state();
    let path = job.started.paths[2].clone();
    drop(jobs);
    let text = read_bounded(&path, PROCESS_CAPTURE_BYTES as u64);
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let limit = args
        .limit
        .unwrap_or(BASH_LOG_LINES)
        .clamp(1, BASH_LOG_MAX_LINES);
    let first = args
        .offset
        .unwrap_or_else(|| total.saturating_sub(limit))
        .min(total);
    let shown = &lines[first..(first + limit).min(total)];
    let end = first + shown.len();
    let range = if shown.is_empty() {
        format!("no lines from {first}")
    } else {
        format!("lines {first}-{}", end - 1)
    };
    let page = shown.join("\n");
    let projection = process_diagnostics(&page);
    let mut content = format!("[{} {state}; {range} of {total} (0-based)]", args.job);
    if !page.is_empty() {
        content.push('\n');
        content.push_str(&projection.text);
    }
    if end < total {
        content.push_str(&format!("\n[next offset: {end}]"));
    }
    if first > 0 || end < total || !projection.inline {
        content.push_str(&format!("\n[full output: {}]", path.display()));
    }
    let facts = Facts::Job {
        job_id: args.job.clone(),
        state: Some(state.clone()),
        first_line: Some(first as u64),
        lines: Some(shown.len() as u64),
        total_lines: Some(total as u64),
    };
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary: format!("{} {state}, {range} of {total}", args.job),
            is_error: false,
        },
        facts,
    )
}

pub(crate) fn run_kill(arguments: &Value) -> ToolReport {
    let Ok(args) = KillArguments::deserialize(arguments) else {
        return ToolOutput::failed("invalid arguments", "Expected {\"job\": string}.".into())
            .into();
    };
    let mut jobs = jobs();
    let Some(job) = jobs.all.get_mut(&args.job) else {
        return ToolOutput::failed("unknown job", format!("There is no job {:?}.", args.job))
            .into();
    };
    let was_running = job.ended.is_none();
    if was_running {
        job.killed = true;
        conclude(job, &End::Cancelled);
    }
    let state = job.state();
    let facts = Facts::Job {
        job_id: args.job.clone(),
        state: Some(state.clone()),
        first_line: None,
        lines: None,
        total_lines: None,
    };
    let (content, summary) = if was_running {
        (
            format!("{}: killed.", args.job),
            format!("{} killed", args.job),
        )
    } else {
        (
            format!("{}: already ended ({state}).", args.job),
            format!("{} already ended", args.job),
        )
    };
    ToolReport::with_facts(
        ToolOutput {
            content,
            summary,
            is_error: false,
        },
        facts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_ended_job_is_noticed_once_by_its_conversation() {
        let dir = tempfile::tempdir().unwrap();
        let conversation = dir.path().join("conversations/s1");
        let assets = conversation.join("tool-calls/c1");
        let ctx = ToolContext {
            cwd: dir.path(),
            assets_dir: Some(&assets),
            cancelled: &never,
            hidden_env: &[],
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
