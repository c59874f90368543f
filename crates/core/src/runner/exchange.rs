//! The model exchange: one agent, the tools it is offered, and one streamed response
//! turned into text and calls.
//!
//! The session's agent speaks live: its text streams to the client as deltas and is
//! reconciled once recorded. A subagent's text is its report, not the run's reply, and
//! is only recorded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use magi_protocol::ErrorCode;
use magi_protocol::limits::{LIVE_CHUNK_BYTES, RUN_CONTENT_BYTES, RUN_CONTENT_SEGMENTS};
use magi_protocol::messages::{
    DIAGNOSTIC_PROVIDER_RETRYING, DIAGNOSTIC_REPLY_REFUSED, DIAGNOSTIC_REPLY_TRUNCATED,
};
use magi_provider::{
    Asked, Item, ModelEvent, ModelRequest, ProviderError, ReasoningItem, StopReason, ToolSpec,
};
use magi_store::records::RecordBody;
use tokio::sync::mpsc;

use super::ending::Ending;
use super::estimate::estimate_tokens;
use super::journal::Journal;
use super::offer::Offer;
use super::output::Output;
use super::script_tools;
use super::text::chunks;
use super::usage::{self, Reported};
use crate::agent::Agent;

/// Model events buffered between the provider and the runner.
const MODEL_EVENTS: usize = 64;

/// One agent's side of the conversation with the model.
pub(super) struct Exchange {
    /// The agent: its client, model and settings.
    pub(super) agent: Agent,
    /// The tools it is offered.
    pub(super) offer: Offer,
    /// Their specs, as the model is given them.
    tools: Vec<ToolSpec>,
    /// The system prompt, rendered once (`crate::prompt`).
    system: String,
    /// Whether its text streams to the client.
    live: bool,
    /// How many conversation items its last request carried ([`NOT_SENT`] before the
    /// first): the ones after are the current round's, never pruned.
    sent: AtomicUsize,
    /// The prompt the agent works on (its items: the text and the images given with
    /// it), set once when the conversation gets it: what follows a compaction's summary.
    prompt: OnceLock<Vec<Item>>,
    /// What routes its requests to the provider's prompt cache: the ID of the history
    /// the conversation is recorded in (the session's, or a subagent's own).
    cache_key: Option<String>,
}

/// [`Exchange::sent`] before the exchange's first request.
const NOT_SENT: usize = usize::MAX;

/// What one model response left for the loop.
pub(super) struct Response {
    /// The reasoning to send back with it in later requests, recorded.
    pub(super) reasoning: Vec<Item>,
    /// The response's text, recorded.
    pub(super) text: Option<String>,
    /// The calls it asks for: (call ID, tool name, arguments).
    pub(super) calls: Vec<(String, String, String)>,
    /// How the turn ends, when the response ends it.
    pub(super) ending: Option<Ending>,
}

impl Exchange {
    /// The exchange of `agent` working in `cwd`, offered `offer`; `live` when its text is
    /// the run's reply. Its system prompt is rendered here, once.
    pub(super) fn new(agent: Agent, offer: Offer, cwd: &std::path::Path, live: bool) -> Exchange {
        let code_mode = magi_tools::BuiltinTool::CodeMode.name();
        let mut tools: Vec<ToolSpec> = magi_tools::definitions()
            .into_iter()
            .filter(|d| offer.offers(d.name))
            .map(|d| ToolSpec {
                name: d.name.to_owned(),
                // `code_mode` lists the tools its scripts may call.
                description: if d.name == code_mode {
                    script_tools::description(&offer, &agent)
                } else {
                    d.description.to_owned()
                },
                parameters: d.parameters,
            })
            .collect();
        if !agent.skills.is_empty() && offer.offers(SKILL_TOOL) {
            tools.push(skill_tool_spec());
        }
        if offer.delegates() && !agent.subagents.is_empty() && offer.offers(magi_config::TASK_TOOL)
        {
            tools.push(task_tool_spec(&agent.subagents));
        }
        if offer.asks_user() {
            tools.push(ToolSpec {
                name: crate::questions::ASK_USER_TOOL.to_owned(),
                description: crate::questions::ASK_USER_DESCRIPTION.to_owned(),
                parameters: crate::questions::ask_user_parameters(),
            });
        }
        tools.extend(script_tools::external(&offer, &agent));
        let system = crate::prompt::system(&agent, cwd, &|name| {
            tools.iter().any(|tool| tool.name == name)
        });
        Exchange {
            agent,
            offer,
            tools,
            system,
            live,
            sent: AtomicUsize::new(NOT_SENT),
            prompt: OnceLock::new(),
            cache_key: None,
        }
    }

