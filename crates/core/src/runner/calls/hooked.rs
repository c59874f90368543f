//! The tool-call service's hooks (`docs/hooks.md`): `pre_tool_use` before a call is
//! supervised (it may block the call or give it other arguments), `approval_requested`
//! once the person is asked, and `post_tool_use` once the calls of a response have
//! settled and their results are durable, before the model is given them.

use magi_config::HookEvent;
use magi_store::records::ToolOutcome;
use serde_json::Value;

use super::progress::Settled;
use super::{Call, CallService, Role};
use crate::hooks::{Fired, input_text};
use crate::runner::hooks::{Occurrence, call_fields, fire};

/// How a call a `pre_tool_use` hook blocked is told, before the hook's reason: its
/// card's summary and what the model reads.
pub(super) const HOOK_DENIAL: &str = "denied by hook:";

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

    /// Runs the `pre_tool_use` hooks of `call`; `reserve` activities stay for the
    /// response's later calls.
    pub(super) async fn pre_tool_use(
        &mut self,
        role: &Role<'_>,
        call: &Call,
        reserve: usize,
    ) -> Fired {
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
            };
            let fired = fire(self.output, self.agent, self.workspace.cwd(), occurrence).await;
            if fired.cancelled {
                break;
            }
        }
    }
}
