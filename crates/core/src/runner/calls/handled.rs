//! The calls the backend or the client handles itself rather than on a blocking
//! thread: `skill` loads a skill's text, `task` goes to the delegate, `magi_control`
//! acts on the session, an MCP tool goes to its server, and a client tool to the
//! client, answered through the run's gate.

use std::sync::Arc;

use magi_protocol::limits::CLIENT_TOOL_ARGUMENTS_BYTES;
use magi_protocol::messages::{
    ClientToolCall, ClientToolCancel, ClientToolCancelReason, ClientToolOutcome, Event,
};
use magi_tools::{ToolOutput, ToolReport};

use super::role::Role;
use super::{Call, CallService};
use crate::client_tools::ClientTool;
use crate::mcp::McpTool;
use crate::runner::exchange::SKILL_TOOL;

/// What runs a claimed call other than a built-in tool on a blocking thread.
pub(super) enum Handler {
    /// `skill`: a skill's text.
    Skill,
    /// `task`: the delegate.
    Task,
    Mcp(Arc<McpTool>),
    Client(ClientTool),
    /// `ask_user`: the person, through `question.asked` (`user.questions`).
    AskUser,
    /// `magi_control`: the session itself.
    Control,
    /// `view_image` for a model that does not take images: refused without reading.
    NoImages,
    /// `code_mode`: a script on its engine's thread, its nested calls the turn's.
    CodeMode,
    /// `bash` in the client's terminal (`client.terminals`).
    Terminal,
}

impl CallService<'_, '_> {
    /// What runs a call of `skill`, `task`, an MCP tool or a client tool; `None` for
    /// the built-in tools, which run on a blocking thread.
    pub(super) fn handler(&self, role: &Role<'_>, call: &Call) -> Option<Handler> {
        if call.name == SKILL_TOOL && !self.agent.skills.is_empty() {
            return Some(Handler::Skill);
        }
        if call.name == magi_config::TASK_TOOL && matches!(role, Role::Session(_)) {
            return Some(Handler::Task);
        }
        if call.name == crate::questions::ASK_USER_TOOL && self.offer.asks_user() {
            return Some(Handler::AskUser);
        }
        if call.name == magi_tools::BuiltinTool::MagiControl.name()
            && matches!(role, Role::Session(_))
        {
            return Some(Handler::Control);
        }
        if call.name == magi_tools::BuiltinTool::Bash.name() && self.agent.client_terminals {
            return Some(Handler::Terminal);
        }
        if call.name == magi_tools::BuiltinTool::CodeMode.name() {
            return Some(Handler::CodeMode);
        }
        if call.name == magi_tools::BuiltinTool::ViewImage.name() && !self.agent.images {
            return Some(Handler::NoImages);
        }
        if let Some(tool) = self.agent.mcp.tool(&call.name) {
            return Some(Handler::Mcp(tool));
        }
        self.client_tool(&call.name).map(Handler::Client)
    }

    /// Runs a claimed call that does not run on a blocking thread.
    pub(super) async fn run_here(
        &mut self,
        role: &mut Role<'_>,
        call: &Call,
        handler: Handler,
        activity_id: &str,
    ) -> ToolReport {
        match handler {
            Handler::Skill => self.load_skill(call),
            Handler::Task => match role {
                Role::Session(delegate) => delegate.run(call, activity_id, self).await,
                // A subagent never delegates; its `task` calls get no handler.
                Role::Task(_) => ToolReport::from(ToolOutput {
                    content: "A subagent does not delegate tasks.".into(),
                    summary: "not offered".into(),
                    is_error: true,
                }),
            },
            Handler::Mcp(tool) => {
                let mcp = Arc::clone(&self.agent.mcp);
                mcp.call(&tool, &call.arguments, &self.output.cancel).await
            }
            Handler::Client(tool) => self.call_client(call, &tool, activity_id).await,
            Handler::AskUser => self.ask_user(role, call, activity_id).await,
            Handler::Control => self.control(call),
            Handler::NoImages => self.no_images(call),
            Handler::CodeMode => self.code_mode(role, call, activity_id).await,
            Handler::Terminal => self.run_in_terminal(call, activity_id).await,
        }
    }

