//! The catalog cache's tests: reads that fail closed, and atomic, exact writes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use magi_protocol::limits::{CATALOG_MODELS, CATALOG_STRING_BYTES};
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

#[test]
fn limits_are_written_where_known_and_read_back() {
    let (_dir, home) = home();
    let mut written = cache("local", &["big", "plain"]);
    written.models[0] = written.models[0].clone().with_limits(CachedLimits {
        context_window: Some(4096),
        max_output_tokens: None,
        images: Some(true),
    });
    write_cache(&home, &written).unwrap();
    let text = std::fs::read_to_string(cache_path(&home, "local").unwrap()).unwrap();
    assert!(
        text.contains(r#"{"id":"big","name":"Model big","context_window":4096,"images":true}"#),
        "{text}"
    );
    assert!(
        text.contains(r#"{"id":"plain","name":"Model plain"}"#),
        "{text}"
    );
    let (read, _, _) = ready(read_cache(&home, "local"));
    assert_eq!(read, written);
}
