//! Where a turn runs its hooks (`crate::hooks`, `docs/hooks.md`): one occurrence of an
//! event runs the agent's matching hooks in order, each on a blocking thread and shown
//! as an activity (`tool` kind, named `hook`) while the run has activities to spare,
//! at most [`HOOKS_PER_EVENT`] of them; the first block or a cancellation ends the
//! occurrence, and every error is told as a `hook_failed` diagnostic (exec prints it
//! on stderr, Mission Control in the transcript). Hooks run only inside a turn: never
//! while a session is opened or listed, nor while a crashed turn's calls are
//! recovered.

use std::path::Path;
use std::sync::Arc;

use magi_config::HookEvent;
use magi_protocol::limits::{
    COMPACT_HOOK_ERROR_BYTES, HOOKS_PER_EVENT, RUN_ACTIVITIES, SUMMARY_BYTES,
};
use magi_protocol::messages::{ActivityKind, ActivityState, DIAGNOSTIC_HOOK_FAILED};
use magi_tools::{HookEnd, HookRun};
use serde_json::{Map, Value};

use super::output::Output;
use super::text::bounded;
use crate::agent::Agent;
use crate::hooks::{Common, Fired, input};

/// One occurrence of an event.
pub(super) struct Occurrence<'a> {
    /// The event.
    pub(super) event: HookEvent,
    /// What matchers look at: a tool's name, a subagent's profile.
    pub(super) subject: Option<&'a str>,
    /// The event's own fields of the hook's input.
    pub(super) fields: Map<String, Value>,
    /// `local_agent`, `exec`, `mission_control`, or `subagent` for a subagent's.
    pub(super) invocation: Option<&'static str>,
    /// The tool's argument schema, for `pre_tool_use`'s `updated_arguments`.
    pub(super) schema: Option<Value>,
    /// Activities the caller still has to start after these: hook activities never
    /// take the room a tool call's needs.
    pub(super) reserve: usize,
    /// The hooks run even in a cancelled run, and stop only when the backend ends
    /// (`turn_end`: its hook hears how the turn ended, cancelled included).
    pub(super) past_cancel: bool,
}

impl Occurrence<'_> {
    /// An occurrence of `event` with no subject, no schema and no reserve: the
    /// session's and the turn's own events.
    fn of(event: HookEvent, fields: Map<String, Value>) -> Occurrence<'static> {
        Occurrence {
            event,
            subject: None,
            fields,
            invocation: None,
            schema: None,
            reserve: 0,
            past_cancel: false,
        }
    }
}

/// Runs the hooks of `occurrence` for `agent` in `cwd`, telling them through `output`.
pub(super) async fn fire(
    output: &mut Output,
    agent: &Agent,
    cwd: &Path,
    occurrence: Occurrence<'_>,
) -> Fired {
    let event = occurrence.event;
    let hooks = agent.hooks.matching(event, occurrence.subject);
    let mut fired = Fired::default();
    if hooks.is_empty() {
        return fired;
    }
    let common = Common {
        session_id: output.session_id(),
        run_id: Some(output.run_id()),
        cwd,
        invocation: occurrence
            .invocation
            .unwrap_or_else(|| agent.hooks.invocation()),
    };
    let bytes = input(event, &common, occurrence.fields, &agent.secrets);
    let stop = if occurrence.past_cancel {
        output.closing.clone()
    } else {
        output.cancel.clone()
    };
    for (index, hook) in hooks.iter().enumerate() {
        if index == HOOKS_PER_EVENT {
            fired.errors.push(format!(
                "{} more {} hooks did not run: at most {HOOKS_PER_EVENT} run for one event",
                hooks.len() - index,
                event.name()
            ));
            break;
        }
        if stop.is_cancelled() {
            fired.cancelled = true;
            break;
        }
        let label = bounded(
            &output.safe(&format!("{} {}", event.name(), hook.command)),
            SUMMARY_BYTES,
        );
        let shown = output.activities + occurrence.reserve < RUN_ACTIVITIES;
        let activity_id = shown.then(|| output.next_activity_id("hook"));
        if let Some(id) = &activity_id {
            output
                .activity_of(
                    ActivityKind::Tool,
                    id,
                    "hook",
                    ActivityState::Started,
                    &label,
                )
                .await;
        }
        let run = {
            let hooks = Arc::clone(&agent.hooks);
            let hook = hook.clone();
            let input = bytes.clone();
            let cwd = cwd.to_owned();
            let cancel = stop.clone();
            let hidden_env = agent.hidden_env.clone();
            tokio::task::spawn_blocking(move || {
                let cancelled = move || cancel.is_cancelled();
                hooks.run(&hook, input, &cwd, &cancelled, &hidden_env)
            })
            .await
            .unwrap_or_else(|_| HookRun {
                end: HookEnd::NotStarted("its thread ended early".to_owned()),
                stdout: String::new(),
                stderr: String::new(),
                stdout_cut: false,
                stderr_cut: false,
            })
        };
        let ok = fired.take(hook, run, occurrence.schema.as_ref(), &agent.secrets);
        if let Some(id) = &activity_id {
            let (state, said) = match (&fired.blocked, ok) {
                (Some(_), _) => (ActivityState::Completed, "blocked"),
                (None, true) => (ActivityState::Completed, "done"),
                (None, false) if fired.cancelled => (ActivityState::Failed, "cancelled"),
                (None, false) => (ActivityState::Failed, "failed"),
            };
            // An ending activity's summary is the outcome: its start named the hook.
            output
                .activity_of(ActivityKind::Tool, id, "hook", state, said)
                .await;
        }
        if fired.blocked.is_some() || fired.cancelled {
            break;
        }
    }
    for error in &fired.errors {
        output.diagnostic(DIAGNOSTIC_HOOK_FAILED, error).await;
    }
    fired
}