    /// A `view_image` call of an agent whose model does not take images: a failed
    /// result saying why and what to change, with the path for its card.
    fn no_images(&self, call: &Call) -> ToolReport {
        let path = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|v| v.get("path").and_then(|p| p.as_str()).map(str::to_owned))
            .unwrap_or_default();
        let (provider, model) = (&self.agent.provider, &self.agent.model);
        ToolReport::with_facts(
            ToolOutput {
                content: format!(
                    "Model {model:?} of provider {provider:?} does not take images, so \
                     view_image cannot show you one. Describe what you need from the image \
                     another way (its file name, its metadata), or ask the user to switch \
                     to a model that takes images (or, when this one does, to set \
                     `images = true` under [models.\"{provider}/{model}\"] in the settings)."
                ),
                summary: "model takes no images".into(),
                is_error: true,
            },
            magi_tools::Facts::Image {
                path: magi_tools::facts::cut(&path, magi_tools::facts::FACT_STRING_BYTES),
                format: None,
                width: None,
                height: None,
                bytes: None,
                sent: None,
            },
        )
    }

    /// A `skill` call: the named skill's whole text, read at startup.
    fn load_skill(&self, call: &Call) -> ToolReport {
        let name = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_owned));
        let output = match name.and_then(|n| self.agent.skills.iter().find(|s| s.name == n)) {
            Some(skill) => ToolOutput {
                content: skill.text.clone(),
                summary: format!("loaded {}", skill.name),
                is_error: false,
            },
            None => ToolOutput {
                content: format!(
                    "There is no such skill. The skills are: {}.",
                    self.agent
                        .skills
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                summary: "unknown skill".into(),
                is_error: true,
            },
        };
        ToolReport::from(output)
    }

    /// Hands a claimed call to the client and waits for its one answer, the run's
    /// cancellation or the tool's timeout; a withdrawn call is announced.
    async fn call_client(
        &mut self,
        call: &Call,
        tool: &ClientTool,
        activity_id: &str,
    ) -> ToolReport {
        let arguments = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
            Ok(value) if value.is_object() => value,
            _ => {
                return ToolReport::from(ToolOutput {
                    content: "The arguments were not a JSON object.".into(),
                    summary: "invalid arguments".into(),
                    is_error: true,
                });
            }
        };
        if call.arguments.len() > CLIENT_TOOL_ARGUMENTS_BYTES {
            return ToolReport::from(ToolOutput {
                content: format!(
                    "The arguments are over the {CLIENT_TOOL_ARGUMENTS_BYTES}-byte bound; the \
                     call was not sent."
                ),
                summary: "arguments too large".into(),
                is_error: true,
            });
        }
        // Opened before it is announced, so an answer racing the event is not lost.
        let answer = self.gates.client_calls.open(&call.call_id);
        let event = Event::ClientToolCall(Box::new(ClientToolCall {
            session_id: self.output.session_id().to_owned(),
            run_id: self.output.run_id().to_owned(),
            call_id: call.call_id.clone(),
            activity_id: activity_id.to_owned(),
            tool: tool.name.clone(),
            arguments,
            timeout_ms: tool.timeout_ms,
        }));
        self.output.critical(event).await;
        let timeout = tokio::time::sleep(std::time::Duration::from_millis(tool.timeout_ms));
        let withdrawn = tokio::select! {
            answered = answer => match answered {
                Ok((outcome, content)) => {
                    let failed = outcome == ClientToolOutcome::Failed;
                    return ToolReport::from(ToolOutput {
                        summary: if failed { "failed" } else { "completed" }.into(),
                        content,
                        is_error: failed,
                    });
                }
                // The gate went away: the run is ending.
                Err(_) => ClientToolCancelReason::Cancelled,
            },
            () = self.output.cancel.cancelled() => ClientToolCancelReason::Cancelled,
            () = timeout => ClientToolCancelReason::TimedOut,
        };
        self.gates.client_calls.close(&call.call_id);
        let event = Event::ClientToolCancel(ClientToolCancel {
            session_id: self.output.session_id().to_owned(),
            run_id: self.output.run_id().to_owned(),
            call_id: call.call_id.clone(),
            reason: withdrawn,
        });
        self.output.critical(event).await;
        match withdrawn {
            ClientToolCancelReason::Cancelled => ToolReport {
                cancelled: true,
                ..ToolReport::from(ToolOutput {
                    content: "The call was cancelled before the client answered.".into(),
                    summary: "cancelled".into(),
                    is_error: true,
                })
            },
            ClientToolCancelReason::TimedOut => ToolReport::from(ToolOutput {
                content: format!(
                    "The client did not answer within {} ms; the call was withdrawn.",
                    tool.timeout_ms
                ),
                summary: "no answer in time".into(),
                is_error: true,
            }),
        }
    }
}
