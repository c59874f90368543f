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

use std::path::PathBuf;
use std::sync::Arc;

use magi_config::{CallSubject, Verdict};
use magi_protocol::limits::{
    APPROVAL_EXPIRY_MS, PARALLEL_TOOL_CALLS, RUN_ACTIVITIES, SUMMARY_BYTES,
};
use magi_protocol::messages::ActivityState;
use magi_provider::Item;
use magi_store::records::{Record, RecordBody, ToolCallPhase, ToolOutcome};
use magi_tools::{ToolOutput, ToolReport};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::conversation::{INTERRUPTED_CALL, bounded};
use super::live_cards::Snapshot;
use super::{Ending, Turn};
use crate::approvals::ApprovalOutcome;
use crate::cards::{CardSource, PreviewSource, Settlement};
use crate::client_tools::ClientTool;
use crate::mcp::McpTool;
use magi_protocol::ErrorCode;
use magi_protocol::limits::CLIENT_TOOL_ARGUMENTS_BYTES;
use magi_protocol::messages::{
    ClientToolCall, ClientToolCancel, ClientToolCancelReason, ClientToolOutcome, Event,
};

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

/// A claimed call that starts once its claim is durable.
struct Claimed {
    index: usize,
    activity_id: String,
    protection: Option<&'static str>,
    read_only: bool,
    execution: Execution,
}

/// How a call settled, for the model's next request.
struct Settled {
    content: String,
    is_error: bool,
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

/// What runs a claimed call other than a built-in tool on a blocking thread.
enum Handler {
    Skill,
    Task,
    Mcp(Arc<McpTool>),
    Client(ClientTool),
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

impl Turn {
    /// Runs the calls of one assistant response and appends each call with its result
    /// to `items`. Returns how the turn ends when it cannot go on.
    pub(super) async fn run_calls(
        &mut self,
        calls: Vec<Call>,
        items: &mut Vec<Item>,
    ) -> Option<Ending> {
        if self.activities + calls.len() > RUN_ACTIVITIES {
            // None of them is recorded or run: a call the run cannot show is a call the
            // user cannot see.
            self.diagnostic(
                "activity_limit",
                "The model asked for more tool calls than one run may show.",
            )
            .await;
            return Some(Ending::failed(ErrorCode::ContentLimit));
        }
        let created = calls
            .iter()
            .map(|call| RecordBody::ToolCall {
                turn_id: self.turn_id.clone(),
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                summary: call.label.clone(),
                arguments: Some(call.arguments.clone()),
            })
            .collect();
        self.append_all(created);
        if let Some(scope) = &mut self.scope {
            scope.tool_calls += calls.len() as u64;
        }
        let mut progress = Progress::new(calls.len());
        for (index, call) in calls.iter().enumerate() {
            self.activities += 1;
            let activity_id = format!("tool-{}", self.activities);
            let label = call.label.as_str();
            self.activity(&activity_id, &call.name, ActivityState::Started, label)
                .await;
            let running = self.running_card(call, None, false);
            self.card(&activity_id, Snapshot::Initial, running).await;
            if self.cancel.is_cancelled() {
                let report = refused("not started: the turn was cancelled");
                let staged = self.staged(
                    index,
                    call,
                    &activity_id,
                    report,
                    ToolOutcome::Cancelled,
                    None,
                );
                self.settle_now(&calls, &mut progress, staged).await;
                continue;
            }
            if let Some(refusal) = self.outside_task_scope(call) {
                let report = refused(&format!("The call was not run: {refusal}."));
                let staged =
                    self.staged(index, call, &activity_id, report, ToolOutcome::Failed, None);
                self.settle_now(&calls, &mut progress, staged).await;
                continue;
            }
            if !self.offered(&call.name) {
                // The settings or the profile do not offer it: nothing runs, and the
                // model is told.
                let why = if self.disabled(&call.name) {
                    "is disabled in this backend's settings"
                } else {
                    "is not offered to this agent"
                };
                let report = refused(&format!("The call was not run: {} {why}.", call.name));
                let staged =
                    self.staged(index, call, &activity_id, report, ToolOutcome::Failed, None);
                self.settle_now(&calls, &mut progress, staged).await;
                continue;
            }
            if !progress.group.records.is_empty() && self.verdict(call) == Verdict::Ask {
                // Nothing waits for the user's answer: what is claimed starts, what is
                // settled is told.
                self.commit(&calls, &mut progress).await;
            }
            let protection = match self.supervise(call, &activity_id).await {
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
                    self.settle_now(&calls, &mut progress, staged).await;
                    continue;
                }
            };
            let read_only = magi_tools::is_read_only(&call.name);
            let (running, all_read_only) = progress.running();
            if !(read_only && all_read_only) || running >= PARALLEL_TOOL_CALLS {
                self.drain(&calls, &mut progress).await;
            }
            if self.cancel.is_cancelled() {
                let report = refused("not started: the turn was cancelled");
                let staged = self.staged(
                    index,
                    call,
                    &activity_id,
                    report,
                    ToolOutcome::Cancelled,
                    protection,
                );
                self.settle_now(&calls, &mut progress, staged).await;
                continue;
            }
            // The claim is durable before anything runs, so a crash from here on is
            // known to have possibly had effects. It shares its sync with the results
            // drained just before it; a claim that cannot be written runs nothing.
            progress.group.records.push(RecordBody::ToolCallState {
                turn_id: self.turn_id.clone(),
                call_id: call.call_id.clone(),
                state: ToolCallPhase::Running,
                protection: protection.map(str::to_owned),
            });
            progress.group.claims += 1;
            // The tools the backend or the client runs itself, not on a thread: nothing
            // else is in flight (none is read-only), and later calls wait for them.
            if let Some(handler) = self.handler(call) {
                if !self.commit(&calls, &mut progress).await {
                    let report = refused("not run: the call could not be recorded");
                    let staged = self.staged(
                        index,
                        call,
                        &activity_id,
                        report,
                        ToolOutcome::Failed,
                        protection,
                    );
                    self.settle_now(&calls, &mut progress, staged).await;
                    continue;
                }
                let report = self.run_here(call, handler, &activity_id).await;
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
                self.commit(&calls, &mut progress).await;
            }
        }
        self.drain(&calls, &mut progress).await;
        // The model is given no result before it is durable.
        self.commit(&calls, &mut progress).await;
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

