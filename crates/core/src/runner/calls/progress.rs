//! The calls of one response on their way to settlement: the claimed calls, the ones
//! in flight on blocking threads, the group of records sharing the next sync, and what
//! each settled call gives the model.

use std::path::PathBuf;
use std::sync::{Condvar, Mutex, PoisonError};

use magi_protocol::limits::PARALLEL_TOOL_CALLS;
use magi_store::records::{RecordBody, ToolOutcome};
use magi_tools::ToolReport;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A call being executed on a blocking thread.
pub(super) struct InFlight {
    pub(super) index: usize,
    pub(super) activity_id: String,
    pub(super) protection: Option<&'static str>,
    pub(super) read_only: bool,
    pub(super) task: JoinHandle<ToolReport>,
    /// A command's newest output, for its card's interim revisions.
    pub(super) live: Option<std::sync::Arc<magi_tools::LiveOutput>>,
}

/// How a call settled, for the model's next request.
pub(super) struct Settled {
    pub(super) content: String,
    pub(super) is_error: bool,
    /// The image the call gives the model with its result (`view_image`).
    pub(super) image: Option<magi_provider::Item>,
    /// How it settled (what a `post_tool_use` hook is told).
    pub(super) outcome: ToolOutcome,
}

/// A claimed call that starts once its claim is durable.
pub(super) struct Claimed {
    pub(super) index: usize,
    pub(super) activity_id: String,
    pub(super) protection: Option<&'static str>,
    pub(super) read_only: bool,
    pub(super) execution: Execution,
}

/// A settled call whose end is told once its result is durable.
pub(super) struct Ended {
    pub(super) index: usize,
    pub(super) activity_id: String,
    pub(super) outcome: ToolOutcome,
    pub(super) protection: Option<&'static str>,
    pub(super) summary: String,
    pub(super) facts: Option<serde_json::Value>,
    /// The display-only preview recorded after the result, if the call applied one.
    pub(super) preview: Option<serde_json::Value>,
    /// The transcript projection recorded with the result.
    pub(super) transcript: Vec<String>,
    /// The colour of its lines, recorded with it.
    pub(super) transcript_styles: magi_store::records::TranscriptStyles,
}

/// A call's settlement, made but not yet recorded: its records, the end to tell once
/// they are durable, and what the model is given.
pub(super) struct Staged {
    pub(super) records: Vec<RecordBody>,
    pub(super) ended: Ended,
    pub(super) settled: Settled,
}

/// Records that share the next sync, and what waits for it: the calls they claim start
/// and the ends they settle are told only once the sync succeeded. Each call of a
/// response adds at most one claim and one settlement, so a group never holds more
/// than twice the response's calls.
#[derive(Default)]
pub(super) struct Group {
    pub(super) records: Vec<RecordBody>,
    /// The claims among `records`.
    pub(super) claims: usize,
    pub(super) claimed: Vec<Claimed>,
    pub(super) ended: Vec<Ended>,
    /// Calls whose activity starts once the ends before them are told: told started
    /// after the group's other ends, before their own.
    pub(super) starting: Vec<Starting>,
}

/// A call whose activity is told started with the next group.
pub(super) struct Starting {
    pub(super) index: usize,
    pub(super) activity_id: String,
}

/// The calls of one response on their way to settlement.
pub(super) struct Progress {
    pub(super) in_flight: Vec<InFlight>,
    pub(super) group: Group,
    pub(super) settled: Vec<Option<Settled>>,
}

impl Progress {
    pub(super) fn new(calls: usize) -> Progress {
        Progress {
            in_flight: Vec::new(),
            group: Group::default(),
            settled: (0..calls).map(|_| None).collect(),
        }
    }

    /// Calls started or about to start, and whether all of them are read-only.
    pub(super) fn running(&self) -> (usize, bool) {
        let read_only = self.in_flight.iter().all(|f| f.read_only)
            && self.group.claimed.iter().all(|c| c.read_only);
        (self.in_flight.len() + self.group.claimed.len(), read_only)
    }

