//! The seals the mock puts on the reasoning it gives (a Responses reasoning item's
//! `encrypted_content`, an Anthropic thinking block's `signature`): a digest of the
//! model and the content, so reasoning sent back to another model, or changed, does not
//! verify (`checks`).

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

/// The seal of `content` given by `model`: what the mock puts in a Responses
/// `encrypted_content` and an Anthropic `signature`.
pub(crate) fn seal(model: &str, content: &str) -> String {
    let mut hasher = DefaultHasher::new();
    ("magi-mock-seal", model, content).hash(&mut hasher);
    format!("mock-seal-{:016x}", hasher.finish())
}

/// What a Responses reasoning item's seal covers: its ID and summary texts.
pub(crate) fn responses_content(item: &Value) -> String {
    let summary: Vec<&str> = item["summary"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str())
        .collect();
    format!(
        "{}\n{}",
        item["id"].as_str().unwrap_or_default(),
        summary.join("\n")
    )
}