    /// The card source of a call that has not settled; identity, origin and revision
    /// are filled in when it is sent.
    fn running_card<'a>(
        &self,
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

    /// A call the model asked for, with its bounded, safe label.
    pub(super) fn call(&mut self, call_id: String, name: String, arguments: String) -> Call {
        let described = if name == magi_config::TASK_TOOL {
            super::task::describe(&arguments)
        } else {
            magi_tools::describe(&name, &arguments)
        };
        let label = bounded(&self.safe(&described), SUMMARY_BYTES);
        let (parent_activity_id, task_id) = match &self.scope {
            Some(scope) => (
                Some(scope.parent_activity_id.clone()),
                Some(scope.task_id.clone()),
            ),
            None if name == magi_config::TASK_TOOL => (None, Some(self.next_task_id())),
            None => (None, None),
        };
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
            cwd: self.sessions.cwd().to_owned(),
            assets_dir: self.sessions.tool_assets_dir(&call.call_id),
            cancel: self.cancel.clone(),
            hidden_env: self.agent.hidden_env.clone(),
        }
    }

    /// What runs a call of `skill`, `task`, an MCP tool or a client tool; `None` for
    /// the built-in tools, which run on a blocking thread.
    fn handler(&self, call: &Call) -> Option<Handler> {
        if call.name == SKILL_TOOL && !self.agent.skills.is_empty() {
            return Some(Handler::Skill);
        }
        if call.name == magi_config::TASK_TOOL && self.scope.is_none() {
            return Some(Handler::Task);
        }
        if let Some(tool) = self.agent.mcp.tool(&call.name) {
            return Some(Handler::Mcp(tool));
        }
        self.client_tool(&call.name).map(Handler::Client)
    }

