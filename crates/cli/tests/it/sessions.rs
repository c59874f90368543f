//! Owned sessions and paged history through the real binary, against hand-written
//! session logs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{EmptyParams, EntryKind, HistoryPageParams, HistoryPageResult};
use magi_protocol::methods;
use serde_json::{Value, json};

const SESSION: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

/// A finished one-turn session recorded in the test's working directory.
fn conversation(env: &TestEnv, id: &str) -> String {
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    [
        record(id, "session_meta", json!({"cwd": cwd})),
        record(id, "turn_started", json!({"turn_id": "t1"})),
        record(id, "user_input", json!({"turn_id": "t1", "message_id": "u1", "text": "list the files"})),
        record(id, "tool_call", json!({"turn_id": "t1", "call_id": "c1", "name": "list", "summary": "."})),
        record(id, "tool_result", json!({"turn_id": "t1", "call_id": "c1", "name": "list", "outcome": "completed", "summary": "3 entries"})),
        record(id, "assistant_output", json!({"turn_id": "t1", "message_id": "a1", "text": "There are three files."})),
        record(id, "turn_finished", json!({"turn_id": "t1", "outcome": "completed"})),
    ]
    .concat()
}

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "session.open", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    backend
}

async fn page(
    backend: &mut Backend,
    id: &str,
    revision: &str,
    cursor: Option<&str>,
) -> Result<HistoryPageResult, ErrorCode> {
    let params = HistoryPageParams {
        session_id: id.to_owned(),
        revision: revision.to_owned(),
        cursor: cursor.map(str::to_owned),
    };
    backend.call::<methods::HistoryPage>(&params).await.unwrap()
}

