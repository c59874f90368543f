//! Supervision of a call before it may run: the permission policy's verdict with the
//! session's rules, and the client's approval when the policy asks, each decision with
//! its protection label; an answer "for this session" adds the suggested rule.

use magi_config::{CallSubject, Confinement, PermissionMode, Verdict};
use magi_protocol::limits::APPROVAL_EXPIRY_MS;
use magi_store::records::{RecordBody, RuleEffect, ToolCallPhase};

use super::reports::running_card;
use super::role::Role;
use super::rules::suggested_rule;
use super::{Call, CallService};
use crate::approvals::ApprovalOutcome;
use crate::runner::live_cards::Snapshot;
use crate::runner::output::ApprovalDetails;
use crate::runner::text::bounded;
use magi_protocol::limits::SUMMARY_BYTES;

/// The protection label of a call a settings rule or the allow-all mode let run.
pub(super) const LABEL_ALLOWED_AUTOMATICALLY: &str = "allowed automatically";
/// The protection label of a call the user approved.
pub(super) const LABEL_ALLOWED_BY_USER: &str = "allowed by user";
/// The protection label of a call refused by the user or a deny rule.
pub(super) const LABEL_DENIED_BY_USER: &str = "denied by user";
/// The protection label of a call whose approval expired, was cancelled or lost its
/// client.
pub(super) const LABEL_APPROVAL_UNAVAILABLE: &str = "denied; approval unavailable";

/// Why a call may not run: its protection label, and what the person said with the
/// denial.
#[derive(Debug)]
pub(super) struct Denial {
    pub(super) label: &'static str,
    pub(super) message: Option<String>,
    /// The approval mode that refused the call, when it was the mode.
    pub(super) mode: Option<PermissionMode>,
}

impl Denial {
    fn by(label: &'static str) -> Denial {
        Denial {
            label,
            message: None,
            mode: None,
        }
    }

    /// What the model is told.
    pub(super) fn content(&self) -> String {
        if let Some(mode) = self.mode {
            return format!(
                "The call was not run: {}. The approval mode is {}: no file is changed \
                 until the person switches to another mode.",
                self.label,
                mode.as_str()
            );
        }
        match &self.message {
            Some(message) => format!(
                "The call was not run: {}.\nThe user said: {message}",
                self.label
            ),
            None => format!("The call was not run: {}.", self.label),
        }
    }
}

/// What the policy sees of a call, owned: its subject and where it reaches.
struct Judged {
    subject: Option<String>,
    read_only: bool,
    outside_workspace: bool,
    changes_files: bool,
    /// For a command: whether it would run confined, and why not.
    confinement: Result<Confinement, String>,
}

impl Judged {
    fn of<'c>(&'c self, call: &'c Call) -> CallSubject<'c> {
        CallSubject {
            tool: &call.name,
            subject: self.subject.as_deref(),
            read_only: self.read_only,
            outside_workspace: self.outside_workspace,
            changes_files: self.changes_files,
            confinement: self.confinement.clone().unwrap_or(Confinement::Unconfined),
        }
    }
}

impl CallService<'_, '_> {
    /// What the policy is shown of a call; none for a built-in name that does not
    /// exist (it fails without running anything).
    fn judged(&self, call: &Call) -> Option<Judged> {
        let cwd = self.workspace.cwd();
        if self.client_tool(&call.name).is_some() || self.agent.mcp.tool(&call.name).is_some() {
            // The client's own tools and MCP tools change what they change: they ask
            // unless a rule or the mode allows them (a server's read-only hint is not
            // evidence).
            return Some(Judged {
                subject: None,
                read_only: false,
                outside_workspace: false,
                changes_files: false,
                confinement: Ok(Confinement::NotACommand),
            });
        }
        if !magi_tools::exists(&call.name) {
            return None;
        }
        use magi_tools::BuiltinTool;
        let tool = BuiltinTool::from_name(&call.name);
        let changes_files = matches!(
            tool,
            Some(BuiltinTool::Write | BuiltinTool::Edit | BuiltinTool::HashEdit)
        );
        let command = matches!(tool, Some(BuiltinTool::Bash | BuiltinTool::AsyncBash));
        // A command the client's terminal runs is not confined by this sandbox.
        let confinement = if !command {
            Ok(Confinement::NotACommand)
        } else if escalates(call) {
            Err("it asks to run outside the sandbox".to_owned())
        } else if self.agent.client_terminals && tool == Some(BuiltinTool::Bash) {
            Err("the editor's terminal runs it, outside the sandbox".to_owned())
        } else {
            magi_tools::sandbox::confines_commands(cwd).map(|()| Confinement::Confined)
        };
        Some(Judged {
            subject: magi_tools::subject(&call.name, &call.arguments, cwd),
            // Stopping one's own job needs no more approval than starting it had.
            read_only: tool.is_some_and(|tool| !tool.needs_approval()),
            outside_workspace: magi_tools::outside_workspace(&call.name, &call.arguments, cwd),
            changes_files,
            confinement,
        })
    }

