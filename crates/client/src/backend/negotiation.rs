//! The extensions an `initialize` requires: what the backend must advertise for them,
//! and the reader accepting their events once it did.

use std::sync::Arc;

use magi_protocol::messages::{
    ApprovalChangeCountsDescriptor, ApprovalScopesDescriptor, ClientFilesDescriptor,
    InitializeParams, InitializeResult, InputAttachmentsDescriptor, ModelCachedDescriptor,
    PlanTodoDescriptor, ReasoningSummariesDescriptor, SessionUsageDescriptor,
    UsageCacheWritesDescriptor, UserQuestionsDescriptor,
};
use magi_protocol::messages::{
    CheckpointsDescriptor, ClientTerminalsDescriptor, JobsControlDescriptor,
};
use magi_protocol::names::{
    APPROVAL_CHANGE_COUNTS, APPROVAL_SCOPES, CLIENT_FILES, CLIENT_TERMINALS, INPUT_ATTACHMENTS,
    JOBS_CONTROL, MODEL_CACHED, PERMISSION_MODES, PLAN_TODO, REASONING_SUMMARIES, SESSION_USAGE,
    USAGE_CACHE_WRITES, USER_QUESTIONS,
};
use magi_protocol::names::{CHECKPOINTS, TOOL_CARD_STYLES};
use serde_json::Value;

use super::Shared;
use crate::ClientError;
use crate::decode::Violation;

/// The extensions an `initialize` required, recorded once it is admitted: the reader
/// accepts their events only from then on.
pub(super) struct Negotiation {
    tool_cards: bool,
    client_tools: bool,
    approval_scopes: bool,
    user_questions: bool,
    session_usage: bool,
    input_attachments: bool,
    client_terminals: bool,
    client_files: bool,
    reasoning_summaries: bool,
    usage_cache_writes: bool,
    approval_change_counts: bool,
    jobs_control: bool,
    model_cached: bool,
    permission_modes: bool,
    plan_todo: bool,
    checkpoints: bool,
    tool_card_styles: bool,
    shared: Arc<Shared>,
}

impl Negotiation {
    /// What the `initialize` params (as sent) require.
    pub(super) fn requested(
        params: &Value,
        shared: Arc<Shared>,
    ) -> Result<Negotiation, ClientError> {
        let params: InitializeParams =
            serde_json::from_value(params.clone()).map_err(|_| ClientError::UnencodableParams)?;
        let requires = |name: &str| params.required_capabilities.iter().any(|c| c == name);
        Ok(Negotiation {
            tool_cards: requires(magi_protocol::cards::CAPABILITY),
            client_tools: requires(CLIENT_TOOLS_CAPABILITY),
            approval_scopes: requires(APPROVAL_SCOPES),
            user_questions: requires(USER_QUESTIONS),
            session_usage: requires(SESSION_USAGE),
            input_attachments: requires(INPUT_ATTACHMENTS),
            client_terminals: requires(CLIENT_TERMINALS),
            client_files: requires(CLIENT_FILES),
            reasoning_summaries: requires(REASONING_SUMMARIES),
            usage_cache_writes: requires(USAGE_CACHE_WRITES),
            approval_change_counts: requires(APPROVAL_CHANGE_COUNTS),
            jobs_control: requires(JOBS_CONTROL),
            model_cached: requires(MODEL_CACHED),
            permission_modes: requires(PERMISSION_MODES),
            plan_todo: requires(PLAN_TODO),
            checkpoints: requires(CHECKPOINTS),
            tool_card_styles: requires(TOOL_CARD_STYLES),
            shared,
        })
    }

