//! The tool-call service: the calls of one persisted assistant message, from creation
//! to settlement.
//!
//! Every call of the message is recorded first (`tool_call`: supervising). Each is then
//! supervised in the model's order: the permission policy decides, or the client is
//! asked (`tool_call_state: awaiting_approval`); a call that may run is claimed
//! (`tool_call_state: running`, synced before anything starts) and executed on a
//! blocking thread. Settlement appends one `tool_result` with the terminal outcome
//! (completed, failed, denied, cancelled) and the call's facts, then the display-only
//! preview of a change it applied. Read-only calls run side by side (at most
//! [`PARALLEL_TOOL_CALLS`] at once); a call that may
//! change something waits until every earlier call of the message has settled, and
//! later calls wait for it, so effects happen in the order the model asked for. The
//! next model request waits for all of them.
//!
//! Records share syncs (group commit): one `fdatasync` covers every record written
//! before it. The settlement of a call and the claim of the next are written and
//! synced together; so are the claims of read-only calls that start together, and the
//! results of calls that end together. What a record makes known waits for its sync:
//! a call starts only once its claim is durable, and a call's end is told (its
//! `activity` and final card) and its result given to the model only once its result
//! is durable.
//!
//! After a crash, the next turn first settles what the crashed one left: a read-only
//! call the policy lets run without asking is run again (reading twice is harmless),
//! a call that was awaiting approval is denied, and every other call settles
//! `indeterminate`: it may or may not have had its effects, and it never runs again.
//!
//! The service is built from its parts for one agent: the run's output, the agent's
//! journal, the workspace, the agent and what it is offered, and the client's gates.
//! Its [`Role`] says whose calls it runs: the session agent's, whose `task` calls go to
//! a [`Delegate`] (the subagent runner), or a subagent's, each held to its task's scope
//! and shown on the task's card.

use std::path::{Path, PathBuf};

use magi_config::{CallSubject, Verdict};
use magi_protocol::cards::Card;
use magi_protocol::limits::{
    APPROVAL_EXPIRY_MS, PARALLEL_TOOL_CALLS, RUN_ACTIVITIES, SUMMARY_BYTES,
};
use magi_protocol::messages::ActivityState;
use magi_provider::Item;
use magi_store::records::{RecordBody, ToolCallPhase, ToolOutcome};
use magi_tools::{ToolOutput, ToolReport};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod handled;
mod recovery;
mod settle;

use super::conversation::INTERRUPTED_CALL;
use super::ending::Ending;
use super::journal::{Journal, Workspace};
use super::live_cards::Snapshot;
use super::offer::Offer;
use super::output::Output;
use super::scope::{TaskScope, task_label};
use super::text::bounded;
use crate::agent::Agent;
use crate::approvals::{ApprovalGate, ApprovalOutcome};
use crate::cards::{CardSource, PreviewSource, Settlement, TaskChildren};
use crate::client_tools::{ClientTool, ClientToolGate};
use magi_protocol::ErrorCode;

/// The protection label of a call a settings rule or the allow-all mode let run.
pub(super) const LABEL_ALLOWED_AUTOMATICALLY: &str = "allowed automatically";
/// The protection label of a call the user approved.
pub(super) const LABEL_ALLOWED_BY_USER: &str = "allowed by user";
/// The protection label of a call refused by the user or a deny rule.
pub(super) const LABEL_DENIED_BY_USER: &str = "denied by user";
/// The protection label of a call whose approval expired, was cancelled or lost its
/// client.
pub(super) const LABEL_APPROVAL_UNAVAILABLE: &str = "denied; approval unavailable";

/// One call the model asked for.
pub(super) struct Call {
    pub(super) call_id: String,
    pub(super) name: String,
    pub(super) arguments: String,
    /// Its bounded, safe label, made once: the record, the activities and the cards
    /// all show it.
    pub(super) label: String,
    /// The `task` call whose subagent asked for it; none for the session's own calls.
    pub(super) parent_activity_id: Option<String>,
    /// The delegated task: the one a `task` call starts, or the one a subagent's call
    /// belongs to.
    pub(super) task_id: Option<String>,
}

