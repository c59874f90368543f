//! Provider `codex` and its ChatGPT sign-in through the real binary, against the mock
//! model and the mock OAuth server: `login codex` by the browser flow (a test client
//! follows the authorize URL) and by device code, `login status`, `logout codex`;
//! readiness decided locally from fresh, refreshable and ended sign-ins; a turn
//! refreshing a due token once, written back to Codex's file in Codex's format, by one
//! of two backends at once; a revoked refresh token; a refused token refreshed;
//! `model.refresh`; `doctor`; and tokens kept out of every output.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::common::*;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    AuthenticationState, Availability, CatalogStatusParams, EmptyParams, Event, ModelCatalogParams,
    ModelRefreshParams, Readiness, RunOutcome, StatusResult,
};
use magi_protocol::methods;
use magi_testkit::{
    Authorize, MOCK_ACCOUNT_ID, MOCK_EMAIL, MOCK_USER_CODE, MockOAuth, MockServer, Reply,
    follow_authorize_url,
};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

const METHODS: [&str; 5] = [
    "session.create",
    "turn.start",
    "history.page",
    "status",
    "shutdown",
];

/// The browser sign-ins listen on the ports ChatGPT accepts, 1455 and 1457: one test
/// at a time.
static CALLBACK_PORTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// An environment selecting provider `codex` at `model`, signing in at `oauth`, with a
/// Codex home of its own (`codex_file` is its credential file).
fn codex_env(model: &MockServer, oauth: &MockOAuth) -> (TestEnv, PathBuf) {
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "codex")
        .var("MAGI_MODEL", "gpt-5-codex");
    let codex_home = env.root().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let env = env.var("CODEX_HOME", codex_home.to_str().unwrap());
    env.write_settings(&format!(
        "[providers.codex]\nbase_url = \"{}\"\nauth_url = \"{}\"\n",
        model.base_url(),
        oauth.url()
    ));
    (env, codex_home.join("auth.json"))
}

/// Writes Codex's credential file for `tokens`.
fn write_codex(path: &Path, tokens: &(String, String, String)) {
    std::fs::write(path, MockOAuth::codex_auth_json(tokens).to_string()).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Every token value of Codex's file at `path`.
fn token_values(path: &Path) -> Vec<String> {
    let file = read_json(path);
    ["access_token", "refresh_token", "id_token"]
        .iter()
        .filter_map(|k| file["tokens"][k].as_str().map(str::to_owned))
        .collect()
}

fn assert_no_token(text: &str, tokens: &[String]) {
    for token in tokens {
        assert!(
            !text.contains(token.as_str()),
            "a token leaked into: {text}"
        );
    }
}

/// Runs `magi-code ARGS`, following the first URL it prints on stderr as a browser
/// would (when `follow`), to its end: (status, stdout, stderr).
async fn run_sign_in(env: &TestEnv, args: &[&str], follow: bool) -> (bool, String, String) {
    let mut child = tokio::process::Command::new(bin())
        .args(args)
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .envs(env.vars())
        .current_dir(env.cwd())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr_lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stderr = String::new();
    if follow {
        let url = tokio::time::timeout(WAIT, async {
            loop {
                let line = stderr_lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("a URL on stderr");
                stderr.push_str(&line);
                stderr.push('\n');
                if line.starts_with("http") {
                    return line;
                }
            }
        })
        .await
        .expect("the sign-in's URL came");
        follow_authorize_url(&url).await.unwrap();
    }
    let rest = async {
        while let Some(line) = stderr_lines.next_line().await.unwrap() {
            stderr.push_str(&line);
            stderr.push('\n');
        }
    };
    let mut stdout = String::new();
    let read_out = async {
        use tokio::io::AsyncReadExt;
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .await
            .unwrap();
    };
    tokio::time::timeout(WAIT, async { tokio::join!(rest, read_out) })
        .await
        .expect("the command ended");
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    (status.success(), stdout, stderr)
}

#[tokio::test]
async fn login_by_the_browser_keeps_the_sign_in_and_status_and_logout_show_no_token() {
    let _ports = CALLBACK_PORTS.lock().await;
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, _) = codex_env(&model, &oauth);
    let (ok, stdout, stderr) = run_sign_in(
        &env,
        &["login", "codex", "--no-browser", "--timeout", "20"],
        true,
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains(&format!("signed in to ChatGPT as {MOCK_EMAIL} (plus plan)")),
        "{stdout}"
    );
    let kept = env.mc_home().join("auth/chatgpt.json");
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let stored = read_json(&kept);
    let tokens: Vec<String> = ["access_token", "refresh_token", "id_token"]
        .iter()
        .map(|k| stored["tokens"][k].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(stored["account_id"], MOCK_ACCOUNT_ID);
    // The code was exchanged with the PKCE verifier, at the registered redirect.
    let exchange = oauth
        .requests()
        .into_iter()
        .find(|r| r.params.get("grant_type").map(String::as_str) == Some("authorization_code"))
        .unwrap();
    assert!(exchange.params["redirect_uri"].starts_with("http://localhost:145"));
    assert_no_token(&format!("{stdout}{stderr}"), &tokens);

    let status = env.run_cli(&["login", "status"]).await;
    let said = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(
        said.contains(&format!("signed in as {MOCK_EMAIL} (plus plan)")),
        "{said}"
    );
    assert!(
        said.contains("refreshable") && said.contains("kept by magi-code in"),
        "{said}"
    );
    assert_no_token(&said, &tokens);

    // A backend uses it: ready, and its first request carries it.
    model.enqueue(Reply::stream().text(["Hi."]));
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "hello").await;
    assert_eq!(
        until_finished(&mut backend, &mut Vec::new()).await.outcome,
        RunOutcome::Completed
    );
    let sent = model.requests()[0]
        .header("authorization")
        .unwrap()
        .to_owned();
    assert_eq!(sent, format!("Bearer {}", tokens[0]));
    shutdown_clean(&mut backend).await;

    let out = env.run_cli(&["logout", "codex"]).await;
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success());
    assert!(said.contains("the server revoked the sign-in"), "{said}");
    assert!(!kept.exists());
    let revoke = oauth
        .requests()
        .into_iter()
        .find(|r| r.path == "/oauth/revoke")
        .unwrap();
    assert_eq!(revoke.params["token_type_hint"], "refresh_token");
    assert_no_token(&said, &tokens);
}

