//! The calls of one response on their way to settlement: the claimed calls, the ones
//! in flight on blocking threads, the group of records sharing the next sync, and what
//! each settled call gives the model.

use std::path::PathBuf;

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
}

impl Execution {
    /// This execution, reading and writing through `files` when given.
    pub(super) fn through(self, files: Option<crate::client_files::CallFiles>) -> Execution {
        Execution { files, ..self }
    }

    pub(super) fn run(self) -> ToolReport {
        let cancel = self.cancel;
        let cancelled = move || cancel.is_cancelled();
        let context = magi_tools::ToolContext {
            cwd: &self.cwd,
            assets_dir: self.assets_dir.as_deref(),
            cancelled: &cancelled,
            hidden_env: &self.hidden_env,
        };
        let editor = self
            .files
            .as_ref()
            .map(|files| files as &dyn magi_tools::EditorFiles);
        magi_tools::execute_with(&self.name, &self.arguments, &context, editor)
    }
}