/// A call being executed on a blocking thread.
struct InFlight {
    index: usize,
    activity_id: String,
    protection: Option<&'static str>,
    read_only: bool,
    task: JoinHandle<ToolReport>,
}

/// How a call settled, for the model's next request.
struct Settled {
    content: String,
    is_error: bool,
}

/// A claimed call that starts once its claim is durable.
struct Claimed {
    index: usize,
    activity_id: String,
    protection: Option<&'static str>,
    read_only: bool,
    execution: Execution,
}

/// A settled call whose end is told once its result is durable.
struct Ended {
    index: usize,
    activity_id: String,
    outcome: ToolOutcome,
    protection: Option<&'static str>,
    summary: String,
    facts: Option<serde_json::Value>,
    /// The display-only preview recorded after the result, if the call applied one.
    preview: Option<serde_json::Value>,
}

/// A call's settlement, made but not yet recorded: its records, the end to tell once
/// they are durable, and what the model is given.
struct Staged {
    records: Vec<RecordBody>,
    ended: Ended,
    settled: Settled,
}

/// Records that share the next sync, and what waits for it: the calls they claim start
/// and the ends they settle are told only once the sync succeeded. Each call of a
/// response adds at most one claim and one settlement, so a group never holds more
/// than twice the response's calls.
#[derive(Default)]
struct Group {
    records: Vec<RecordBody>,
    /// The claims among `records`.
    claims: usize,
    claimed: Vec<Claimed>,
    ended: Vec<Ended>,
}

/// The calls of one response on their way to settlement.
struct Progress {
    in_flight: Vec<InFlight>,
    group: Group,
    settled: Vec<Option<Settled>>,
}

impl Progress {
    fn new(calls: usize) -> Progress {
        Progress {
            in_flight: Vec::new(),
            group: Group::default(),
            settled: (0..calls).map(|_| None).collect(),
        }
    }

    /// Calls started or about to start, and whether all of them are read-only.
    fn running(&self) -> (usize, bool) {
        let read_only = self.in_flight.iter().all(|f| f.read_only)
            && self.group.claimed.iter().all(|c| c.read_only);
        (self.in_flight.len() + self.group.claimed.len(), read_only)
    }

    /// Adds a call's settlement to the group; the model is given it whatever the
    /// group's fate.
    fn stage(&mut self, staged: Staged) {
        self.group.records.extend(staged.records);
        self.settled[staged.ended.index] = Some(staged.settled);
        self.group.ended.push(staged.ended);
    }
}

/// Everything a call's execution needs, owned, so it can move to a blocking thread.
struct Execution {
    name: String,
    arguments: String,
    cwd: PathBuf,
    assets_dir: Option<PathBuf>,
    cancel: CancellationToken,
    hidden_env: Vec<String>,
}

impl Execution {
    fn run(self) -> ToolReport {
        let cancel = self.cancel;
        let cancelled = move || cancel.is_cancelled();
        let context = magi_tools::ToolContext {
            cwd: &self.cwd,
            assets_dir: self.assets_dir.as_deref(),
            cancelled: &cancelled,
            hidden_env: &self.hidden_env,
        };
        magi_tools::execute(&self.name, &self.arguments, &context)
    }
}

/// Where the client answers what a run asks of it.
#[derive(Clone, Default)]
pub(super) struct Gates {
    /// Settles the run's pending approvals.
    pub(super) approvals: ApprovalGate,
    /// Answers the run's client tool calls.
    pub(super) client_calls: ClientToolGate,
}

