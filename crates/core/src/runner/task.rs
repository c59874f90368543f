//! Subagents: the `task` tool delegates a task to a subagent profile.
//!
//! The subagent runs inside the same turn, with its own conversation (the task alone),
//! its profile's instructions, model and tools, and the task scope as a ceiling: only
//! the profile's tools are offered (never `task` itself, nor the client's tools), and a
//! file tool's path outside the profile's `paths` is refused before supervision. Its
//! calls go through the same supervision, approvals and claims as the session's own,
//! and their activities and cards stream live, each card naming the `task` call as its
//! parent and the task as its `task_id`. Its records go to its own history, a JSONL log
//! in the `task` call's folder (`task.jsonl`, opened by a `task_link` record naming
//! the parent session and call); its final response, whole, to `report.md` beside it.
//! The delegating model gets that response up to [`TASK_REPORT_NOTICE_BYTES`].
//!
//! A subagent stops after [`TASK_MODEL_REQUESTS`] model requests: a looping subagent
//! fails its task call, and the turn goes on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use magi_protocol::limits::{
    TASK_DESCRIPTION_BYTES, TASK_MODEL_REQUESTS, TASK_REPORT_NOTICE_BYTES,
};
use magi_protocol::messages::RunOutcome;
use magi_provider::Item;
use magi_store::log::Appender;
use magi_store::records::{RecordBody, TurnOutcome};
use magi_tools::facts::Facts;
use magi_tools::{ToolOutput, ToolReport};

use super::calls::{Call, CallService, Delegate, Role};
use super::dialogue::{Round, round_trip};
use super::ending::Ending;
use super::exchange::Exchange;
use super::journal::Journal;
use super::scope::TaskScope;
use super::text::bounded;
use crate::cards::TaskChildren;
use magi_protocol::ErrorCode;

/// The session agent's subagents: they run its `task` calls, and keep what each task's
/// card shows until the call settles.
#[derive(Default)]
pub(super) struct Subagents {
    /// `task` calls made so far (their task IDs count them).
    tasks: usize,
    /// The children of tasks whose subagent ended, until their call's final card.
    finished: HashMap<String, TaskChildren>,
}

impl Delegate for Subagents {
    fn next_task_id(&mut self) -> String {
        self.tasks += 1;
        format!("task-{}", self.tasks)
    }

    fn run<'a>(
        &'a mut self,
        call: &'a Call,
        activity_id: &'a str,
        service: &'a mut CallService<'_, '_>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ToolReport> + 'a>> {
        Box::pin(self.run_task(call, activity_id, service))
    }

    fn children(&mut self, task_id: &str) -> Option<TaskChildren> {
        self.finished.remove(task_id)
    }
}

/// One subagent at work: its own agent, journal, turn and task scope.
struct Subagent<'j> {
    /// Its profile's agent and tools; its text is its report, never streamed.
    exchange: Exchange,
    /// Its own history, `task.jsonl` in the `task` call's folder.
    journal: Journal<'j>,
    /// Its turn in that history: the task ID.
    turn_id: String,
    /// The task's ceiling and what its card shows.
    scope: TaskScope,
}

impl Subagent<'_> {
    /// The subagent's conversation, at most [`TASK_MODEL_REQUESTS`] model requests long,
    /// its calls going through the parts of the delegating `parent`.
    async fn converse(
        &mut self,
        parent: &mut CallService<'_, '_>,
        items: &mut Vec<Item>,
    ) -> (Ending, TaskEnd) {
        let mut service = CallService {
            output: &mut *parent.output,
            journal: &mut self.journal,
            workspace: parent.workspace,
            agent: &self.exchange.agent,
            offer: &self.exchange.offer,
            gates: parent.gates,
            turn_id: &self.turn_id,
        };
        for _ in 0..TASK_MODEL_REQUESTS {
            self.scope.model_requests += 1;
            let mut role = Role::Task(&mut self.scope);
            if let Round::Ended(ending) =
                round_trip(&self.exchange, &mut service, &mut role, items).await
            {
                let end = TaskEnd::of(ending.outcome);
                return (ending, end);
            }
        }
        // The task call reports it; the run goes on.
        (
            Ending::failed(ErrorCode::ExecutionFailed),
            TaskEnd::StepLimit,
        )
    }
}