#[tokio::test]
async fn a_taken_callback_port_falls_back_and_both_taken_are_named() {
    let _ports = CALLBACK_PORTS.lock().await;
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, _) = codex_env(&model, &oauth);
    // Whatever holds it (this test, or something else on the machine), 1455 is taken.
    let _first = std::net::TcpListener::bind(("127.0.0.1", 1455));
    let (ok, _, stderr) = run_sign_in(
        &env,
        &["login", "codex", "--no-browser", "--timeout", "20"],
        true,
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(stderr.contains("on port 1457"), "{stderr}");
    let _second = std::net::TcpListener::bind(("127.0.0.1", 1457));
    let (ok, _, stderr) = run_sign_in(&env, &["login", "codex", "--no-browser"], false).await;
    assert!(!ok);
    assert!(
        stderr.contains("needs port 1455 or 1457 on 127.0.0.1") && stderr.contains("--device"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_browser_that_never_comes_back_or_a_refusal_ends_the_login_with_a_message() {
    let _ports = CALLBACK_PORTS.lock().await;
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, _) = codex_env(&model, &oauth);
    oauth.set_authorize(Authorize::Never);
    let (ok, _, stderr) = run_sign_in(
        &env,
        &["login", "codex", "--no-browser", "--timeout", "1"],
        true,
    )
    .await;
    assert!(!ok);
    assert!(stderr.contains("did not come back within 1 s"), "{stderr}");
    oauth.set_authorize(Authorize::Deny);
    let (ok, _, stderr) = run_sign_in(
        &env,
        &["login", "codex", "--no-browser", "--timeout", "20"],
        true,
    )
    .await;
    assert!(!ok);
    assert!(
        stderr.contains("refused the sign-in (access_denied"),
        "{stderr}"
    );
    // Redirected elsewhere: the callback never hears of it, and the login says so.
    oauth.set_authorize(Authorize::RedirectTo(format!("{}/elsewhere", oauth.url())));
    let (ok, _, stderr) = run_sign_in(
        &env,
        &["login", "codex", "--no-browser", "--timeout", "1"],
        true,
    )
    .await;
    assert!(!ok);
    assert!(stderr.contains("did not come back"), "{stderr}");
    assert!(!env.mc_home().join("auth/chatgpt.json").exists());
}

#[tokio::test]
async fn login_by_device_code_and_the_refusal_when_it_is_not_enabled() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, _) = codex_env(&model, &oauth);
    let (ok, stdout, stderr) = run_sign_in(&env, &["login", "codex", "--device"], false).await;
    assert!(ok, "{stderr}");
    assert!(stderr.contains(MOCK_USER_CODE), "{stderr}");
    assert!(
        stderr.contains(&format!("{}/codex/device", oauth.url())),
        "{stderr}"
    );
    assert!(stdout.contains("signed in to ChatGPT as"), "{stdout}");
    assert!(env.mc_home().join("auth/chatgpt.json").exists());
    oauth.set_device_enabled(false);
    let (ok, _, stderr) = run_sign_in(&env, &["login", "codex", "--device"], false).await;
    assert!(!ok);
    assert!(stderr.contains("under Security"), "{stderr}");
}