/// Whose calls the service runs.
pub(super) enum Role<'r> {
    /// The session's own agent's: its `task` calls delegate through the delegate.
    Session(&'r mut dyn Delegate),
    /// A subagent's: each stays inside the task's scope and shows on its card.
    Task(&'r mut TaskScope),
}

impl Role<'_> {
    /// Notes that the model asked for `count` calls.
    fn asked(&mut self, count: usize) {
        if let Role::Task(scope) = self {
            scope.tool_calls += count as u64;
        }
    }

    /// Where a call of tool `name` belongs: the `task` call whose subagent asked for
    /// it and the task, or for the session's own `task` call the task it starts.
    fn lineage(&mut self, name: &str) -> (Option<String>, Option<String>) {
        match self {
            Role::Task(scope) => (
                Some(scope.parent_activity_id.clone()),
                Some(scope.task_id.clone()),
            ),
            Role::Session(delegate) if name == magi_config::TASK_TOOL => {
                (None, Some(delegate.next_task_id()))
            }
            Role::Session(_) => (None, None),
        }
    }

    /// Why `call` falls outside the role's ceiling, if it does.
    fn outside(&self, call: &Call, cwd: &Path) -> Option<String> {
        match self {
            Role::Task(scope) => scope.outside(&call.name, &call.arguments, cwd),
            Role::Session(_) => None,
        }
    }

    /// Notes a card sent for one of the role's calls: a subagent's call is a child of
    /// its task's card.
    fn shown(&mut self, card: &Card) {
        if let Role::Task(scope) = self {
            scope.note_child(card);
        }
    }

    /// The children of the session's `task` call `call`, once its subagent ended.
    fn children(&mut self, call: &Call) -> Option<TaskChildren> {
        match (self, &call.task_id, &call.parent_activity_id) {
            (Role::Session(delegate), Some(task_id), None) => delegate.children(task_id),
            _ => None,
        }
    }

    /// After one of the role's calls settled: a subagent's task card shows its progress.
    async fn settled(&self, output: &mut Output) {
        if let Role::Task(scope) = self {
            scope.progress(output).await;
        }
    }
}

/// What runs a `task` call: the subagent runner, seen from the service.
pub(super) trait Delegate {
    /// The identity of the next task.
    fn next_task_id(&mut self) -> String;

    /// Runs the claimed `task` call `call` of activity `activity_id`, its subagent's
    /// calls going through the parts of `service`.
    fn run<'a>(
        &'a mut self,
        call: &'a Call,
        activity_id: &'a str,
        service: &'a mut CallService<'_, '_>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ToolReport> + 'a>>;

    /// The children of task `task_id`, once its subagent ended; each is taken once.
    fn children(&mut self, task_id: &str) -> Option<TaskChildren>;
}

/// The tool-call service of one agent: its calls are recorded in `journal`, shown
/// through `output`, decided by the agent's permissions and the client (`gates`), kept
/// to what `offer` offers, and run in `workspace`.
pub(super) struct CallService<'a, 's> {
    /// The run's output.
    pub(super) output: &'a mut Output,
    /// Where the agent's records go.
    pub(super) journal: &'a mut Journal<'s>,
    /// Where the tools act.
    pub(super) workspace: &'a Workspace,
    /// The agent whose calls these are.
    pub(super) agent: &'a Agent,
    /// What it is offered.
    pub(super) offer: &'a Offer,
    /// The client's answers.
    pub(super) gates: &'a Gates,
    /// The turn the calls belong to.
    pub(super) turn_id: &'a str,
}

