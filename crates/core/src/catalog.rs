//! `model.catalog`: the choices a client may select, from validated local caches only.
//!
//! A choice is a provider/model pair named in `providers.catalog.enabled` whose model is
//! in the provider's cache (`docs/catalog.md`); nothing is fetched. One snapshot per
//! child: a fresh request scans and replaces it, a continuation scans again and pages
//! the snapshot only if nothing a client could notice changed (the caches' bytes, the
//! credentials' presence); otherwise the snapshot is stale for good (`stale_catalog`).
//! Its part `cached` pages one provider's whole cached list (`model.cached`).

use std::time::{Duration, Instant};

use magi_config::{Credential, Settings, effort_profile, provider_definition, provider_names};
use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    CATALOG_FILE_BYTES, CATALOG_MODELS, CATALOG_PAGE_BYTES, CATALOG_PAGE_ENTRIES,
    CATALOG_PROVIDERS, CATALOG_SCAN_BYTES, CATALOG_SCAN_MS, CATALOG_SNAPSHOT_BYTES,
    CATALOG_STRING_BYTES,
};
use magi_protocol::messages::{
    AuthenticationState, Availability, CacheState, CatalogChoice, CatalogSource,
    CatalogStatusResult, ModelCatalogParams, ModelCatalogResult, ProviderCatalogStatus,
};
use magi_protocol::text::{has_control, is_secret_like, safe_display_name};
use magi_store::Home;
use magi_store::catalog::{CacheRead, read_cache};
use sha2::Digest;

use crate::paging::{PageRequest, Snapshot, check_request, page_end, serialized_len};

mod cached;

pub use cached::{CachedListing, check_cached_params};

/// Notice: a relevant provider's cache is missing, invalid or empty.
pub const NOTICE_PROVIDER_CATALOG_UNAVAILABLE: &str = "provider_catalog_unavailable";
/// Notice: choices with unsafe identifiers were left out.
pub const NOTICE_UNSAFE_OMITTED: &str = "catalog_entries_omitted_unsafe";

/// What the catalog reads: the admitted settings and environment, and the selection's
/// provider (always relevant).
pub struct CatalogInputs<'a> {
    /// `MC_HOME`.
    pub home: &'a Home,
    /// The admitted settings.
    pub settings: &'a Settings,
    /// The environment snapshot.
    pub env: &'a magi_config::Env,
    /// The currently selected provider.
    pub selected_provider: &'a str,
}

/// The child's catalog state: at most one snapshot.
#[derive(Debug, Default)]
pub struct Catalog {
    snapshot: Option<Snapshot<Scan>>,
}

/// What one scan saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan {
    pub(crate) choices: Vec<CatalogChoice>,
    pub(crate) notices: Vec<String>,
    /// Each relevant provider's cache state and credential presence.
    fingerprint: Vec<String>,
}

impl Catalog {
    /// The revision of the current snapshot, when it is not stale.
    pub fn revision(&self) -> Option<&str> {
        self.snapshot
            .as_ref()
            .filter(|s| !s.stale)
            .map(|s| s.revision.id())
    }

    /// The choice of the current snapshot for a provider/model pair.
    pub(crate) fn choice(&self, provider: &str, model: &str) -> Option<&CatalogChoice> {
        self.snapshot
            .as_ref()
            .filter(|s| !s.stale)?
            .scan
            .choices
            .iter()
            .find(|c| c.provider == provider && c.model == model)
    }

    /// Scans again and marks the snapshot stale for good if anything changed or the
    /// scan failed; returns whether it still holds.
    pub(crate) fn recheck(&mut self, inputs: &CatalogInputs) -> bool {
        let Some(snapshot) = self.snapshot.as_mut().filter(|s| !s.stale) else {
            return false;
        };
        let holds = scan(inputs).is_ok_and(|scan| scan == snapshot.scan);
        snapshot.stale |= !holds;
        holds
    }

