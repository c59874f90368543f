//! `initialize` on a connection: preflight and admission, then the startup worker's
//! outcome or its cancellation.

use std::sync::Arc;

use magi_core::selection::ActiveSelection;
use magi_core::{CancelFlag, Runtime, Sessions, StartupFailure};
use magi_protocol::cards;
use magi_protocol::limits::{CLIENT_TOOL_ARGUMENTS_BYTES, CLIENT_TOOL_RESULT_BYTES, Limits};
use magi_protocol::messages::CheckpointsDescriptor;
use magi_protocol::messages::UserQuestionsDescriptor;
use magi_protocol::messages::{
    ApprovalChangeCountsDescriptor, ApprovalScopesDescriptor, ClientFilesDescriptor,
    ClientToolsDescriptor, Extensions, InitializeResult, InputAttachmentsDescriptor,
    JobsControlDescriptor, ModelCachedDescriptor, PlanTodoDescriptor, ReasoningSummariesDescriptor,
    ResultBody, SessionUsageDescriptor, UsageCacheWritesDescriptor,
};
use magi_protocol::names::{
    APPROVAL_CHANGE_COUNTS, APPROVAL_SCOPES, CLIENT_FILES, CLIENT_TERMINALS, INPUT_ATTACHMENTS,
    JOBS_CONTROL, MODEL_CACHED, PERMISSION_MODES, PLAN_TODO, REASONING_SUMMARIES, SESSION_USAGE,
    USAGE_CACHE_WRITES, USER_QUESTIONS, base_capabilities,
};
use magi_protocol::names::{CHECKPOINTS, TOOL_CARD_STYLES};
use magi_protocol::{ErrorCode, StartupError};
use serde_json::value::RawValue;

use crate::output::OutputFailure;

use super::negotiation::{CLIENT_TOOLS_CAPABILITY, preflight_capabilities};
use super::*;

impl Connection {
    pub(super) fn initialize(
        &mut self,
        id: &str,
        params: &RawValue,
    ) -> Result<Flow, OutputFailure> {
        if !matches!(self.init, Init::Unadmitted) {
            self.output.error(Some(id), ErrorCode::AlreadyInitialized)?;
            return Ok(Flow::Continue);
        }
        let required = match preflight_capabilities(params) {
            Ok(required) => required,
            Err(code) => {
                self.output.error(Some(id), code)?;
                return Ok(Flow::Continue);
            }
        };
        self.tool_cards = required.tool_cards;
        self.approval_scopes = required.approval_scopes;
        self.user_questions = required.user_questions;
        self.session_usage = required.session_usage;
        self.input_attachments = required.input_attachments;
        self.client_terminals = required.client_terminals;
        self.client_files = required.client_files;
        self.reasoning_summaries = required.reasoning_summaries;
        self.usage_cache_writes = required.usage_cache_writes;
        self.approval_change_counts = required.approval_change_counts;
        self.jobs_control = required.jobs_control;
        self.model_cached = required.model_cached;
        self.permission_modes = required.permission_modes;
        self.plan_todo = required.plan_todo;
        self.checkpoints = required.checkpoints;
        self.tool_card_styles = required.tool_card_styles;
        self.client_tools_negotiated = required.client_tools.is_some();
        self.client_tools = Arc::new(required.client_tools.unwrap_or_default());
        self.negotiated = required
            .methods
            .into_iter()
            .filter(|m| m.is_gated())
            .collect();
        let cancel = CancelFlag::default();
        self.init = Init::Starting {
            request_id: id.to_owned(),
            cancel: cancel.clone(),
        };
        let client_tools = self.client_tools.iter().map(|t| t.name.clone()).collect();
        Ok(Flow::StartStartup(
            self.startup.clone(),
            client_tools,
            cancel,
        ))
    }

