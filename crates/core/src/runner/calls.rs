//! The tool-call service: the calls of one persisted assistant message, from creation
//! to settlement.
//!
//! Every call of the message is recorded first (`tool_call`: supervising). Each is then
//! supervised in the model's order: the permission policy decides, or the client is
//! asked (`tool_call_state: awaiting_approval`); a call that may run is claimed
//! (`tool_call_state: running`, synced before anything starts) and executed on a
//! blocking thread; `ask_user` then waits for the person's answers
//! (`tool_call_state: awaiting_input`). Settlement appends one `tool_result` with the terminal outcome
//! (completed, failed, denied, cancelled) and the call's facts, then the display-only
//! preview of a change it applied. Calls that only read (read-only tools, and `bash`
//! commands known to read) run side by side (at most [`PARALLEL_TOOL_CALLS`] at once);
//! a call that may
//! change something waits until every earlier call of the message has settled, and
//! later calls wait for it, so effects happen in the order the model asked for. A call
//! that waits does so before its hooks run and its activity starts: a client is never
//! shown a call as started while it only waits. A call
//! the client must be asked about waits until every earlier call has settled and been
//! told, so the person answers knowing how they ended. The next model request waits for
//! all of them.
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
//! a call that was awaiting approval is denied, questions left open are declined, and
//! every other call settles `indeterminate`: it may or may not have had its effects, and it never runs again.
//!
//! The service is built from its parts for one agent: the run's output, the agent's
//! journal, the workspace, the agent and what it is offered, and the client's gates.
//! Its [`Role`] says whose calls it runs: the session agent's, whose `task` calls go to
//! a [`Delegate`] (the subagent runner), or a subagent's, each held to its task's scope
//! and shown on the task's card.
//!
//! The parts: `role` (whose calls, the delegate and the client's gates), `supervision`
//! (the policy's verdict and the client's approval), `progress` (a response's calls on
//! their way to settlement), `settle` (the group commit), `reports` (what a report
//! becomes: outcome, result record, card), `recovery`, `handled`, `control`
//! (`magi_control`) and `code_mode`.

use magi_config::Verdict;
use magi_protocol::ErrorCode;
use magi_protocol::limits::{PARALLEL_TOOL_CALLS, RUN_ACTIVITIES, SUMMARY_BYTES};
use magi_protocol::messages::ActivityState;
use magi_provider::Item;
use magi_store::records::{RecordBody, ToolCallPhase, ToolOutcome};

mod ask;
mod code_mode;
mod control;
mod handled;
mod hooked;
mod live;
mod progress;
mod recovery;
mod reports;
mod role;
pub(super) mod rules;
mod settle;
mod supervision;
mod terminal;

pub(super) use role::{Delegate, Gates, Role};

use super::ending::Ending;
use super::journal::{Journal, Workspace};
use super::live_cards::Snapshot;
use super::offer::Offer;
use super::output::Output;
use super::scope::task_label;
use super::text::bounded;
use crate::agent::Agent;
use crate::cards::CardSource;
use crate::client_tools::ClientTool;
use hooked::HOOK_DENIAL;
use progress::{Claimed, Execution, Progress, Starting};
use reports::{outcome_of, running_card};
use settle::{Refusal, hand_over, settlements};

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
    /// For a call a Code Mode script made: its script's call and number.
    pub(super) nested: Option<Nested>,
    /// What a `pre_tool_use` hook decided of it (a block, or the arguments it runs
    /// with, which `arguments` and `label` then are).
    hook: Option<hooked::Decided>,
    /// The arguments as the model sent them, when a hook replaced them: what the
    /// provider is given back as the model's call.
    model_arguments: Option<String>,
}

