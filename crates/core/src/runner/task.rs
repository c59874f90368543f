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

use std::path::PathBuf;
use std::sync::Arc;

use magi_config::Profile;
use magi_protocol::cards::{Card, Child};
use magi_protocol::limits::{
    TASK_CHILDREN, TASK_DESCRIPTION_BYTES, TASK_MODEL_REQUESTS, TASK_REPORT_NOTICE_BYTES,
};
use magi_protocol::messages::RunOutcome;
use magi_provider::{Item, ToolSpec};
use magi_store::log::Appender;
use magi_store::records::{Record, RecordBody, TurnOutcome};
use magi_tools::facts::Facts;
use magi_tools::{ToolOutput, ToolReport};

use super::Turn;
use super::calls::Call;
use super::conversation::bounded;
use crate::cards::TaskChildren;

/// The delegated task a subagent is working on.
pub(super) struct TaskScope {
    /// The task's identity on cards.
    pub(super) task_id: String,
    /// The activity of the `task` call.
    pub(super) parent_activity_id: String,
    /// The `task` call's label, for its progress snapshots.
    parent_label: String,
    /// The session ID of the subagent's history.
    history: String,
    log: Appender,
    paths: Option<globset::GlobSet>,
    /// The calls' references, for the task's card.
    children: TaskChildren,
    /// Model requests made.
    pub(super) model_requests: u64,
    /// Tool calls asked for.
    pub(super) tool_calls: u64,
    /// Whether it stopped at [`TASK_MODEL_REQUESTS`].
    pub(super) step_limit: bool,
}

impl TaskScope {
    /// Appends records to the subagent's history; false when they could not be.
    pub(super) fn append_all(&mut self, bodies: Vec<RecordBody>) -> bool {
        let records: Vec<Record> = bodies
            .into_iter()
            .map(|body| Record::now(&self.history, body))
            .collect();
        self.log.append_all(&records).is_ok()
    }

    /// Keeps the latest state of a call's card as a child reference.
    pub(super) fn note_child(&mut self, card: &Card) {
        let child = Child {
            activity_id: card.activity_id.clone(),
            task_id: card.task_id.clone(),
            title: card.title.clone(),
            state: card.state,
            outcome: card.outcome,
            changes: card.changes,
        };
        let children = &mut self.children;
        match children
            .children
            .iter_mut()
            .find(|c| c.activity_id == child.activity_id)
        {
            Some(existing) => *existing = child,
            None => {
                children.total += 1;
                if children.children.len() < TASK_CHILDREN {
                    children.children.push(child);
                }
            }
        }
    }
}

/// The `task` tool as the delegating model sees it.
pub(super) fn task_tool_spec(subagents: &[(String, Profile)]) -> ToolSpec {
    let names: Vec<&str> = subagents.iter().map(|(name, _)| name.as_str()).collect();
    let list: String = subagents
        .iter()
        .map(|(name, profile)| {
            format!(
                "\n- {name}: {}",
                profile.description.as_deref().unwrap_or_default().trim()
            )
        })
        .collect();
    ToolSpec {
        name: magi_config::TASK_TOOL.to_owned(),
        description: format!(
            "Delegate a self-contained task to a subagent. It works on the task alone, \
             with its own tools and without this conversation, and answers with its \
             final response. Say everything it needs in the task. The subagents:{list}"
        ),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "subagent": {"type": "string", "enum": names, "description": "Which subagent."},
                "task": {"type": "string", "description": "The task, complete and self-contained."}
            },
            "required": ["subagent", "task"],
            "additionalProperties": false
        }),
    }
}

