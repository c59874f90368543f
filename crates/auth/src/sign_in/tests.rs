//! Sign-ins in use against the mock OAuth server: refreshed when due and written back
//! where they came from, once for everyone sharing them, after a lost race, and
//! refused with what to do.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use magi_testkit::{MOCK_ACCOUNT_ID, MockOAuth};
use serde_json::Value;

use super::*;

/// Codex's credential file with `tokens`, in a fresh Codex home.
fn codex_file(dir: &tempfile::TempDir, tokens: &(String, String, String)) -> PathBuf {
    let path = dir.path().join("auth.json");
    std::fs::write(&path, MockOAuth::codex_auth_json(tokens).to_string()).unwrap();
    path
}

fn chatgpt(path: &std::path::Path, mock: &MockOAuth) -> SignIn {
    SignIn::new(
        Origin::Codex(path.to_owned()),
        Purpose::ChatGpt(Endpoints::new(&mock.url())),
    )
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[tokio::test]
async fn a_due_token_is_refreshed_once_and_written_back_in_codexs_format() {
    let mock = MockOAuth::start().await;
    let dir = tempfile::tempdir().unwrap();
    let old = mock.tokens(-60);
    let path = codex_file(&dir, &old);
    let sign_in = chatgpt(&path, &mock);
    let current = sign_in.token(None).await.unwrap();
    assert_eq!(mock.refreshes(), 1);
    assert_ne!(current.access_token, old.0);
    assert_eq!(current.account_id.as_deref(), Some(MOCK_ACCOUNT_ID));
    let written = read_json(&path);
    assert_eq!(
        written["tokens"]["access_token"],
        current.access_token.as_str()
    );
    let rotated = written["tokens"]["refresh_token"].as_str().unwrap();
    assert_ne!(rotated, old.1, "the rotated refresh token is kept");
    // Codex's format: its own fields, and one this program does not know, kept.
    assert_eq!(written["tokens"]["account_id"], MOCK_ACCOUNT_ID);
    // The ID token is the one the refresh answered (it may differ from the old one in
    // its expiry alone), naming the same account.
    let id_token = written["tokens"]["id_token"].as_str().unwrap();
    let claims = crate::jwt::claims(id_token).unwrap();
    assert_eq!(claims.account_id.as_deref(), Some(MOCK_ACCOUNT_ID));
    assert!(written.get("agent_identity").is_some());
    assert_ne!(written["last_refresh"], "2025-01-01T00:00:00.000000Z");
    // Fresh now: the next use asks nobody.
    assert_eq!(sign_in.token(None).await.unwrap(), current);
    assert_eq!(mock.refreshes(), 1);
    assert!(sign_in.secrets().contains(&current.access_token));
}

#[tokio::test]
async fn a_fresh_token_is_used_without_a_request() {
    let mock = MockOAuth::start().await;
    let dir = tempfile::tempdir().unwrap();
    let tokens = mock.tokens(3_600);
    let path = codex_file(&dir, &tokens);
    let current = chatgpt(&path, &mock).token(None).await.unwrap();
    assert_eq!(current.access_token, tokens.0);
    assert!(mock.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_holders_refreshing_at_once_make_one_refresh() {
    let mock = MockOAuth::start().await;
    // Slow enough that the second holder asks while the first refresh is under way.
    mock.set_refresh_delay(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let path = codex_file(&dir, &mock.tokens(-60));
    // Two handles: as two backends, each with its own gate; only the file's lock is
    // shared.
    let (a, b) = (
        Arc::new(chatgpt(&path, &mock)),
        Arc::new(chatgpt(&path, &mock)),
    );
    let first = tokio::spawn({
        let a = Arc::clone(&a);
        async move { a.token(None).await }
    });
    let second = tokio::spawn({
        let b = Arc::clone(&b);
        async move { b.token(None).await }
    });
    let (first, second) = (
        first.await.unwrap().unwrap(),
        second.await.unwrap().unwrap(),
    );
    assert_eq!(first, second);
    assert_eq!(mock.refreshes(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_that_loses_the_race_to_codex_reads_the_file_again() {
    let mock = MockOAuth::start().await;
    mock.set_refresh_delay(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let old = mock.tokens(-60);
    let path = codex_file(&dir, &old);
    let sign_in = Arc::new(chatgpt(&path, &mock));
    let ours = tokio::spawn({
        let sign_in = Arc::clone(&sign_in);
        async move { sign_in.token(None).await }
    });
    // Once our refresh is at the server, Codex refreshes with the same refresh token
    // and rewrites its file in place, taking no lock of ours.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while mock.refreshes() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the refresh never came"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (access, refresh) = mock.rotate(&old.1).unwrap();
    std::fs::write(
        &path,
        MockOAuth::codex_auth_json(&(access.clone(), refresh, old.2.clone())).to_string(),
    )
    .unwrap();
    // Ours is refused as already used, and finds Codex's tokens instead.
    let current = ours.await.unwrap().unwrap();
    assert_eq!(current.access_token, access);
    assert_eq!(mock.refreshes(), 1);
}

#[tokio::test]
async fn a_revoked_refresh_token_is_refused_with_the_command_that_signs_in_again() {
    let mock = MockOAuth::start().await;
    mock.refuse_refreshes(Some("refresh_token_invalidated"));
    let dir = tempfile::tempdir().unwrap();
    let path = codex_file(&dir, &mock.tokens(-60));
    let sign_in = chatgpt(&path, &mock);
    let error = sign_in.token(None).await.unwrap_err();
    assert_eq!(error.kind, SignInErrorKind::Refused);
    assert!(error.what.contains("revoked"), "{error}");
    assert!(error.what.contains(&mock.url()), "{error}");
    assert_eq!(error.fix, "sign in again: magi-code login codex");
    // Asked again, the same answer, without asking the server.
    assert_eq!(sign_in.token(None).await.unwrap_err(), error);
    assert_eq!(mock.refreshes(), 1);
}

#[tokio::test]
async fn a_token_of_unknown_expiry_is_used_and_refreshed_once_refused() {
    let mock = MockOAuth::start().await;
    let dir = tempfile::tempdir().unwrap();
    let live = mock.tokens(3_600);
    let opaque = ("opaque-access".to_owned(), live.1.clone(), live.2.clone());
    let path = codex_file(&dir, &opaque);
    let sign_in = chatgpt(&path, &mock);
    assert_eq!(
        sign_in.token(None).await.unwrap().access_token,
        "opaque-access"
    );
    assert_eq!(mock.refreshes(), 0);
    // The server refused it (a 401): refreshed whatever the expiry said.
    let current = sign_in.token(Some("opaque-access")).await.unwrap();
    assert_ne!(current.access_token, "opaque-access");
    assert_eq!(mock.refreshes(), 1);
    // A token refused that the file no longer holds is not refreshed again.
    assert_eq!(sign_in.token(Some("opaque-access")).await.unwrap(), current);
    assert_eq!(mock.refreshes(), 1);
}

#[tokio::test]
async fn an_expired_sign_in_without_a_refresh_token_ends() {
    let mock = MockOAuth::start().await;
    let dir = tempfile::tempdir().unwrap();
    let (access, _, id) = mock.tokens(-60);
    let path = dir.path().join("auth.json");
    std::fs::write(
        &path,
        serde_json::json!({"tokens": {"access_token": access, "id_token": id}}).to_string(),
    )
    .unwrap();
    let error = chatgpt(&path, &mock).token(None).await.unwrap_err();
    assert_eq!(error.kind, SignInErrorKind::Refused);
    assert!(error.what.contains("has expired"), "{error}");
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn a_sign_in_file_that_went_away_or_broke_says_so() {
    let mock = MockOAuth::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let sign_in = chatgpt(&path, &mock);
    let error = sign_in.token(None).await.unwrap_err();
    assert_eq!(error.kind, SignInErrorKind::Missing);
    assert_eq!(error.fix, "sign in: magi-code login codex");
    std::fs::write(&path, "not json").unwrap();
    let error = sign_in.token(None).await.unwrap_err();
    assert!(error.what.contains("is not JSON"), "{error}");
}
