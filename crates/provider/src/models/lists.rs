//! The model lists as the providers answer them; only the fields read are named.

use serde::Deserialize;

use super::RefreshError;

pub(super) fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, RefreshError> {
    serde_json::from_slice(body).map_err(|_| RefreshError::Malformed)
}

/// `{"data":[{"id":…}, …]}`; other fields, of the list and of each model, are ignored.
#[derive(Deserialize)]
pub(super) struct OpenAiList {
    pub(super) data: Vec<OpenAiModel>,
}

#[derive(Deserialize)]
pub(super) struct OpenAiModel {
    pub(super) id: String,
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
}
