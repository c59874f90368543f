//! Model clients behind one streaming trait: the OpenAI Responses API, OpenAI-compatible
//! Chat Completions (llama.cpp's server, vLLM, Ollama, LM Studio, OpenRouter) and the
//! Anthropic Messages API.
//!
//! A client turns a [`ModelRequest`] into one streamed HTTP request and reports what
//! the model produced as [`ModelEvent`]s. It knows nothing of sessions or tools' work;
//! it never logs, and its errors never carry keys, headers or provider bodies.

mod anthropic;
mod chat;
mod client;
mod codec;
pub mod codex;
mod failure;
mod http;
pub mod models;
mod responses;
mod sign_in;
mod sse;

pub use anthropic::{ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS};
pub use failure::{Asked, Cause, Failure, Retry};
pub use http::{
    BASE_BACKOFF, CONNECT_TIMEOUT, MAX_ATTEMPTS, MAX_EVENT_BYTES, MAX_RETRY_AFTER, MAX_RETRY_WAIT,
    READ_TIMEOUT,
};
pub use models::{ListedLimits, ListedModel, RefreshError, list_models, list_signed_in_models};
pub use sign_in::{Bearer, SignIn, SignInFailure};

use std::future::Future;
use std::pin::Pin;

use magi_protocol::messages::Effort;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireFormat {
    /// OpenAI Responses API (`POST {base}/responses`).
    #[serde(rename = "responses")]
    OpenAiResponses,
    /// OpenAI-compatible Chat Completions (`POST {base}/chat/completions`).
    #[serde(rename = "chat")]
    ChatCompletions,
    /// Anthropic Messages API (`POST {base}/v1/messages`).
    #[serde(rename = "anthropic")]
    AnthropicMessages,
    /// The Responses API of ChatGPT's Codex backend (`POST {base}/responses`) with a
    /// ChatGPT sign-in (see [`codex`]).
    CodexResponses,
}

/// Where and how to reach a provider. The credential is held here only for the
/// request's authentication header and is never printed (`Debug` hides it).
#[derive(Clone)]
pub struct Endpoint {
    /// The wire format.
    pub format: WireFormat,
    /// The base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The API key, if the provider takes one.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("format", &self.format)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[hidden]"))
            .finish()
    }
}

/// One item of the conversation sent to the model, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Item {
    /// The user's prompt.
    User {
        /// Its text.
        text: String,
    },
    /// An assistant reply segment.
    Assistant {
        /// Its text.
        text: String,
    },
    /// A tool call the model made.
    ToolCall {
        /// The provider's call ID.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The arguments as JSON text, as the model sent them.
        arguments: String,
    },
    /// The result given back for a tool call.
    ToolResult {
        /// The call it answers.
        call_id: String,
        /// What the model is told.
        output: String,
        /// Whether the call failed.
        is_error: bool,
    },
    /// An image given with the prompt (`input.attachments`), right after its
    /// [`Item::User`]: each wire format puts it in that user message, after the text.
    UserImage {
        /// `image/png`, `image/jpeg` or `image/webp`.
        media_type: String,
        /// The image file's bytes in standard base64.
        data: String,
    },
    /// Reasoning a response carried that its provider takes back unmodified in later
    /// requests (an encrypted Responses `reasoning` item, an Anthropic `thinking` or
    /// `redacted_thinking` block), before that response's text and calls. Only the
    /// format and the model that made it are sent it; every other request leaves it out.
    Reasoning(ReasoningItem),
    /// An image a tool call gave the model (`view_image`), right after that call's
    /// result. Each wire format sends it as its own image input: Anthropic inside the
    /// call's `tool_result`; the OpenAI formats, whose tool outputs are text, in a user
    /// message after the response's tool results.
    Image {
        /// The call whose result it belongs to.
        call_id: String,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        media_type: String,
        /// The image file's bytes in standard base64.
        data: String,
    },
}

/// Reasoning a provider gave with a response and takes back, exactly as it gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningItem {
    /// The wire format that gave it.
    pub format: WireFormat,
    /// The model that gave it.
    pub model: String,
    /// The item or block as JSON text, byte for byte as received (its signature or
    /// encrypted content would not verify otherwise).
    pub raw: String,
}

impl ReasoningItem {
    /// The item as JSON when `request` may take it back: made by the same format and
    /// model, and `request` reasons in that format. None for anything else, or text
    /// that no longer parses.
    pub(crate) fn for_request(&self, format: WireFormat, request: &ModelRequest) -> Option<Value> {
        let reasons = match request.reasoning {
            Some(Reasoning::Responses { .. }) => format == WireFormat::OpenAiResponses,
            Some(Reasoning::AnthropicBudget { .. } | Reasoning::AnthropicAdaptive { .. }) => {
                format == WireFormat::AnthropicMessages
            }
            Some(Reasoning::Chat { .. }) | None => false,
        };
        if !reasons || self.format != format || self.model != request.model {
            return None;
        }
        serde_json::from_str(&self.raw).ok()
    }
}