    /// Runs a claimed call that does not run on a blocking thread.
    async fn run_here(&mut self, call: &Call, handler: Handler, activity_id: &str) -> ToolReport {
        match handler {
            Handler::Skill => self.load_skill(call),
            Handler::Task => self.run_task(call, activity_id).await,
            Handler::Mcp(tool) => {
                let mcp = Arc::clone(&self.agent.mcp);
                mcp.call(&tool, &call.arguments, &self.cancel).await
            }
            Handler::Client(tool) => self.call_client(call, &tool, activity_id).await,
        }
    }

    /// A `skill` call: the named skill's whole text, read at startup.
    fn load_skill(&self, call: &Call) -> ToolReport {
        let name = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned));
        let output = match name.and_then(|n| self.agent.skills.iter().find(|s| s.name == n)) {
            Some(skill) => ToolOutput {
                content: skill.text.clone(),
                summary: format!("loaded {}", skill.name),
                is_error: false,
            },
            None => ToolOutput {
                content: format!(
                    "There is no such skill. The skills are: {}.",
                    self.agent
                        .skills
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                summary: "unknown skill".into(),
                is_error: true,
            },
        };
        ToolReport::from(output)
    }

    /// The client tool a call names, if any.
    fn client_tool(&self, name: &str) -> Option<ClientTool> {
        self.request
            .client_tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    /// Hands a claimed call to the client and waits for its one answer, the run's
    /// cancellation or the tool's timeout; a withdrawn call is announced.
    async fn call_client(
        &mut self,
        call: &Call,
        tool: &ClientTool,
        activity_id: &str,
    ) -> ToolReport {
        let arguments = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
            Ok(value) if value.is_object() => value,
            _ => {
                return ToolReport::from(ToolOutput {
                    content: "The arguments were not a JSON object.".into(),
                    summary: "invalid arguments".into(),
                    is_error: true,
                });
            }
        };
        if call.arguments.len() > CLIENT_TOOL_ARGUMENTS_BYTES {
            return ToolReport::from(ToolOutput {
                content: format!(
                    "The arguments are over the {CLIENT_TOOL_ARGUMENTS_BYTES}-byte bound; the \
                     call was not sent."
                ),
                summary: "arguments too large".into(),
                is_error: true,
            });
        }
        // Opened before it is announced, so an answer racing the event is not lost.
        let answer = self.client_calls.open(&call.call_id);
        self.critical(Event::ClientToolCall(Box::new(ClientToolCall {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            call_id: call.call_id.clone(),
            activity_id: activity_id.to_owned(),
            tool: tool.name.clone(),
            arguments,
            timeout_ms: tool.timeout_ms,
        })))
        .await;
        let timeout = tokio::time::sleep(std::time::Duration::from_millis(tool.timeout_ms));
        let withdrawn = tokio::select! {
            answered = answer => match answered {
                Ok((outcome, content)) => {
                    let failed = outcome == ClientToolOutcome::Failed;
                    return ToolReport::from(ToolOutput {
                        summary: if failed { "failed" } else { "completed" }.into(),
                        content,
                        is_error: failed,
                    });
                }
                // The gate went away: the run is ending.
                Err(_) => ClientToolCancelReason::Cancelled,
            },
            () = self.cancel.cancelled() => ClientToolCancelReason::Cancelled,
            () = timeout => ClientToolCancelReason::TimedOut,
        };
        self.client_calls.close(&call.call_id);
        self.critical(Event::ClientToolCancel(ClientToolCancel {
            session_id: self.request.session_id.clone(),
            run_id: self.request.run_id.clone(),
            call_id: call.call_id.clone(),
            reason: withdrawn,
        }))
        .await;
        match withdrawn {
            ClientToolCancelReason::Cancelled => ToolReport {
                cancelled: true,
                ..ToolReport::from(ToolOutput {
                    content: "The call was cancelled before the client answered.".into(),
                    summary: "cancelled".into(),
                    is_error: true,
                })
            },
            ClientToolCancelReason::TimedOut => ToolReport::from(ToolOutput {
                content: format!(
                    "The client did not answer within {} ms; the call was withdrawn.",
                    tool.timeout_ms
                ),
                summary: "no answer in time".into(),
                is_error: true,
            }),
        }
    }