#[tokio::test]
async fn readiness_is_local_and_follows_the_sign_ins_expiry() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    for (lifetime, refreshable, ready) in
        [(3_600, true, true), (-60, true, true), (-60, false, false)]
    {
        let (env, codex_file) = codex_env(&model, &oauth);
        let (access, refresh, id) = oauth.tokens(lifetime);
        if refreshable {
            write_codex(&codex_file, &(access, refresh, id));
        } else {
            let file = json!({"tokens": {"access_token": access, "id_token": id}});
            std::fs::write(&codex_file, file.to_string()).unwrap();
        }
        let mut backend = env.spawn();
        let answer = backend.initialize(&METHODS).await.unwrap();
        assert_eq!(
            answer.is_ok(),
            ready,
            "lifetime {lifetime}, refreshable {refreshable}"
        );
        if !ready {
            assert_eq!(answer.unwrap_err(), ErrorCode::ProviderUnavailable);
            let out = env.run_cli(&["exec", "hi"]).await;
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(
                said.contains("has expired and cannot be refreshed")
                    && said.contains("magi-code login codex"),
                "{said}"
            );
        }
        shutdown_clean(&mut backend).await;
    }
    // Nothing reached the authorization server: readiness is read from the files.
    assert!(oauth.requests().is_empty());
    // No sign-in at all.
    let (env, _) = codex_env(&model, &oauth);
    let mut backend = env.spawn();
    assert_eq!(
        backend.initialize(&METHODS).await.unwrap().unwrap_err(),
        ErrorCode::ProviderUnavailable
    );
    let status: StatusResult = backend
        .call::<methods::Status>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        status.readiness,
        Readiness::Failed(magi_protocol::StartupError::ProviderUnavailable)
    );
}