impl CallService<'_, '_> {
    /// Runs the calls of one assistant response and appends each call with its result
    /// to `items`. Returns how the turn ends when it cannot go on.
    pub(super) async fn run_calls(
        &mut self,
        role: &mut Role<'_>,
        calls: Vec<Call>,
        items: &mut Vec<Item>,
    ) -> Option<Ending> {
        if self.output.activities + calls.len() > RUN_ACTIVITIES {
            // None of them is recorded or run: a call the run cannot show is a call the
            // user cannot see.
            self.output
                .diagnostic(
                    "activity_limit",
                    "The model asked for more tool calls than one run may show.",
                )
                .await;
            return Some(Ending::failed(ErrorCode::ContentLimit));
        }
        let created = calls
            .iter()
            .map(|call| RecordBody::ToolCall {
                turn_id: self.turn_id.to_owned(),
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                summary: call.label.clone(),
                arguments: Some(call.arguments.clone()),
            })
            .collect();
        self.journal.append_all(created);
        role.asked(calls.len());
        let mut progress = Progress::new(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let activity_id = self.output.next_activity_id("tool");
            let label = call.label.as_str();
            self.output
                .activity(&activity_id, &call.name, ActivityState::Started, label)
                .await;
            let running = running_card(call, None, false);
            self.card(role, &activity_id, Snapshot::Initial, running)
                .await;
            if self.output.cancel.is_cancelled() {
                let report = refused("not started: the turn was cancelled");
                let staged = self.staged(
                    index,
                    call,
                    &activity_id,
                    report,
                    ToolOutcome::Cancelled,
                    None,
                );
                self.settle_now(role, &calls, &mut progress, staged).await;
                continue;
            }
            if let Some(refusal) = role.outside(call, self.workspace.cwd()) {
                let report = refused(&format!("The call was not run: {refusal}."));
                let staged =
                    self.staged(index, call, &activity_id, report, ToolOutcome::Failed, None);
                self.settle_now(role, &calls, &mut progress, staged).await;
                continue;
            }
            if !self.offer.offers(&call.name) {
                // The settings or the profile do not offer it: nothing runs, and the
                // model is told.
                let why = if self.offer.disabled(&call.name) {
                    "is disabled in this backend's settings"
                } else {
                    "is not offered to this agent"
                };
                let report = refused(&format!("The call was not run: {} {why}.", call.name));
                let staged =
                    self.staged(index, call, &activity_id, report, ToolOutcome::Failed, None);
                self.settle_now(role, &calls, &mut progress, staged).await;
                continue;
            }
            if !progress.group.records.is_empty() && self.verdict(call) == Verdict::Ask {
                // Nothing waits for the user's answer: what is claimed starts, what is
                // settled is told.
                self.commit(role, &calls, &mut progress).await;
            }
            let protection = match self.supervise(role, call, &activity_id).await {
                Ok(protection) => protection,
                Err(refusal) => {
                    let report = refused(&format!("The call was not run: {refusal}."));
                    let staged = self.staged(
                        index,
                        call,
                        &activity_id,
                        report,
                        ToolOutcome::Denied,
                        Some(refusal),
                    );
                    self.settle_now(role, &calls, &mut progress, staged).await;
                    continue;
                }
            };
            let read_only = magi_tools::is_read_only(&call.name);
            let (running, all_read_only) = progress.running();
            if !(read_only && all_read_only) || running >= PARALLEL_TOOL_CALLS {
                self.drain(role, &calls, &mut progress).await;
            }
            if self.output.cancel.is_cancelled() {
                let report = refused("not started: the turn was cancelled");
                let staged = self.staged(
                    index,
                    call,
                    &activity_id,
                    report,
                    ToolOutcome::Cancelled,
                    protection,
                );
                self.settle_now(role, &calls, &mut progress, staged).await;
                continue;
            }
            // The claim is durable before anything runs, so a crash from here on is
            // known to have possibly had effects. It shares its sync with the results
            // drained just before it; a claim that cannot be written runs nothing.
            progress.group.records.push(RecordBody::ToolCallState {
                turn_id: self.turn_id.to_owned(),
                call_id: call.call_id.clone(),
                state: ToolCallPhase::Running,
                protection: protection.map(str::to_owned),
            });
            progress.group.claims += 1;
            // The tools the backend or the client runs itself, not on a thread: nothing
            // else is in flight (none is read-only), and later calls wait for them.
            if let Some(handler) = self.handler(role, call) {
                if !self.commit(role, &calls, &mut progress).await {
                    let report = refused("not run: the call could not be recorded");
                    let staged = self.staged(
                        index,
                        call,
                        &activity_id,
                        report,
                        ToolOutcome::Failed,
                        protection,
                    );
                    self.settle_now(role, &calls, &mut progress, staged).await;
                    continue;
                }
                let report = self.run_here(role, call, handler, &activity_id).await;
                let outcome = outcome_of(&report);
                let staged = self.staged(index, call, &activity_id, report, outcome, protection);
                progress.stage(staged);
                continue;
            }
            progress.group.claimed.push(Claimed {
                index,
                activity_id,
                protection,
                read_only,
                execution: self.execution(call),
            });
            // Read-only calls that start together share one sync of their claims.
            let joined = read_only
                && progress.running().0 < PARALLEL_TOOL_CALLS
                && calls
                    .get(index + 1)
                    .is_some_and(|next| magi_tools::is_read_only(&next.name));
            if !joined {
                self.commit(role, &calls, &mut progress).await;
            }
        }
        self.drain(role, &calls, &mut progress).await;
        // The model is given no result before it is durable.
        self.commit(role, &calls, &mut progress).await;
        for (call, settled) in calls.into_iter().zip(progress.settled) {
            let Settled { content, is_error } = settled.unwrap_or_else(|| Settled {
                content: INTERRUPTED_CALL.into(),
                is_error: true,
            });
            items.push(Item::ToolCall {
                call_id: call.call_id.clone(),
                name: call.name,
                arguments: call.arguments,
            });
            items.push(Item::ToolResult {
                call_id: call.call_id,
                output: content,
                is_error,
            });
        }
        None
    }

