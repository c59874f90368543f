//! `initialize` on a connection: preflight and admission, then the startup worker's
//! outcome or its cancellation.

use std::sync::Arc;

use magi_core::selection::ActiveSelection;
use magi_core::{CancelFlag, Runtime, Sessions, StartupFailure};
use magi_protocol::limits::Limits;
use magi_protocol::messages::{InitializeResult, ResultBody};
use magi_protocol::{ErrorCode, StartupError};
use serde_json::value::RawValue;

use crate::output::OutputFailure;

use super::negotiation::preflight_capabilities;
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
        self.extensions = required.extensions;
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
                        .with_tool_cards(self.has(Extension::ToolCards))
                        .with_card_styles(self.extensions.card_styles())
                        .with_admitted(runtime.settings.clone(), runtime.env.clone()),
                ));
                self.selection = Some(ActiveSelection::from_runtime(&runtime));
                self.permissions =
                    magi_core::runner::RuleBook::new(runtime.settings.permissions.mode);
                self.init = Init::Ready(runtime);
                // Extensions follow the base capabilities in one fixed order, each with
                // its descriptor.
                let client_tools: Vec<String> =
                    self.client_tools.iter().map(|t| t.name.clone()).collect();
                let capabilities = self.extensions.capabilities();
                let extensions = self.extensions.descriptors(&client_tools);
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