/// The fields of a tool call's hook input: its name, ID and arguments (as JSON when
/// they are, else as text).
pub(super) fn call_fields(name: &str, call_id: &str, arguments: &str) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("tool_name".into(), name.into());
    fields.insert("call_id".into(), call_id.into());
    let arguments =
        serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| arguments.to_owned().into());
    fields.insert("tool_input".into(), arguments);
    fields
}

/// The hooks a turn runs before its input is recorded: `session_start` at the first
/// turn of an attachment, then `user_prompt_submit`. Ok carries the notes for the
/// model's context (event, text), in order; Err how the turn ends when a hook refused
/// it (the reason told as a `hook_blocked` diagnostic) or the turn was cancelled.
pub(super) async fn before_input(
    output: &mut Output,
    agent: &Agent,
    cwd: &Path,
    session_start: Option<&'static str>,
    prompt: &str,
) -> Result<Vec<(HookEvent, String)>, super::ending::Ending> {
    use super::ending::Ending;
    let mut notes = Vec::new();
    if let Some(source) = session_start {
        let mut fields = Map::new();
        fields.insert("source".into(), source.into());
        let occurrence = Occurrence::of(HookEvent::SessionStart, fields);
        let fired = fire(output, agent, cwd, occurrence).await;
        if fired.cancelled {
            return Err(Ending::cancelled());
        }
        notes.extend(
            fired
                .notes
                .into_iter()
                .map(|n| (HookEvent::SessionStart, n)),
        );
    }
    if !agent.hooks.any(HookEvent::UserPromptSubmit, None) {
        return Ok(notes);
    }
    let mut fields = Map::new();
    fields.insert(
        "prompt".into(),
        crate::hooks::input_text(prompt, &agent.secrets),
    );
    let occurrence = Occurrence::of(HookEvent::UserPromptSubmit, fields);
    let fired = fire(output, agent, cwd, occurrence).await;
    if fired.cancelled {
        return Err(Ending::cancelled());
    }
    if let Some(reason) = fired.blocked {
        output
            .diagnostic(magi_protocol::messages::DIAGNOSTIC_HOOK_BLOCKED, &reason)
            .await;
        return Err(Ending::failed(magi_protocol::ErrorCode::ExecutionFailed));
    }
    notes.extend(
        fired
            .notes
            .into_iter()
            .map(|n| (HookEvent::UserPromptSubmit, n)),
    );
    Ok(notes)
}