    /// `model.catalog`.
    pub fn page(
        &mut self,
        inputs: &CatalogInputs,
        params: &ModelCatalogParams,
    ) -> Result<ModelCatalogResult, ErrorCode> {
        let request = check_request(
            params.limit,
            CATALOG_PAGE_ENTRIES,
            params.revision.as_ref(),
            params.cursor.as_ref(),
        )?;
        match request {
            PageRequest::Fresh { limit } => {
                // A fresh request replaces the snapshot, even when it fails.
                self.snapshot = None;
                let scan = scan(inputs)?;
                self.snapshot
                    .insert(Snapshot::new('c', scan))
                    .page(0, limit)
            }
            PageRequest::Continue {
                revision,
                cursor,
                limit,
            } => {
                let snapshot = self.snapshot.as_mut().ok_or(ErrorCode::StaleCatalog)?;
                let start = snapshot.resume(&revision, &cursor, ErrorCode::StaleCatalog)?;
                match scan(inputs) {
                    Ok(scan) if scan == snapshot.scan => snapshot.page(start, limit),
                    // Changed, unreadable or over a bound: stale for good.
                    _ => {
                        snapshot.stale = true;
                        Err(ErrorCode::StaleCatalog)
                    }
                }
            }
        }
    }
}

impl Snapshot<Scan> {
    fn page(&mut self, start: usize, limit: usize) -> Result<ModelCatalogResult, ErrorCode> {
        let choices = &self.scan.choices;
        let envelope = ModelCatalogResult {
            revision: self.revision.id().to_owned(),
            choices: Vec::new(),
            next_cursor: Some(self.revision.cursor(choices.len())),
            complete: false,
            notices: self.scan.notices.clone(),
            source: CatalogSource::CacheOnly,
        };
        let end = page_end(
            &envelope,
            choices,
            start,
            limit,
            CATALOG_PAGE_BYTES,
            ErrorCode::CatalogLimit,
        )?;
        let choices = choices.get(start..end).unwrap_or_default().to_vec();
        let next_cursor = self.cursor_after(end, self.scan.choices.len());
        Ok(ModelCatalogResult {
            revision: self.revision.id().to_owned(),
            choices,
            complete: next_cursor.is_none(),
            next_cursor,
            notices: self.scan.notices.clone(),
            source: CatalogSource::CacheOnly,
        })
    }
}

