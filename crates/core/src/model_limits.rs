//! What a model can take: its context window, its output limit and whether it takes
//! images, from what is known of it, the most specific first.
//!
//! Per key, the first source that says wins: `[models."provider/model"]`, then
//! `[compaction] context_window_tokens` (the window alone, for every model), then the
//! model's metadata in the provider's cached catalog (written by `model.refresh`; nothing
//! is fetched here), then [`TABLE`] of well-known models shipped in the binary, then the
//! conservative defaults. The window decides when a conversation is compacted; the
//! output limit bounds each request's response (`crate::agent`).
//!
//! The settings and the table are known without I/O; the catalog is a file. A
//! [`LimitsLookup`] is made where a turn or a compaction is admitted (the protocol loop)
//! and resolved where it runs (the run's thread, the session worker), so a slow disk
//! never delays the loop's other requests.

use std::collections::BTreeMap;
use std::sync::Arc;

use magi_config::{ModelSettings, Settings};
use magi_store::Home;
use magi_store::catalog::{CacheRead, read_cache};

/// The window of a model nothing is known of: small enough for most local servers'
/// default contexts, so a conversation is compacted before it overflows rather than
/// after.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_768;

/// What one source knows of a model; `None` where it does not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Known {
    /// The context window in tokens.
    pub context_window: Option<u64>,
    /// The most tokens of one response.
    pub max_output_tokens: Option<u64>,
    /// Whether the model takes images.
    pub images: Option<bool>,
}

impl Known {
    /// Each key this source leaves unsaid, taken from `below`.
    fn over(self, below: Known) -> Known {
        Known {
            context_window: self.context_window.or(below.context_window),
            max_output_tokens: self.max_output_tokens.or(below.max_output_tokens),
            images: self.images.or(below.images),
        }
    }
}

/// A model's output limit, and where it was learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    /// The most tokens of one response.
    pub tokens: u64,
    /// Whether the settings or the provider's own metadata (the cached catalog) said it,
    /// rather than the shipped table: only a stated limit is sent where a wire format's
    /// bound is optional, since a server may serve a well-known model with less room.
    pub stated: bool,
}

/// What a model can take, every source consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// The context window in tokens.
    pub context_window: u64,
    /// The most tokens of one response, when any source knows it.
    pub max_output_tokens: Option<OutputLimit>,
    /// Whether the model takes images (`false` unless a source says so): `view_image`
    /// attaches one only when it does.
    pub images: bool,
}

/// Well-known models by ID prefix (the longest matching prefix wins; a vendor path such
/// as `openai/` in front of the ID is ignored): context window, output limit, images.
const TABLE: &[(&str, u64, u64, bool)] = &[
    ("gpt-5", 400_000, 128_000, true),
    ("gpt-4.1", 1_047_576, 32_768, true),
    ("gpt-4o", 128_000, 16_384, true),
    ("o3", 200_000, 100_000, true),
    ("o4-mini", 200_000, 100_000, true),
    ("gpt-oss", 131_072, 32_768, false),
    ("claude-opus-4", 200_000, 32_000, true),
    ("claude-sonnet-4", 200_000, 64_000, true),
    ("claude-haiku-4", 200_000, 64_000, true),
    ("claude-3-7-sonnet", 200_000, 64_000, true),
    ("claude-3-5-haiku", 200_000, 8_192, true),
    ("gemini-2.5", 1_048_576, 65_536, true),
    ("deepseek-chat", 128_000, 8_192, false),
    ("deepseek-reasoner", 128_000, 65_536, false),
    ("qwen3-coder", 262_144, 65_536, false),
];

/// What the shipped table knows of `model`.
pub fn from_table(model: &str) -> Known {
    let id = model.rsplit('/').next().unwrap_or(model);
    TABLE
        .iter()
        .filter(|(prefix, ..)| id.starts_with(prefix))
        .max_by_key(|(prefix, ..)| prefix.len())
        .map(|&(_, window, output, images)| Known {
            context_window: Some(window),
            max_output_tokens: Some(output),
            images: Some(images),
        })
        .unwrap_or_default()
}

/// What the settings say of `provider`/`model`.
pub fn from_settings(settings: &Settings, provider: &str, model: &str) -> Known {
    ModelSettingsOf::of(settings).known(provider, model)
}

/// The settings that speak of models: `[models."provider/model"]` and
/// `[compaction] context_window_tokens`.
#[derive(Debug, Clone)]
struct ModelSettingsOf {
    models: Arc<BTreeMap<String, ModelSettings>>,
    window_tokens: Option<usize>,
}

impl ModelSettingsOf {
    fn of(settings: &Settings) -> ModelSettingsOf {
        ModelSettingsOf {
            models: Arc::new(settings.models.clone()),
            window_tokens: settings.compaction.context_window_tokens,
        }
    }

    fn known(&self, provider: &str, model: &str) -> Known {
        let own = self
            .models
            .get(&format!("{provider}/{model}"))
            .copied()
            .unwrap_or_default();
        Known {
            context_window: own.context_window,
            max_output_tokens: own.max_output_tokens,
            images: own.images,
        }
        .over(Known {
            context_window: self.window_tokens.map(|tokens| tokens as u64),
            ..Known::default()
        })
    }
}

