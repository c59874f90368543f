//! `model.cached`: one provider's cached model list, paged, each model with its safe
//! display name and whether `providers.catalog.enabled` names it. It is what a front end
//! offers a person to enable after a refresh, since `model.catalog` lists enabled
//! models only. Nothing is fetched.
//!
//! One listing per child, apart from the catalog's snapshot: a fresh request reads the
//! cache and replaces the listing; a continuation reads the cache again and pages the
//! listing only if its bytes did not change, otherwise the listing is stale for good
//! (`stale_catalog`), as a catalog snapshot is.

use magi_config::{Settings, provider_names};
use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    CATALOG_PAGE_BYTES, CATALOG_PAGE_ENTRIES, CATALOG_SNAPSHOT_BYTES, CATALOG_STRING_BYTES,
};
use magi_protocol::messages::{CacheState, CachedModelEntry, ModelCachedParams, ModelCachedResult};
use magi_protocol::names::is_valid_name;
use magi_protocol::text::safe_display_name;
use magi_store::Home;
use magi_store::catalog::{CacheRead, read_cache};

use super::{NOTICE_UNSAFE_OMITTED, enabled_pairs, is_safe_identifier, push_once};
use crate::paging::{Snapshot, page_end, serialized_len};

/// The child's `model.cached` state: at most one listing.
#[derive(Debug, Default)]
pub struct CachedListing {
    snapshot: Option<Snapshot<Listing>>,
}

/// One read of a provider's cache, as it is listed.
#[derive(Debug)]
struct Listing {
    provider: String,
    cache: CacheState,
    /// The SHA-256 of the cache's bytes; `None` without a valid cache.
    fingerprint: Option<String>,
    models: Vec<CachedModelEntry>,
    notices: Vec<String>,
}

/// Checks `model.cached` params beyond their shape, before any state: a provider of 1
/// to 256 bytes and a cursor following the name grammar. Anything else is
/// `invalid_params`.
pub fn check_cached_params(params: &ModelCachedParams) -> Result<(), ErrorCode> {
    let provider_ok = !params.provider.is_empty() && params.provider.len() <= CATALOG_STRING_BYTES;
    let cursor_ok = params.cursor.as_deref().is_none_or(is_valid_name);
    if provider_ok && cursor_ok {
        Ok(())
    } else {
        Err(ErrorCode::InvalidParams)
    }
}

impl CachedListing {
    /// `model.cached`: the first page of a fresh listing of `params.provider`'s cache,
    /// or the page after a cursor the current listing issued.
    pub fn page(
        &mut self,
        home: &Home,
        settings: &Settings,
        params: &ModelCachedParams,
    ) -> Result<ModelCachedResult, ErrorCode> {
        check_cached_params(params)?;
        if !provider_names(settings).contains(&params.provider) {
            return Err(ErrorCode::SelectionInvalid);
        }
        let Some(cursor) = &params.cursor else {
            // A fresh request replaces the listing, even when it fails.
            self.snapshot = None;
            let listing = read_listing(home, settings, &params.provider)?;
            return self.snapshot.insert(Snapshot::new('m', listing)).page(0);
        };
        let snapshot = self.snapshot.as_mut().ok_or(ErrorCode::StaleCatalog)?;
        // A cursor is its listing's revision, a dot and an index.
        let revision = cursor.rsplit_once('.').map_or("", |(revision, _)| revision);
        let start = snapshot.resume(revision, cursor, ErrorCode::StaleCatalog)?;
        if snapshot.scan.provider != params.provider {
            return Err(ErrorCode::StaleCatalog);
        }
        match read_listing(home, settings, &params.provider) {
            Ok(now)
                if now.fingerprint.is_some() && now.fingerprint == snapshot.scan.fingerprint =>
            {
                snapshot.page(start)
            }
            // Changed, gone, unreadable or over a bound: stale for good.
            _ => {
                snapshot.stale = true;
                Err(ErrorCode::StaleCatalog)
            }
        }
    }
}

impl Snapshot<Listing> {
    fn page(&mut self, start: usize) -> Result<ModelCachedResult, ErrorCode> {
        let models = &self.scan.models;
        let envelope = ModelCachedResult {
            provider: self.scan.provider.clone(),
            cache: self.scan.cache,
            models: Vec::new(),
            next_cursor: Some(self.revision.cursor(models.len())),
            notices: self.scan.notices.clone(),
        };
        let end = page_end(
            &envelope,
            models,
            start,
            CATALOG_PAGE_ENTRIES,
            CATALOG_PAGE_BYTES,
            ErrorCode::CatalogLimit,
        )?;
        let page = models.get(start..end).unwrap_or_default().to_vec();
        let next_cursor = self.cursor_after(end, self.scan.models.len());
        Ok(ModelCachedResult {
            models: page,
            next_cursor,
            ..envelope
        })
    }
}

/// Reads `provider`'s cache into a listing: its models that may be shown (IDs neither
/// empty, control-bearing nor secret-like; the others left out with a notice), in the
/// list's order. No valid cache is an empty listing that says why.
fn read_listing(home: &Home, settings: &Settings, provider: &str) -> Result<Listing, ErrorCode> {
    let mut listing = Listing {
        provider: provider.to_owned(),
        cache: CacheState::Missing,
        fingerprint: None,
        models: Vec::new(),
        notices: Vec::new(),
    };
    let (cache, fingerprint) = match read_cache(home, provider) {
        CacheRead::Missing => return Ok(listing),
        CacheRead::Invalid => {
            listing.cache = CacheState::Invalid;
            return Ok(listing);
        }
        CacheRead::Ready {
            cache, fingerprint, ..
        } => (cache, fingerprint),
    };
    listing.cache = if cache.models.is_empty() {
        CacheState::Empty
    } else {
        CacheState::Ready
    };
    listing.fingerprint = Some(fingerprint);
    let enabled = enabled_pairs(settings);
    for model in cache.models {
        if model.unsafe_id || !is_safe_identifier(&model.id) {
            push_once(&mut listing.notices, NOTICE_UNSAFE_OMITTED);
            continue;
        }
        listing.models.push(CachedModelEntry {
            enabled: enabled.contains(&(provider, model.id.as_str())),
            display_name: model
                .name
                .as_deref()
                .and_then(safe_display_name)
                .map(str::to_owned),
            model: model.id,
        });
    }
    if serialized_len(&listing.models, ErrorCode::CatalogLimit)? > CATALOG_SNAPSHOT_BYTES {
        return Err(ErrorCode::CatalogLimit);
    }
    Ok(listing)
}