    /// What the policy says of a call, from its arguments.
    fn verdict(&self, call: &Call) -> Verdict {
        let cwd = self.sessions.cwd();
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
        call: &Call,
        activity_id: &str,
    ) -> Result<Option<&'static str>, &'static str> {
        match self.verdict(call) {
            Verdict::Run => return Ok(None),
            Verdict::Allowed => return Ok(Some(LABEL_ALLOWED_AUTOMATICALLY)),
            Verdict::Denied => return Err(LABEL_DENIED_BY_USER),
            Verdict::Ask => {}
        }
        self.append(RecordBody::ToolCallState {
            turn_id: self.turn_id.clone(),
            call_id: call.call_id.clone(),
            state: ToolCallPhase::AwaitingApproval,
            protection: None,
        });
        let approval_id = uuid::Uuid::new_v4().to_string();
        let expiry = std::time::Duration::from_millis(APPROVAL_EXPIRY_MS);
        // Opened before it is announced, so an answer racing the event is not lost.
        let wait = self.approvals.open(&approval_id, expiry);
        self.approval_requested(&approval_id, &call.label, APPROVAL_EXPIRY_MS)
            .await;
        let waiting = self.running_card(call, None, true);
        self.card(activity_id, Snapshot::Interim, waiting).await;
        match wait.settled(&self.cancel).await {
            ApprovalOutcome::Allowed => Ok(Some(LABEL_ALLOWED_BY_USER)),
            ApprovalOutcome::Denied => Err(LABEL_DENIED_BY_USER),
            ApprovalOutcome::Expired | ApprovalOutcome::Cancelled => {
                Err(LABEL_APPROVAL_UNAVAILABLE)
            }
        }
    }

    /// Waits for every call in flight, in the order they started, and stages each
    /// settlement. Results of calls that ended together share one sync: the group is
    /// committed only before waiting for a call still running.
    async fn drain(&mut self, calls: &[Call], progress: &mut Progress) {
        if !progress.group.claimed.is_empty() {
            // Claimed calls start before anything waits for them.
            self.commit(calls, progress).await;
        }
        for flight in std::mem::take(&mut progress.in_flight) {
            if !flight.task.is_finished() {
                self.commit(calls, progress).await;
            }
            let (report, outcome) = match flight.task.await {
                Ok(report) => {
                    let outcome = outcome_of(&report);
                    (report, outcome)
                }
                // The tool's thread panicked: what it did before is unknown.
                Err(_) => (
                    refused("the tool stopped unexpectedly; its effects are unknown"),
                    ToolOutcome::Indeterminate,
                ),
            };
            let staged = self.staged(
                flight.index,
                &calls[flight.index],
                &flight.activity_id,
                report,
                outcome,
                flight.protection,
            );
            progress.stage(staged);
        }
    }

    /// Records the group with one write and one sync, then starts the calls it claimed
    /// and tells the ends it settled. A claim that could not be recorded runs nothing
    /// and settles failed. Returns whether everything was recorded.
    async fn commit(&mut self, calls: &[Call], progress: &mut Progress) -> bool {
        let mut all_recorded = true;
        while !progress.group.records.is_empty() {
            let Group {
                records,
                claims,
                claimed,
                ended,
            } = std::mem::take(&mut progress.group);
            let recorded = self.append_all(records);
            all_recorded &= recorded;
            if recorded {
                super::fault::durable(claims, ended.len());
            }
            for claimed in claimed {
                if recorded {
                    let execution = claimed.execution;
                    progress.in_flight.push(InFlight {
                        index: claimed.index,
                        activity_id: claimed.activity_id,
                        protection: claimed.protection,
                        read_only: claimed.read_only,
                        task: tokio::task::spawn_blocking(move || execution.run()),
                    });
                } else {
                    let report = refused("not run: the call could not be recorded");
                    let staged = self.staged(
                        claimed.index,
                        &calls[claimed.index],
                        &claimed.activity_id,
                        report,
                        ToolOutcome::Failed,
                        claimed.protection,
                    );
                    progress.stage(staged);
                }
            }
            for ended in ended {
                self.tell(&calls[ended.index], ended, recorded).await;
            }
        }
        all_recorded
    }