    /// Records the startup worker's outcome and answers the waiting `initialize`.
    pub(crate) fn finish_startup(
        &mut self,
        outcome: Result<Box<Runtime>, StartupFailure>,
    ) -> Result<(), OutputFailure> {
        let Init::Starting { request_id, .. } = &self.init else {
            return Ok(());
        };
        let request_id = request_id.clone();
        match outcome {
            Ok(runtime) => {
                self.sessions = Some(Box::new(
                    Sessions::new(runtime.home.clone(), runtime.cwd.clone())
                        .with_tool_cards(self.tool_cards)
                        .with_card_styles(self.tool_cards && self.tool_card_styles)
                        .with_admitted(runtime.settings.clone(), runtime.env.clone()),
                ));
                self.selection = Some(ActiveSelection::from_runtime(&runtime));
                self.permissions =
                    magi_core::runner::RuleBook::new(runtime.settings.permissions.mode);
                self.init = Init::Ready(runtime);
                let mut capabilities = base_capabilities();
                // Extensions follow the base capabilities in one fixed order.
                let mut extensions = None;
                if self.tool_cards
                    || self.client_tools_negotiated
                    || self.approval_scopes
                    || self.user_questions
                    || self.session_usage
                    || self.input_attachments
                    || self.client_terminals
                    || self.client_files
                    || self.reasoning_summaries
                    || self.usage_cache_writes
                    || self.approval_change_counts
                    || self.jobs_control
                    || self.model_cached
                    || self.permission_modes
                    || self.plan_todo
                    || self.checkpoints
                    || self.tool_card_styles
                {
                    let mut negotiated = Extensions {
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
                        model_cached: None,
                        permission_modes: None,
                        plan_todo: None,
                        checkpoints: None,
                        tool_card_styles: None,
                    };
                    if self.tool_cards {
                        capabilities.push(cards::CAPABILITY.to_owned());
                        negotiated.tool_cards = Some(cards::ToolCardsDescriptor::schema_1());
                    }
                    if self.client_tools_negotiated {
                        capabilities.push(CLIENT_TOOLS_CAPABILITY.to_owned());
                        negotiated.client_tools = Some(ClientToolsDescriptor {
                            schema_version: 1,
                            tools: self.client_tools.iter().map(|t| t.name.clone()).collect(),
                            arguments_bytes: CLIENT_TOOL_ARGUMENTS_BYTES as u64,
                            result_bytes: CLIENT_TOOL_RESULT_BYTES as u64,
                        });
                    }
                    if self.approval_scopes {
                        capabilities.push(APPROVAL_SCOPES.to_owned());
                        negotiated.approval_scopes = Some(ApprovalScopesDescriptor::schema_1());
                    }
                    if self.user_questions {
                        capabilities.push(USER_QUESTIONS.to_owned());
                        negotiated.user_questions = Some(UserQuestionsDescriptor::schema_1());
                    }
                    if self.session_usage {
                        capabilities.push(SESSION_USAGE.to_owned());
                        negotiated.session_usage = Some(SessionUsageDescriptor::schema_1());
                    }
                    if self.input_attachments {
                        capabilities.push(INPUT_ATTACHMENTS.to_owned());
                        negotiated.input_attachments = Some(InputAttachmentsDescriptor::schema_1());
                    }
                    if self.client_files {
                        capabilities.push(CLIENT_FILES.to_owned());
                        negotiated.client_files = Some(ClientFilesDescriptor::schema_1());
                    }
                    if self.reasoning_summaries {
                        capabilities.push(REASONING_SUMMARIES.to_owned());
                        negotiated.reasoning_summaries =
                            Some(ReasoningSummariesDescriptor::schema_1());
                    }
                    if self.client_terminals {
                        capabilities.push(CLIENT_TERMINALS.to_owned());
                        negotiated.client_terminals =
                            Some(magi_protocol::messages::ClientTerminalsDescriptor::schema_1());
                    }
                    if self.usage_cache_writes {
                        capabilities.push(USAGE_CACHE_WRITES.to_owned());
                        negotiated.usage_cache_writes =
                            Some(UsageCacheWritesDescriptor::schema_1());
                    }
                    if self.approval_change_counts {
                        capabilities.push(APPROVAL_CHANGE_COUNTS.to_owned());
                        negotiated.approval_change_counts =
                            Some(ApprovalChangeCountsDescriptor::schema_1());
                    }
                    if self.jobs_control {
                        capabilities.push(JOBS_CONTROL.to_owned());
                        negotiated.jobs_control = Some(JobsControlDescriptor::schema_1());
                    }
                    if self.model_cached {
                        capabilities.push(MODEL_CACHED.to_owned());
                        negotiated.model_cached = Some(ModelCachedDescriptor::schema_1());
                    }
                    if self.permission_modes {
                        capabilities.push(PERMISSION_MODES.to_owned());
                        negotiated.permission_modes =
                            Some(magi_protocol::messages::PermissionModesDescriptor::schema_1());
                    }
                    if self.plan_todo {
                        capabilities.push(PLAN_TODO.to_owned());
                        negotiated.plan_todo = Some(PlanTodoDescriptor::schema_1());
                    }
                    if self.checkpoints {
                        capabilities.push(CHECKPOINTS.to_owned());
                        negotiated.checkpoints = Some(CheckpointsDescriptor::schema_1());
                    }
                    if self.tool_card_styles {
                        capabilities.push(TOOL_CARD_STYLES.to_owned());
                        negotiated.tool_card_styles =
                            Some(cards::ToolCardStylesDescriptor::schema_1());
                    }
                    extensions = Some(negotiated);
                }
                let result = InitializeResult {
                    capabilities,
                    limits: Limits::V1,
                    status: self.status(),
                    extensions,
                };
                self.output
                    .result(&request_id, ResultBody::Initialize(Box::new(result)))
            }
            Err(failure) => {
                let code = failure.error.code();
                self.init = Init::Failed(failure);
                self.output.error(Some(&request_id), code)
            }
        }
    }

    /// Cancels a running startup and answers its `initialize` with `startup_cancelled`.
    pub(crate) fn cancel_startup(&mut self) -> Result<(), OutputFailure> {
        if let Init::Starting { cancel, .. } = &self.init {
            cancel.cancel();
            self.finish_startup(Err(StartupFailure::new(StartupError::StartupCancelled)))?;
        }
        Ok(())
    }
}