    /// Sends a snapshot of a call's card; a subagent's call also becomes a child of
    /// its task's card.
    async fn card(
        &mut self,
        role: &mut Role<'_>,
        activity_id: &str,
        snapshot: Snapshot,
        source: CardSource<'_>,
    ) {
        if let Some(card) = self.output.card(activity_id, snapshot, source).await {
            role.shown(&card);
        }
    }

    /// A call the model asked for, with its bounded, safe label.
    pub(super) fn call(
        &self,
        role: &mut Role<'_>,
        call_id: String,
        name: String,
        arguments: String,
    ) -> Call {
        let described = if name == magi_config::TASK_TOOL {
            task_label(&arguments)
        } else {
            magi_tools::describe(&name, &arguments)
        };
        let label = bounded(&self.output.safe(&described), SUMMARY_BYTES);
        let (parent_activity_id, task_id) = role.lineage(&name);
        Call {
            call_id,
            name,
            arguments,
            label,
            parent_activity_id,
            task_id,
        }
    }

    fn execution(&self, call: &Call) -> Execution {
        Execution {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            cwd: self.workspace.cwd().to_owned(),
            assets_dir: self.workspace.tool_assets_dir(&call.call_id),
            cancel: self.output.cancel.clone(),
            hidden_env: self.agent.hidden_env.clone(),
        }
    }

    /// The client tool a call names, if any.
    pub(super) fn client_tool(&self, name: &str) -> Option<ClientTool> {
        self.offer.client_tool(name).cloned()
    }

    /// What the policy says of a call, from its arguments.
    fn verdict(&self, call: &Call) -> Verdict {
        let cwd = self.workspace.cwd();
        if self.client_tool(&call.name).is_some() || self.agent.mcp.tool(&call.name).is_some() {
            // The client's own tools and MCP tools change what they change: they ask
            // unless a rule or the mode allows them (a server's read-only hint is not
            // evidence).
            return self.agent.permissions.verdict(&CallSubject {
                tool: &call.name,
                subject: None,
                read_only: false,
                outside_workspace: false,
            });
        }
        if !magi_tools::exists(&call.name) {
            // It fails without running anything.
            return Verdict::Run;
        }
        let subject = magi_tools::subject(&call.name, &call.arguments, cwd);
        self.agent.permissions.verdict(&CallSubject {
            tool: &call.name,
            subject: subject.as_deref(),
            // Stopping one's own job needs no more approval than starting it had.
            read_only: magi_tools::BuiltinTool::from_name(&call.name)
                .is_some_and(|tool| !tool.needs_approval()),
            outside_workspace: magi_tools::outside_workspace(&call.name, &call.arguments, cwd),
        })
    }

