//! The tool-call service's hooks (`docs/hooks.md`): `pre_tool_use` before a call is
//! supervised (it may block the call or give it other arguments), `approval_requested`
//! once the person is asked, and `post_tool_use` once the calls of a response have
//! settled and their results are durable, before the model is given them.

use magi_config::HookEvent;
use magi_protocol::limits::SUMMARY_BYTES;
use magi_store::records::{HookDecision, RecordBody, ToolOutcome};
use serde_json::Value;

use super::progress::Settled;
use super::{Call, CallService, Role};
use crate::cards::HookSource;
use crate::hooks::{Fired, input_text};
use crate::runner::hooks::{Occurrence, call_fields, fire};
use crate::runner::text::bounded;

/// How a call a `pre_tool_use` hook blocked is told, before the hook's reason: its
/// card's summary and what the model reads.
pub(super) const HOOK_DENIAL: &str = "denied by hook:";

/// What the model reads first in the result of a call whose arguments a hook
/// replaced, before the label of what ran: the provider is replayed the model's own
/// arguments, so the result says what it is the result of.
const REPLACED_NOTE: &str =
    "[A pre_tool_use hook replaced this call's arguments; this is the result of:";

/// What a `pre_tool_use` hook decided of a call: its record, its card's `Hook` row.
#[derive(Debug, Clone)]
pub(super) struct Decided {
    /// The hook's command, safe and bounded.
    pub(super) hook: String,
    /// A block, or replaced arguments.
    pub(super) decision: HookDecision,
    /// A block's reason, safe and bounded.
    pub(super) reason: Option<String>,
}

impl Decided {
    /// The card's view of it.
    pub(super) fn source(&self) -> HookSource<'_> {
        HookSource {
            hook: &self.hook,
            decision: self.decision,
            reason: self.reason.as_deref(),
        }
    }
}

/// The `tool_call_hook` record of `call`, which `decided` decided.
pub(super) fn hook_record(turn_id: &str, call: &Call, decided: &Decided) -> RecordBody {
    let replaced = decided.decision == HookDecision::ArgumentsReplaced;
    RecordBody::ToolCallHook {
        turn_id: turn_id.to_owned(),
        call_id: call.call_id.clone(),
        hook: decided.hook.clone(),
        decision: decided.decision,
        reason: decided.reason.clone(),
        arguments: replaced.then(|| call.arguments.clone()),
        summary: replaced.then(|| call.label.clone()),
    }
}

/// What the model is given of a call: `content`, after a note naming what ran when a
/// hook replaced the call's arguments.
pub(super) fn model_content(call: &Call, content: String) -> String {
    match &call.hook {
        Some(decided) if decided.decision == HookDecision::ArgumentsReplaced => {
            format!("{REPLACED_NOTE} {}]\n{content}", call.label)
        }
        _ => content,
    }
}