/// What `provider`'s cached catalog says of `model`; nothing when the cache is missing,
/// invalid or does not list it.
pub fn from_catalog(home: &Home, provider: &str, model: &str) -> Known {
    let CacheRead::Ready { cache, .. } = read_cache(home, provider) else {
        return Known::default();
    };
    cache
        .models
        .iter()
        .find(|m| m.id == model)
        .map(|m| Known {
            context_window: m.limits.context_window,
            max_output_tokens: m.limits.max_output_tokens,
            images: m.limits.images,
        })
        .unwrap_or_default()
}

/// Where to learn what a model can take: the settings that speak of models, and where
/// the provider's cached catalog is. Made without I/O; [`LimitsLookup::resolve`] reads
/// the catalog.
#[derive(Debug, Clone)]
pub struct LimitsLookup {
    home: Home,
    provider: String,
    model: String,
    settings: ModelSettingsOf,
}

impl LimitsLookup {
    /// The lookup of `provider`/`model`, with the settings as they are now.
    pub fn new(home: &Home, settings: &Settings, provider: &str, model: &str) -> LimitsLookup {
        LimitsLookup {
            home: home.clone(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            settings: ModelSettingsOf::of(settings),
        }
    }

    /// The lookup of another model of the same provider (a subagent profile's).
    pub fn for_model(&self, model: &str) -> LimitsLookup {
        LimitsLookup {
            model: model.to_owned(),
            ..self.clone()
        }
    }

    /// What the model can take, every source consulted in order. Reads the cached
    /// catalog from disk: never call it on the protocol loop.
    pub fn resolve(&self) -> ModelLimits {
        let settings = self.settings.known(&self.provider, &self.model);
        let catalog = from_catalog(&self.home, &self.provider, &self.model);
        let table = from_table(&self.model);
        let known = settings.over(catalog).over(table);
        // A limit of zero is no limit: the next source stands in.
        let stated = settings
            .max_output_tokens
            .filter(|&t| t > 0)
            .or(catalog.max_output_tokens.filter(|&t| t > 0));
        let max_output_tokens = match stated {
            Some(tokens) => Some(OutputLimit {
                tokens,
                stated: true,
            }),
            None => table
                .max_output_tokens
                .filter(|&t| t > 0)
                .map(|tokens| OutputLimit {
                    tokens,
                    stated: false,
                }),
        };
        ModelLimits {
            // A window of zero is no window: the default stands in.
            context_window: known
                .context_window
                .filter(|&w| w > 0)
                .unwrap_or(DEFAULT_CONTEXT_WINDOW),
            max_output_tokens,
            images: known.images.unwrap_or(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_limits(home: &Home, settings: &Settings, provider: &str, model: &str) -> ModelLimits {
        LimitsLookup::new(home, settings, provider, model).resolve()
    }

    #[test]
    fn the_table_matches_the_longest_prefix_after_a_vendor_path() {
        assert_eq!(from_table("gpt-5-mini").context_window, Some(400_000));
        assert_eq!(
            from_table("openai/gpt-4o-mini").max_output_tokens,
            Some(16_384)
        );
        assert_eq!(
            from_table("claude-sonnet-4-5-20250929").max_output_tokens,
            Some(64_000)
        );
        assert_eq!(from_table("my-local-model"), Known::default());
    }

    #[test]
    fn settings_win_key_by_key_and_the_default_is_last() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::prepare(&dir.path().join("mc")).unwrap();
        let mut settings = Settings::default();
        let unknown = model_limits(&home, &settings, "local", "my-model");
        assert_eq!(
            unknown,
            ModelLimits {
                context_window: DEFAULT_CONTEXT_WINDOW,
                max_output_tokens: None,
                images: false,
            }
        );
        let known = model_limits(&home, &settings, "openai", "gpt-5");
        assert_eq!((known.context_window, known.images), (400_000, true));

        settings.compaction.context_window_tokens = Some(1_000);
        settings.models.insert(
            "openai/gpt-5".into(),
            magi_config::ModelSettings {
                max_output_tokens: Some(10),
                images: Some(false),
                ..Default::default()
            },
        );
        let configured = model_limits(&home, &settings, "openai", "gpt-5");
        assert_eq!(
            configured,
            ModelLimits {
                context_window: 1_000,
                max_output_tokens: Some(OutputLimit {
                    tokens: 10,
                    stated: true,
                }),
                images: false,
            }
        );
        settings.models.insert(
            "openai/gpt-5".into(),
            magi_config::ModelSettings {
                context_window: Some(5_000),
                ..Default::default()
            },
        );
        let own = model_limits(&home, &settings, "openai", "gpt-5");
        assert_eq!(own.context_window, 5_000);
        // The table's limit is known, not stated.
        assert_eq!(
            own.max_output_tokens,
            Some(OutputLimit {
                tokens: 128_000,
                stated: false,
            })
        );
    }
}
