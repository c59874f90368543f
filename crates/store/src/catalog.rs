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

use magi_protocol::limits::{CATALOG_FILE_BYTES, CATALOG_MODELS, CATALOG_STRING_BYTES};
use magi_protocol::names::is_valid_name;
use magi_protocol::text::{has_control, is_secret_like};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Home;
use crate::fs::{OpenError, open_regular};

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
        }
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

/// The file as written on disk: exact field order, compact, no trailing newline.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCache {
    format: u64,
    provider: String,
    fetched_at: String,
    models: Vec<RawModel>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModel {
    id: String,
    // `deserialize_with` makes the field required: `null` is a value, absence is not.
    #[serde(deserialize_with = "Option::deserialize")]
    name: Option<String>,
}

fn serialize(cache: &ProviderCache) -> io::Result<Vec<u8>> {
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
fn parse(bytes: &[u8], provider: &str) -> Option<ProviderCache> {
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
        models.push(CachedModel::new(model.id, model.name));
    }
    Some(ProviderCache {
        provider: raw.provider,
        fetched_at,
        models,
    })
}

/// Whether `id` has the length of a cached model ID.
fn is_valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= CATALOG_STRING_BYTES
}

/// Whether `text` may be shown: 1 to `CATALOG_STRING_BYTES` bytes, no control
/// characters, nothing secret-like.
fn is_safe_text(text: &str) -> bool {
    is_valid_id(text) && !has_control(text) && !is_secret_like(text)
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::prepare(&dir.path().join("mc")).unwrap();
        (dir, home)
    }

    /// A time with whole milliseconds, so it survives the round trip.
    fn when() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(1_760_000_000_123)
    }

    fn cache(provider: &str, ids: &[&str]) -> ProviderCache {
        ProviderCache {
            provider: provider.to_owned(),
            fetched_at: when(),
            models: ids
                .iter()
                .map(|id| CachedModel::new((*id).to_owned(), Some(format!("Model {id}"))))
                .collect(),
        }
    }

    /// Writes raw content as the cache file of `provider`, creating the folder.
    fn plant(home: &Home, provider: &str, content: &[u8]) -> PathBuf {
        ensure_dir(&catalog_dir(home)).unwrap();
        let path = cache_path(home, provider).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    fn file(provider: &str, models: serde_json::Value) -> Vec<u8> {
        json!({
            "format": 1,
            "provider": provider,
            "fetched_at": "2025-10-09T08:53:20.123Z",
            "models": models,
        })
        .to_string()
        .into_bytes()
    }

    fn ready(read: CacheRead) -> (ProviderCache, String, u64) {
        match read {
            CacheRead::Ready {
                cache,
                fingerprint,
                bytes,
            } => (cache, fingerprint, bytes),
            other => panic!("not ready: {other:?}"),
        }
    }

    #[test]
    fn paths_follow_the_name_grammar() {
        let (_dir, home) = home();
        assert_eq!(
            cache_path(&home, "openai").unwrap(),
            home.root().join("data/catalog/openai.json")
        );
        for bad in ["", "a/b", "..\u{0}", "x y", &"a".repeat(65)] {
            assert_eq!(cache_path(&home, bad), None, "{bad:?}");
            assert_eq!(read_cache(&home, bad), CacheRead::Invalid);
            assert_eq!(
                write_cache(&home, &cache(bad, &["m"])).unwrap_err().kind(),
                io::ErrorKind::InvalidInput
            );
        }
    }

    #[test]
    fn a_missing_folder_or_file_is_missing() {
        let (_dir, home) = home();
        assert_eq!(read_cache(&home, "openai"), CacheRead::Missing);
        ensure_dir(&catalog_dir(&home)).unwrap();
        assert_eq!(read_cache(&home, "openai"), CacheRead::Missing);
    }

    #[test]
    fn a_round_trip_keeps_everything_and_creates_an_owner_only_folder() {
        let (_dir, home) = home();
        let written = cache("openai-chat", &["gpt-5", "qwen2.5-coder:32b"]);
        write_cache(&home, &written).unwrap();
        let mode = std::fs::metadata(catalog_dir(&home))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let path = cache_path(&home, "openai-chat").unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        let (read, fingerprint, bytes) = ready(read_cache(&home, "openai-chat"));
        assert_eq!(read, written);
        assert_eq!(bytes, on_disk.len() as u64);
        assert_eq!(fingerprint, hex_digest(&on_disk));
        assert_eq!(fingerprint.len(), 64);
        let value: serde_json::Value = serde_json::from_slice(&on_disk).unwrap();
        assert_eq!(
            value,
            json!({
                "format": 1,
                "provider": "openai-chat",
                "fetched_at": "2025-10-09T08:53:20.123Z",
                "models": [
                    { "id": "gpt-5", "name": "Model gpt-5" },
                    { "id": "qwen2.5-coder:32b", "name": "Model qwen2.5-coder:32b" },
                ],
            })
        );
        // Nothing but the cache is left in the folder.
        let names: Vec<_> = std::fs::read_dir(catalog_dir(&home))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["openai-chat.json"]);
    }

    #[test]
    fn an_empty_list_is_a_valid_cache() {
        let (_dir, home) = home();
        write_cache(&home, &cache("anthropic", &[])).unwrap();
        let (read, _, _) = ready(read_cache(&home, "anthropic"));
        assert!(read.models.is_empty());
    }

    #[test]
    fn the_fingerprint_follows_the_content() {
        let (_dir, home) = home();
        write_cache(&home, &cache("openai", &["a"])).unwrap();
        let (_, first, _) = ready(read_cache(&home, "openai"));
        let (_, again, _) = ready(read_cache(&home, "openai"));
        assert_eq!(first, again);
        write_cache(&home, &cache("openai", &["a", "b"])).unwrap();
        let (_, second, _) = ready(read_cache(&home, "openai"));
        assert_ne!(first, second);
    }

    #[test]
    fn symlinks_folders_and_special_entries_are_invalid() {
        let (dir, home) = home();
        let target = dir.path().join("elsewhere.json");
        std::fs::write(&target, file("openai", json!([]))).unwrap();
        ensure_dir(&catalog_dir(&home)).unwrap();
        let path = cache_path(&home, "openai").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
        // A dangling symlink is not "missing": something is there.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &path).unwrap();
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
    }

    #[test]
    fn a_symlinked_catalog_folder_is_refused_for_reads_and_writes() {
        let (dir, home) = home();
        let real = dir.path().join("real-catalog");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("openai.json"), file("openai", json!([]))).unwrap();
        std::os::unix::fs::symlink(&real, catalog_dir(&home)).unwrap();
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
        assert!(write_cache(&home, &cache("openai", &["m"])).is_err());
        assert_eq!(
            std::fs::read(real.join("openai.json")).unwrap(),
            file("openai", json!([]))
        );
    }

    #[test]
    fn the_byte_bound_is_inclusive() {
        let (_dir, home) = home();
        let base = file("openai", json!([]));
        // JSON allows trailing whitespace: pad to exactly the bound, then one more.
        let mut exact = base.clone();
        exact.resize(CATALOG_FILE_BYTES, b' ');
        plant(&home, "openai", &exact);
        let (_, _, bytes) = ready(read_cache(&home, "openai"));
        assert_eq!(bytes, CATALOG_FILE_BYTES as u64);
        let mut over = base;
        over.resize(CATALOG_FILE_BYTES + 1, b' ');
        plant(&home, "openai", &over);
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
    }

    #[test]
    fn malformed_files_are_invalid() {
        let (_dir, home) = home();
        let good = json!({
            "format": 1,
            "provider": "openai",
            "fetched_at": "2025-10-09T08:53:20Z",
            "models": [{ "id": "m", "name": null }],
        });
        plant(&home, "openai", good.to_string().as_bytes());
        assert!(matches!(
            read_cache(&home, "openai"),
            CacheRead::Ready { .. }
        ));
        let mut cases: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"{".to_vec(),
            b"\xff\xfe".to_vec(),
            b"[]".to_vec(),
            good.to_string()
                .replace("\"format\":1", "\"format\":1,\"format\":1")
                .into_bytes(),
        ];
        let mut variant = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut value = good.clone();
            edit(&mut value);
            cases.push(value.to_string().into_bytes());
        };
        variant(&|v| v["format"] = json!(2));
        variant(&|v| v["format"] = json!("1"));
        variant(&|v| v["extra"] = json!(true));
        variant(&|v| {
            v.as_object_mut().unwrap().remove("fetched_at");
        });
        variant(&|v| v["fetched_at"] = json!("yesterday"));
        variant(&|v| v["fetched_at"] = json!("2025-10-09T08:53:20+02:00"));
        variant(&|v| v["models"] = json!({}));
        variant(&|v| v["models"] = json!([{ "id": "m" }]));
        variant(&|v| v["models"] = json!([{ "id": "m", "name": null, "x": 1 }]));
        variant(&|v| v["models"] = json!([{ "id": 7, "name": null }]));
        variant(&|v| v["models"] = json!([{ "id": "", "name": null }]));
        variant(&|v| v["models"] = json!([{ "id": "m", "name": 3 }]));
        for (i, case) in cases.iter().enumerate() {
            plant(&home, "openai", case);
            assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid, "case {i}");
        }
    }

    #[test]
    fn another_providers_file_is_invalid() {
        let (_dir, home) = home();
        plant(&home, "openai", &file("anthropic", json!([])));
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
    }

    #[test]
    fn duplicate_ids_are_invalid_and_never_written() {
        let (_dir, home) = home();
        let models = json!([{ "id": "m", "name": null }, { "id": "m", "name": "M" }]);
        plant(&home, "openai", &file("openai", models));
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
        let error = write_cache(&home, &cache("openai", &["a", "b", "a"])).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn the_model_bound_is_inclusive() {
        let (_dir, home) = home();
        let ids: Vec<String> = (0..=CATALOG_MODELS).map(|i| format!("m{i}")).collect();
        let models = |n: usize| {
            serde_json::Value::Array(
                ids[..n]
                    .iter()
                    .map(|id| json!({ "id": id, "name": null }))
                    .collect(),
            )
        };
        plant(&home, "openai", &file("openai", models(CATALOG_MODELS)));
        let (read, _, _) = ready(read_cache(&home, "openai"));
        assert_eq!(read.models.len(), CATALOG_MODELS);
        plant(&home, "openai", &file("openai", models(CATALOG_MODELS + 1)));
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let error = write_cache(&home, &cache("openai", &refs)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn an_over_long_id_invalidates_the_file_and_is_never_written() {
        let (_dir, home) = home();
        let longest = "i".repeat(CATALOG_STRING_BYTES);
        plant(
            &home,
            "openai",
            &file("openai", json!([{ "id": longest, "name": null }])),
        );
        assert!(matches!(
            read_cache(&home, "openai"),
            CacheRead::Ready { .. }
        ));
        let over = "i".repeat(CATALOG_STRING_BYTES + 1);
        plant(
            &home,
            "openai",
            &file("openai", json!([{ "id": over, "name": null }])),
        );
        assert_eq!(read_cache(&home, "openai"), CacheRead::Invalid);
        let error = write_cache(&home, &cache("openai", &[&over])).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn unsafe_ids_are_kept_but_marked_and_unsafe_names_dropped() {
        let (_dir, home) = home();
        let secret = format!("sk-{}", "a1".repeat(20));
        let models = json!([
            { "id": "plain", "name": "Plain" },
            { "id": "bell\u{7}", "name": null },
            { "id": secret, "name": "Secret" },
            { "id": "named-badly", "name": "x\u{1b}[31m" },
            { "id": "named-long", "name": "n".repeat(CATALOG_STRING_BYTES + 1) },
            { "id": "named-secret", "name": format!("ghp_{}", "b".repeat(30)) },
            { "id": "named-empty", "name": "" },
        ]);
        plant(&home, "openai", &file("openai", models));
        let (read, _, _) = ready(read_cache(&home, "openai"));
        let got: Vec<(&str, Option<&str>, bool)> = read
            .models
            .iter()
            .map(|m| (m.id.as_str(), m.name.as_deref(), m.unsafe_id))
            .collect();
        assert_eq!(
            got,
            [
                ("plain", Some("Plain"), false),
                ("bell\u{7}", None, true),
                (secret.as_str(), Some("Secret"), true),
                ("named-badly", None, false),
                ("named-long", None, false),
                ("named-secret", None, false),
                ("named-empty", None, false),
            ]
        );
        // Written back, unsafe names become null and unsafe IDs stay.
        let mut raw = read.clone();
        raw.models[3].name = Some("x\u{1b}[31m".to_owned());
        write_cache(&home, &raw).unwrap();
        let (again, _, _) = ready(read_cache(&home, "openai"));
        assert_eq!(again, read);
    }

    #[test]
    fn a_failed_replacement_keeps_the_previous_file() {
        let (_dir, home) = home();
        write_cache(&home, &cache("openai", &["old"])).unwrap();
        let path = cache_path(&home, "openai").unwrap();
        let before = std::fs::read(&path).unwrap();

        // Failing at the last moment, after the new content was synced.
        let failed = replace(&home, &cache("openai", &["new"]), |temp| {
            assert!(temp.exists());
            Err(io::Error::other("injected"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), before);

        // Content refused before anything is written.
        // Control characters are written as six-byte escapes: 2,048 such IDs of 256
        // bytes are far over the file bound.
        let huge: Vec<String> = (0..CATALOG_MODELS)
            .map(|i| format!("{i:04}{}", "\u{1}".repeat(CATALOG_STRING_BYTES - 4)))
            .collect();
        let refs: Vec<&str> = huge.iter().map(String::as_str).collect();
        let error = write_cache(&home, &cache("openai", &refs)).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(std::fs::read(&path).unwrap(), before);

        let names: Vec<_> = std::fs::read_dir(catalog_dir(&home))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["openai.json"], "no temporary file is left");
    }

    #[test]
    fn a_rename_onto_a_directory_fails_and_leaves_it() {
        let (_dir, home) = home();
        ensure_dir(&catalog_dir(&home)).unwrap();
        let path = cache_path(&home, "openai").unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("keep"), b"x").unwrap();
        assert!(write_cache(&home, &cache("openai", &["m"])).is_err());
        assert_eq!(std::fs::read(path.join("keep")).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(catalog_dir(&home)).unwrap().count(), 1);
    }

    #[test]
    fn a_replacement_replaces_a_symlink_not_its_target() {
        let (dir, home) = home();
        let target = dir.path().join("target.json");
        std::fs::write(&target, b"untouched").unwrap();
        ensure_dir(&catalog_dir(&home)).unwrap();
        let path = cache_path(&home, "openai").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        write_cache(&home, &cache("openai", &["m"])).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"untouched");
        assert!(matches!(
            read_cache(&home, "openai"),
            CacheRead::Ready { .. }
        ));
    }
}