/// The stable, opaque selection ID of a provider/model pair: 64 hex digits.
pub fn selection_id(provider: &str, model: &str) -> String {
    let mut hasher = sha2::Sha256::new();
    hasher.update(provider.as_bytes());
    hasher.update([0]);
    hasher.update(model.as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The display name of a built-in provider.
fn provider_display_name(name: &str) -> Option<String> {
    match name {
        "openai" => Some("OpenAI".into()),
        "anthropic" => Some("Anthropic".into()),
        "openai-chat" => Some("OpenAI-compatible server".into()),
        "codex" => Some("ChatGPT (Codex)".into()),
        _ => None,
    }
}

/// Whether an identifier may be shown as a choice.
fn is_safe_identifier(text: &str) -> bool {
    !text.is_empty() && !has_control(text) && !is_secret_like(text)
}

/// One bounded scan of every relevant provider's cache.
pub(crate) fn scan(inputs: &CatalogInputs) -> Result<Scan, ErrorCode> {
    let deadline = Instant::now() + Duration::from_millis(CATALOG_SCAN_MS);
    let providers = provider_names(inputs.settings);
    if providers.len() > CATALOG_PROVIDERS {
        return Err(ErrorCode::CatalogLimit);
    }
    let enabled = enabled_pairs(inputs.settings);
    let mut choices = Vec::new();
    let mut notices = Vec::new();
    let mut fingerprint = Vec::new();
    let (mut models_scanned, mut bytes_scanned) = (0usize, 0u64);
    for name in &providers {
        let wanted: Vec<&str> = enabled
            .iter()
            .filter(|(p, _)| p == name)
            .map(|(_, m)| *m)
            .collect();
        if wanted.is_empty() && name != inputs.selected_provider {
            continue;
        }
        let Ok(definition) = provider_definition(name, inputs.settings, inputs.env) else {
            continue;
        };
        let authenticated =
            crate::sign_in::authenticated(inputs.home.root(), inputs.env, &definition.credential);
        let cache = read_cache(inputs.home, name);
        if Instant::now() > deadline {
            return Err(ErrorCode::CatalogLimit);
        }
        let models = match &cache {
            CacheRead::Ready {
                cache,
                fingerprint: print,
                bytes,
            } => {
                fingerprint.push(format!("{name}:{print}:{authenticated}"));
                bytes_scanned += bytes;
                models_scanned += cache.models.len();
                if models_scanned > CATALOG_MODELS || bytes_scanned > CATALOG_SCAN_BYTES as u64 {
                    return Err(ErrorCode::CatalogLimit);
                }
                if cache.models.is_empty() {
                    push_once(&mut notices, NOTICE_PROVIDER_CATALOG_UNAVAILABLE);
                }
                &cache.models[..]
            }
            CacheRead::Missing | CacheRead::Invalid => {
                fingerprint.push(format!("{name}:{}:{authenticated}", cache_state(&cache)));
                push_once(&mut notices, NOTICE_PROVIDER_CATALOG_UNAVAILABLE);
                &[]
            }
        };
        for model in wanted {
            if model.len() > CATALOG_STRING_BYTES || name.len() > CATALOG_STRING_BYTES {
                return Err(ErrorCode::CatalogLimit);
            }
            // A model missing from the cache is retired or unknown: no choice.
            let Some(cached) = models.iter().find(|m| m.id == model) else {
                continue;
            };
            if cached.unsafe_id || !is_safe_identifier(model) || !is_safe_identifier(name) {
                push_once(&mut notices, NOTICE_UNSAFE_OMITTED);
                continue;
            }
            let profile = effort_profile(&definition, model);
            choices.push(CatalogChoice {
                selection_id: selection_id(name, model),
                provider: name.clone(),
                model: model.to_owned(),
                provider_name: provider_display_name(name),
                model_name: cached
                    .name
                    .as_deref()
                    .and_then(safe_display_name)
                    .map(str::to_owned),
                availability: if authenticated {
                    Availability::Available
                } else {
                    Availability::AuthenticationUnavailable
                },
                effort_support: profile.support,
                permitted_efforts: profile.permitted,
            });
        }
    }
    choices.sort_by(|a, b| (&a.provider, &a.model).cmp(&(&b.provider, &b.model)));
    if choices
        .windows(2)
        .any(|w| w[0].provider == w[1].provider && w[0].model == w[1].model)
    {
        return Err(ErrorCode::CatalogUnavailable);
    }
    if serialized_len(&choices, ErrorCode::CatalogLimit)? > CATALOG_SNAPSHOT_BYTES {
        return Err(ErrorCode::CatalogLimit);
    }
    Ok(Scan {
        choices,
        notices,
        fingerprint,
    })
}

/// The `provider/model` entries of `providers.catalog.enabled`, split at the first
/// slash, sorted and without repeats; entries without a slash are ignored.
fn enabled_pairs(settings: &Settings) -> Vec<(&str, &str)> {
    let mut enabled: Vec<(&str, &str)> = settings
        .catalog
        .enabled
        .iter()
        .filter_map(|entry| entry.split_once('/'))
        .collect();
    enabled.sort_unstable();
    enabled.dedup();
    enabled
}

fn cache_state(cache: &CacheRead) -> &'static str {
    match cache {
        CacheRead::Missing => "missing",
        CacheRead::Invalid => "invalid",
        CacheRead::Ready { .. } => "ready",
    }
}

fn push_once(notices: &mut Vec<String>, notice: &str) {
    if !notices.iter().any(|n| n == notice) {
        notices.push(notice.to_owned());
    }
}

/// `model.catalog.status`: why each provider's choices are missing or unavailable,
/// from memory and cache reads only.
pub fn status(
    inputs: &CatalogInputs,
    provider: Option<&str>,
) -> Result<CatalogStatusResult, ErrorCode> {
    let deadline = Instant::now() + Duration::from_millis(CATALOG_SCAN_MS);
    let defined = provider_names(inputs.settings);
    let enabled = enabled_pairs(inputs.settings);
    let names: Vec<String> = match provider {
        Some(name) if defined.iter().any(|d| d == name) => vec![name.to_owned()],
        Some(_) => return Err(ErrorCode::SelectionInvalid),
        None => {
            let mut names = defined.clone();
            names.push(inputs.selected_provider.to_owned());
            names.extend(enabled.iter().map(|(p, _)| (*p).to_owned()));
            names.sort();
            names.dedup();
            names
        }
    };
    if names.len() > CATALOG_PROVIDERS {
        return Err(ErrorCode::CatalogLimit);
    }
    let mut providers = Vec::new();
    let mut bytes_scanned = 0u64;
    for name in names {
        let wanted: Vec<&str> = enabled
            .iter()
            .filter(|(p, _)| *p == name)
            .map(|(_, m)| *m)
            .collect();
        let definition = provider_definition(&name, inputs.settings, inputs.env).ok();
        let authentication = match definition.as_ref().map(|d| &d.credential) {
            Some(Credential::None | Credential::OptionalEnv(_)) | None => {
                AuthenticationState::NotRequired
            }
            Some(credential)
                if crate::sign_in::authenticated(inputs.home.root(), inputs.env, credential) =>
            {
                AuthenticationState::Available
            }
            Some(_) => AuthenticationState::Unavailable,
        };
        let (cache, cached): (CacheState, Vec<&str>);
        let read = if definition.is_some() {
            read_cache(inputs.home, &name)
        } else {
            CacheRead::Missing
        };
        match &read {
            CacheRead::Ready {
                cache: c, bytes, ..
            } => {
                bytes_scanned += bytes;
                cached = c
                    .models
                    .iter()
                    .filter(|m| !m.unsafe_id)
                    .map(|m| m.id.as_str())
                    .collect();
                cache = if c.models.is_empty() {
                    CacheState::Empty
                } else {
                    CacheState::Ready
                };
            }
            CacheRead::Missing => {
                cached = Vec::new();
                cache = CacheState::Missing;
            }
            CacheRead::Invalid => {
                // What an invalid file cost is unknown: charge the whole file bound.
                bytes_scanned += CATALOG_FILE_BYTES as u64;
                cached = Vec::new();
                cache = CacheState::Invalid;
            }
        }
        if bytes_scanned > CATALOG_SCAN_BYTES as u64 || Instant::now() > deadline {
            return Err(ErrorCode::CatalogLimit);
        }
        let mut reasons = Vec::new();
        match cache {
            CacheState::Missing if definition.is_some() => reasons.push("cache_missing"),
            CacheState::Invalid => reasons.push("cache_invalid"),
            CacheState::Empty => reasons.push("cache_empty"),
            _ => {}
        }
        if authentication == AuthenticationState::Unavailable {
            reasons.push("authentication_unavailable");
        }
        if wanted.is_empty() {
            reasons.push("no_enabled_models");
        } else if definition.is_some() && wanted.iter().any(|m| !cached.contains(m)) {
            reasons.push("enabled_model_not_cached");
        }
        if definition.is_none() {
            reasons.push("provider_not_configured");
        }
        providers.push(ProviderCatalogStatus {
            provider: name,
            cache,
            authentication,
            enabled_models: wanted.len() as u64,
            cached_models: match &read {
                CacheRead::Ready { cache, .. } => cache.models.len() as u64,
                _ => 0,
            },
            reasons: reasons.into_iter().map(str::to_owned).collect(),
        });
    }
    Ok(CatalogStatusResult {
        providers,
        notices: Vec::new(),
    })
}