impl CallService<'_, '_> {
    /// How the agent whose calls these are was invoked, for a hook's input.
    fn invocation(role: &Role<'_>) -> Option<&'static str> {
        matches!(role, Role::Task(_)).then_some("subagent")
    }

    /// The argument schema the model was given for tool `name`, if known.
    fn tool_schema(&self, name: &str) -> Option<Value> {
        if let Some(tool) = magi_tools::BuiltinTool::from_name(name) {
            return Some(tool.definition().parameters);
        }
        if let Some(tool) = self.offer.client_tool(name) {
            return Some(tool.parameters.clone());
        }
        self.agent
            .mcp
            .tools()
            .find(|tool| tool.name == name)
            .map(|tool| tool.parameters.clone())
    }

    /// Why `call` settles before its hooks run, if it does: the turn was cancelled,
    /// the call reaches outside its task's scope, or its tool is not offered. What the
    /// model is told, and the outcome.
    pub(super) fn early_refusal(
        &self,
        role: &Role<'_>,
        call: &Call,
    ) -> Option<(String, ToolOutcome)> {
        if self.output.cancel.is_cancelled() {
            let content = "not started: the turn was cancelled".to_owned();
            return Some((content, ToolOutcome::Cancelled));
        }
        if let Some(outside) = role.outside(call, self.workspace.cwd()) {
            let content = format!("The call was not run: {outside}.");
            return Some((content, ToolOutcome::Failed));
        }
        if !self.offer.offers(&call.name) {
            // The settings or the profile do not offer it: nothing runs, and the model
            // is told.
            let why = if self.offer.disabled(&call.name) {
                "is disabled in this backend's settings"
            } else if self.offer.held_from_blind_model(&call.name) {
                "is not offered: this model takes no images"
            } else {
                "is not offered to this agent"
            };
            let content = format!("The call was not run: {} {why}.", call.name);
            return Some((content, ToolOutcome::Failed));
        }
        None
    }

    /// Runs the `pre_tool_use` hooks of `call` and takes their decision into it: a
    /// block (its reason returned), or the hook's arguments, from which the call's
    /// label (its activity, card and approval) is made again. `reserve` activities
    /// stay for the response's later calls.
    pub(super) async fn hooked(
        &mut self,
        role: &Role<'_>,
        call: &mut Call,
        reserve: usize,
    ) -> Option<String> {
        let fired = self.pre_tool_use(role, call, reserve).await;
        let hook = fired
            .decided_by
            .as_deref()
            .map(|command| bounded(&self.output.safe(command), SUMMARY_BYTES))
            .unwrap_or_default();
        if let Some(reason) = fired.blocked {
            call.hook = Some(Decided {
                hook,
                decision: HookDecision::Blocked,
                reason: Some(bounded(&reason, SUMMARY_BYTES)),
            });
            return Some(reason);
        }
        if let Some(arguments) = fired.updated_arguments {
            call.label = self.label(&call.name, &arguments);
            call.model_arguments = Some(std::mem::replace(&mut call.arguments, arguments));
            call.hook = Some(Decided {
                hook,
                decision: HookDecision::ArgumentsReplaced,
                reason: None,
            });
        }
        None
    }

    /// Runs the `pre_tool_use` hooks of `call`; `reserve` activities stay for the
    /// response's later calls.
    async fn pre_tool_use(&mut self, role: &Role<'_>, call: &Call, reserve: usize) -> Fired {
        if !self
            .agent
            .hooks
            .any(HookEvent::PreToolUse, Some(&call.name))
        {
            return Fired::default();
        }
        let occurrence = Occurrence {
            event: HookEvent::PreToolUse,
            subject: Some(&call.name),
            fields: call_fields(&call.name, &call.call_id, &call.arguments),
            invocation: Self::invocation(role),
            schema: self.tool_schema(&call.name),
            reserve,
            past_cancel: false,
        };
        fire(self.output, self.agent, self.workspace.cwd(), occurrence).await
    }

    /// Runs the `approval_requested` hooks of `call`, whose approval the person was
    /// just asked for.
    pub(super) async fn approval_requested(&mut self, role: &Role<'_>, call: &Call) {
        if !self
            .agent
            .hooks
            .any(HookEvent::ApprovalRequested, Some(&call.name))
        {
            return;
        }
        let mut fields = call_fields(&call.name, &call.call_id, &call.arguments);
        fields.insert("summary".into(), call.label.clone().into());
        let occurrence = Occurrence {
            event: HookEvent::ApprovalRequested,
            subject: Some(&call.name),
            fields,
            invocation: Self::invocation(role),
            schema: None,
            reserve: 0,
            past_cancel: false,
        };
        fire(self.output, self.agent, self.workspace.cwd(), occurrence).await;
    }

    /// Runs the `post_tool_use` hooks of each settled call, in the model's order.
    pub(super) async fn post_tool_use(
        &mut self,
        role: &Role<'_>,
        calls: &[Call],
        settled: &[Settled],
    ) {
        for (call, settled) in calls.iter().zip(settled) {
            if !self
                .agent
                .hooks
                .any(HookEvent::PostToolUse, Some(&call.name))
            {
                continue;
            }
            let mut fields = call_fields(&call.name, &call.call_id, &call.arguments);
            let outcome = match settled.outcome {
                ToolOutcome::Completed => "completed",
                ToolOutcome::Failed => "failed",
                ToolOutcome::Cancelled => "cancelled",
                ToolOutcome::Indeterminate => "indeterminate",
                ToolOutcome::Denied => "denied",
            };
            fields.insert("outcome".into(), outcome.into());
            fields.insert(
                "result".into(),
                input_text(&settled.content, &self.agent.secrets),
            );
            let occurrence = Occurrence {
                event: HookEvent::PostToolUse,
                subject: Some(&call.name),
                fields,
                invocation: Self::invocation(role),
                schema: None,
                reserve: 0,
                past_cancel: false,
            };
            let fired = fire(self.output, self.agent, self.workspace.cwd(), occurrence).await;
            if fired.cancelled {
                break;
            }
        }
    }
}