    /// The approval mode `call` is judged in: the session's, or for a Code Mode
    /// script's call `[permissions.code_mode] mode` when it sets one.
    pub(super) fn mode_of(&self, call: &Call) -> PermissionMode {
        let session = self.gates.rules.mode();
        match &call.nested {
            Some(_) => self.agent.permissions.code_mode.mode.unwrap_or(session),
            None => session,
        }
    }

    /// What the policy says of a call, from its arguments and the session's rules; a
    /// command that asks to run outside the sandbox always asks (see [`escalates`]).
    pub(super) fn verdict(&self, call: &Call) -> Verdict {
        let verdict = match self.judged(call) {
            Some(judged) => self.policy_verdict(call, &judged.of(call)),
            None => Verdict::Run,
        };
        self.escalated(call, verdict)
    }

    /// `verdict`, or `Ask` for a command asking to run outside the sandbox that the
    /// policy would let run: neither an allow rule nor a session rule covers that, only
    /// `--allow-all` (or the allow-all mode) with the sandbox mode `off`.
    fn escalated(&self, call: &Call, verdict: Verdict) -> Verdict {
        let allowed = matches!(
            verdict,
            Verdict::Run | Verdict::Allowed | Verdict::AllowedForSession
        );
        let everything_allowed = self.mode_of(call) == PermissionMode::AllowAll
            && magi_tools::sandbox::configured_mode() == Some(magi_config::SandboxMode::Off);
        if allowed && escalates(call) && !everything_allowed {
            Verdict::Ask
        } else {
            verdict
        }
    }

    /// Why a file tool's call, let through with `protection`, may not write its path
    /// under the sandbox; none when it may. A person's approval (now or by a session
    /// rule) and a settings allow rule whose pattern names the call let it write outside
    /// the sandbox's roots; the allow-all mode and a bare rule do not. A Code Mode
    /// script's call is judged by `[permissions.code_mode]`'s rules, as its verdict is.
    pub(super) fn sandbox_refusal(&self, call: &Call, protection: Option<&str>) -> Option<String> {
        if protection == Some(LABEL_ALLOWED_BY_USER) {
            return None;
        }
        let changes_a_path = matches!(
            magi_tools::BuiltinTool::from_name(&call.name),
            Some(
                magi_tools::BuiltinTool::Write
                    | magi_tools::BuiltinTool::Edit
                    | magi_tools::BuiltinTool::HashEdit
            )
        );
        if !changes_a_path {
            return None;
        }
        let cwd = self.workspace.cwd();
        // The subject is the path resolved, relative to the workspace when inside it.
        let subject = magi_tools::subject(&call.name, &call.arguments, cwd)?;
        let why = magi_tools::sandbox::check_file_write(&cwd.join(&subject), cwd).err()?;
        let permissions = &self.agent.permissions;
        let allow = match &call.nested {
            Some(_) => &permissions.code_mode.allow,
            None => &permissions.allow,
        };
        let named = allow
            .iter()
            .any(|rule| rule.has_pattern() && rule.covers(&call.name, Some(&subject)));
        (!named).then_some(why)
    }

    /// The verdict on a call the policy judges. A Code Mode script's call is judged
    /// by `[permissions.code_mode]` alone: neither `[permissions]`' rules nor the
    /// session's (answers given for direct calls) decide it.
    fn policy_verdict(&self, call: &Call, subject: &CallSubject<'_>) -> Verdict {
        match &call.nested {
            Some(_) => self
                .agent
                .permissions
                .for_code_mode(self.gates.rules.mode())
                .verdict(subject),
            None => self.gates.rules.verdict(&self.agent.permissions, subject),
        }
    }