/// How a request asks the model to reason, in the terms of the format that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    /// An OpenAI Responses reasoning model: its encrypted reasoning is asked for
    /// (`include: ["reasoning.encrypted_content"]`) and sent back, and `reasoning.effort`
    /// is sent when there is an effort.
    Responses {
        /// The explicit effort, if any.
        effort: Option<Effort>,
    },
    /// Chat Completions `reasoning_effort`.
    Chat {
        /// The effort.
        effort: Effort,
    },
    /// Anthropic `thinking: {type: "enabled", budget_tokens}` with a budget the effort
    /// chooses, and the interleaved-thinking beta, so the model thinks between calls.
    AnthropicBudget {
        /// The effort.
        effort: Effort,
    },
    /// Anthropic `thinking: {type: "adaptive"}` with `output_config.effort`.
    AnthropicAdaptive {
        /// The effort.
        effort: Effort,
    },
}

impl Item {
    /// The image as a `data:` URL, for the OpenAI formats.
    fn data_url(media_type: &str, data: &str) -> String {
        format!("data:{media_type};base64,{data}")
    }
}

/// Adds `part` to the user message that ends `messages` (an OpenAI format's), whose
/// text content becomes its first part (`text_type` names a text part there); with no
/// such message, `alone` is pushed, `part` in its content.
fn push_user_part(messages: &mut Vec<Value>, text_type: &str, part: Value, mut alone: Value) {
    if let Some(last) = messages.last_mut().filter(|m| m["role"] == "user") {
        if let Some(text) = last["content"].as_str().map(str::to_owned) {
            last["content"] = serde_json::json!([{ "type": text_type, "text": text }]);
        }
        if let Some(parts) = last["content"].as_array_mut() {
            parts.push(part);
            return;
        }
    }
    alone["content"] = serde_json::json!([part]);
    messages.push(alone);
}

/// A request whose response called two tools, the first of which gave an image: how
/// each wire format's tests see an image placed.
#[cfg(test)]
pub(crate) fn image_request() -> ModelRequest {
    let call = |id: &str| Item::ToolCall {
        call_id: id.into(),
        name: "view_image".into(),
        arguments: "{}".into(),
    };
    let result = |id: &str| Item::ToolResult {
        call_id: id.into(),
        output: format!("result {id}"),
        is_error: false,
    };
    ModelRequest {
        model: "m".into(),
        instructions: None,
        items: vec![
            Item::User {
                text: "look".into(),
            },
            call("c1"),
            call("c2"),
            result("c1"),
            Item::Image {
                call_id: "c1".into(),
                media_type: "image/png".into(),
                data: "AAAA".into(),
            },
            result("c2"),
            Item::Assistant {
                text: "seen".into(),
            },
        ],
        tools: Vec::new(),
        reasoning_summaries: false,
        reasoning: None,
        max_output_tokens: None,
        cache_key: None,
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRequest {
    /// The model.
    pub model: String,
    /// System instructions.
    pub instructions: Option<String>,
    /// The conversation so far.
    pub items: Vec<Item>,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// Ask for reasoning summaries (the Responses API sends them only when asked, and
    /// only reasoning models accept the request; the other formats ignore it).
    pub reasoning_summaries: bool,
    /// How the model is asked to reason; none leaves the provider's own behaviour and
    /// sends no reasoning back.
    pub reasoning: Option<Reasoning>,
    /// The most tokens the response may take, sent as the format's output bound
    /// (Anthropic's `max_tokens`, Chat Completions' `max_tokens`, the Responses API's
    /// `max_output_tokens`); none sends no bound, except to Anthropic, which requires one
    /// and gets [`DEFAULT_MAX_TOKENS`].
    pub max_output_tokens: Option<u64>,
    /// What routes the request to the provider's prompt cache of earlier requests of the
    /// same conversation (the Responses API's `prompt_cache_key`); the other formats do
    /// not send it.
    pub cache_key: Option<String>,
}

/// An effort as the provider's wire spells it: none for `default`, which leaves the
/// provider's own behaviour. The one place an effort becomes a string.
pub(crate) fn effort_value(effort: Option<Effort>) -> Option<&'static str> {
    effort
        .filter(|effort| *effort != Effort::Default)
        .map(Effort::as_str)
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its reply.
    EndTurn,
    /// It asked for tool calls.
    ToolCalls,
    /// It hit its output token limit.
    MaxTokens,
    /// The provider refused the request or withheld the reply: Anthropic's
    /// `stop_reason: "refusal"`, a Responses `refusal` content part or an `incomplete`
    /// response for `content_filter`, a Chat Completions `refusal` delta or
    /// `finish_reason: "content_filter"`. The refusal's own words, if it gave any, came
    /// before as [`ModelEvent::TextDelta`]s: they are the reply.
    Refusal,
    /// Anything else the provider reported.
    Other,
}

/// What the model produced, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    /// Reply text to append.
    TextDelta(String),
    /// A reasoning summary the provider itself marked as a summary (never raw
    /// reasoning); a repeated `item_id` replaces the earlier text.
    ReasoningSummary {
        /// The provider's item identity, if it gave one.
        item_id: Option<String>,
        /// The summary so far.
        text: String,
    },
    /// Text of a reasoning summary as it arrives (only summaries the provider marks as
    /// such): appended to the summary of `item_id`, which the
    /// [`ModelEvent::ReasoningSummary`] that follows makes whole. A new part of a
    /// summary starts with the blank line that joins it to the one before.
    ReasoningSummaryDelta {
        /// The provider's item identity, if it gave one.
        item_id: Option<String>,
        /// The text to append.
        text: String,
    },
    /// Reasoning to send back in later requests of the same model (never shown: it is
    /// raw or encrypted reasoning), made whole when its item or block ended.
    Reasoning(ReasoningItem),
    /// A complete tool call.
    ToolCall {
        /// The provider's call ID.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The arguments as JSON text (possibly invalid JSON: the runner checks).
        arguments: String,
    },
    /// Token usage, when reported.
    Usage {
        /// Input tokens, cached ones included.
        input_tokens: u64,
        /// Output tokens, reasoning ones included.
        output_tokens: u64,
        /// Of the input tokens, those read from the provider's prompt cache, when it
        /// says.
        cached_input_tokens: Option<u64>,
        /// Of the input tokens, those written to the provider's prompt cache, when it
        /// says (Anthropic's `cache_creation_input_tokens`).
        cache_write_tokens: Option<u64>,
        /// Of the output tokens, those spent reasoning, when the provider says.
        reasoning_tokens: Option<u64>,
    },
    /// The response ended normally.
    Completed(StopReason),
    /// The request failed before any of the above and is about to be made again, after
    /// the wait this says. Not output: nothing of the failed attempt was forwarded.
    Retrying(Retry),
}