#[tokio::test]
async fn the_catalog_marks_codex_choices_by_the_sign_ins_readiness() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, codex_file) = codex_env(&model, &oauth);
    let env = env
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "m");
    env.write_settings(&format!(
        "[providers.codex]\nbase_url = \"{}\"\nauth_url = \"{}\"\n[providers.catalog]\nenabled = [\"codex/gpt-5-codex\"]\n",
        model.base_url(),
        oauth.url()
    ));
    let dir = env.mc_home().join("data/catalog");
    std::fs::create_dir_all(&dir).unwrap();
    let cache = json!({"format": 1, "provider": "codex", "fetched_at": "2026-11-29T00:00:00.000Z",
        "models": [{"id": "gpt-5-codex", "name": "GPT-5 Codex"}]});
    std::fs::write(dir.join("codex.json"), cache.to_string()).unwrap();
    let capabilities = ["model.catalog", "model.catalog.status", "shutdown"];
    for (signed_in, availability, authentication) in [
        (
            false,
            Availability::AuthenticationUnavailable,
            AuthenticationState::Unavailable,
        ),
        (
            true,
            Availability::Available,
            AuthenticationState::Available,
        ),
    ] {
        if signed_in {
            write_codex(&codex_file, &oauth.tokens(-60));
        }
        let mut backend = env.spawn();
        backend.initialize(&capabilities).await.unwrap().unwrap();
        let page = backend
            .call::<methods::ModelCatalog>(&ModelCatalogParams::default())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(page.choices.len(), 1);
        assert_eq!(page.choices[0].availability, availability);
        assert_eq!(
            page.choices[0].provider_name.as_deref(),
            Some("ChatGPT (Codex)")
        );
        let status = backend
            .call::<methods::ModelCatalogStatus>(&CatalogStatusParams {
                provider: Some("codex".into()),
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(status.providers[0].authentication, authentication);
        assert_eq!(
            status.providers[0]
                .reasons
                .contains(&"authentication_unavailable".to_owned()),
            !signed_in
        );
        shutdown_clean(&mut backend).await;
    }
    assert!(oauth.requests().is_empty());
}

/// The tool outputs a Responses request gave the model.
fn responses_outputs(body: &Value) -> String {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| i["output"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_turn_refreshes_a_due_token_once_and_writes_it_back_in_codexs_format() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, codex_file) = codex_env(&model, &oauth);
    let old = oauth.tokens(-60);
    write_codex(&codex_file, &old);
    model.enqueue(Reply::stream().text(["First."]));
    model.enqueue(Reply::stream().text(["Second."]));
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    assert!(oauth.requests().is_empty(), "nothing at initialization");
    let session = session_with_turn(&mut backend, "one").await;
    assert_eq!(
        until_finished(&mut backend, &mut Vec::new()).await.outcome,
        RunOutcome::Completed
    );
    assert_eq!(oauth.refreshes(), 1);
    let written = read_json(&codex_file);
    let new_access = written["tokens"]["access_token"].as_str().unwrap();
    assert_ne!(new_access, old.0);
    assert_ne!(written["tokens"]["refresh_token"], old.1.as_str());
    // Codex's own format: its fields, and one magi-code does not know, kept.
    assert_eq!(written["tokens"]["account_id"], MOCK_ACCOUNT_ID);
    assert!(written.get("agent_identity").is_some());
    assert!(written.get("OPENAI_API_KEY").is_some());
    let request = &model.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {new_access}").as_str())
    );
    assert_eq!(request.header("chatgpt-account-id"), Some(MOCK_ACCOUNT_ID));
    assert_eq!(request.body["store"], false);
    assert_eq!(request.body["stream"], true);
    assert!(request.body.get("max_output_tokens").is_none());
    // Fresh now: the next turn asks nobody.
    start_turn(&mut backend, &session, "two").await;
    assert_eq!(
        until_finished(&mut backend, &mut Vec::new()).await.outcome,
        RunOutcome::Completed
    );
    assert_eq!(oauth.refreshes(), 1);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn two_backends_refreshing_at_once_make_one_refresh() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    oauth.set_refresh_delay(std::time::Duration::from_millis(500));
    let (env, codex_file) = codex_env(&model, &oauth);
    write_codex(&codex_file, &oauth.tokens(-60));
    model.enqueue(Reply::stream().text(["A."]));
    model.enqueue(Reply::stream().text(["B."]));
    let (mut a, mut b) = (env.spawn(), env.spawn());
    a.initialize(&METHODS).await.unwrap().unwrap();
    b.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut a, "from a").await;
    session_with_turn(&mut b, "from b").await;
    let (mut seen_a, mut seen_b) = (Vec::new(), Vec::new());
    let (done_a, done_b) = tokio::join!(
        until_finished(&mut a, &mut seen_a),
        until_finished(&mut b, &mut seen_b)
    );
    assert_eq!(done_a.outcome, RunOutcome::Completed);
    assert_eq!(done_b.outcome, RunOutcome::Completed);
    assert_eq!(oauth.refreshes(), 1);
    let sent: Vec<_> = model
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap().to_owned())
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0], sent[1], "both use the one refreshed token");
    shutdown_clean(&mut a).await;
    shutdown_clean(&mut b).await;
}