#[tokio::test]
async fn create_attaches_a_lazy_handle_that_writes_nothing() {
    let env = TestEnv::new();
    let mut backend = ready(&env).await;
    let created = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap();
    assert!(!created.durable);
    assert!(created.notices.is_empty());
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(
        status.session_id.as_deref(),
        Some(created.session_id.as_str())
    );
    let first = page(&mut backend, &created.session_id, &created.revision, None)
        .await
        .unwrap();
    assert!(first.entries.is_empty() && first.complete && first.next_cursor.is_none());
    // Reopening the lazy handle in the same child works and stays lazy.
    let reopened = open_session(&mut backend, &created.session_id)
        .await
        .unwrap();
    assert!(!reopened.durable);
    assert_ne!(reopened.revision, created.revision);
    assert!(!log_path(&env, &created.session_id).exists());
    shutdown_clean(&mut backend).await;
    // Another child cannot: nothing was persisted.
    let mut backend = ready(&env).await;
    assert_eq!(
        open_session(&mut backend, &created.session_id).await,
        Err(ErrorCode::SessionMissing)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn open_projects_a_recorded_conversation() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &conversation(&env, SESSION));
    let mut backend = ready(&env).await;
    let opened = open_session(&mut backend, SESSION).await.unwrap();
    assert!(opened.durable);
    assert!(opened.notices.is_empty());
    let history = page(&mut backend, SESSION, &opened.revision, None)
        .await
        .unwrap();
    let shown: Vec<(EntryKind, &str, bool)> = history
        .entries
        .iter()
        .map(|e| (e.kind, e.text.as_str(), e.partial))
        .collect();
    assert_eq!(
        shown,
        vec![
            (EntryKind::User, "list the files", false),
            (EntryKind::Activity, "list: completed. 3 entries", false),
            (EntryKind::Assistant, "There are three files.", false),
        ]
    );
    assert!(history.complete && history.next_cursor.is_none());
    assert_eq!(
        backend
            .status()
            .await
            .unwrap()
            .unwrap()
            .session_id
            .as_deref(),
        Some(SESSION)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn legacy_sessions_without_cwd_are_unverified_and_torn_lines_are_interruptions() {
    let env = TestEnv::new();
    let legacy = format!(
        "{}{}{{\"v\":1,\"session_id\":\"{SESSION}\",\"ts\":\"2026",
        record(SESSION, "turn_started", json!({"turn_id": "t"})),
        record(
            SESSION,
            "user_input",
            json!({"turn_id": "t", "message_id": "u", "text": "hi"})
        ),
    );
    write_log(&env, SESSION, &legacy);
    let mut backend = ready(&env).await;
    let opened = open_session(&mut backend, SESSION).await.unwrap();
    assert_eq!(opened.notices, vec!["cwd_unverified"]);
    let history = page(&mut backend, SESSION, &opened.revision, None)
        .await
        .unwrap();
    assert!(!history.complete);
    let last = history.entries.last().unwrap();
    assert_eq!((last.kind, last.partial), (EntryKind::Diagnostic, true));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn open_refuses_what_it_cannot_trust_and_keeps_the_previous_attachment() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &conversation(&env, SESSION));
    let elsewhere = record(
        "elsewhere-1",
        "session_meta",
        json!({"cwd": "/definitely/not/here"}),
    );
    write_log(&env, "elsewhere-1", &elsewhere);
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
    let target = write_log(
        &env,
        "target-1",
        &record("target-1", "title", json!({"title": "x"})),
    );
    std::os::unix::fs::symlink(&target, log_path(&env, "link-1")).unwrap();
    // A session stored under another workspace's folder.
    let other = env
        .mc_home()
        .join("sessions/0000000000000000000000000000beef");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("moved-1.jsonl"),
        record("moved-1", "session_meta", json!({"cwd": "/elsewhere"})),
    )
    .unwrap();
    let lines: String = (0..100_001)
        .map(|_| record("huge-1", "future_kind", json!({})))
        .collect();
    write_log(&env, "huge-1", &lines);

    let mut backend = ready(&env).await;
    let opened = open_session(&mut backend, SESSION).await.unwrap();
    let cases = [
        ("elsewhere-1", ErrorCode::CwdMismatch),
        ("moved-1", ErrorCode::CwdMismatch),
        ("malformed-1", ErrorCode::SessionInvalid),
        ("blank-1", ErrorCode::SessionInvalid),
        ("foreign-1", ErrorCode::SessionInvalid),
        ("link-1", ErrorCode::SessionInvalid),
        ("huge-1", ErrorCode::HistoryLimit),
        ("never-existed", ErrorCode::SessionMissing),
    ];
    for (id, code) in cases {
        assert_eq!(open_session(&mut backend, id).await, Err(code), "{id}");
        // The previous attachment is intact.
        let status = backend.status().await.unwrap().unwrap();
        assert_eq!(status.session_id.as_deref(), Some(SESSION));
        assert!(
            page(&mut backend, SESSION, &opened.revision, None)
                .await
                .is_ok()
        );
    }
    for bad in [
        json!({"session_id": "has space"}),
        json!({"session_id": "x".repeat(65)}),
        json!({"session_id": "a.b"}),
        json!({}),
        json!({"session_id": SESSION, "extra": 1}),
    ] {
        let response = backend
            .request_raw("session.open", bad.clone())
            .await
            .unwrap();
        assert_eq!(response.outcome, Err(ErrorCode::InvalidParams), "{bad}");
    }
    shutdown_clean(&mut backend).await;
    // Nothing on disk changed.
    assert_eq!(
        std::fs::read_to_string(log_path(&env, SESSION)).unwrap(),
        conversation(&env, SESSION)
    );
}

#[tokio::test]
async fn a_session_is_owned_by_one_child_at_a_time() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &conversation(&env, SESSION));
    let mut first = ready(&env).await;
    let mut second = ready(&env).await;
    open_session(&mut first, SESSION).await.unwrap();
    assert_eq!(
        open_session(&mut second, SESSION).await,
        Err(ErrorCode::SessionBusy)
    );
    // Reopening in the owning child is fine.
    open_session(&mut first, SESSION).await.unwrap();
    shutdown_clean(&mut first).await;
    assert!(open_session(&mut second, SESSION).await.is_ok());
    shutdown_clean(&mut second).await;
}