    /// Checks the admitted result's advertisement and turns the extensions on.
    pub(super) fn admitted(self, result: &Value) -> Result<(), ClientError> {
        let result: InitializeResult =
            serde_json::from_value(result.clone()).map_err(|_| ClientError::UnexpectedResult)?;
        let required = Required {
            tool_cards: self.tool_cards,
            client_tools: self.client_tools,
            approval_scopes: self.approval_scopes,
            user_questions: self.user_questions,
            session_usage: self.session_usage,
            input_attachments: self.input_attachments,
            client_terminals: self.client_terminals,
            client_files: self.client_files,
            reasoning_summaries: self.reasoning_summaries,
            usage_cache_writes: self.usage_cache_writes,
            approval_change_counts: self.approval_change_counts,
            jobs_control: self.jobs_control,
            model_cached: self.model_cached,
            permission_modes: self.permission_modes,
            plan_todo: self.plan_todo,
            checkpoints: self.checkpoints,
            tool_card_styles: self.tool_card_styles,
        };
        check_advertisement(&result, &required).map_err(ClientError::Violation)?;
        self.shared
            .tool_cards
            .store(self.tool_cards, std::sync::atomic::Ordering::SeqCst);
        self.shared
            .client_tools
            .store(self.client_tools, std::sync::atomic::Ordering::SeqCst);
        self.shared
            .approval_scopes
            .store(self.approval_scopes, std::sync::atomic::Ordering::SeqCst);
        self.shared
            .user_questions
            .store(self.user_questions, std::sync::atomic::Ordering::SeqCst);
        self.shared
            .session_usage
            .store(self.session_usage, std::sync::atomic::Ordering::SeqCst);
        self.shared
            .client_terminals
            .store(self.client_terminals, std::sync::atomic::Ordering::SeqCst);
        self.shared
            .client_files
            .store(self.client_files, std::sync::atomic::Ordering::SeqCst);
        self.shared.reasoning_summaries.store(
            self.reasoning_summaries,
            std::sync::atomic::Ordering::SeqCst,
        );
        self.shared
            .usage_cache_writes
            .store(self.usage_cache_writes, std::sync::atomic::Ordering::SeqCst);
        self.shared.approval_change_counts.store(
            self.approval_change_counts,
            std::sync::atomic::Ordering::SeqCst,
        );
        // Styles are on cards only: without `tool.cards` there is nothing to carry them.
        self.shared.tool_card_styles.store(
            self.tool_cards && self.tool_card_styles,
            std::sync::atomic::Ordering::SeqCst,
        );
        Ok(())
    }
}

/// The `client.tools` capability name.
pub const CLIENT_TOOLS_CAPABILITY: &str = "client.tools";

/// The extensions an `initialize` required.
struct Required {
    tool_cards: bool,
    client_tools: bool,
    approval_scopes: bool,
    user_questions: bool,
    session_usage: bool,
    input_attachments: bool,
    client_terminals: bool,
    client_files: bool,
    reasoning_summaries: bool,
    usage_cache_writes: bool,
    approval_change_counts: bool,
    jobs_control: bool,
    model_cached: bool,
    permission_modes: bool,
    plan_todo: bool,
    checkpoints: bool,
    tool_card_styles: bool,
}