#[tokio::test]
async fn a_revoked_refresh_token_fails_the_turn_with_the_command_that_signs_in_again() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    oauth.refuse_refreshes(Some("refresh_token_invalidated"));
    let (env, codex_file) = codex_env(&model, &oauth);
    let old = oauth.tokens(-60);
    write_codex(&codex_file, &old);
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "hello").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Failed);
    assert_eq!(finished.error_code, Some(ErrorCode::ExecutionFailed));
    let summary = seen
        .iter()
        .find_map(|e| match e {
            Event::Diagnostic(d) if d.code == "provider_authentication_failed" => {
                Some(d.summary.clone())
            }
            _ => None,
        })
        .expect("the diagnostic");
    assert!(summary.contains("revoked"), "{summary}");
    assert!(
        summary.ends_with("sign in again: magi-code login codex"),
        "{summary}"
    );
    assert!(model.requests().is_empty(), "no request without a token");
    // Asked once for the turn, though the token was due twice (before the output and
    // at the request): the refusal is remembered.
    assert_eq!(oauth.refreshes(), 1);
    // Codex's file is Codex's: left as it was.
    assert_eq!(
        read_json(&codex_file)["tokens"]["refresh_token"],
        old.1.as_str()
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_token_the_backend_refuses_is_refreshed_once_and_the_request_made_again() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    // A token of unknown expiry (not a JWT), then one the local clock thinks fresh
    // (a clock that runs behind the server's): both tried, refused, refreshed.
    let (_, refresh, id) = oauth.tokens(3_600);
    let fresh = oauth.tokens(3_600);
    for (label, tokens) in [
        ("opaque", ("opaque-access-token".to_owned(), refresh, id)),
        ("skewed", fresh),
    ] {
        let (env, codex_file) = codex_env(&model, &oauth);
        write_codex(&codex_file, &tokens);
        let before = oauth.refreshes();
        let asked = model.requests().len();
        model.enqueue(Reply::error(401, "{\"error\":\"expired\"}"));
        model.enqueue(Reply::stream().text(["ok"]));
        let mut backend = env.spawn();
        backend.initialize(&METHODS).await.unwrap().unwrap();
        session_with_turn(&mut backend, "hello").await;
        assert_eq!(
            until_finished(&mut backend, &mut Vec::new()).await.outcome,
            RunOutcome::Completed,
            "{label}"
        );
        assert_eq!(oauth.refreshes(), before + 1, "{label}");
        let requests = model.requests();
        let sent: Vec<_> = requests[asked..]
            .iter()
            .map(|r| r.header("authorization").unwrap().to_owned())
            .collect();
        assert_eq!(sent[0], format!("Bearer {}", tokens.0), "{label}");
        assert_ne!(sent[1], sent[0], "{label}");
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn model_refresh_reads_the_backends_list_with_the_sign_in() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, codex_file) = codex_env(&model, &oauth);
    write_codex(&codex_file, &oauth.tokens(3_600));
    model.set_models_body(Some(
        json!({"models": [
            {"slug": "gpt-5-codex", "display_name": "GPT-5 Codex", "context_window": 272000},
            {"slug": "gpt-5", "display_name": "GPT-5", "context_window": null}
        ]})
        .to_string(),
    ));
    let mut backend = env.spawn();
    backend
        .initialize(&["model.refresh", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let result = backend
        .call::<methods::ModelRefresh>(&ModelRefreshParams {
            provider: "codex".into(),
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.cached_models, 2);
    let cache = read_json(&env.mc_home().join("data/catalog/codex.json"));
    assert_eq!(cache["models"][0]["context_window"], 272000);
    assert_eq!(cache["models"][0]["name"], "GPT-5 Codex");
    let request = &model.requests()[0];
    assert!(
        request
            .query
            .as_deref()
            .unwrap()
            .starts_with("client_version=")
    );
    assert!(
        request
            .header("authorization")
            .unwrap()
            .starts_with("Bearer ")
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn sign_in_tokens_reach_neither_the_client_nor_the_history_nor_the_model() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, codex_file) = codex_env(&model, &oauth);
    let env = env.without(MODE_ENV);
    write_codex(&codex_file, &oauth.tokens(3_600));
    let tokens = token_values(&codex_file);
    env.write_settings(&format!(
        "[providers.codex]\nbase_url = \"{}\"\nauth_url = \"{}\"\n[permissions]\nmode = \"allow-all\"\n",
        model.base_url(),
        oauth.url()
    ));
    // The model reads Codex's credential file, then says a token it made up.
    let path = codex_file.display().to_string();
    model.enqueue(Reply::stream().tool_call("r1", "read", [json!({ "path": path }).to_string()]));
    let other_jwt = magi_auth::jwt::unsigned(&json!({"sub": "someone-else"}));
    model.enqueue(Reply::stream().text([format!("Done: {other_jwt}")]));
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "read it").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    // The model was given the file, its tokens redacted.
    let given = responses_outputs(&model.requests()[1].body);
    assert!(given.contains("[redacted]"), "{given}");
    assert_no_token(&given, &tokens);
    // The client: every event, the history, the session log on disk.
    let events = serde_json::to_string(&seen).unwrap();
    assert_no_token(&events, &tokens);
    assert!(
        !events.contains(&other_jwt),
        "a JWT's shape is redacted for clients"
    );
    let page = backend
        .call::<methods::HistoryPage>(&magi_protocol::messages::HistoryPageParams {
            session_id: session.clone(),
            revision: finished.revision.clone().unwrap(),
            cursor: None,
        })
        .await
        .unwrap()
        .unwrap();
    assert_no_token(&serde_json::to_string(&page).unwrap(), &tokens);
    shutdown_clean(&mut backend).await;
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert_no_token(&log, &tokens);
}

#[tokio::test]
async fn doctor_checks_the_sign_in_without_a_token_and_online_refreshes_it() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, codex_file) = codex_env(&model, &oauth);
    write_codex(&codex_file, &oauth.tokens(3_600));
    let before = token_values(&codex_file);
    std::fs::set_permissions(&codex_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = env.run_cli(&["doctor"]).await;
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "ok       sign-in: ChatGPT (provider \"codex\"): signed in as {MOCK_EMAIL} (plus plan)"
        )),
        "{said}"
    );
    assert!(
        said.contains("warning  sign-in:") && said.contains("chmod 600"),
        "{said}"
    );
    assert_no_token(&said, &before);
    assert!(oauth.requests().is_empty());
    model.set_models_body(Some(
        json!({"models": [{"slug": "gpt-5-codex"}]}).to_string(),
    ));
    let out = env.run_cli(&["doctor", "--online"]).await;
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}");
    assert!(said.contains("sign-in was refreshed"), "{said}");
    assert_eq!(oauth.refreshes(), 1);
    let after = token_values(&codex_file);
    assert_ne!(after[0], before[0], "the rotated tokens are written back");
    assert_no_token(&said, &[before, after].concat());
}