    /// Decides whether a call may run, asking the client when the policy says so. Ok
    /// carries the protection label of the decision (none when no decision was
    /// needed); Err the label of the refusal.
    async fn supervise(
        &mut self,
        role: &mut Role<'_>,
        call: &Call,
        activity_id: &str,
    ) -> Result<Option<&'static str>, &'static str> {
        match self.verdict(call) {
            Verdict::Run => return Ok(None),
            Verdict::Allowed => return Ok(Some(LABEL_ALLOWED_AUTOMATICALLY)),
            Verdict::Denied => return Err(LABEL_DENIED_BY_USER),
            Verdict::Ask => {}
        }
        self.journal.append(RecordBody::ToolCallState {
            turn_id: self.turn_id.to_owned(),
            call_id: call.call_id.clone(),
            state: ToolCallPhase::AwaitingApproval,
            protection: None,
        });
        let approval_id = uuid::Uuid::new_v4().to_string();
        let expiry = std::time::Duration::from_millis(APPROVAL_EXPIRY_MS);
        // Opened before it is announced, so an answer racing the event is not lost.
        let wait = self.gates.approvals.open(&approval_id, expiry);
        self.output
            .approval_requested(&approval_id, &call.label, APPROVAL_EXPIRY_MS)
            .await;
        let waiting = running_card(call, None, true);
        self.card(role, activity_id, Snapshot::Interim, waiting)
            .await;
        match wait.settled(&self.output.cancel).await {
            ApprovalOutcome::Allowed => Ok(Some(LABEL_ALLOWED_BY_USER)),
            ApprovalOutcome::Denied => Err(LABEL_DENIED_BY_USER),
            ApprovalOutcome::Expired | ApprovalOutcome::Cancelled => {
                Err(LABEL_APPROVAL_UNAVAILABLE)
            }
        }
    }
}

/// A report's recordable parts, safe and bounded.
struct SafeResult {
    summary: String,
    content: String,
    facts: Option<serde_json::Value>,
    transcript: Vec<String>,
}

/// The `tool_result` record of a settled call.
fn result_record(
    turn_id: String,
    call: &Call,
    safe: SafeResult,
    outcome: ToolOutcome,
    protection: Option<&'static str>,
    display_id: Option<String>,
) -> RecordBody {
    RecordBody::ToolResult {
        turn_id,
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        outcome,
        summary: safe.summary,
        content: Some(safe.content),
        facts: safe.facts,
        protection: protection.map(str::to_owned),
        display_id,
        transcript: safe.transcript,
    }
}

/// The card source of a call that has not settled; identity, origin and revision are
/// filled in when it is sent.
fn running_card<'a>(
    call: &'a Call,
    protection: Option<&'a str>,
    awaiting_approval: bool,
) -> CardSource<'a> {
    CardSource {
        activity_id: "",
        origin: magi_protocol::cards::Origin::Live,
        revision: 0,
        tool_name: &call.name,
        label: &call.label,
        working_directory: None,
        settlement: Settlement::Running,
        facts: None,
        protection,
        awaiting_approval,
        preview: PreviewSource::NotApplicable,
        parent_activity_id: call.parent_activity_id.as_deref(),
        task_id: call.task_id.as_deref(),
        children: None,
    }
}

/// How a finished report settles: cancelled, failed or completed.
fn outcome_of(report: &ToolReport) -> ToolOutcome {
    if report.cancelled {
        ToolOutcome::Cancelled
    } else if report.output.is_error {
        ToolOutcome::Failed
    } else {
        ToolOutcome::Completed
    }
}

/// The report of a call that did not run, or whose run left nothing to report.
fn refused(content: &str) -> ToolReport {
    let summary = content
        .strip_prefix("The call was not run: ")
        .map_or(content, |s| s.trim_end_matches('.'));
    ToolReport::from(ToolOutput {
        content: content.to_owned(),
        summary: summary.to_owned(),
        is_error: true,
    })
}

#[cfg(test)]
mod tests;
