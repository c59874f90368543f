//! Our approvals as `session/request_permission`: allow once, allow always, reject once
//! and reject always, mapped onto the `approval.scopes` answers ("always" is the
//! session rule the approval suggests, offered only when it suggests one).

use std::time::Duration;

use agent_client_protocol_schema::v1::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields,
};
use magi_protocol::messages::{ApprovalAnswerParams, ApprovalRequested, ApprovalScope};
use magi_protocol::methods;

use super::Session;
use crate::rpc::Unanswered;

/// The option IDs, one per kind.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

/// What came back for one approval.
pub(crate) struct Answer {
    run_id: String,
    approval_id: String,
    /// The option chosen; `None` when the client cancelled the request.
    choice: Result<Option<PermissionOptionKind>, Unanswered>,
}

/// The options offered for an approval: the "always" ones only with a suggested rule.
pub(crate) fn options(request: &ApprovalRequested) -> Vec<PermissionOption> {
    let rule = request.suggested_rule.clone().flatten();
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if let Some(rule) = &rule {
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Always allow in this session ({rule})"),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT_ONCE,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    if let Some(rule) = &rule {
        options.push(PermissionOption::new(
            REJECT_ALWAYS,
            format!("Always reject in this session ({rule})"),
            PermissionOptionKind::RejectAlways,
        ));
    }
    options
}

/// The kind of the option the client chose; an ID we did not offer is none.
fn chosen(response: &RequestPermissionResponse) -> Option<PermissionOptionKind> {
    match &response.outcome {
        RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            ALLOW_ONCE => Some(PermissionOptionKind::AllowOnce),
            ALLOW_ALWAYS => Some(PermissionOptionKind::AllowAlways),
            REJECT_ONCE => Some(PermissionOptionKind::RejectOnce),
            REJECT_ALWAYS => Some(PermissionOptionKind::RejectAlways),
            _ => None,
        },
        _ => None,
    }
}

/// The `approval.answer` an option makes: allow or not, for this call or the session.
pub(crate) fn answer_params(
    session_id: &str,
    run_id: &str,
    approval_id: &str,
    choice: &Result<Option<PermissionOptionKind>, Unanswered>,
) -> ApprovalAnswerParams {
    let mut params = ApprovalAnswerParams::once(session_id, run_id, approval_id, false);
    match choice {
        Ok(Some(PermissionOptionKind::AllowOnce)) => {
            params.allow = true;
            params.scope = Some(ApprovalScope::Once);
        }
        Ok(Some(PermissionOptionKind::AllowAlways)) => {
            params.allow = true;
            params.scope = Some(ApprovalScope::Session);
        }
        Ok(Some(PermissionOptionKind::RejectAlways)) => {
            params.scope = Some(ApprovalScope::Session);
        }
        // Rejected, cancelled, or an option we do not know: denied for this call.
        Ok(_) => params.scope = Some(ApprovalScope::Once),
        // Nobody answered: the call is denied as "approval unavailable".
        Err(_) => params.unavailable = Some(true),
    }
    params
}

impl Session {
    /// Puts an approval to the client on a task of its own; the answer comes back to the
    /// session's loop. The wait is bounded by the approval's own expiry, after which
    /// the backend has denied the call anyway.
    pub(super) fn ask_permission(&mut self, request: ApprovalRequested) {
        let Some(turn) = self.turn.as_ref() else {
            return;
        };
        let call_id = turn
            .last_call
            .clone()
            .unwrap_or_else(|| request.approval_id.clone());
        let mut title = request.summary.clone();
        if let Some(Some(subject)) = &request.subject
            && !title.contains(subject.as_str())
        {
            title.push_str(&format!(": {subject}"));
        }
        let mut fields = ToolCallUpdateFields::new().title(title);
        if let Some(Some(change)) = &request.proposed_change {
            let content: ToolCallContent = ContentBlock::from(change.diff.clone()).into();
            fields = fields.content(vec![content]);
        }
        let params = RequestPermissionRequest::new(
            self.id.clone(),
            ToolCallUpdate::new(call_id, fields),
            options(&request),
        );
        let peer = self.peer.clone();
        let answers = self.answer_sender.clone();
        let wait = Duration::from_millis(request.expires_in_ms);
        tokio::spawn(async move {
            let choice = match serde_json::to_value(&params) {
                Ok(params) => peer
                    .request("session/request_permission", params, wait)
                    .await
                    .and_then(|result| {
                        serde_json::from_value::<RequestPermissionResponse>(result)
                            .map(|response| chosen(&response))
                            .map_err(|_| Unanswered::NoAnswer)
                    }),
                Err(_) => Err(Unanswered::NoAnswer),
            };
            let _ = answers.send(Answer {
                run_id: request.run_id,
                approval_id: request.approval_id,
                choice,
            });
        });
    }

    /// Sends the client's answer on, unless the turn it belongs to is over or being
    /// cancelled (cancelling settles its approvals).
    pub(super) async fn answered(&mut self, answer: Answer) {
        let current = self
            .turn
            .as_ref()
            .is_some_and(|turn| turn.run_id == answer.run_id && !turn.cancelled);
        if !current {
            return;
        }
        if let Err(Unanswered::Error(e)) = &answer.choice {
            eprintln!(
                "magi-code acp: session {}: the permission request failed: {}",
                self.id, e.message
            );
        }
        let params = answer_params(
            &self.id,
            &answer.run_id,
            &answer.approval_id,
            &answer.choice,
        );
        // A late answer is stale and changes nothing; the run goes on either way.
        let _ = self.backend.send::<methods::ApprovalAnswer>(&params).await;
    }
}