/// Runs the `turn_end` hooks of a turn that ended with `outcome`.
pub(super) async fn turn_end(
    output: &mut Output,
    agent: &Agent,
    cwd: &Path,
    outcome: magi_protocol::messages::RunOutcome,
) {
    let outcome = match outcome {
        magi_protocol::messages::RunOutcome::Completed => "completed",
        magi_protocol::messages::RunOutcome::Cancelled => "cancelled",
        magi_protocol::messages::RunOutcome::Failed => "failed",
    };
    let mut fields = Map::new();
    fields.insert("outcome".into(), outcome.into());
    let occurrence = Occurrence {
        past_cancel: true,
        ..Occurrence::of(HookEvent::TurnEnd, fields)
    };
    fire(output, agent, cwd, occurrence).await;
}

/// Runs the `pre_compact` hooks before a turn's conversation is compacted: `trigger`
/// is `auto` (it nears the context window) or `requested` (the agent asked).
pub(super) async fn pre_compact(
    output: &mut Output,
    agent: &Agent,
    cwd: &Path,
    trigger: &'static str,
) {
    let mut fields = Map::new();
    fields.insert("trigger".into(), trigger.into());
    let occurrence = Occurrence::of(HookEvent::PreCompact, fields);
    fire(output, agent, cwd, occurrence).await;
}

/// Runs the `subagent_stop` hooks of a subagent of profile `profile` that finished
/// task `task_id` with `outcome`.
pub(super) async fn subagent_stop(
    output: &mut Output,
    agent: &Agent,
    cwd: &Path,
    profile: &str,
    task_id: &str,
    outcome: magi_protocol::messages::RunOutcome,
) {
    let outcome = match outcome {
        magi_protocol::messages::RunOutcome::Completed => "completed",
        magi_protocol::messages::RunOutcome::Cancelled => "cancelled",
        magi_protocol::messages::RunOutcome::Failed => "failed",
    };
    let mut fields = Map::new();
    fields.insert("profile".into(), profile.into());
    fields.insert("task_id".into(), task_id.into());
    fields.insert("outcome".into(), outcome.into());
    let occurrence = Occurrence {
        event: HookEvent::SubagentStop,
        subject: Some(profile),
        fields,
        invocation: Some("subagent"),
        schema: None,
        reserve: 0,
        past_cancel: false,
    };
    fire(output, agent, cwd, occurrence).await;
}

/// Runs the `pre_compact` hooks of `session.compact` (`trigger` `manual`), on the
/// session worker, before the summary is asked for. It is no run, so no activity or
/// diagnostic tells them: their errors are given back, for the answer's
/// `hook_errors`, each cut to `COMPACT_HOOK_ERROR_BYTES`. `cancel`
/// (`operation.cancel`, shutdown) kills the one running; None when it did.
pub(super) fn pre_compact_idle(
    agent: &Agent,
    cwd: &Path,
    session_id: &str,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<Vec<String>> {
    let event = HookEvent::PreCompact;
    let hooks = agent.hooks.matching(event, None);
    if hooks.is_empty() {
        return Some(Vec::new());
    }
    let mut fields = Map::new();
    fields.insert("trigger".into(), "manual".into());
    let common = Common {
        session_id,
        run_id: None,
        cwd,
        invocation: agent.hooks.invocation(),
    };
    let bytes = input(event, &common, fields, &agent.secrets);
    let mut fired = Fired::default();
    let cancelled = || cancel.is_cancelled();
    for hook in hooks.iter().take(HOOKS_PER_EVENT) {
        if cancel.is_cancelled() {
            return None;
        }
        let run = agent
            .hooks
            .run(hook, bytes.clone(), cwd, &cancelled, &agent.hidden_env);
        fired.take(hook, run, None, &agent.secrets);
        if fired.cancelled {
            return None;
        }
    }
    Some(
        fired
            .errors
            .iter()
            .map(|error| cut_error(error, COMPACT_HOOK_ERROR_BYTES))
            .collect(),
    )
}

/// `error` cut to at most `bound` bytes at a character boundary, ending with `…` when cut.
fn cut_error(error: &str, bound: usize) -> String {
    if error.len() <= bound {
        return error.to_owned();
    }
    format!("{}…", bounded(error, bound - '…'.len_utf8()))
}

#[cfg(test)]
mod tests {
    use super::cut_error;

    #[test]
    fn a_long_error_is_cut_on_a_character_boundary_and_marked() {
        assert_eq!(cut_error("short", 8), "short");
        let cut = cut_error(&"é".repeat(10), 8);
        assert_eq!(cut, "éé…");
        assert!(cut.len() <= 8);
    }
}
