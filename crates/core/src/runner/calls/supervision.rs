//! Supervision of a call before it may run: the permission policy's verdict, and the
//! client's approval when the policy asks, each decision with its protection label.

use magi_config::{CallSubject, Verdict};
use magi_protocol::limits::APPROVAL_EXPIRY_MS;
use magi_store::records::{RecordBody, ToolCallPhase};

use super::role::Role;
use super::{Call, CallService, running_card};
use crate::approvals::ApprovalOutcome;
use crate::runner::live_cards::Snapshot;

/// The protection label of a call a settings rule or the allow-all mode let run.
pub(super) const LABEL_ALLOWED_AUTOMATICALLY: &str = "allowed automatically";
/// The protection label of a call the user approved.
pub(super) const LABEL_ALLOWED_BY_USER: &str = "allowed by user";
/// The protection label of a call refused by the user or a deny rule.
pub(super) const LABEL_DENIED_BY_USER: &str = "denied by user";
/// The protection label of a call whose approval expired, was cancelled or lost its
/// client.
pub(super) const LABEL_APPROVAL_UNAVAILABLE: &str = "denied; approval unavailable";

impl CallService<'_, '_> {
    /// What the policy says of a call, from its arguments.
    pub(super) fn verdict(&self, call: &Call) -> Verdict {
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
    pub(super) async fn supervise(
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