#[tokio::test]
async fn broken_or_unread_credential_files_say_what_and_where() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let (env, codex_file) = codex_env(&model, &oauth);
    let ours = env.mc_home().join("auth/chatgpt.json");
    std::fs::create_dir_all(ours.parent().unwrap()).unwrap();
    for (text, says) in [
        ("not json", "is not JSON"),
        (
            r#"{"format":2,"kind":"chatgpt"}"#,
            "written by another version of magi-code",
        ),
    ] {
        std::fs::write(&ours, text).unwrap();
        let out = env.run_cli(&["exec", "hi"]).await;
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&ours.display().to_string())
                && said.contains(says)
                && said.contains("magi-code login codex"),
            "{said}"
        );
    }
    // Unreadable as a file (whoever runs the tests, a directory is no credential file).
    std::fs::remove_file(&ours).unwrap();
    std::fs::create_dir(&ours).unwrap();
    let out = env.run_cli(&["exec", "hi"]).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("it is not a regular file"), "{said}");
    std::fs::remove_dir(&ours).unwrap();
    std::fs::write(&codex_file, "[1, 2]").unwrap();
    let out = env.run_cli(&["login", "status"]).await;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("Codex's") && said.contains("is not JSON"),
        "{said}"
    );
    // A sign-in Codex keeps in the OS keyring is named as not read.
    std::fs::remove_file(&codex_file).unwrap();
    std::fs::write(
        codex_file.parent().unwrap().join("config.toml"),
        "cli_auth_credentials_store = \"keyring\"\n",
    )
    .unwrap();
    let out = env.run_cli(&["login", "status"]).await;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("OS keyring") && said.contains("does not read"),
        "{said}"
    );
}