    /// Settles a call that did not run, at once.
    async fn settle_now(&mut self, calls: &[Call], progress: &mut Progress, staged: Staged) {
        progress.stage(staged);
        self.commit(calls, progress).await;
    }

    /// A call's settlement: its result (and the preview of a change it applied, which
    /// follows its result in the same write), the end to tell and what the model is
    /// given.
    fn staged(
        &self,
        index: usize,
        call: &Call,
        activity_id: &str,
        report: ToolReport,
        outcome: ToolOutcome,
        protection: Option<&'static str>,
    ) -> Staged {
        let display_id = report
            .preview
            .as_ref()
            .map(|_| format!("{}-preview", call.call_id));
        let safe = self.safe_result(&report);
        let (summary, facts, content) = (
            safe.summary.clone(),
            safe.facts.clone(),
            safe.content.clone(),
        );
        let mut records = vec![result_record(
            self.turn_id.clone(),
            call,
            safe,
            outcome,
            protection,
            display_id.clone(),
        )];
        let mut preview = None;
        if let (Some(display_id), Some(applied)) = (display_id, report.preview) {
            let payload = serde_json::json!({
                "schema_version": 1,
                "diff": self.without_credentials(&applied.diff),
                "truncated": applied.truncated,
            });
            preview = Some(payload.clone());
            records.push(RecordBody::ToolAppliedPreview {
                display_id,
                preview: payload,
            });
        }
        Staged {
            records,
            ended: Ended {
                index,
                activity_id: activity_id.to_owned(),
                outcome,
                protection,
                summary,
                facts,
                preview,
            },
            settled: Settled {
                content,
                is_error: outcome != ToolOutcome::Completed,
            },
        }
    }

    /// Tells a settled call's end, once its records were written (`recorded`) or
    /// could not be.
    async fn tell(&mut self, call: &Call, ended: Ended, recorded: bool) {
        let Ended {
            activity_id,
            outcome,
            protection,
            summary,
            facts,
            preview,
            ..
        } = ended;
        let state = if outcome == ToolOutcome::Completed {
            ActivityState::Completed
        } else {
            ActivityState::Failed
        };
        self.activity(&activity_id, &call.name, state, &summary)
            .await;
        // A preview that did not reach the log is not shown either.
        let preview = match (&preview, recorded) {
            (Some(payload), true) => PreviewSource::Recorded(payload),
            (Some(_), false) => PreviewSource::NotRecorded,
            (None, _) => PreviewSource::NotApplicable,
        };
        let cwd = self.sessions.cwd().to_string_lossy().into_owned();
        let children = match (&call.task_id, &call.parent_activity_id) {
            (Some(task_id), None) => self.finished_tasks.remove(task_id),
            _ => None,
        };
        let settled = CardSource {
            activity_id: &activity_id,
            origin: magi_protocol::cards::Origin::Live,
            revision: 0,
            tool_name: &call.name,
            label: &call.label,
            working_directory: Some(&cwd),
            settlement: Settlement::Settled {
                outcome,
                summary: &summary,
            },
            facts: facts.as_ref(),
            protection,
            awaiting_approval: false,
            preview,
            parent_activity_id: call.parent_activity_id.as_deref(),
            task_id: call.task_id.as_deref(),
            children: children.as_ref(),
        };
        self.card(&activity_id, Snapshot::Final, settled).await;
        if self.scope.is_some() {
            self.task_progress().await;
        }
    }

    /// What a report records, made safe and bounded the one way every settlement
    /// records it.
    fn safe_result(&self, report: &ToolReport) -> SafeResult {
        SafeResult {
            summary: bounded(&self.safe(&report.output.summary), SUMMARY_BYTES),
            content: self.without_credentials(&report.output.content),
            facts: self.recorded_facts(report.facts.as_ref()),
            transcript: report.transcript.iter().map(|l| self.safe(l)).collect(),
        }
    }