    /// The same exchange, its requests routed to the prompt cache by `key`.
    pub(super) fn cached_as(self, key: &str) -> Exchange {
        Exchange {
            cache_key: Some(key.to_owned()),
            ..self
        }
    }

    /// Keeps the items of the prompt the agent works on; only the first call counts.
    pub(super) fn set_prompt(&self, prompt: Vec<Item>) {
        let _ = self.prompt.set(prompt);
    }

    /// What routes the exchange's requests to the provider's prompt cache, if anything.
    pub(super) fn cache_key(&self) -> Option<&str> {
        self.cache_key.as_deref()
    }

    /// The items of the prompt the agent works on (none before it has one).
    pub(super) fn prompt(&self) -> &[Item] {
        self.prompt.get().map_or(&[], Vec::as_slice)
    }

    /// Where the current round begins in a conversation of `len` items: the items after
    /// the ones the last request carried. Before the first request of the exchange
    /// nothing is current: a conversation replayed from the log was all seen before.
    pub(super) fn current_round(&self, len: usize) -> usize {
        self.sent.load(Ordering::Relaxed).min(len)
    }

    /// Forgets where the last request ended: the conversation was replaced (by a
    /// compaction's summary), so a position in the one before means nothing in it. All
    /// of the new conversation counts as seen, as one replayed from the log does.
    pub(super) fn conversation_replaced(&self) {
        self.sent.store(NOT_SENT, Ordering::Relaxed);
    }

