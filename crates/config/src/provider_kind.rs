//! The wire formats a provider can speak: named by settings (`kind = "openai-chat"`)
//! and by the provider definitions made from them, so it sits below both.

use serde::Deserialize;

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ProviderKind {
    /// OpenAI Responses API.
    #[serde(rename = "openai")]
    OpenAi,
    /// OpenAI-compatible Chat Completions (llama.cpp's server, vLLM, Ollama, LM Studio…).
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// Anthropic Messages API.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// The Responses API of ChatGPT's Codex backend, with a ChatGPT sign-in: the
    /// built-in provider `codex` alone.
    #[serde(rename = "codex")]
    Codex,
}