/// Checks what an admitted `initialize` advertises: the sixteen base capabilities in
/// order, then `tool.cards` with exactly schema 1's descriptor, `client.tools` with
/// its descriptor, `approval.scopes`, `user.questions`, `session.usage`,
/// `input.attachments`, `client.files`, `reasoning.summaries`, `client.terminals`,
/// `usage.cache_writes`, `approval.change_counts`, `jobs.control`, `model.cached` and
/// `permissions.modes`, `plan.todo`, `checkpoints` and `tool.cards.styles` with
/// schema 1's, each exactly when it was
/// required, and nothing of them otherwise.
fn check_advertisement(result: &InitializeResult, required: &Required) -> Result<(), Violation> {
    let mut expected = magi_protocol::names::base_capabilities();
    if required.tool_cards {
        expected.push(magi_protocol::cards::CAPABILITY.to_owned());
    }
    if required.client_tools {
        expected.push(CLIENT_TOOLS_CAPABILITY.to_owned());
    }
    if required.approval_scopes {
        expected.push(APPROVAL_SCOPES.to_owned());
    }
    if required.user_questions {
        expected.push(USER_QUESTIONS.to_owned());
    }
    if required.session_usage {
        expected.push(SESSION_USAGE.to_owned());
    }
    if required.input_attachments {
        expected.push(INPUT_ATTACHMENTS.to_owned());
    }
    if required.client_files {
        expected.push(CLIENT_FILES.to_owned());
    }
    if required.reasoning_summaries {
        expected.push(REASONING_SUMMARIES.to_owned());
    }
    if required.client_terminals {
        expected.push(CLIENT_TERMINALS.to_owned());
    }
    if required.usage_cache_writes {
        expected.push(USAGE_CACHE_WRITES.to_owned());
    }
    if required.approval_change_counts {
        expected.push(APPROVAL_CHANGE_COUNTS.to_owned());
    }
    if required.jobs_control {
        expected.push(JOBS_CONTROL.to_owned());
    }
    if required.model_cached {
        expected.push(MODEL_CACHED.to_owned());
    }
    if required.permission_modes {
        expected.push(PERMISSION_MODES.to_owned());
    }
    if required.plan_todo {
        expected.push(PLAN_TODO.to_owned());
    }
    if required.checkpoints {
        expected.push(CHECKPOINTS.to_owned());
    }
    if required.tool_card_styles {
        expected.push(TOOL_CARD_STYLES.to_owned());
    }
    if result.capabilities != expected {
        return Err(Violation("initialize advertised other capabilities".into()));
    }
    let extensions = result.extensions.as_ref();
    let cards_ok = match (
        required.tool_cards,
        extensions.and_then(|e| e.tool_cards.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == magi_protocol::cards::ToolCardsDescriptor::schema_1(),
        _ => false,
    };
    let tools_ok = match (
        required.client_tools,
        extensions.and_then(|e| e.client_tools.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => d.schema_version == 1,
        _ => false,
    };
    let scopes_ok = match (
        required.approval_scopes,
        extensions.and_then(|e| e.approval_scopes.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == ApprovalScopesDescriptor::schema_1(),
        _ => false,
    };
    let questions_ok = match (
        required.user_questions,
        extensions.and_then(|e| e.user_questions.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == UserQuestionsDescriptor::schema_1(),
        _ => false,
    };
    let usage_ok = match (
        required.session_usage,
        extensions.and_then(|e| e.session_usage.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == SessionUsageDescriptor::schema_1(),
        _ => false,
    };
    let attachments_ok = match (
        required.input_attachments,
        extensions.and_then(|e| e.input_attachments.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == InputAttachmentsDescriptor::schema_1(),
        _ => false,
    };
    let terminals_ok = match (
        required.client_terminals,
        extensions.and_then(|e| e.client_terminals.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == ClientTerminalsDescriptor::schema_1(),
        _ => false,
    };
    let files_ok = match (
        required.client_files,
        extensions.and_then(|e| e.client_files.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == ClientFilesDescriptor::schema_1(),
        _ => false,
    };
    let reasoning_ok = match (
        required.reasoning_summaries,
        extensions.and_then(|e| e.reasoning_summaries.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == ReasoningSummariesDescriptor::schema_1(),
        _ => false,
    };
    let cache_writes_ok = match (
        required.usage_cache_writes,
        extensions.and_then(|e| e.usage_cache_writes.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == UsageCacheWritesDescriptor::schema_1(),
        _ => false,
    };
    let change_counts_ok = match (
        required.approval_change_counts,
        extensions.and_then(|e| e.approval_change_counts.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == ApprovalChangeCountsDescriptor::schema_1(),
        _ => false,
    };
    let jobs_ok = match (
        required.jobs_control,
        extensions.and_then(|e| e.jobs_control.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == JobsControlDescriptor::schema_1(),
        _ => false,
    };
    let cached_ok = match (
        required.model_cached,
        extensions.and_then(|e| e.model_cached.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == ModelCachedDescriptor::schema_1(),
        _ => false,
    };
    let modes_ok = match (
        required.permission_modes,
        extensions.and_then(|e| e.permission_modes.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == magi_protocol::messages::PermissionModesDescriptor::schema_1(),
        _ => false,
    };
    let plan_ok = match (
        required.plan_todo,
        extensions.and_then(|e| e.plan_todo.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == PlanTodoDescriptor::schema_1(),
        _ => false,
    };
    let checkpoints_ok = match (
        required.checkpoints,
        extensions.and_then(|e| e.checkpoints.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == CheckpointsDescriptor::schema_1(),
        _ => false,
    };
    let styles_ok = match (
        required.tool_card_styles,
        extensions.and_then(|e| e.tool_card_styles.as_ref()),
    ) {
        (false, None) => true,
        (true, Some(d)) => *d == magi_protocol::cards::ToolCardStylesDescriptor::schema_1(),
        _ => false,
    };
    let any = required.tool_cards
        || required.client_tools
        || required.approval_scopes
        || required.user_questions
        || required.session_usage
        || required.input_attachments
        || required.client_files
        || required.reasoning_summaries
        || required.client_terminals
        || required.usage_cache_writes
        || required.approval_change_counts
        || required.jobs_control
        || required.model_cached
        || required.permission_modes
        || required.plan_todo
        || required.checkpoints
        || required.tool_card_styles;
    let all_ok = cards_ok
        && tools_ok
        && scopes_ok
        && questions_ok
        && usage_ok
        && attachments_ok
        && files_ok
        && reasoning_ok
        && terminals_ok
        && cache_writes_ok
        && change_counts_ok
        && jobs_ok
        && cached_ok
        && modes_ok
        && plan_ok
        && checkpoints_ok
        && styles_ok;
    if all_ok && extensions.is_some() == any {
        Ok(())
    } else {
        Err(Violation(
            "initialize advertised extension descriptors other than the ones negotiated".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use magi_protocol::limits::Limits;
    use magi_protocol::messages::{Extensions, Readiness, ReadinessPhase, RuntimeState};
    use magi_protocol::messages::{ModelCachedDescriptor, StatusResult};

    use super::*;

    /// Nothing required but `model.cached`, when `cached` says so.
    fn required(cached: bool) -> Required {
        Required {
            tool_cards: false,
            client_tools: false,
            approval_scopes: false,
            user_questions: false,
            session_usage: false,
            input_attachments: false,
            client_terminals: false,
            client_files: false,
            reasoning_summaries: false,
            usage_cache_writes: false,
            approval_change_counts: false,
            jobs_control: false,
            model_cached: cached,
            permission_modes: false,
            plan_todo: false,
            checkpoints: false,
            tool_card_styles: false,
        }
    }

    /// An admitted result advertising `extra` after the base capabilities, with the
    /// `model.cached` descriptor `descriptor` (no `extensions` object when `None`).
    fn advertised(extra: &[&str], descriptor: Option<ModelCachedDescriptor>) -> InitializeResult {
        let mut capabilities = magi_protocol::names::base_capabilities();
        capabilities.extend(extra.iter().map(|c| (*c).to_owned()));
        InitializeResult {
            capabilities,
            limits: Limits::V1,
            status: StatusResult {
                state: RuntimeState::Idle,
                readiness: Readiness::Phase(ReadinessPhase::Ready),
                provider: None,
                model: None,
                context_id: None,
                session_id: None,
                run_id: None,
                selection: None,
            },
            extensions: descriptor.map(|d| Extensions {
                tool_cards: None,
                client_tools: None,
                approval_scopes: None,
                user_questions: None,
                session_usage: None,
                input_attachments: None,
                client_terminals: None,
                client_files: None,
                reasoning_summaries: None,
                usage_cache_writes: None,
                approval_change_counts: None,
                jobs_control: None,
                model_cached: Some(d),
                permission_modes: None,
                plan_todo: None,
                checkpoints: None,
                tool_card_styles: None,
            }),
        }
    }

    #[test]
    fn checkpoints_are_advertised_last_with_their_descriptor_exactly_when_required() {
        let mut both = required(true);
        both.checkpoints = true;
        let mut result = advertised(
            &[MODEL_CACHED, CHECKPOINTS],
            Some(ModelCachedDescriptor::schema_1()),
        );
        if let Some(extensions) = &mut result.extensions {
            extensions.checkpoints = Some(CheckpointsDescriptor::schema_1());
        }
        assert!(check_advertisement(&result, &both).is_ok());
        assert!(
            check_advertisement(&result, &required(true)).is_err(),
            "advertised without being required"
        );
        let swapped = {
            let mut r = result.clone();
            r.capabilities.retain(|c| c != MODEL_CACHED);
            r.capabilities.push(MODEL_CACHED.to_owned());
            r
        };
        assert!(
            check_advertisement(&swapped, &both).is_err(),
            "out of order"
        );
        let mut bare = result.clone();
        if let Some(extensions) = &mut bare.extensions {
            extensions.checkpoints = None;
        }
        assert!(check_advertisement(&bare, &both).is_err(), "no descriptor");
    }

    #[test]
    fn model_cached_is_advertised_with_its_descriptor_exactly_when_required() {
        let schema_1 = || Some(ModelCachedDescriptor::schema_1());
        let check = |cached: bool, result: &InitializeResult| {
            check_advertisement(result, &required(cached)).is_ok()
        };
        assert!(check(true, &advertised(&[MODEL_CACHED], schema_1())));
        assert!(check(false, &advertised(&[], None)));
        assert!(
            !check(false, &advertised(&[MODEL_CACHED], schema_1())),
            "advertised without being required"
        );
        assert!(
            !check(true, &advertised(&[], None)),
            "required, not advertised"
        );
        assert!(
            !check(true, &advertised(&[MODEL_CACHED], None)),
            "advertised without its descriptor"
        );
        assert!(
            !check(true, &advertised(&[], schema_1())),
            "a descriptor without the capability"
        );
        let schema_2 = Some(ModelCachedDescriptor { schema_version: 2 });
        assert!(
            !check(true, &advertised(&[MODEL_CACHED], schema_2)),
            "another schema"
        );
        assert!(
            !check(true, &advertised(&[MODEL_CACHED, MODEL_CACHED], schema_1())),
            "advertised twice"
        );
    }

    #[test]
    fn permissions_modes_is_advertised_last_with_its_descriptor_exactly_when_required() {
        use magi_protocol::messages::PermissionModesDescriptor;
        let wanted = Required {
            permission_modes: true,
            ..required(false)
        };
        let mut result = advertised(&[PERMISSION_MODES], None);
        let ok = |result: &InitializeResult| check_advertisement(result, &wanted).is_ok();
        assert!(!ok(&result), "advertised without its descriptor");
        result.extensions = Some(Extensions {
            permission_modes: Some(PermissionModesDescriptor::schema_1()),
            ..advertised(&[], Some(ModelCachedDescriptor::schema_1()))
                .extensions
                .unwrap()
        });
        result.extensions.as_mut().unwrap().model_cached = None;
        assert!(ok(&result));
        let mut other = result.clone();
        other.extensions.as_mut().unwrap().permission_modes = Some(PermissionModesDescriptor {
            rules_listed: 1,
            ..PermissionModesDescriptor::schema_1()
        });
        assert!(!ok(&other), "other bounds");
        assert!(
            check_advertisement(&result, &required(false)).is_err(),
            "advertised without being required"
        );
    }
}