impl Subagents {
    /// Runs a `task` call: the subagent's whole loop, then its report.
    async fn run_task(
        &mut self,
        call: &Call,
        activity_id: &str,
        parent: &mut CallService<'_, '_>,
    ) -> ToolReport {
        let failed = |content: String, summary: &str| {
            ToolReport::from(ToolOutput {
                content,
                summary: summary.to_owned(),
                is_error: true,
            })
        };
        let arguments: serde_json::Value =
            serde_json::from_str(&call.arguments).unwrap_or_default();
        let (Some(name), Some(task)) = (
            arguments.get("subagent").and_then(|v| v.as_str()),
            arguments.get("task").and_then(|v| v.as_str()),
        ) else {
            return failed(
                "The arguments need a subagent and a task.".into(),
                "invalid arguments",
            );
        };
        if task.trim().is_empty() || task.len() > TASK_DESCRIPTION_BYTES {
            return failed(
                format!("The task must be 1 to {TASK_DESCRIPTION_BYTES} bytes of text."),
                "invalid arguments",
            );
        }
        let Some((name, profile)) = parent
            .agent
            .subagents
            .iter()
            .find(|(n, _)| n == name)
            .cloned()
        else {
            let known: Vec<&str> = parent
                .agent
                .subagents
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            return failed(
                format!(
                    "There is no subagent {name:?}. The subagents are: {}.",
                    known.join(", ")
                ),
                "unknown subagent",
            );
        };
        let (Some(folder), Some(task_id)) = (
            parent.workspace.tool_assets_dir(&call.call_id),
            call.task_id.clone(),
        ) else {
            return failed("The task could not be recorded.".into(), "not recorded");
        };
        let history = uuid::Uuid::new_v4().to_string();
        let Ok(log) = Appender::open(&folder.join("task.jsonl"), &history) else {
            return failed(
                "The task's history could not be created.".into(),
                "not recorded",
            );
        };
        let mut journal = Journal::task(log, history.clone());
        let opened = journal.append_all(vec![
            RecordBody::TaskLink {
                task_id: task_id.clone(),
                parent_session_id: parent.output.session_id().to_owned(),
                parent_call_id: call.call_id.clone(),
                profile: name.clone(),
            },
            RecordBody::TurnStarted {
                turn_id: task_id.clone(),
            },
            RecordBody::UserInput {
                turn_id: task_id.clone(),
                message_id: format!("u-{task_id}"),
                text: task.to_owned(),
                images: Vec::new(),
            },
        ]);
        if !opened {
            return failed(
                "The task's history could not be written.".into(),
                "not recorded",
            );
        }

        // The subagent: its profile's model (the selection's when none), instructions
        // and tools.
        let mut agent = parent.agent.clone();
        if let Some(model) = &profile.model {
            // Its own window and output bound, not the session model's.
            agent.use_model(model);
            agent.reasoning_effort = None;
        }
        let offer = parent
            .offer
            .subagent(profile.tools.clone())
            .taking_images(agent.images);
        let scope = TaskScope::new(
            task_id.clone(),
            activity_id.to_owned(),
            call.label.clone(),
            profile.path_scope(),
        );
        agent.profile = Some(Arc::new((name.clone(), profile)));
        let mut subagent = Subagent {
            exchange: Exchange::new(agent, offer, parent.workspace.cwd(), false)
                .cached_as(&history),
            journal,
            turn_id: task_id.clone(),
            scope,
        };
        let mut items = vec![Item::User {
            text: task.to_owned(),
        }];
        subagent.exchange.set_prompt(items.clone());
        let (ending, end) = subagent.converse(parent, &mut items).await;
        // What the subagent could not record degrades the run's persistence too.
        if subagent.journal.degraded() {
            parent.journal.degrade();
        }
        let Subagent {
            mut journal, scope, ..
        } = subagent;
        journal.append_all(vec![RecordBody::TurnFinished {
            turn_id: task_id.clone(),
            outcome: match ending.outcome {
                RunOutcome::Completed => TurnOutcome::Completed,
                RunOutcome::Failed => TurnOutcome::Failed,
                RunOutcome::Cancelled => TurnOutcome::Cancelled,
            },
            error_code: ending.error_code.map(|c| c.as_str().to_owned()),
        }]);
        let cwd = parent.workspace.cwd();
        super::hooks::subagent_stop(
            parent.output,
            parent.agent,
            cwd,
            &name,
            &task_id,
            ending.outcome,
        )
        .await;

        // The final response is the last thing the subagent said, when it ended by
        // answering.
        let response = match (ending.outcome, items.last()) {
            (RunOutcome::Completed, Some(Item::Assistant { text })) => Some(text.clone()),
            _ => None,
        };
        let report_path = folder.join("report.md");
        let report_saved = response
            .as_ref()
            .is_some_and(|text| std::fs::write(&report_path, text).is_ok());
        let facts = Facts::Task {
            task_id: task_id.clone(),
            profile: name.clone(),
            history,
            model_requests: scope.model_requests,
            tool_calls: scope.tool_calls,
            ended: end.as_str().to_owned(),
            report_bytes: response.as_ref().map(|t| t.len() as u64),
        };
        self.finished.insert(task_id, scope.children);
        let failed = |content: String| ToolOutput {
            content,
            summary: format!("{name} {}", end.as_str()),
            is_error: true,
        };
        let output = match (end, &response) {
            (_, Some(text)) => ToolOutput {
                content: notice(&name, text, report_saved.then_some(&report_path)),
                summary: format!("{name} finished"),
                is_error: false,
            },
            (TaskEnd::Completed, None) => ToolOutput {
                content: format!("The subagent {name} finished without a final response."),
                summary: format!("{name} finished"),
                is_error: false,
            },
            (TaskEnd::StepLimit, None) => failed(format!(
                "The subagent {name} stopped after {TASK_MODEL_REQUESTS} model requests \
                 without finishing; what its calls changed stays changed."
            )),
            (TaskEnd::Cancelled, None) => failed(format!("The subagent {name} was cancelled.")),
            (TaskEnd::Failed, None) => failed(format!(
                "The subagent {name} failed ({}); what its calls changed stays changed.",
                ending.error_code.map_or("no reason given", |c| c.as_str())
            )),
        };
        ToolReport {
            cancelled: ending.outcome == RunOutcome::Cancelled,
            ..ToolReport::with_facts(output, facts)
        }
    }
}