/// The label of a `task` call: `task <subagent>`, or `task` when it names none.
pub(super) fn describe(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| {
            v.get("subagent")
                .and_then(|s| s.as_str())
                .map(str::to_owned)
        })
        .map_or_else(
            || magi_config::TASK_TOOL.to_owned(),
            |name| format!("{} {name}", magi_config::TASK_TOOL),
        )
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
    fn of(outcome: RunOutcome, step_limit: bool) -> TaskEnd {
        match outcome {
            _ if step_limit => TaskEnd::StepLimit,
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

impl Turn {
    /// The next task's identity.
    pub(super) fn next_task_id(&mut self) -> String {
        self.tasks += 1;
        format!("task-{}", self.tasks)
    }

    /// Why a subagent's call falls outside its task's paths, if it does.
    pub(super) fn outside_task_scope(&self, call: &Call) -> Option<String> {
        let paths = self.scope.as_ref()?.paths.as_ref()?;
        // A task's `paths` hold the tools whose `path` is what they act on.
        if !magi_tools::BuiltinTool::from_name(&call.name).is_some_and(|t| t.path_is_subject()) {
            return None;
        }
        let cwd = self.sessions.cwd();
        let inside = !magi_tools::outside_workspace(&call.name, &call.arguments, cwd)
            && magi_tools::subject(&call.name, &call.arguments, cwd)
                .is_some_and(|path| paths.is_match(&path));
        (!inside).then(|| "its path is outside the task's scope".to_owned())
    }

    /// Sends an interim snapshot of the running task's card with its children so far,
    /// when the card budget has room for it.
    pub(super) async fn task_progress(&mut self) {
        let Some(scope) = &self.scope else {
            return;
        };
        let (parent, label, task_id, children) = (
            scope.parent_activity_id.clone(),
            scope.parent_label.clone(),
            scope.task_id.clone(),
            scope.children.clone(),
        );
        let source = crate::cards::CardSource {
            activity_id: "",
            origin: magi_protocol::cards::Origin::Live,
            revision: 0,
            tool_name: magi_config::TASK_TOOL,
            label: &label,
            working_directory: None,
            settlement: crate::cards::Settlement::Running,
            facts: None,
            protection: None,
            awaiting_approval: false,
            preview: crate::cards::PreviewSource::NotApplicable,
            parent_activity_id: None,
            task_id: Some(&task_id),
            children: Some(&children),
        };
        self.card(&parent, super::live_cards::Snapshot::Interim, source)
            .await;
    }

    /// Runs a `task` call: the subagent's whole loop, then its report.
    pub(super) async fn run_task(&mut self, call: &Call, activity_id: &str) -> ToolReport {
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
        let Some((name, profile)) = self
            .agent
            .subagents
            .iter()
            .find(|(n, _)| n == name)
            .cloned()
        else {
            let known: Vec<&str> = self
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
            self.sessions.tool_assets_dir(&call.call_id),
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
        let mut scope = TaskScope {
            task_id: task_id.clone(),
            parent_activity_id: activity_id.to_owned(),
            parent_label: call.label.clone(),
            history: history.clone(),
            log,
            paths: profile.path_scope(),
            children: TaskChildren::default(),
            model_requests: 0,
            tool_calls: 0,
            step_limit: false,
        };
        let opened = scope.append_all(vec![
            RecordBody::TaskLink {
                task_id: task_id.clone(),
                parent_session_id: self.request.session_id.clone(),
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
        let mut agent = self.agent.clone();
        if let Some(model) = &profile.model {
            agent.model = model.clone();
            agent.reasoning_effort = None;
        }
        agent.profile = Some(Arc::new((name.clone(), profile)));
        let parent_agent = std::mem::replace(&mut self.agent, agent);
        let parent_turn = std::mem::replace(&mut self.turn_id, task_id.clone());
        self.scope = Some(scope);
        let mut items = vec![Item::User {
            text: task.to_owned(),
        }];
        let ending = self.converse(&mut items).await;
        self.agent = parent_agent;
        self.turn_id = parent_turn;
        let Some(mut scope) = self.scope.take() else {
            return failed("The task's state was lost.".into(), "failed");
        };
        scope.append_all(vec![RecordBody::TurnFinished {
            turn_id: task_id.clone(),
            outcome: match ending.outcome {
                RunOutcome::Completed => TurnOutcome::Completed,
                RunOutcome::Failed => TurnOutcome::Failed,
                RunOutcome::Cancelled => TurnOutcome::Cancelled,
            },
            error_code: ending.error_code.map(|c| c.as_str().to_owned()),
        }]);

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
        let end = TaskEnd::of(ending.outcome, scope.step_limit);
        let facts = Facts::Task {
            task_id: task_id.clone(),
            profile: name.clone(),
            history,
            model_requests: scope.model_requests,
            tool_calls: scope.tool_calls,
            ended: end.as_str().to_owned(),
            report_bytes: response.as_ref().map(|t| t.len() as u64),
        };
        self.finished_tasks.insert(task_id, scope.children);
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

    #[test]
    fn children_are_counted_beyond_those_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log =
            Appender::open(&dir.path().join("t.jsonl"), "h").unwrap_or_else(|e| panic!("{e}"));
        let mut scope = TaskScope {
            task_id: "task-1".into(),
            parent_activity_id: "tool-1".into(),
            parent_label: "task reviewer".into(),
            history: "h".into(),
            log,
            paths: None,
            children: TaskChildren::default(),
            model_requests: 0,
            tool_calls: 0,
            step_limit: false,
        };
        let card = |n: usize| {
            let mut card: Card = serde_json::from_value(serde_json::json!({
                "schema_version":1,"card_id":"x","activity_id":format!("tool-{n}"),
                "parent_activity_id":"tool-1","parent_state":"available","task_id":"task-1",
                "tool_kind":"read","state":"running","outcome":null,"changes":"not_applicable",
                "revision":0,"origin":"live","detail":{"availability":"none","reason":null},
                "title":"read","metadata":{"tool_name":"read","resource_path":null,
                "working_directory":null,"public_protection":{"decision":"not_reported","summary":null}},
                "blocks":[],"omissions":[]
            }))
            .unwrap_or_else(|e| panic!("{e}"));
            card.card_id = card.activity_id.clone();
            card
        };
        for n in 0..TASK_CHILDREN + 5 {
            scope.note_child(&card(n));
        }
        // A later snapshot of a known child replaces it rather than adding one.
        scope.note_child(&card(0));
        assert_eq!(scope.children.children.len(), TASK_CHILDREN);
        assert_eq!(scope.children.total, (TASK_CHILDREN + 5) as u64);
        assert!(scope.append_all(vec![RecordBody::TurnStarted {
            turn_id: "task-1".into()
        }]));
    }
}