    /// Whether a call (`read_only` or not) must wait for every earlier call to settle
    /// before it goes on: one that may change something always does, a read-only one
    /// when something else runs or [`PARALLEL_TOOL_CALLS`] already do.
    pub(super) fn must_wait(&self, read_only: bool) -> bool {
        let (running, all_read_only) = self.running();
        !(read_only && all_read_only) || running >= PARALLEL_TOOL_CALLS
    }

    /// Adds a call's settlement to the group; the model is given it whatever the
    /// group's fate.
    pub(super) fn stage(&mut self, staged: Staged) {
        self.group.records.extend(staged.records);
        self.settled[staged.ended.index] = Some(staged.settled);
        self.group.ended.push(staged.ended);
    }
}

/// Everything a call's execution needs, owned, so it can move to a blocking thread.
pub(super) struct Execution {
    pub(super) name: String,
    pub(super) arguments: String,
    pub(super) cwd: PathBuf,
    pub(super) assets_dir: Option<PathBuf>,
    pub(super) cancel: CancellationToken,
    pub(super) hidden_env: Vec<String>,
    /// The client's file system, for a file tool's call with `client.files`. Used
    /// only on a blocking thread, where its waits may block.
    pub(super) files: Option<crate::client_files::CallFiles>,
    /// Where a `bash` command's newest output goes while it runs, when its card is
    /// shown live.
    pub(super) live: Option<std::sync::Arc<magi_tools::LiveOutput>>,
    /// Whether a command runs confined read-only (the call's approval mode is `plan`).
    pub(super) sandbox_read_only: bool,
}

impl Execution {
    /// This execution, reading and writing through `files` when given.
    pub(super) fn through(self, files: Option<crate::client_files::CallFiles>) -> Execution {
        Execution { files, ..self }
    }

    /// Runs the call once `claim` says its claim is durable, and not at all when it
    /// could not be made so. `bash` prepares its command first and waits just before
    /// it starts it (so the preparation overlaps the claim's sync); every other tool
    /// waits before it begins.
    pub(super) fn run(self, claim: &Claim) -> ToolReport {
        let prepares =
            magi_tools::BuiltinTool::from_name(&self.name) == Some(magi_tools::BuiltinTool::Bash);
        if !prepares && !claim.durable() {
            return refused(NOT_RECORDED);
        }
        let cancel = self.cancel;
        let cancelled = move || cancel.is_cancelled();
        let durable = || claim.durable();
        let context = magi_tools::ToolContext {
            cwd: &self.cwd,
            assets_dir: self.assets_dir.as_deref(),
            cancelled: &cancelled,
            hidden_env: &self.hidden_env,
            durable: &durable,
            live_output: self.live.clone(),
            sandbox_read_only: self.sandbox_read_only,
        };
        let editor = self
            .files
            .as_ref()
            .map(|files| files as &dyn magi_tools::EditorFiles);
        let report = magi_tools::execute_with(&self.name, &self.arguments, &context, editor);
        if claim.durable() {
            report
        } else {
            // Nothing started: the command waited for the claim and was refused it.
            refused(NOT_RECORDED)
        }
    }
}

/// What a call whose claim could not be recorded reports: it ran nothing.
pub(super) const NOT_RECORDED: &str = "not run: the call could not be recorded";

/// The report of a call that did not run, or whose run left nothing to report.
pub(super) fn refused(content: &str) -> ToolReport {
    // The first line says why; a person's message for the model follows it.
    let summary = content
        .strip_prefix("The call was not run: ")
        .and_then(|s| s.lines().next())
        .map_or(content, |s| s.trim_end_matches('.'));
    let mut report = ToolReport::from(magi_tools::ToolOutput {
        content: content.to_owned(),
        summary: summary.to_owned(),
        is_error: true,
    });
    // What the person told the model with a denial is the refusal's own result: its
    // card shows it, live and saved.
    report.transcript = content
        .lines()
        .skip(1)
        .filter(|line| !line.trim().is_empty())
        .take(magi_tools::TRANSCRIPT_LINES)
        .map(str::to_owned)
        .collect();
    report
}