/// Why a model request failed. Only these codes leave the crate: never a key, a
/// header or a provider's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderError {
    /// The provider could not be reached, or did not answer in time.
    Unavailable,
    /// The provider refused the credential (401/403).
    AuthenticationFailed,
    /// Still rate-limited after the retries (429).
    RateLimited,
    /// The provider failed (5xx) after the retries.
    ServerError,
    /// The provider rejected the request (another 4xx).
    Rejected,
    /// The stream broke off or could not be understood.
    MalformedStream,
    /// The request was cancelled.
    Cancelled,
}

impl ProviderError {
    /// The safe code for diagnostics and history.
    pub const fn code(self) -> &'static str {
        match self {
            ProviderError::Unavailable => "provider_unreachable",
            ProviderError::AuthenticationFailed => "provider_authentication_failed",
            ProviderError::RateLimited => "provider_rate_limited",
            ProviderError::ServerError => "provider_server_error",
            ProviderError::Rejected => "provider_rejected_request",
            ProviderError::MalformedStream => "provider_stream_malformed",
            ProviderError::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl std::error::Error for ProviderError {}

/// A boxed future, so the trait stays object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A model client: one streamed request at a time per call.
pub trait ModelClient: Send + Sync {
    /// Sends `request` and forwards what the model produces to `events`, ending with
    /// [`ModelEvent::Completed`] on success. Retries (429, 5xx, a connection or stream
    /// that broke off; with backoff) happen only before any output was sent, each told
    /// first as [`ModelEvent::Retrying`]. Cancelling `cancel` closes the stream and
    /// returns [`ProviderError::Cancelled`]. A failure says what happened ([`Failure`]).
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::Sender<ModelEvent>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), Failure>>;
}

/// The model client for `endpoint`: one HTTP client (connection pool, timeouts) reused
/// by every request made through it. Never fails here: a base URL that does not parse
/// or a key that cannot be a header value is reported by the first request, as
/// [`ProviderError::Unavailable`] and [`ProviderError::AuthenticationFailed`].
pub fn client(endpoint: Endpoint) -> Box<dyn ModelClient> {
    Box::new(http::HttpClient::new(endpoint))
}

/// The model client for a provider reached with a sign-in (its `api_key` is unused):
/// each request asks `sign_in` for the token to send, and a request the provider
/// refuses (HTTP 401) is made once more with the token `sign_in` gives after it, before
/// the failure is reported. A sign-in that cannot give a token fails the request with
/// what it says.
pub fn signed_in_client(
    endpoint: Endpoint,
    sign_in: std::sync::Arc<dyn SignIn>,
) -> Box<dyn ModelClient> {
    Box::new(http::HttpClient::new(endpoint).with_sign_in(sign_in))
}
