//! Read-only session discovery (`session.list`) through the real binary, against
//! hand-written session logs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    Eligibility, SessionDiscoverParams, SessionListParams, SessionListResult,
};
use magi_protocol::methods;
use serde_json::json;

const SESSION: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

/// The `session_meta` record of a session of the test's working directory.
fn meta(env: &TestEnv, id: &str) -> String {
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    record(id, "session_meta", json!({"cwd": cwd}))
}

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend
        .initialize(&["session.list", "session.open", "status", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    backend
}

async fn list(
    backend: &mut Backend,
    params: SessionListParams,
) -> Result<SessionListResult, ErrorCode> {
    backend.call::<methods::SessionList>(&params).await.unwrap()
}

/// A fresh listing of at most `limit` sessions a page.
fn first_page(limit: u64) -> SessionListParams {
    SessionListParams {
        limit: Some(limit),
        ..SessionListParams::default()
    }
}

/// The page after `cursor` of the listing `revision`.
fn next_page(revision: &str, cursor: &str, limit: Option<u64>) -> SessionListParams {
    SessionListParams {
        revision: Some(revision.to_owned()),
        cursor: Some(cursor.to_owned()),
        limit,
    }
}

fn ids(result: &SessionListResult) -> Vec<&str> {
    result
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect()
}

/// Every file under `dir` with its content, to show that listing wrote nothing.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

#[tokio::test]
async fn lists_this_workspace_in_id_order_with_titles_and_times() {
    let env = TestEnv::new();
    // Written in an order unlike the ID order.
    write_log(
        &env,
        "c-third",
        &[
            meta(&env, "c-third"),
            record_at(
                "c-third",
                "2026-11-05T08:30:00.125Z",
                "title",
                json!({"title": "Refactor the parser"}),
            ),
            record_at(
                "c-third",
                "2026-11-02T00:00:00Z",
                "compaction",
                json!({"summary": "older turns", "title": "Compacted title"}),
            ),
        ]
        .concat(),
    );
    write_log(&env, "a-first", &meta(&env, "a-first"));
    // A legacy log without any recorded working directory, and a long title.
    let long = "word ".repeat(20);
    write_log(
        &env,
        "b-second",
        &record("b-second", "title", json!({"title": long})),
    );
    // An empty log: no time, no title, unverified.
    write_log(&env, "B-upper", "");
    // Titles that are not shown.
    write_log(
        &env,
        "d-unsafe",
        &[
            meta(&env, "d-unsafe"),
            record("d-unsafe", "title", json!({"title": "line\nbreak"})),
        ]
        .concat(),
    );
    write_log(
        &env,
        "e-secret",
        &[
            meta(&env, "e-secret"),
            record("e-secret", "title", json!({"title": "use sk-abc123def456"})),
        ]
        .concat(),
    );
    // Other working directories: a recorded cwd elsewhere, one that does not exist,
    // a relative one, and a log in another workspace's folder.
    write_log(
        &env,
        "x-elsewhere",
        &record(
            "x-elsewhere",
            "session_meta",
            json!({"cwd": env.root().display().to_string()}),
        ),
    );
    write_log(
        &env,
        "x-missing",
        &record("x-missing", "session_meta", json!({"cwd": "/no/such/dir"})),
    );
    write_log(
        &env,
        "x-relative",
        &record("x-relative", "session_meta", json!({"cwd": "work"})),
    );
    let other = env
        .mc_home()
        .join("sessions/0000000000000000000000000000beef");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("y-other.jsonl"), meta(&env, "y-other")).unwrap();
    // Names that are not logs are ignored.
    write_file(&env, "notes.txt", "hello");
    write_file(&env, "a-first.jsonl.tmp", "{");

    let mut backend = ready(&env).await;
    let before = tree(&env.mc_home());
    let result = list(&mut backend, SessionListParams::default())
        .await
        .unwrap();
    assert_eq!(
        ids(&result),
        vec![
            "B-upper", "a-first", "b-second", "c-third", "d-unsafe", "e-secret"
        ]
    );
    assert!(result.complete && result.next_cursor.is_none());
    assert!(result.notices.is_empty());
    assert!(result.revision.len() <= 64);

    let by_id: BTreeMap<&str, _> = result
        .sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s))
        .collect();
    let upper = by_id["B-upper"];
    assert_eq!(
        (upper.title.as_deref(), upper.updated_at.as_deref()),
        (None, None)
    );
    assert_eq!(upper.eligibility, Eligibility::CwdUnverified);
    assert_eq!(upper.notices, vec!["cwd_unverified"]);
    let first = by_id["a-first"];
    assert_eq!(first.title, None);
    assert_eq!(
        first.updated_at.as_deref(),
        Some("2026-11-01T10:00:00.000Z")
    );
    assert_eq!(first.eligibility, Eligibility::Available);
    assert!(first.notices.is_empty());
    let second = by_id["b-second"];
    assert_eq!(second.eligibility, Eligibility::CwdUnverified);
    assert_eq!(
        second.title.as_deref(),
        Some("word word word word word word word word word word")
    );
    let third = by_id["c-third"];
    // The last title-bearing record wins; the greatest time wins, wherever it is.
    assert_eq!(third.title.as_deref(), Some("Compacted title"));
    assert_eq!(
        third.updated_at.as_deref(),
        Some("2026-11-05T08:30:00.125Z")
    );
    assert_eq!(by_id["d-unsafe"].title, None);
    assert_eq!(by_id["e-secret"].title, None);

    // Listing wrote nothing, took no lease, and attached nothing.
    assert_eq!(tree(&env.mc_home()), before);
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(status.session_id, None);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn invalid_logs_are_omitted_with_one_notice() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &meta(&env, SESSION));
    write_log(&env, "malformed-1", "{not json}\n");
    write_log(
        &env,
        "blank-1",
        &format!("\n{}", record("blank-1", "title", json!({"title": "x"}))),
    );
    write_log(
        &env,
        "foreign-1",
        &record("someone-else", "title", json!({"title": "x"})),
    );
    let target = env.root().join("target.jsonl");
    std::fs::write(&target, record("link-1", "title", json!({"title": "x"}))).unwrap();
    std::os::unix::fs::symlink(&target, log_path(&env, "link-1")).unwrap();
    std::fs::create_dir(log_path(&env, "dir-1")).unwrap();

    let mut backend = ready(&env).await;
    let result = list(&mut backend, SessionListParams::default())
        .await
        .unwrap();
    assert_eq!(ids(&result), vec![SESSION]);
    assert_eq!(result.notices, vec!["sessions_omitted_invalid"]);
    assert!(result.complete);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_session_held_by_another_child_is_busy_but_not_to_its_holder() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &meta(&env, SESSION));
    write_log(&env, "other-1", &meta(&env, "other-1"));
    let mut holder = ready(&env).await;
    let mut other = ready(&env).await;
    open_session(&mut holder, SESSION).await.unwrap();

    let seen = list(&mut other, SessionListParams::default())
        .await
        .unwrap();
    let eligibility: Vec<_> = seen.sessions.iter().map(|s| s.eligibility).collect();
    assert_eq!(ids(&seen), vec![SESSION, "other-1"]);
    assert_eq!(eligibility, vec![Eligibility::Busy, Eligibility::Available]);

    let own = list(&mut holder, SessionListParams::default())
        .await
        .unwrap();
    let eligibility: Vec<_> = own.sessions.iter().map(|s| s.eligibility).collect();
    assert_eq!(
        eligibility,
        vec![Eligibility::Available, Eligibility::Available]
    );
    // Listing changed no attachment.
    let status = holder.status().await.unwrap().unwrap();
    assert_eq!(status.session_id.as_deref(), Some(SESSION));

    // Once the holder is gone, its lease file is too.
    shutdown_clean(&mut holder).await;
    let seen = list(&mut other, SessionListParams::default())
        .await
        .unwrap();
    assert_eq!(seen.sessions[0].eligibility, Eligibility::Available);
    shutdown_clean(&mut other).await;
}

