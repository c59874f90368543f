//! The per-provider model catalog caches: `<MC_HOME>/data/catalog/<provider>.json`,
//! written whole by a deliberate refresh and read, bounded and fail-closed, by every
//! catalog scan. The format is described in `docs/catalog.md`.
//!
//! A read never trusts the file: a symlink, a special file, a file over its bound, one
//! that does not parse exactly, names another provider, lists too many models, an
//! over-long or duplicate ID is [`CacheRead::Invalid`]. A write replaces the file
//! atomically, so a reader sees the old cache or the new one, never a mix.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use magi_protocol::limits::CATALOG_FILE_BYTES;
use magi_protocol::names::is_valid_name;

use crate::Home;
use crate::fs::{OpenError, open_regular};

mod format;
#[cfg(test)]
mod tests;

use format::{hex_digest, is_safe_text, parse, serialize};

/// The format number every cache file carries; any other is invalid.
pub const CACHE_FORMAT: u64 = 1;

/// One model of a provider's cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedModel {
    /// The provider's model ID, exactly as listed: 1 to `CATALOG_STRING_BYTES` bytes.
    pub id: String,
    /// The display name, when the provider gave one that is safe to show: at most
    /// `CATALOG_STRING_BYTES` bytes, no control characters, nothing secret-like.
    pub name: Option<String>,
    /// Whether the ID holds a control character or looks like a credential. Such an ID
    /// stays in the cache (the file is still valid) but must never be shown: the
    /// catalog omits it with the notice `catalog_entries_omitted_unsafe`.
    pub unsafe_id: bool,
    /// What the provider's list said the model can take, where it said.
    pub limits: CachedLimits,
}

/// What a provider's model list said one model can take; `None` where it did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CachedLimits {
    /// The context window in tokens.
    pub context_window: Option<u64>,
    /// The most tokens of one response.
    pub max_output_tokens: Option<u64>,
    /// Whether the model takes images.
    pub images: Option<bool>,
}

impl CachedModel {
    /// A model as a provider listed it: the ID kept as it is and marked when unsafe,
    /// the name dropped when it is not safe to show.
    pub fn new(id: String, name: Option<String>) -> CachedModel {
        let unsafe_id = !is_safe_text(&id);
        let name = name.filter(|n| is_safe_text(n));
        CachedModel {
            id,
            name,
            unsafe_id,
            limits: CachedLimits::default(),
        }
    }

    /// The model with what its provider said it can take.
    pub fn with_limits(self, limits: CachedLimits) -> CachedModel {
        CachedModel { limits, ..self }
    }
}

/// A provider's whole cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderCache {
    /// The provider it lists, following the protocol's name grammar.
    pub provider: String,
    /// When the list was fetched. Written to the millisecond.
    pub fetched_at: SystemTime,
    /// The models, in the provider's order, IDs unique.
    pub models: Vec<CachedModel>,
}

/// What reading a provider's cache found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheRead {
    /// There is no cache file (or no catalog folder).
    Missing,
    /// There is something, but it is not a cache that can be trusted: unsafe, unreadable,
    /// over its bound or malformed. Why is deliberately not said.
    Invalid,
    /// A valid cache.
    Ready {
        /// What it holds.
        cache: ProviderCache,
        /// Lowercase hex SHA-256 of the exact bytes read, so a later scan can tell
        /// whether the file changed.
        fingerprint: String,
        /// Bytes read.
        bytes: u64,
    },
}

/// The cache file of `provider`: `<root>/data/catalog/<provider>.json`, or `None` for
/// a name outside the protocol's name grammar (which would not be a safe file name).
pub fn cache_path(home: &Home, provider: &str) -> Option<PathBuf> {
    is_valid_name(provider).then(|| catalog_dir(home).join(format!("{provider}.json")))
}

/// Reads and validates the cache of `provider`. Fails closed: anything but a regular
/// file of at most `CATALOG_FILE_BYTES` bytes holding exactly the cache format for this
/// provider is [`CacheRead::Invalid`]; a provider name outside the grammar is too.
pub fn read_cache(home: &Home, provider: &str) -> CacheRead {
    let Some(path) = cache_path(home, provider) else {
        return CacheRead::Invalid;
    };
    // A symlinked catalog folder would lead the read anywhere.
    match std::fs::symlink_metadata(catalog_dir(home)) {
        Ok(meta) if meta.file_type().is_dir() => {}
        Ok(_) => return CacheRead::Invalid,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return CacheRead::Missing,
        Err(_) => return CacheRead::Invalid,
    }
    let file = match open_regular(&path) {
        Ok(file) => file,
        Err(OpenError::Missing) => return CacheRead::Missing,
        Err(OpenError::Unreadable | OpenError::Unsafe) => return CacheRead::Invalid,
    };
    // One byte past the bound tells "exactly at the bound" from "over it".
    let cap = u64::try_from(CATALOG_FILE_BYTES.saturating_add(1)).unwrap_or(u64::MAX);
    let mut bytes = Vec::new();
    if file.take(cap).read_to_end(&mut bytes).is_err() || bytes.len() > CATALOG_FILE_BYTES {
        return CacheRead::Invalid;
    }
    let Some(cache) = parse(&bytes, provider) else {
        return CacheRead::Invalid;
    };
    CacheRead::Ready {
        cache,
        fingerprint: hex_digest(&bytes),
        bytes: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
    }
}

/// Replaces the cache of `cache.provider` atomically: the content goes to a temporary
/// file in the same folder (created owner-only if missing), is synced, renamed over
/// the cache file, and the folder is synced. On any failure the previous cache file is
/// left as it was and the temporary file is removed.
///
/// Content that would not read back as a valid cache is refused before anything is
/// written: an invalid provider name, more than `CATALOG_MODELS` models, an empty or
/// over-long ID or a repeated one (`InvalidInput`), or a file over
/// `CATALOG_FILE_BYTES` (`FileTooLarge`). Names that are not safe to show are written
/// as `null`.
pub fn write_cache(home: &Home, cache: &ProviderCache) -> io::Result<()> {
    replace(home, cache, |_| Ok(()))
}

/// [`write_cache`] with a step run between syncing the temporary file and renaming it,
/// so tests can fail the replacement at its last moment.
fn replace(
    home: &Home,
    cache: &ProviderCache,
    before_rename: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<()> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_owned());
    let path = cache_path(home, &cache.provider).ok_or_else(|| invalid("invalid provider name"))?;
    let content = serialize(cache)?;
    if content.len() > CATALOG_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            "the catalog cache exceeds its bound",
        ));
    }
    let dir = catalog_dir(home);
    ensure_dir(&dir)?;
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        cache.provider,
        uuid::Uuid::new_v4().simple()
    ));
    let written = write_synced(&temp, &content)
        .and_then(|()| before_rename(&temp))
        .and_then(|()| std::fs::rename(&temp, &path));
    if let Err(error) = written {
        // The temporary file is ours; a failure to remove it leaves only litter that no
        // read ever looks at (its name never ends in `.json`).
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    // The rename is durable only once the folder's entry is.
    File::open(&dir)?.sync_all()
}

/// The catalog folder, `<root>/data/catalog`.
fn catalog_dir(home: &Home) -> PathBuf {
    home.root().join("data").join("catalog")
}

/// Creates the catalog folder owner-only if missing, and refuses one that is not a
/// real folder (a symlink would put the cache elsewhere).
fn ensure_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_dir() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the catalog folder is not a directory",
        ))
    }
}

/// Writes `content` to the new file `path` (owner-only, never through an existing
/// entry) and syncs it.
fn write_synced(path: &Path, content: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(content)?;
    file.sync_all()
}