    /// Who a request asks, for what a failure or a retry says.
    fn asked(&self) -> Asked<'_> {
        Asked {
            provider: &self.agent.provider,
            model: &self.agent.model,
            credential: self.agent.credential_source.as_deref(),
        }
    }

    /// The system prompt, the same for every request of the exchange.
    pub(super) fn system(&self) -> &str {
        &self.system
    }

    /// The request for the next response to the conversation `items`, of which the
    /// request carries `sent` (the conversation, pruned).
    pub(super) fn request(
        &self,
        instructions: String,
        items: &[Item],
        sent: Vec<Item>,
    ) -> ModelRequest {
        self.sent.store(items.len(), Ordering::Relaxed);
        let max_output_tokens = self
            .agent
            .output_bound(estimate_tokens(&instructions, &sent));
        ModelRequest {
            model: self.agent.model.clone(),
            instructions: Some(instructions),
            items: sent,
            tools: self.tools.clone(),
            reasoning_summaries: self.agent.reasoning_summaries,
            reasoning: self.agent.reasoning_effort,
            max_output_tokens,
            cache_key: self.cache_key.clone(),
        }
    }

    /// One model response: streams deltas, records the segment and its summaries.
    pub(super) async fn respond(
        &self,
        request: &ModelRequest,
        output: &mut Output,
        journal: &mut Journal<'_>,
        turn_id: &str,
    ) -> Response {
        let (model_tx, mut model_rx) = mpsc::channel(MODEL_EVENTS);
        let client = Arc::clone(&self.agent.client);
        let cancel = output.cancel.clone();
        let mut stream = std::pin::pin!(client.stream(request, model_tx, &cancel));
        let message_id = format!("a{}", output.segments);
        let mut text = String::new();
        let mut part = 0u64;
        let mut calls = Vec::new();
        let mut reasoning = Vec::new();
        let mut summaries: Vec<(Option<String>, String)> = Vec::new();
        // The summaries streamed: provider item, run-scoped ID, next delta part.
        let mut streamed: Vec<(Option<String>, String, u64)> = Vec::new();
        let stream_summaries =
            self.live && output.has(magi_protocol::Extension::ReasoningSummaries);
        let mut over_bound = false;
        let mut cut = false;
        let mut refused = false;
        let mut result = None;
        let mut usage = Reported::default();
        loop {
            tokio::select! {
                outcome = &mut stream, if result.is_none() => result = Some(outcome),
                event = model_rx.recv() => match event {
                    Some(ModelEvent::TextDelta(delta)) => {
                        output.content_bytes += delta.len();
                        if output.content_bytes > RUN_CONTENT_BYTES {
                            over_bound = true;
                            output.cancel.cancel();
                            continue;
                        }
                        text.push_str(&delta);
                        if !self.live {
                            continue;
                        }
                        for chunk in chunks(&output.safe(&delta), LIVE_CHUNK_BYTES) {
                            output.delta(&message_id, part, chunk);
                            part += 1;
                        }
                    }
                    Some(ModelEvent::ReasoningSummaryDelta { item_id, text }) => {
                        if !stream_summaries {
                            continue;
                        }
                        let at = match streamed.iter().position(|(id, ..)| *id == item_id) {
                            Some(at) => at,
                            None => {
                                let id = format!("s{}", output.summaries_streamed);
                                output.summaries_streamed += 1;
                                streamed.push((item_id, id, 0));
                                streamed.len() - 1
                            }
                        };
                        let (_, summary_id, next) = &mut streamed[at];
                        for chunk in chunks(&output.safe(&text), LIVE_CHUNK_BYTES) {
                            output.reasoning_delta(summary_id, *next, chunk);
                            *next += 1;
                        }
                    }
                    Some(ModelEvent::ReasoningSummary { item_id, text }) => {
                        match summaries.iter_mut().find(|(id, _)| id.is_some() && *id == item_id) {
                            Some(existing) => existing.1 = text,
                            None => summaries.push((item_id, text)),
                        }
                    }
                    Some(ModelEvent::ToolCall { call_id, name, arguments }) => {
                        calls.push((call_id, name, arguments));
                    }
                    Some(ModelEvent::Reasoning(item)) => reasoning.push(item),
                    Some(ModelEvent::Completed(stop)) => {
                        cut = stop == StopReason::MaxTokens;
                        refused = stop == StopReason::Refusal;
                    }
                    Some(ModelEvent::Retrying(retry)) => {
                        let said = retry.describe(&self.asked());
                        output.diagnostic(DIAGNOSTIC_PROVIDER_RETRYING, &said).await;
                    }
                    Some(event @ ModelEvent::Usage { .. }) => usage.observe(&event),
                    // The provider finished and dropped its sender.
                    None => break,
                },
            }
        }
        let result = match result {
            Some(result) => result,
            None => stream.await,
        };
        let usage = usage.record(Some(turn_id), self.agent.context_window_tokens);
        for (item_id, summary) in summaries {
            journal.append(RecordBody::ReasoningSummary {
                turn_id: turn_id.to_owned(),
                item_id,
                text: output.without_credentials(&summary),
                provider_summary: Some(true),
            });
        }
        let ending = if over_bound {
            Some(Ending::failed(ErrorCode::ContentLimit))
        } else {
            match result {
                Ok(()) => None,
                Err(failure) if failure.error == ProviderError::Cancelled => {
                    Some(Ending::cancelled())
                }
                Err(failure) => {
                    let said = failure.describe(&self.asked());
                    output.diagnostic(failure.error.code(), &said).await;
                    Some(Ending::failed(ErrorCode::ExecutionFailed))
                }
            }
        };
        if refused && ending.is_none() {
            // The provider refused: its words (if any) stand as the reply, and nothing it
            // asked for alongside runs. The session's reply says so; a subagent's refusal
            // is its report, its delegate's to judge.
            calls.clear();
            if self.live {
                let model = &self.agent.model;
                let provider = &self.agent.provider;
                let said = if text.is_empty() {
                    format!(
                        "model {model:?} of provider {provider:?} refused the request without a reply"
                    )
                } else {
                    format!(
                        "model {model:?} of provider {provider:?} refused the request; the \
                         reply is all it gave"
                    )
                };
                output.diagnostic(DIAGNOSTIC_REPLY_REFUSED, &said).await;
            }
        }
        if cut && ending.is_none() && self.live && calls.is_empty() {
            // The reply ending the turn is what the model gave, but not all it meant to
            // give: said so, never passed off as whole. (A subagent's cut report is
            // its delegate's to judge; a cut response with calls goes on to them.)
            let said = format!(
                "the reply was cut off at the output token limit of model {:?}; it is \
                 incomplete",
                self.agent.model
            );
            output.diagnostic(DIAGNOSTIC_REPLY_TRUNCATED, &said).await;
        }
        let partial = ending.is_some();
        // The reasoning of a whole response goes back with it, kept as it came: first
        // in the write that records the response.
        let reasoning = if partial { Vec::new() } else { reasoning };
        let mut records: Vec<RecordBody> = reasoning
            .iter()
            .map(|item| reasoning_record(turn_id, item))
            .collect();
        records.push(usage.clone());
        let text = if text.is_empty() {
            journal.append_all(records);
            None
        } else {
            let text = output.without_credentials(&text);
            output.segments += 1;
            if output.segments > RUN_CONTENT_SEGMENTS {
                journal.append(usage);
                return Response {
                    reasoning: Vec::new(),
                    text: None,
                    calls: Vec::new(),
                    ending: Some(Ending::failed(ErrorCode::ContentLimit)),
                };
            }
            // The usage shares the reply's write: one sync, not two.
            records.push(RecordBody::AssistantOutput {
                turn_id: turn_id.to_owned(),
                message_id: message_id.clone(),
                text: Some(text.clone()),
                chunks: Vec::new(),
                partial,
            });
            journal.append_all(records);
            if self.live {
                output.reconcile(&message_id, &text, partial).await;
            }
            Some(text)
        };
        usage::tell(output, journal, usage).await;
        Response {
            reasoning: reasoning.into_iter().map(Item::Reasoning).collect(),
            text,
            // Calls of a response that did not complete are never run.
            calls: if partial { Vec::new() } else { calls },
            ending,
        }
    }
}