    /// Decides whether a call may run, asking the client when the policy says so. Ok
    /// carries the protection label of the decision (none when no decision was
    /// needed); Err the denial.
    pub(super) async fn supervise(
        &mut self,
        role: &mut Role<'_>,
        call: &Call,
        activity_id: &str,
    ) -> Result<Option<&'static str>, Denial> {
        let Some(judged) = self.judged(call) else {
            return Ok(None);
        };
        let subject = judged.of(call);
        let verdict = self.policy_verdict(call, &subject);
        match self.escalated(call, verdict) {
            Verdict::Run => return Ok(None),
            Verdict::Allowed => return Ok(Some(LABEL_ALLOWED_AUTOMATICALLY)),
            // A session rule is a person's earlier answer.
            Verdict::AllowedForSession => return Ok(Some(LABEL_ALLOWED_BY_USER)),
            Verdict::Denied | Verdict::DeniedForSession => {
                return Err(Denial::by(LABEL_DENIED_BY_USER));
            }
            // The person chose the mode: its refusal is theirs, and the model is told
            // which mode refused.
            Verdict::DeniedByMode => {
                return Err(Denial {
                    label: LABEL_DENIED_BY_USER,
                    message: None,
                    mode: Some(PermissionMode::Plan),
                });
            }
            Verdict::Ask => {}
        }
        self.journal.append(RecordBody::ToolCallState {
            turn_id: self.turn_id.to_owned(),
            call_id: call.call_id.clone(),
            state: ToolCallPhase::AwaitingApproval,
            protection: None,
        });
        // Running outside the sandbox is asked each time: no rule is offered for it.
        // An answer "for this session" is a session rule of direct calls; a nested
        // call's answer covers that call alone.
        let escalation = escalates(call);
        let suggested_rule = if escalation || call.nested.is_some() {
            None
        } else {
            suggested_rule(&self.agent.permissions, &subject)
        };
        let details = self
            .output
            .has(magi_protocol::Extension::ApprovalScopes)
            .then(|| ApprovalDetails {
                subject: judged.subject.clone(),
                suggested_rule: suggested_rule.clone(),
                proposed_change: magi_tools::proposed_change(
                    &call.name,
                    &call.arguments,
                    self.workspace.cwd(),
                ),
            });
        let approval_id = uuid::Uuid::new_v4().to_string();
        let expiry = std::time::Duration::from_millis(APPROVAL_EXPIRY_MS);
        // Opened before it is announced, so an answer racing the event is not lost.
        let wait = self.gates.approvals.open(&approval_id, expiry);
        // A mode that runs confined commands without asking says why it asks for this
        // one (the sandbox is off or unavailable).
        let unconfined_reason = match (&judged.confinement, self.mode_of(call)) {
            (Err(why), PermissionMode::Auto | PermissionMode::Plan)
                if !escalation && !self.agent.permissions.always_asks(&subject) =>
            {
                Some(why.clone())
            }
            _ => None,
        };
        let label = if escalation {
            format!("run outside the sandbox: {}", call.label)
        } else if let Some(why) = unconfined_reason {
            bounded(&format!("{} (asked: {why})", call.label), SUMMARY_BYTES)
        } else {
            call.label.clone()
        };
        // A Code Mode script's call says so: the person approves a call the model
        // wrote into a script, not one it asked for directly.
        let title = match &call.nested {
            Some(_) => bounded(&format!("Code Mode script: {label}"), SUMMARY_BYTES),
            None => label,
        };
        self.output
            .approval_requested(&approval_id, &title, APPROVAL_EXPIRY_MS, details)
            .await;
        let waiting = running_card(call, None, true);
        self.card(role, activity_id, Snapshot::Interim, waiting)
            .await;
        // A script's clock does not count the time a person takes to answer.
        let clock = self
            .output
            .script_clock
            .clone()
            .filter(|_| call.nested.is_some());
        if let Some(clock) = &clock {
            clock.hold();
        }
        // The answer may come while they run: the wait was opened first.
        self.approval_requested(role, call).await;
        let settled = wait.settled(&self.output.cancel).await;
        if let Some(clock) = &clock {
            clock.release();
        }
        let answer = match settled {
            ApprovalOutcome::Answered(answer) => answer,
            ApprovalOutcome::Expired | ApprovalOutcome::Cancelled => {
                return Err(Denial::by(LABEL_APPROVAL_UNAVAILABLE));
            }
        };
        if answer.unavailable {
            return Err(Denial::by(LABEL_APPROVAL_UNAVAILABLE));
        }
        if answer.for_session
            && let Some(rule) = &suggested_rule
        {
            let effect = if answer.allow {
                RuleEffect::Allow
            } else {
                RuleEffect::Deny
            };
            self.gates
                .rules
                .add(effect, rule, self.turn_id, &call.call_id);
            self.record_session_rules();
        }
        if answer.allow {
            Ok(Some(LABEL_ALLOWED_BY_USER))
        } else {
            Err(Denial {
                label: LABEL_DENIED_BY_USER,
                message: answer.message,
                mode: None,
            })
        }
    }

    /// Appends the session rules added since the last time, when this service records
    /// to the session log; a subagent's wait for the session's turn to do it.
    pub(in crate::runner) fn record_session_rules(&mut self) {
        if self.journal.is_session() {
            let records = self.gates.rules.take_unrecorded();
            if !records.is_empty() {
                self.journal.append_all(records);
            }
        }
    }
}

/// Whether `call` is a command asking to run outside the sandbox (`"sandbox": "off"`).
fn escalates(call: &Call) -> bool {
    matches!(
        magi_tools::BuiltinTool::from_name(&call.name),
        Some(magi_tools::BuiltinTool::Bash | magi_tools::BuiltinTool::AsyncBash)
    ) && magi_tools::sandbox::asks_unconfined(&call.arguments)
}
