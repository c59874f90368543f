//! The model lists as the providers answer them; only the fields read are named.

use serde::Deserialize;

use super::{ListedLimits, RefreshError};

pub(super) fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, RefreshError> {
    serde_json::from_slice(body).map_err(|_| RefreshError::Malformed)
}

/// `{"data":[{"id":…}, …]}`; other fields, of the list and of each model, are ignored.
#[derive(Deserialize)]
pub(super) struct OpenAiList {
    pub(super) data: Vec<OpenAiModel>,
}

/// One model of an OpenAI-style list, with the metadata some servers add: OpenRouter's
/// `context_length`, `top_provider` and `architecture`, llama.cpp's `meta`. A field of
/// another shape is read as unsaid, never as a malformed list.
#[derive(Deserialize)]
pub(super) struct OpenAiModel {
    pub(super) id: String,
    #[serde(default)]
    context_length: Option<serde_json::Value>,
    #[serde(default)]
    top_provider: Option<serde_json::Value>,
    #[serde(default)]
    architecture: Option<serde_json::Value>,
    #[serde(default)]
    meta: Option<serde_json::Value>,
}

impl OpenAiModel {
    pub(super) fn limits(&self) -> ListedLimits {
        let count = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_u64);
        let meta = self.meta.as_ref();
        let context_window = count(self.context_length.as_ref())
            .or_else(|| count(meta.and_then(|m| m.get("n_ctx"))))
            .or_else(|| count(meta.and_then(|m| m.get("n_ctx_train"))));
        let max_output_tokens = count(
            self.top_provider
                .as_ref()
                .and_then(|t| t.get("max_completion_tokens")),
        );
        let images = self
            .architecture
            .as_ref()
            .and_then(|a| a.get("input_modalities"))
            .and_then(serde_json::Value::as_array)
            .map(|modalities| modalities.iter().any(|m| m == "image"));
        ListedLimits {
            context_window,
            max_output_tokens,
            images,
        }
    }
}

/// `{"data":[{"id":…,"display_name":…}],"has_more":…,"last_id":…}`; other fields are
/// ignored, and a page without `has_more` is the last.
#[derive(Deserialize)]
pub(super) struct AnthropicPage {
    pub(super) data: Vec<AnthropicModel>,
    #[serde(default)]
    pub(super) has_more: bool,
    #[serde(default)]
    pub(super) last_id: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct AnthropicModel {
    pub(super) id: String,
    #[serde(default)]
    pub(super) display_name: Option<String>,
    #[serde(default)]
    max_input_tokens: Option<serde_json::Value>,
    #[serde(default)]
    max_tokens: Option<serde_json::Value>,
}

impl AnthropicModel {
    pub(super) fn limits(&self) -> ListedLimits {
        ListedLimits {
            context_window: self.max_input_tokens.as_ref().and_then(|v| v.as_u64()),
            max_output_tokens: self.max_tokens.as_ref().and_then(|v| v.as_u64()),
            images: None,
        }
    }
}

/// ChatGPT's Codex backend's list: `{"models":[{"slug":…,"display_name":…,
/// "context_window":…}, …]}`; other fields are ignored.
#[derive(Deserialize)]
pub(super) struct CodexList {
    pub(super) models: Vec<CodexModel>,
}

#[derive(Deserialize)]
pub(super) struct CodexModel {
    pub(super) slug: String,
    #[serde(default)]
    pub(super) display_name: Option<String>,
    #[serde(default)]
    context_window: Option<serde_json::Value>,
}

impl CodexModel {
    pub(super) fn limits(&self) -> ListedLimits {
        ListedLimits {
            context_window: self.context_window.as_ref().and_then(|v| v.as_u64()),
            max_output_tokens: None,
            images: None,
        }
    }
}
