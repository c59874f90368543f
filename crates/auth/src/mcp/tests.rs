//! An MCP server's sign-in against the mock authorization server: discovery (the
//! earlier revision's fallback to the server's origin; the protected resource metadata
//! path is tested through the binary), registration, the browser and device flows,
//! the stored sign-in refreshed with its resource, and logout.

use std::time::{Duration, SystemTime};

use magi_testkit::{MockOAuth, follow_authorize_url};

use super::*;
use crate::oauth::OAuthErrorKind;
use crate::oauth::mcp::{DeviceSignIn, discover, start_browser, start_device};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_browser_sign_in_registers_stores_and_refreshes_with_its_resource() {
    let mock = MockOAuth::start().await;
    let url = format!("{}/mcp", mock.url());
    let discovery = discover(&url, &[]).await.unwrap();
    assert_eq!(discovery.issuer, mock.url());
    assert_eq!(discovery.resource, url);
    let login = start_browser(discovery, None, "tracker").await.unwrap();
    assert!(login.url.contains("resource="), "{}", login.url);
    let browser = tokio::spawn({
        let url = login.url.clone();
        async move { follow_authorize_url(&url).await }
    });
    let signed = login.finish(WAIT).await.unwrap();
    assert_eq!(browser.await.unwrap().unwrap(), 200);
    assert!(signed.client.client_id.starts_with("client-"), "registered");
    let home = tempfile::tempdir().unwrap();
    let store = Store::new(home.path());
    save(&store, "tracker", &url, &signed).unwrap();
    assert!(ready(&store, "tracker", &url, SystemTime::now()).is_ok());
    // Another URL is another sign-in.
    let elsewhere = ready(
        &store,
        "tracker",
        "https://elsewhere.example/mcp",
        SystemTime::now(),
    );
    assert!(
        elsewhere
            .unwrap_err()
            .contains("magi-code mcp login tracker")
    );
    // A refused token is refreshed with the client and the resource.
    let current = sign_in(&store, "tracker", &url)
        .token(Some(&signed.tokens.access_token))
        .await
        .unwrap();
    assert_ne!(current.access_token, signed.tokens.access_token);
    let refresh = mock
        .requests()
        .into_iter()
        .find(|r| r.params.get("grant_type").map(String::as_str) == Some("refresh_token"))
        .unwrap();
    assert_eq!(refresh.params["resource"], url);
    assert_eq!(refresh.params["client_id"], signed.client.client_id);
    // Logout revokes and deletes.
    let out = logout(&store, "tracker", &url).await.unwrap();
    assert!(out.removed.is_some());
    assert!(matches!(out.revoked, Some(Ok(()))));
    assert!(mock.requests().iter().any(|r| r.path == "/revoke"));
    assert!(matches!(lookup(&store, "tracker", &url), Lookup::Absent));
}

#[tokio::test]
async fn without_registration_a_configured_client_is_used_or_the_setting_is_named() {
    let mock = MockOAuth::start().await;
    mock.set_registration(false);
    let url = format!("{}/mcp", mock.url());
    let discovery = discover(&url, &["read".to_owned()]).await.unwrap();
    assert_eq!(discovery.scopes, ["read"]);
    let error = start_browser(discovery.clone(), None, "tracker")
        .await
        .unwrap_err();
    assert_eq!(error.kind, OAuthErrorKind::Local);
    assert!(
        error.message.contains("[mcp.servers.tracker.oauth]")
            && error.message.contains("client_id"),
        "{error}"
    );
    let login = start_browser(discovery, Some("pre-registered"), "tracker")
        .await
        .unwrap();
    assert!(
        login.url.contains("client_id=pre-registered"),
        "{}",
        login.url
    );
    assert!(login.url.contains("scope=read"), "{}", login.url);
}

#[tokio::test]
async fn a_device_sign_in_polls_until_the_person_approved() {
    let mock = MockOAuth::start().await;
    mock.set_device_approved(false);
    let url = format!("{}/mcp", mock.url());
    let discovery = discover(&url, &[]).await.unwrap();
    let device: DeviceSignIn = start_device(discovery, None, "tracker").await.unwrap();
    assert_eq!(device.user_code, magi_testkit::MOCK_USER_CODE);
    // Not yet approved: the first poll is told to wait; then the person approves.
    let polling = tokio::spawn(device.finish(WAIT));
    let deadline = std::time::Instant::now() + WAIT;
    while !mock.requests().iter().any(|r| {
        r.params.get("grant_type").map(String::as_str)
            == Some("urn:ietf:params:oauth:grant-type:device_code")
    }) {
        assert!(std::time::Instant::now() < deadline, "no poll came");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    mock.set_device_approved(true);
    let signed = polling.await.unwrap().unwrap();
    assert!(!signed.tokens.access_token.is_empty());
}

#[tokio::test]
async fn an_authorization_server_that_never_calls_back_times_out_or_refuses() {
    let mock = MockOAuth::start().await;
    let url = format!("{}/mcp", mock.url());
    mock.set_authorize(magi_testkit::Authorize::Deny);
    let login = start_browser(discover(&url, &[]).await.unwrap(), None, "t")
        .await
        .unwrap();
    let browser = tokio::spawn({
        let url = login.url.clone();
        async move { follow_authorize_url(&url).await }
    });
    let error = login.finish(WAIT).await.unwrap_err();
    browser.await.unwrap().unwrap();
    assert_eq!(error.kind, OAuthErrorKind::Refused);
    assert!(error.message.contains("access_denied"), "{error}");
    mock.set_authorize(magi_testkit::Authorize::Never);
    let login = start_browser(discover(&url, &[]).await.unwrap(), None, "t")
        .await
        .unwrap();
    follow_authorize_url(&login.url).await.unwrap();
    let error = login.finish(Duration::from_millis(100)).await.unwrap_err();
    assert!(error.message.contains("did not come back"), "{error}");
}

#[tokio::test]
async fn a_server_with_no_oauth_metadata_is_told_apart() {
    // A plain HTTP server that is no authorization server: the mock model.
    let model = magi_testkit::MockServer::start().await;
    let error = discover(&format!("{}/mcp", model.origin()), &[])
        .await
        .unwrap_err();
    assert!(error.message.contains("publishes OAuth"), "{error}");
}