/// Where a nested call (one a Code Mode script made) belongs.
#[derive(Debug, Clone)]
pub(super) struct Nested {
    /// The `code_mode` call that ran the script.
    pub(super) parent_call_id: String,
    /// Its number in the script, 1, 2, … in start order.
    pub(super) sequence: u64,
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
        mut calls: Vec<Call>,
        items: &mut Vec<Item>,
    ) -> Option<Ending> {
        // Nothing of the round may change a file before the turn's start is recorded.
        self.gates.start_checkpoint.ready_for_calls().await;
        if let Err(ending) = self.record(role, &calls).await {
            return Some(ending);
        }
        let mut progress = Progress::new(calls.len());
        for index in 0..calls.len() {
            let activity_id = self.output.next_activity_id("tool");
            match self
                .admit(role, &mut calls, &mut progress, index, &activity_id)
                .await
            {
                Ok(protection) => {
                    self.claim(role, &calls, &mut progress, index, activity_id, protection)
                        .await;
                }
                Err(refusal) => {
                    self.refuse(role, &calls, &mut progress, index, &activity_id, refusal)
                        .await;
                }
            }
        }
        self.drain(role, &calls, &mut progress).await;
        // The model is given no result before it is durable.
        self.commit(role, &calls, &mut progress).await;
        let settled = settlements(progress);
        self.post_tool_use(role, &calls, &settled).await;
        hand_over(calls, settled, items);
        None
    }

    /// Records every call of the response (`tool_call`: supervising), or none when
    /// the run could not show them all: a call the run cannot show is a call the user
    /// cannot see.
    async fn record(&mut self, role: &mut Role<'_>, calls: &[Call]) -> Result<(), Ending> {
        if self.output.activities + calls.len() > RUN_ACTIVITIES {
            self.output
                .diagnostic(
                    "activity_limit",
                    "The model asked for more tool calls than one run may show.",
                )
                .await;
            return Err(Ending::failed(ErrorCode::ContentLimit));
        }
        let created = calls
            .iter()
            .map(|call| RecordBody::ToolCall {
                turn_id: self.turn_id.to_owned(),
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                summary: call.label.clone(),
                arguments: Some(call.arguments.clone()),
                parent_call_id: call.nested.as_ref().map(|n| n.parent_call_id.clone()),
                sequence: call.nested.as_ref().map(|n| n.sequence),
            })
            .collect();
        self.journal.append_all(created);
        role.asked(calls.len());
        Ok(())
    }

    /// Takes call `index` through its hooks, the policy, the person and the sandbox to
    /// where it may be claimed, telling it started on the way. Returns its protection
    /// label, or why it settles without running.
    async fn admit(
        &mut self,
        role: &mut Role<'_>,
        calls: &mut [Call],
        progress: &mut Progress,
        index: usize,
        activity_id: &str,
    ) -> Result<Option<&'static str>, Refusal> {
        // The `pre_tool_use` hooks of a call that may go on run before its activity
        // starts, so what it shows is what runs.
        let early = self.early_refusal(role, &calls[index]);
        let mut blocked = None;
        if early.is_none() {
            // A call that waits for the calls before it begins once they have
            // settled: its hooks see their effects, and its activity does not start
            // (and show it running) while it only waits.
            if progress.must_wait(self.only_reads(role, &calls[index])) {
                self.drain(role, calls, progress).await;
            }
            let reserve = calls.len() - index - 1;
            blocked = self.hooked(role, &mut calls[index], reserve).await;
        }
        let call = &calls[index];
        if progress.group.ended.is_empty() {
            self.start(role, call, activity_id).await;
        } else {
            // Calls before it ended and are told so with the next sync: it is told
            // started after them, never while they are still shown running.
            progress.group.starting.push(Starting {
                index,
                activity_id: activity_id.to_owned(),
            });
        }
        if let Some((content, outcome)) = early {
            return Err(Refusal::unjudged(content, outcome));
        }
        // A hook's decision is recorded with what follows it: a block with the
        // call's result, replaced arguments with the call's claim (or whatever
        // settles it first).
        if let Some(decided) = &call.hook {
            let record = hooked::hook_record(self.turn_id, call, decided);
            progress.group.records.push(record);
        }
        if let Some(reason) = blocked {
            // The protection stays none: no permission decision was made.
            let content = format!("The call was not run: {HOOK_DENIAL} {reason}");
            return Err(Refusal::unjudged(content, ToolOutcome::Denied));
        }
        if self.verdict(call) == Verdict::Ask {
            // The person asked sees what came before: every earlier call ends and is
            // told first (and this one started), and nothing waits for the answer.
            self.drain(role, calls, progress).await;
            self.commit(role, calls, progress).await;
        }
        let protection = match self.supervise(role, call, activity_id).await {
            Ok(protection) => protection,
            Err(denial) => {
                return Err(Refusal {
                    content: denial.content(),
                    outcome: ToolOutcome::Denied,
                    protection: Some(denial.label),
                });
            }
        };
        if let Some(why) = self.sandbox_refusal(call, protection) {
            return Err(Refusal {
                content: format!("The call was not run: {why}"),
                outcome: ToolOutcome::Failed,
                protection,
            });
        }
        if progress.must_wait(self.only_reads(role, call)) {
            self.drain(role, calls, progress).await;
        }
        if self.output.cancel.is_cancelled() {
            return Err(Refusal {
                content: "not started: the turn was cancelled".to_owned(),
                outcome: ToolOutcome::Cancelled,
                protection,
            });
        }
        Ok(protection)
    }

    /// Claims call `index`, admitted with `protection`: its claim joins the group, and
    /// it runs here (a tool the backend or the client runs itself) once the claim is
    /// durable, or on a thread from the group's commit.
    async fn claim(
        &mut self,
        role: &mut Role<'_>,
        calls: &[Call],
        progress: &mut Progress,
        index: usize,
        activity_id: String,
        protection: Option<&'static str>,
    ) {
        let call = &calls[index];
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
            if !self.commit(role, calls, progress).await {
                let refusal = Refusal {
                    content: progress::NOT_RECORDED.to_owned(),
                    outcome: ToolOutcome::Failed,
                    protection,
                };
                self.refuse(role, calls, progress, index, &activity_id, refusal)
                    .await;
                return;
            }
            let report = self.run_here(role, call, handler, &activity_id).await;
            let outcome = outcome_of(&report);
            let staged = self.staged(index, call, &activity_id, report, outcome, protection);
            progress.stage(staged);
            return;
        }
        // No handler runs it: it runs on a thread, and only its tool and arguments say
        // whether it only reads.
        let read_only = magi_tools::call_only_reads(&call.name, &call.arguments);
        progress.group.claimed.push(Claimed {
            index,
            activity_id,
            protection,
            read_only,
            execution: self.execution(call).through(self.call_files(call)),
        });
        // Read-only calls that start together share one sync of their claims.
        let joined = read_only
            && progress.running().0 < PARALLEL_TOOL_CALLS
            && calls
                .get(index + 1)
                .is_some_and(|next| self.only_reads(role, next));
        if !joined {
            self.commit(role, calls, progress).await;
        }
    }

    /// Tells a call started: its `started` activity, then its first card.
    async fn start(&mut self, role: &mut Role<'_>, call: &Call, activity_id: &str) {
        self.output
            .activity(activity_id, &call.name, ActivityState::Started, &call.label)
            .await;
        let running = running_card(call, None, false);
        self.card(role, activity_id, Snapshot::Initial, running)
            .await;
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

    /// The bounded, safe label of a call of tool `name` with `arguments`.
    fn label(&self, name: &str, arguments: &str) -> String {
        let described = if name == magi_config::TASK_TOOL {
            task_label(arguments)
        } else {
            magi_tools::describe(name, arguments)
        };
        bounded(&self.output.safe(&described), SUMMARY_BYTES)
    }

    /// A call the model asked for, with its bounded, safe label.
    pub(super) fn call(
        &self,
        role: &mut Role<'_>,
        call_id: String,
        name: String,
        arguments: String,
    ) -> Call {
        let label = self.label(&name, &arguments);
        let (parent_activity_id, task_id) = role.lineage(&name);
        Call {
            call_id,
            name,
            arguments,
            label,
            parent_activity_id,
            task_id,
            nested: None,
            hook: None,
            model_arguments: None,
        }
    }

    /// Whether a call only reads, so it may run beside the other reads: a read-only
    /// tool, or a `bash` command known to read (judged on the arguments it runs with),
    /// that runs on a thread of its own. A call the backend or the client runs itself
    /// (a command in the client's terminal, say) never does: nothing else is in flight
    /// while it runs.
    fn only_reads(&self, role: &Role<'_>, call: &Call) -> bool {
        magi_tools::call_only_reads(&call.name, &call.arguments)
            && self.handler(role, call).is_none()
    }

    fn execution(&self, call: &Call) -> Execution {
        Execution {
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            cwd: self.workspace.cwd().to_owned(),
            assets_dir: self.workspace.tool_assets_dir(&call.call_id),
            cancel: self.output.cancel.clone(),
            hidden_env: self.agent.hidden_env.clone(),
            files: None,
            // A command's card shows its newest output while it runs.
            live: (self.output.cards_enabled()
                && magi_tools::BuiltinTool::from_name(&call.name)
                    == Some(magi_tools::BuiltinTool::Bash))
            .then(std::sync::Arc::default),
            sandbox_read_only: self.mode_of(call) == magi_config::PermissionMode::Plan,
        }
    }

    /// How a file tool's call reads and writes through the client, when the client
    /// negotiated `client.files`; none for every other call.
    fn call_files(&self, call: &Call) -> Option<crate::client_files::CallFiles> {
        use magi_tools::BuiltinTool::{Edit, HashEdit, Read, Write};
        let file_tool = matches!(
            magi_tools::BuiltinTool::from_name(&call.name),
            Some(Read | Write | Edit | HashEdit)
        );
        (self.output.has(magi_protocol::Extension::ClientFiles) && file_tool).then(|| {
            crate::client_files::CallFiles {
                gate: self.gates.files.clone(),
                events: self.output.events(),
                session_id: self.output.session_id().to_owned(),
                run_id: self.output.run_id().to_owned(),
                call_id: call.call_id.clone(),
                cancel: self.output.cancel.clone(),
                runtime: tokio::runtime::Handle::current(),
                count: std::sync::atomic::AtomicU64::new(0),
            }
        })
    }

    /// The client tool a call names, if any.
    pub(super) fn client_tool(&self, name: &str) -> Option<ClientTool> {
        self.offer.client_tool(name).cloned()
    }
}

#[cfg(test)]
mod tests;