/// How a subagent's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskEnd {
    Completed,
    Failed,
    Cancelled,
    /// Stopped at [`TASK_MODEL_REQUESTS`].
    StepLimit,
}

impl TaskEnd {
    /// How a conversation that ended with `outcome` before its budget ended.
    fn of(outcome: RunOutcome) -> TaskEnd {
        match outcome {
            RunOutcome::Completed => TaskEnd::Completed,
            RunOutcome::Cancelled => TaskEnd::Cancelled,
            RunOutcome::Failed => TaskEnd::Failed,
        }
    }

    /// As the facts and the summary say it.
    fn as_str(self) -> &'static str {
        match self {
            TaskEnd::Completed => "completed",
            TaskEnd::Failed => "failed",
            TaskEnd::Cancelled => "cancelled",
            TaskEnd::StepLimit => "step limit",
        }
    }
}

/// What the delegating model is told of a finished subagent: its response, cut at
/// [`TASK_REPORT_NOTICE_BYTES`] with a pointer to the whole of it.
fn notice(name: &str, response: &str, report: Option<&PathBuf>) -> String {
    let shown = bounded(response, TASK_REPORT_NOTICE_BYTES);
    let mut notice = format!("The subagent {name} finished. Its final response:\n\n{shown}");
    if shown.len() < response.len() {
        notice.push_str(&format!(
            "\n\n[The response was cut at {} of its {} bytes.",
            shown.len(),
            response.len()
        ));
        match report {
            Some(path) => notice.push_str(&format!(" The whole of it is in {}.]", path.display())),
            None => notice.push_str(" The report file could not be written.]"),
        }
    }
    notice
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_caps_the_response_and_points_to_the_report() {
        let short = notice("reviewer", "All good.", None);
        assert!(short.ends_with("All good."), "{short}");
        let long = "x".repeat(TASK_REPORT_NOTICE_BYTES + 10);
        let path = PathBuf::from("/home/report.md");
        let capped = notice("reviewer", &long, Some(&path));
        assert!(capped.contains(&format!(
            "cut at {TASK_REPORT_NOTICE_BYTES} of its {} bytes",
            long.len()
        )));
        assert!(capped.ends_with("The whole of it is in /home/report.md.]"));
        assert!(capped.len() < TASK_REPORT_NOTICE_BYTES + 300);
    }
}
