//! The scope of a delegated task: the ceiling a subagent's calls stay under, and what
//! the `task` call's card shows of them.

use std::path::Path;

use magi_protocol::cards::{Card, Child, Origin};
use magi_protocol::limits::TASK_CHILDREN;

use super::live_cards::Snapshot;
use super::output::Output;
use crate::cards::{CardSource, PreviewSource, Settlement, TaskChildren, TranscriptStyles};

/// The delegated task a subagent is working on.
pub(super) struct TaskScope {
    /// The task's identity on cards.
    pub(super) task_id: String,
    /// The activity of the `task` call.
    pub(super) parent_activity_id: String,
    /// The `task` call's label, for its progress snapshots.
    parent_label: String,
    /// The paths the subagent's file tools may act on; none for any path.
    paths: Option<globset::GlobSet>,
    /// The calls' references, for the task's card.
    pub(super) children: TaskChildren,
    /// Model requests made.
    pub(super) model_requests: u64,
    /// Tool calls asked for.
    pub(super) tool_calls: u64,
}

impl TaskScope {
    /// The scope of task `task_id`, delegated by the `task` call of `parent_activity_id`
    /// labelled `parent_label`, its file tools held to `paths`.
    pub(super) fn new(
        task_id: String,
        parent_activity_id: String,
        parent_label: String,
        paths: Option<globset::GlobSet>,
    ) -> TaskScope {
        TaskScope {
            task_id,
            parent_activity_id,
            parent_label,
            paths,
            children: TaskChildren::default(),
            model_requests: 0,
            tool_calls: 0,
        }
    }

    /// Why a call of tool `name` falls outside the task's paths, if it does.
    pub(super) fn outside(&self, name: &str, arguments: &str, cwd: &Path) -> Option<String> {
        let paths = self.paths.as_ref()?;
        // A task's `paths` hold the tools whose `path` is what they act on.
        if !magi_tools::BuiltinTool::from_name(name).is_some_and(|t| t.path_is_subject()) {
            return None;
        }
        let inside = !magi_tools::outside_workspace(name, arguments, cwd)
            && magi_tools::subject(name, arguments, cwd).is_some_and(|path| paths.is_match(&path));
        (!inside).then(|| "its path is outside the task's scope".to_owned())
    }

    /// Keeps the latest state of a call's card as a child reference; the `task` call's
    /// own card is not a child.
    pub(super) fn note_child(&mut self, card: &Card) {
        if card.activity_id == self.parent_activity_id {
            return;
        }
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

    /// Sends an interim snapshot of the running task's card with its children so far,
    /// when the card budget has room for it.
    pub(super) async fn progress(&self, output: &mut Output) {
        let source = CardSource {
            activity_id: "",
            origin: Origin::Live,
            revision: 0,
            tool_name: magi_config::TASK_TOOL,
            label: &self.parent_label,
            working_directory: None,
            settlement: Settlement::Running,
            facts: None,
            protection: None,
            awaiting_approval: false,
            preview: PreviewSource::NotApplicable,
            parent_activity_id: None,
            task_id: Some(&self.task_id),
            children: Some(&self.children),
            transcript: &[],
            transcript_styles: TranscriptStyles::Off,
            hook: None,
        };
        output
            .card(&self.parent_activity_id, Snapshot::Interim, source)
            .await;
    }
}

/// Longest part of a task's text quoted in its label, in characters.
const TASK_LABEL_CHARS: usize = 80;

/// The label of a `task` call: `task <subagent>: <the task's first line>`, so a person
/// sees what was delegated; `task` alone when it names no subagent.
pub(super) fn task_label(arguments: &str) -> String {
    let arguments = serde_json::from_str::<serde_json::Value>(arguments).ok();
    let field = |key: &str| {
        arguments
            .as_ref()
            .and_then(|v| v.get(key))
            .and_then(|s| s.as_str())
    };
    let Some(name) = field("subagent") else {
        return magi_config::TASK_TOOL.to_owned();
    };
    let task = field("task")
        .and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(|first| match first.char_indices().nth(TASK_LABEL_CHARS) {
            Some((end, _)) => format!("{}…", &first[..end]),
            None => first.to_owned(),
        });
    match task {
        Some(task) => format!("{} {name}: {task}", magi_config::TASK_TOOL),
        None => format!("{} {name}", magi_config::TASK_TOOL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_label_names_the_subagent_and_the_task() {
        assert_eq!(
            task_label(r#"{"subagent": "reviewer", "task": "\nReview the diff.\nThen more."}"#),
            "task reviewer: Review the diff."
        );
        assert_eq!(task_label(r#"{"subagent": "reviewer"}"#), "task reviewer");
        assert_eq!(task_label("{}"), "task");
    }

    #[test]
    fn children_are_counted_beyond_those_kept() {
        let mut scope = TaskScope::new(
            "task-1".into(),
            "tool-1".into(),
            "task reviewer".into(),
            None,
        );
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
        // The task call's own card (tool-1) is not one of its children.
        for n in 1..TASK_CHILDREN + 6 {
            scope.note_child(&card(n));
        }
        // A later snapshot of a known child replaces it rather than adding one.
        scope.note_child(&card(2));
        assert_eq!(scope.children.children.len(), TASK_CHILDREN);
        assert_eq!(scope.children.total, (TASK_CHILDREN + 4) as u64);
    }
}
