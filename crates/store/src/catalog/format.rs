//! The cache file's format: exact field order, compact JSON, and the checks a file
//! must pass to be read as a provider's cache.

use std::io::{self};

use magi_protocol::limits::{CATALOG_MODELS, CATALOG_STRING_BYTES};
use magi_protocol::text::{has_control, is_secret_like};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{CACHE_FORMAT, CachedLimits, CachedModel, ProviderCache};

/// The file as written on disk: exact field order, compact, no trailing newline.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCache {
    format: u64,
    provider: String,
    fetched_at: String,
    models: Vec<RawModel>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    id: String,
    // `deserialize_with` makes the field required: `null` is a value, absence is not.
    #[serde(deserialize_with = "Option::deserialize")]
    name: Option<String>,
    // What the provider said the model can take: absent when it did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    images: Option<bool>,
}

pub(super) fn serialize(cache: &ProviderCache) -> io::Result<Vec<u8>> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_owned());
    if cache.models.len() > CATALOG_MODELS {
        return Err(invalid("too many models"));
    }
    let mut seen = std::collections::HashSet::with_capacity(cache.models.len());
    let mut models = Vec::with_capacity(cache.models.len());
    for model in &cache.models {
        if !is_valid_id(&model.id) {
            return Err(invalid("an empty or over-long model ID"));
        }
        if !seen.insert(model.id.as_str()) {
            return Err(invalid("a repeated model ID"));
        }
        models.push(RawModel {
            id: model.id.clone(),
            name: model.name.clone().filter(|n| is_safe_text(n)),
            context_window: model.limits.context_window,
            max_output_tokens: model.limits.max_output_tokens,
            images: model.limits.images,
        });
    }
    let raw = RawCache {
        format: CACHE_FORMAT,
        provider: cache.provider.clone(),
        fetched_at: humantime::format_rfc3339_millis(cache.fetched_at).to_string(),
        models,
    };
    serde_json::to_vec(&raw).map_err(io::Error::other)
}

/// The cache in `bytes`, if they are exactly a valid cache of `provider`.
pub(super) fn parse(bytes: &[u8], provider: &str) -> Option<ProviderCache> {
    let raw: RawCache = serde_json::from_slice(bytes).ok()?;
    if raw.format != CACHE_FORMAT || raw.provider != provider || raw.models.len() > CATALOG_MODELS {
        return None;
    }
    // humantime accepts only UTC (`Z`) timestamps, which is what the format promises.
    let fetched_at = humantime::parse_rfc3339(&raw.fetched_at).ok()?;
    let mut seen = std::collections::HashSet::with_capacity(raw.models.len());
    let mut models = Vec::with_capacity(raw.models.len());
    for model in raw.models {
        // An over-long identifier fails the whole file: it cannot be shown shortened,
        // and skipping it would silently hide a model.
        if !is_valid_id(&model.id) || !seen.insert(model.id.clone()) {
            return None;
        }
        let limits = CachedLimits {
            context_window: model.context_window,
            max_output_tokens: model.max_output_tokens,
            images: model.images,
        };
        models.push(CachedModel::new(model.id, model.name).with_limits(limits));
    }
    Some(ProviderCache {
        provider: raw.provider,
        fetched_at,
        models,
    })
}

/// Whether `id` has the length of a cached model ID.
pub(super) fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= CATALOG_STRING_BYTES
}

/// Whether `text` may be shown: 1 to `CATALOG_STRING_BYTES` bytes, no control
/// characters, nothing secret-like.
pub(super) fn is_safe_text(text: &str) -> bool {
    is_valid_id(text) && !has_control(text) && !is_secret_like(text)
}

pub(super) fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