#[tokio::test]
async fn pages_follow_cursors_and_a_change_is_stale_for_good() {
    let env = TestEnv::new();
    for n in 0..5 {
        let id = format!("s{n}");
        write_log(&env, &id, &meta(&env, &id));
    }
    let mut backend = ready(&env).await;
    let mut pages = Vec::new();
    let mut page = list(&mut backend, first_page(2)).await.unwrap();
    let revision = page.revision.clone();
    loop {
        assert_eq!(page.revision, revision);
        pages.push(ids(&page).join(","));
        let Some(cursor) = page.next_cursor.clone() else {
            assert!(page.complete);
            break;
        };
        assert!(!page.complete);
        page = list(&mut backend, next_page(&revision, &cursor, Some(2)))
            .await
            .unwrap();
    }
    assert_eq!(pages, vec!["s0,s1", "s2,s3", "s4"]);

    let first = list(&mut backend, first_page(1)).await.unwrap();
    assert_ne!(first.revision, revision);
    assert_eq!(ids(&first), vec!["s0"]);
    let cursor = first.next_cursor.clone().unwrap();
    let second = list(&mut backend, next_page(&first.revision, &cursor, Some(1)))
        .await
        .unwrap();
    assert_eq!(ids(&second), vec!["s1"]);
    // The fresh listing replaced the older snapshot.
    assert_eq!(
        list(
            &mut backend,
            next_page(&revision, &format!("{revision}.2"), None)
        )
        .await,
        Err(ErrorCode::StaleRevision)
    );
    // A cursor this snapshot never issued is stale.
    assert_eq!(
        list(
            &mut backend,
            next_page(&first.revision, &format!("{}.4", first.revision), None)
        )
        .await,
        Err(ErrorCode::StaleRevision)
    );

    // A log changes: the snapshot is stale, and stays stale.
    let path = log_path(&env, "s3");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&record("s3", "title", json!({"title": "new"})));
    std::fs::write(&path, text).unwrap();
    let next = next_page(&first.revision, &cursor, Some(1));
    assert_eq!(
        list(&mut backend, next.clone()).await,
        Err(ErrorCode::StaleRevision)
    );
    assert_eq!(
        list(&mut backend, next).await,
        Err(ErrorCode::StaleRevision)
    );
    // A fresh listing works and sees the change.
    let fresh = list(&mut backend, SessionListParams::default())
        .await
        .unwrap();
    assert_eq!(fresh.sessions.len(), 5);
    assert_eq!(fresh.sessions[3].title.as_deref(), Some("new"));
    assert!(fresh.complete);

    // A session file that goes away is a change too.
    let fresh = list(&mut backend, first_page(2)).await.unwrap();
    std::fs::remove_file(log_path(&env, "s4")).unwrap();
    let next = SessionListParams {
        revision: Some(fresh.revision),
        cursor: fresh.next_cursor,
        limit: None,
    };
    assert_eq!(
        list(&mut backend, next).await,
        Err(ErrorCode::StaleRevision)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn params_are_checked_before_anything_else() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &meta(&env, SESSION));
    let mut backend = ready(&env).await;
    let listed = list(&mut backend, first_page(1)).await.unwrap();
    let revision = listed.revision.clone();
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 101}),
        json!({"limit": -1}),
        json!({"limit": 1.5}),
        json!({"limit": "1"}),
        json!({"limit": null}),
        json!({"revision": revision}),
        json!({"cursor": format!("{revision}.1")}),
        json!({"revision": revision, "cursor": null}),
        json!({"revision": null, "cursor": "c"}),
        json!({"revision": "bad revision", "cursor": "c"}),
        json!({"revision": revision, "cursor": "c".repeat(65)}),
        json!({"revision": "", "cursor": "c"}),
        json!({"revision": 1, "cursor": "c"}),
        json!({"extra": 1}),
    ] {
        let response = backend
            .request_raw("session.list", bad.clone())
            .await
            .unwrap();
        assert_eq!(response.outcome, Err(ErrorCode::InvalidParams), "{bad}");
    }
    // Explicit nulls and limits at their bounds are fine.
    assert!(
        list(
            &mut backend,
            // Typed params send the revision and cursor as explicit nulls.
            first_page(100)
        )
        .await
        .is_ok()
    );
    // A duplicate field, which no JSON object value can hold.
    let mut duplicate = br#"{"protocol":"magi-code.local-agent","version":1,"id":"dup-1","method":"session.list","params":{"limit":1,"limit":2}}"#.to_vec();
    duplicate.push(b'\n');
    backend.send_raw(&duplicate).await.unwrap();
    expect_error(&mut backend, Some("dup-1"), "invalid_params").await;

    // While another session operation runs: bad params are still `invalid_params`,
    // good ones are `busy`. All frames arrive in one read, so the open still owns
    // the session worker when the listings are admitted.
    let mut bytes = frame("raw-open", "session.open", json!({"session_id": SESSION}));
    bytes.extend_from_slice(&frame("raw-list", "session.list", json!({})));
    bytes.extend_from_slice(&frame("raw-bad", "session.list", json!({"limit": 0})));
    backend.send_raw(&bytes).await.unwrap();
    let mut answers = BTreeMap::new();
    for _ in 0..3 {
        let response = next_response(&mut backend).await;
        answers.insert(response.id.clone().unwrap(), response.outcome);
    }
    assert!(answers["raw-open"].is_ok());
    assert_eq!(answers["raw-list"], Err(ErrorCode::Busy));
    assert_eq!(answers["raw-bad"], Err(ErrorCode::InvalidParams));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn session_list_before_initialization() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    assert_eq!(
        list(&mut backend, SessionListParams::default()).await,
        Err(ErrorCode::NotInitialized)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_missing_or_empty_folder_is_an_empty_complete_list() {
    let env = TestEnv::new();
    let mut backend = ready(&env).await;
    assert!(!workspace_dir(&env).exists());
    let empty = list(&mut backend, SessionListParams::default())
        .await
        .unwrap();
    assert!(empty.sessions.is_empty() && empty.notices.is_empty());
    assert!(empty.complete && empty.next_cursor.is_none());
    // Listing did not create the folder.
    assert!(!workspace_dir(&env).exists());
    std::fs::create_dir_all(workspace_dir(&env)).unwrap();
    let empty = list(&mut backend, first_page(1)).await.unwrap();
    assert!(empty.sessions.is_empty() && empty.complete && empty.next_cursor.is_none());
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn an_invalid_log_name_makes_discovery_unavailable() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &meta(&env, SESSION));
    let mut backend = ready(&env).await;
    for name in [
        "has space.jsonl",
        "a.b.jsonl",
        ".jsonl",
        &format!("{}.jsonl", "x".repeat(65)),
    ] {
        let path = write_file(&env, name, "");
        assert_eq!(
            list(&mut backend, SessionListParams::default()).await,
            Err(ErrorCode::DiscoveryUnavailable),
            "{name}"
        );
        std::fs::remove_file(path).unwrap();
    }
    assert_eq!(
        ids(&list(&mut backend, SessionListParams::default())
            .await
            .unwrap()),
        vec![SESSION]
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_directory_bound_counts_every_entry() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &meta(&env, SESSION));
    // With the log, 4,096 entries: at the bound.
    for n in 1..4_096 {
        write_file(&env, &format!("sidecar-{n}"), "");
    }
    let mut backend = ready(&env).await;
    assert_eq!(
        ids(&list(&mut backend, SessionListParams::default())
            .await
            .unwrap()),
        vec![SESSION]
    );
    write_file(&env, "one-more", "");
    assert_eq!(
        list(&mut backend, SessionListParams::default()).await,
        Err(ErrorCode::DiscoveryLimit)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_snapshot_holds_at_most_256_sessions() {
    let env = TestEnv::new();
    for n in 0..256 {
        let id = format!("s{n:03}");
        write_log(&env, &id, &meta(&env, &id));
    }
    let mut backend = ready(&env).await;
    let mut sizes = Vec::new();
    let mut page = list(&mut backend, SessionListParams::default())
        .await
        .unwrap();
    loop {
        assert!(serde_json::to_vec(&page).unwrap().len() <= 32_768);
        sizes.push(page.sessions.len());
        let Some(cursor) = page.next_cursor.clone() else {
            assert!(page.complete);
            break;
        };
        page = list(&mut backend, next_page(&page.revision, &cursor, None))
            .await
            .unwrap();
    }
    assert_eq!(sizes, vec![100, 100, 56]);

    write_log(&env, "s256", &meta(&env, "s256"));
    assert_eq!(
        list(&mut backend, SessionListParams::default()).await,
        Err(ErrorCode::DiscoveryLimit)
    );
    // Sessions of other workspaces do not count.
    std::fs::write(
        log_path(&env, "s256"),
        record("s256", "session_meta", json!({"cwd": "/elsewhere"})),
    )
    .unwrap();
    assert_eq!(
        list(&mut backend, SessionListParams::default())
            .await
            .unwrap()
            .sessions
            .len(),
        100
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn discover_visits_every_session_once_in_bounded_batches() {
    let env = TestEnv::new();
    // 150 sessions with a prompt each: more than one batch of 64 logs.
    let mut ids: Vec<String> = (0..150)
        .map(|n| format!("0190a1b2-c3d4-7e5f-8a9b-{n:012}"))
        .collect();
    for id in &ids {
        let log = [
            meta(&env, id),
            record(id, "turn_started", json!({"turn_id": "t"})),
            record(
                id,
                "user_input",
                json!({"turn_id": "t", "message_id": "u", "text": "hello"}),
            ),
            record(
                id,
                "turn_finished",
                json!({"turn_id": "t", "outcome": "completed"}),
            ),
        ]
        .concat();
        write_log(&env, id, &log);
    }
    ids.sort();
    let mut backend = env.spawn();
    backend
        .initialize(&["session.discover", "session.list", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let mut seen = Vec::new();
    let mut params = SessionDiscoverParams::default();
    let mut batches = 0;
    loop {
        let batch = backend
            .call::<methods::SessionDiscover>(&params)
            .await
            .unwrap()
            .unwrap();
        batches += 1;
        assert!(batch.provisional);
        seen.extend(batch.sessions.into_iter().map(|entry| entry.session_id));
        match batch.next_cursor {
            Some(cursor) => {
                assert!(!batch.complete);
                params.cursor = Some(cursor);
            }
            None => {
                assert!(batch.complete);
                break;
            }
        }
    }
    assert_eq!(seen, ids, "every session once, in order");
    assert!(batches >= 3, "64 logs at most per batch: {batches}");
    for (params, code) in [
        (json!({"cursor": "p0.1"}), ErrorCode::StaleRevision),
        (json!({"limit": 0}), ErrorCode::InvalidParams),
        (json!({"limit": 101}), ErrorCode::InvalidParams),
        (json!({"cursor": "bad cursor!"}), ErrorCode::InvalidParams),
        (json!({"revision": null}), ErrorCode::InvalidParams),
    ] {
        let answer = backend
            .request_raw("session.discover", params.clone())
            .await
            .unwrap();
        assert_eq!(answer.outcome, Err(code), "{params}");
    }
    shutdown_clean(&mut backend).await;

    // Without negotiation it does not exist for this client.
    let mut base = ready(&env).await;
    let refused = base
        .call::<methods::SessionDiscover>(&SessionDiscoverParams::default())
        .await
        .unwrap();
    assert_eq!(refused, Err(ErrorCode::UnsupportedCapability));
    shutdown_clean(&mut base).await;
}