/// The `provider_reasoning` record of `item`, a reasoning item of turn `turn_id`: the
/// item as it came, never redacted.
fn reasoning_record(turn_id: &str, item: &ReasoningItem) -> RecordBody {
    let format = serde_json::to_value(item.format)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    RecordBody::ProviderReasoning {
        turn_id: turn_id.to_owned(),
        format,
        model: item.model.clone(),
        item: item.raw.clone(),
    }
}

/// The tool that loads a skill, offered when skills exist.
pub(crate) const SKILL_TOOL: &str = "skill";

/// The `skill` tool as the model sees it.
fn skill_tool_spec() -> magi_provider::ToolSpec {
    magi_provider::ToolSpec {
        name: SKILL_TOOL.to_owned(),
        description: "Load the instructions of one of the skills listed in the system \
                      instructions, by name."
            .to_owned(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": false
        }),
    }
}

/// The `task` tool as the delegating model sees it.
fn task_tool_spec(subagents: &[(String, magi_config::Profile)]) -> ToolSpec {
    let names: Vec<&str> = subagents.iter().map(|(name, _)| name.as_str()).collect();
    let list: String = subagents
        .iter()
        .map(|(name, profile)| {
            format!(
                "\n- {name}: {}",
                profile.description.as_deref().unwrap_or_default().trim()
            )
        })
        .collect();
    ToolSpec {
        name: magi_config::TASK_TOOL.to_owned(),
        description: format!(
            "Delegate a self-contained task to a subagent. It works on the task alone, \
             with its own tools and without this conversation, and answers with its \
             final response. Say everything it needs in the task. The subagents:{list}"
        ),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "subagent": {"type": "string", "enum": names, "description": "Which subagent."},
                "task": {"type": "string", "description": "The task, complete and self-contained."}
            },
            "required": ["subagent", "task"],
            "additionalProperties": false
        }),
    }
}