#[tokio::test]
async fn history_page_checks_attachment_revision_and_cursor() {
    let env = TestEnv::new();
    let mut text = conversation(&env, SESSION);
    for n in 0..250 {
        text.push_str(&record(
            SESSION,
            "user_input",
            json!({"turn_id": "t2", "message_id": format!("u{n}"), "text": format!("message {n}")}),
        ));
    }
    let path = write_log(&env, SESSION, &text);
    let mut backend = ready(&env).await;
    assert_eq!(
        page(&mut backend, SESSION, "r1", None).await,
        Err(ErrorCode::SessionMissing)
    );
    let opened = open_session(&mut backend, SESSION).await.unwrap();
    assert_eq!(
        page(&mut backend, "other-session", &opened.revision, None).await,
        Err(ErrorCode::StaleSession)
    );
    assert_eq!(
        page(&mut backend, SESSION, "not-the-revision", None).await,
        Err(ErrorCode::StaleRevision)
    );
    assert_eq!(
        page(&mut backend, SESSION, &opened.revision, Some("made-up")).await,
        Err(ErrorCode::StaleRevision)
    );
    assert_eq!(
        page(
            &mut backend,
            SESSION,
            &opened.revision,
            Some(&format!("{}.5", opened.revision))
        )
        .await,
        Err(ErrorCode::StaleRevision)
    );
    for bad in [
        json!({"session_id": SESSION}),
        json!({"session_id": SESSION, "revision": opened.revision, "cursor": 3}),
        json!({"session_id": SESSION, "revision": "bad revision"}),
    ] {
        let response = backend.request_raw("history.page", bad).await.unwrap();
        assert_eq!(response.outcome, Err(ErrorCode::InvalidParams));
    }

    let mut sizes = Vec::new();
    let mut cursor: Option<String> = None;
    let mut texts = Vec::new();
    loop {
        let page = page(&mut backend, SESSION, &opened.revision, cursor.as_deref())
            .await
            .unwrap();
        assert!(serde_json::to_vec(&page).unwrap().len() <= 32_768);
        sizes.push(page.entries.len());
        texts.extend(page.entries.iter().map(|e| e.text.clone()));
        match page.next_cursor {
            Some(next) => {
                assert!(!page.complete);
                cursor = Some(next);
            }
            None => {
                assert!(page.complete);
                break;
            }
        }
    }
    assert_eq!(sizes, vec![100, 100, 53]);
    assert_eq!(texts.last().map(String::as_str), Some("message 249"));

    // Any mutation makes the revision stale, and it stays stale.
    let first = page(&mut backend, SESSION, &opened.revision, None)
        .await
        .unwrap();
    let cursor = first.next_cursor.unwrap();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let mut appended = std::fs::read_to_string(&path).unwrap();
    appended.push_str(&record(SESSION, "title", json!({"title": "new"})));
    std::fs::write(&path, appended).unwrap();
    assert_eq!(
        page(&mut backend, SESSION, &opened.revision, Some(&cursor)).await,
        Err(ErrorCode::StaleRevision)
    );
    assert_eq!(
        page(&mut backend, SESSION, &opened.revision, None).await,
        Err(ErrorCode::StaleRevision)
    );
    let reopened = open_session(&mut backend, SESSION).await.unwrap();
    assert!(
        page(&mut backend, SESSION, &reopened.revision, None)
            .await
            .is_ok()
    );
    assert_eq!(
        page(&mut backend, SESSION, &opened.revision, None).await,
        Err(ErrorCode::StaleRevision)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn one_session_operation_at_a_time() {
    let env = TestEnv::new();
    write_log(&env, SESSION, &conversation(&env, SESSION));
    let mut backend = ready(&env).await;
    // Both frames arrive in one read: the page is admitted while the open still owns
    // the session worker.
    let mut bytes = frame("raw-open", "session.open", json!({"session_id": SESSION}));
    bytes.extend_from_slice(&frame(
        "raw-page",
        "history.page",
        json!({"session_id": SESSION, "revision": "r"}),
    ));
    bytes.extend_from_slice(&frame("raw-create", "session.create", json!({})));
    bytes.extend_from_slice(&frame("raw-status", "status", json!({})));
    backend.send_raw(&bytes).await.unwrap();
    let mut answers = std::collections::HashMap::new();
    for _ in 0..4 {
        let response = next_response(&mut backend).await;
        answers.insert(response.id.clone().unwrap(), response.outcome);
    }
    assert_eq!(answers["raw-page"], Err(ErrorCode::Busy));
    assert_eq!(answers["raw-create"], Err(ErrorCode::Busy));
    assert!(answers["raw-open"].is_ok());
    // Status answers during the operation with the last completed attachment.
    assert_eq!(
        answers["raw-status"].as_ref().unwrap()["session_id"],
        Value::Null
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn session_methods_before_initialization() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    for method in ["session.create", "session.open", "history.page"] {
        let response = backend.request_raw(method, json!({})).await.unwrap();
        assert_eq!(response.outcome, Err(ErrorCode::NotInitialized));
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn status_and_shutdown_answer_while_a_large_history_is_projected() {
    let env = TestEnv::new();
    // About 48 MiB of tool-result content, which history never shows.
    let content = "x".repeat(64 * 1024);
    let mut text = conversation(&env, SESSION);
    for n in 0..750 {
        text.push_str(&record(
            SESSION,
            "tool_result",
            json!({"turn_id": "t1", "call_id": format!("bulk{n}"), "name": "read", "outcome": "completed", "summary": "ok", "content": content}),
        ));
    }
    write_log(&env, SESSION, &text);
    drop(text);
    let mut backend = ready(&env).await;
    let mut bytes = frame("big-open", "session.open", json!({"session_id": SESSION}));
    bytes.extend_from_slice(&frame("during", "status", json!({})));
    bytes.extend_from_slice(&frame("stop", "shutdown", json!({})));
    backend.send_raw(&bytes).await.unwrap();
    let mut order = Vec::new();
    for _ in 0..3 {
        let response = next_response(&mut backend).await;
        order.push((response.id.clone().unwrap(), response.outcome));
    }
    // Status and shutdown were answered before the open finished, which shutdown
    // then answered as cancelled.
    assert_eq!(order[0].0, "during");
    assert_eq!(
        order[1],
        ("stop".to_owned(), Ok(json!({"state": "stopping"})))
    );
    assert_eq!(
        order[2],
        ("big-open".to_owned(), Err(ErrorCode::OperationCancelled))
    );
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
}

/// A log of exactly `bytes` bytes in `lines` lines of a kind history skips.
fn log_of_exact_size(id: &str, lines: usize, bytes: usize) -> String {
    let line = |pad: usize| {
        format!(
            "{{\"v\":1,\"session_id\":\"{id}\",\"ts\":\"2026-11-01T10:00:00.000Z\",\"kind\":\"future_kind\",\"pad\":\"{}\"}}\n",
            "p".repeat(pad)
        )
    };
    let overhead = line(0).len();
    let per_line = bytes / lines;
    let mut text = line(per_line - overhead).repeat(lines - 1);
    text.push_str(&line(bytes - text.len() - overhead));
    assert_eq!((text.len(), text.lines().count()), (bytes, lines));
    text
}

#[tokio::test]
async fn stored_reads_are_bounded_to_64_mib_and_100000_lines() {
    use magi_protocol::limits::{STORED_READ_BYTES, STORED_READ_LINES};
    let env = TestEnv::new();
    let cases = [
        (
            "lines-at-bound",
            STORED_READ_LINES,
            STORED_READ_LINES * 100,
            Ok(()),
        ),
        (
            "lines-over",
            STORED_READ_LINES + 1,
            (STORED_READ_LINES + 1) * 100,
            Err(ErrorCode::HistoryLimit),
        ),
        ("bytes-at-bound", 64, STORED_READ_BYTES, Ok(())),
        (
            "bytes-over",
            64,
            STORED_READ_BYTES + 1,
            Err(ErrorCode::HistoryLimit),
        ),
    ];
    let mut backend = ready(&env).await;
    for (id, lines, bytes, expected) in cases {
        write_log(&env, id, &log_of_exact_size(id, lines, bytes));
        let got = open_session(&mut backend, id)
            .await
            .map(|opened| assert!(opened.durable));
        assert_eq!(got, expected, "{id}");
        std::fs::remove_file(log_path(&env, id)).unwrap();
    }
    shutdown_clean(&mut backend).await;
}
