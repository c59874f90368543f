//! Whose calls the service runs ([`Role`]): the session agent's, whose `task` calls go
//! to a [`Delegate`], or a subagent's, held to its task's scope; and the client's
//! [`Gates`].

use std::path::Path;

use magi_protocol::cards::Card;
use magi_tools::ToolReport;

use super::{Call, CallService};
use crate::approvals::ApprovalGate;
use crate::cards::TaskChildren;
use crate::client_tools::ClientToolGate;
use crate::runner::output::Output;
use crate::runner::scope::TaskScope;

/// Where the client answers what a run asks of it.
#[derive(Clone, Default)]
pub(in crate::runner) struct Gates {
    /// Settles the run's pending approvals.
    pub(in crate::runner) approvals: ApprovalGate,
    /// Answers the run's client tool calls.
    pub(in crate::runner) client_calls: ClientToolGate,
    /// Answers the run's client terminal calls (`client.terminals`).
    pub(in crate::runner) terminals: crate::client_terminals::TerminalGate,
    /// Answers the run's questions to the user.
    pub(in crate::runner) questions: crate::questions::QuestionGate,
    /// Answers the run's reads and writes through the client (`client.files`).
    pub(in crate::runner) files: crate::client_files::ClientFileGate,
    /// The session's rules, from its records and the answers "for this session".
    pub(in crate::runner) rules: super::rules::RuleBook,
    /// The turn's start checkpoint, which calls wait for before they run.
    pub(in crate::runner) start_checkpoint: crate::runner::start_checkpoint::StartCheckpoint,
}

/// Whose calls the service runs.
pub(in crate::runner) enum Role<'r> {
    /// The session's own agent's: its `task` calls delegate through the delegate.
    Session(&'r mut dyn Delegate),
    /// A subagent's: each stays inside the task's scope and shows on its card.
    Task(&'r mut TaskScope),
}

impl Role<'_> {
    /// Notes that the model asked for `count` calls.
    pub(super) fn asked(&mut self, count: usize) {
        if let Role::Task(scope) = self {
            scope.tool_calls += count as u64;
        }
    }

    /// Where a call of tool `name` belongs: the `task` call whose subagent asked for
    /// it and the task, or for the session's own `task` call the task it starts.
    pub(super) fn lineage(&mut self, name: &str) -> (Option<String>, Option<String>) {
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
    pub(super) fn outside(&self, call: &Call, cwd: &Path) -> Option<String> {
        match self {
            Role::Task(scope) => scope.outside(&call.name, &call.arguments, cwd),
            Role::Session(_) => None,
        }
    }

    /// Notes a card sent for one of the role's calls: a subagent's call is a child of
    /// its task's card.
    pub(super) fn shown(&mut self, card: &Card) {
        if let Role::Task(scope) = self {
            scope.note_child(card);
        }
    }

    /// The children of the session's `task` call `call`, once its subagent ended.
    pub(super) fn children(&mut self, call: &Call) -> Option<TaskChildren> {
        match (self, &call.task_id, &call.parent_activity_id) {
            (Role::Session(delegate), Some(task_id), None) => delegate.children(task_id),
            _ => None,
        }
    }

    /// After one of the role's calls settled: a subagent's task card shows its progress.
    pub(super) async fn settled(&self, output: &mut Output) {
        if let Role::Task(scope) = self {
            scope.progress(output).await;
        }
    }
}

/// What runs a `task` call: the subagent runner, seen from the service.
pub(in crate::runner) trait Delegate {
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