    /// A call's facts as recorded: every string made safe (controls stripped, secrets
    /// and credential values redacted) before it reaches the log and the cards.
    fn recorded_facts(&self, facts: Option<&magi_tools::Facts>) -> Option<serde_json::Value> {
        let mut value = serde_json::to_value(facts?).ok()?;
        self.make_safe(&mut value);
        Some(value)
    }

    fn make_safe(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::String(text) => *text = self.safe(text),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.make_safe(v)),
            serde_json::Value::Object(fields) => {
                fields.values_mut().for_each(|v| self.make_safe(v))
            }
            _ => {}
        }
    }

    /// Settles the calls a crashed run left unsettled, before this turn's input is
    /// recorded. Returns how many it settled, or none when a settlement could not be
    /// recorded.
    pub(super) fn recover(&mut self, records: &[Record]) -> Option<usize> {
        let unsettled = unsettled_calls(records);
        let count = unsettled.len();
        for unsettled in unsettled {
            let call = self.call(
                unsettled.call_id,
                unsettled.name,
                unsettled.arguments.unwrap_or_else(|| "{}".into()),
            );
            // A disabled tool never runs, not even to recover a call made before.
            let replayable = magi_tools::BuiltinTool::from_name(&call.name)
                .is_some_and(magi_tools::BuiltinTool::replay_safe)
                && !self.disabled(&call.name)
                && unsettled.phase != Some(ToolCallPhase::AwaitingApproval)
                && self.verdict(&call) == Verdict::Run;
            let (report, outcome, protection) = if replayable {
                let report = self.execution(&call).run();
                let outcome = outcome_of(&report);
                (report, outcome, None)
            } else if unsettled.phase == Some(ToolCallPhase::AwaitingApproval) {
                (
                    refused(&format!(
                        "The call was not run: {LABEL_APPROVAL_UNAVAILABLE}."
                    )),
                    ToolOutcome::Denied,
                    Some(LABEL_APPROVAL_UNAVAILABLE),
                )
            } else {
                let mut report = refused(INTERRUPTED_CALL);
                report.output.summary = "interrupted; outcome unknown".into();
                (report, ToolOutcome::Indeterminate, None)
            };
            let safe = self.safe_result(&report);
            let settled = result_record(unsettled.turn_id, &call, safe, outcome, protection, None);
            self.sessions.append(settled).ok()?;
        }
        Some(count)
    }
}

/// The tool that loads a skill, offered when skills exist.
pub(crate) const SKILL_TOOL: &str = "skill";

/// The `skill` tool as the model sees it.
pub(super) fn skill_tool_spec() -> magi_provider::ToolSpec {
    magi_provider::ToolSpec {
        name: SKILL_TOOL.to_owned(),
        description: "Load the instructions of one of the skills listed in the system \
                      instructions, by name."
            .to_owned(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": false
        }),
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

/// A call of the log without a result.
struct Unsettled {
    turn_id: String,
    call_id: String,
    name: String,
    arguments: Option<String>,
    /// The last phase recorded for it, if any.
    phase: Option<ToolCallPhase>,
}

/// The calls of `records` that have no recorded result, in the order they were made.
fn unsettled_calls(records: &[Record]) -> Vec<Unsettled> {
    let mut settled = std::collections::HashSet::new();
    let mut phases = std::collections::HashMap::new();
    for record in records {
        match &record.body {
            RecordBody::ToolResult { call_id, .. } => {
                settled.insert(call_id.as_str());
            }
            RecordBody::ToolCallState { call_id, state, .. } => {
                phases.insert(call_id.as_str(), *state);
            }
            _ => {}
        }
    }
    records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::ToolCall {
                turn_id,
                call_id,
                name,
                arguments,
                ..
            } if !settled.contains(call_id.as_str()) => Some(Unsettled {
                turn_id: turn_id.clone(),
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
                phase: phases.get(call_id.as_str()).copied(),
            }),
            _ => None,
        })
        .collect()
}