/// Whether the claims of one group are durable: open once their sync returned. The
/// calls they claim go to their threads before the sync, so that they prepare while it
/// runs, and wait here before they act. It is opened on every path (dropping the
/// group's [`ClaimSync`] opens it as not durable), so every wait on it ends.
#[derive(Default)]
pub(super) struct Claim {
    durable: Mutex<Option<bool>>,
    opened: Condvar,
}

impl Claim {
    /// A claim recorded before: a crashed run's, which recovery runs again.
    pub(super) fn recorded() -> Claim {
        Claim {
            durable: Mutex::new(Some(true)),
            opened: Condvar::new(),
        }
    }

    /// Waits until the sync returned; whether the claim is durable.
    pub(super) fn durable(&self) -> bool {
        let mut durable = self.durable.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(durable) = *durable {
                return durable;
            }
            durable = self
                .opened
                .wait(durable)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn open(&self, durable: bool) {
        let mut state = self.durable.lock().unwrap_or_else(PoisonError::into_inner);
        if state.is_none() {
            *state = Some(durable);
        }
        drop(state);
        self.opened.notify_all();
    }
}

/// The group's side of a [`Claim`]: opens it with the sync's outcome, or as not durable
/// if dropped first (the sync never returned to say).
pub(super) struct ClaimSync(pub(super) std::sync::Arc<Claim>);

impl ClaimSync {
    pub(super) fn open(self, durable: bool) {
        self.0.open(durable);
    }
}

impl Drop for ClaimSync {
    fn drop(&mut self) {
        self.0.open(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn execution(cwd: &std::path::Path, name: &str, arguments: serde_json::Value) -> Execution {
        Execution {
            name: name.into(),
            arguments: arguments.to_string(),
            cwd: cwd.to_owned(),
            assets_dir: None,
            cancel: CancellationToken::new(),
            hidden_env: Vec::new(),
            files: None,
            live: None,
            sandbox_read_only: false,
        }
    }

    #[test]
    fn a_claim_is_waited_for_and_opened_on_every_path() {
        assert!(Claim::recorded().durable());
        // A wait ends once the sync says how it went.
        let claim = Arc::new(Claim::default());
        let waiter = std::thread::spawn({
            let claim = Arc::clone(&claim);
            move || claim.durable()
        });
        ClaimSync(Arc::clone(&claim)).open(true);
        assert!(waiter.join().unwrap());
        // A sync that never says (its side dropped) opens it as not durable.
        let claim = Arc::new(Claim::default());
        drop(ClaimSync(Arc::clone(&claim)));
        assert!(!claim.durable());
    }

    #[test]
    fn nothing_runs_when_the_claim_could_not_be_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let not_durable = Claim::default();
        not_durable.open(false);
        // A command is prepared, then not started.
        let command = serde_json::json!({"command": "touch started"});
        let report = execution(dir.path(), "bash", command.clone()).run(&not_durable);
        assert!(report.output.is_error);
        assert_eq!(report.output.content, NOT_RECORDED);
        assert!(!dir.path().join("started").exists());
        // Any other tool does not begin.
        let write = serde_json::json!({"path": "written.txt", "content": "x"});
        let report = execution(dir.path(), "write", write.clone()).run(&not_durable);
        assert_eq!(report.output.content, NOT_RECORDED);
        assert!(!dir.path().join("written.txt").exists());
        // With a durable claim both run.
        let durable = Claim::recorded();
        assert!(
            !execution(dir.path(), "bash", command)
                .run(&durable)
                .output
                .is_error
        );
        assert!(dir.path().join("started").exists());
        assert!(
            !execution(dir.path(), "write", write)
                .run(&durable)
                .output
                .is_error
        );
        assert!(dir.path().join("written.txt").exists());
    }
}
