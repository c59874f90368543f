//! MCP servers that need an OAuth sign-in, through the real binary: `magi-code mcp
//! login` discovering the server's authorization server from its protected resource
//! metadata, registering, signing in by the browser (a test client follows the
//! authorize URL) or a device code; a backend connecting with the stored token,
//! refreshing it at startup when it expired and before a call when the server refused
//! it; a server without a usable sign-in failing startup, explained with the command
//! by every front end; `mcp logout`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::mcp::{mcp_command, mock_binary};
use magi_protocol::ErrorCode;
use magi_protocol::messages::RunOutcome;
use magi_testkit::{MockOAuth, MockServer, Reply, follow_authorize_url};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

const METHODS: [&str; 3] = ["session.create", "turn.start", "shutdown"];

/// The mock MCP server over HTTP, admitting tokens of `oauth` only (and refusing those
/// listed in `rejected`); its URL.
async fn gated_server(oauth: &MockOAuth, rejected: &Path) -> (tokio::process::Child, String) {
    let mut server = tokio::process::Command::new(mock_binary())
        .args([
            "--http",
            "--oauth-issuer",
            &oauth.url(),
            "--rejected-tokens",
        ])
        .arg(rejected)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    let url = tokio::time::timeout(WAIT, async {
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        lines.next_line().await.unwrap().expect("the server's URL")
    })
    .await
    .unwrap();
    (server, url)
}

/// An environment whose settings define the gated server as `remote`, signing in with
/// `oauth_table`, and allow its `add` tool.
fn env_with(model: &MockServer, url: &str, oauth_table: &str) -> TestEnv {
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &model.base_url())
        .var("PATH", &std::env::var("PATH").unwrap());
    env.write_settings(&format!(
        "[mcp.servers.remote]\nurl = \"{url}\"\n{oauth_table}\n[permissions]\nallow = [\"mcp__remote__add\"]\n"
    ));
    env
}

/// Runs `magi-code mcp login remote ARGS`, following its URL as a browser would when
/// `follow`: (success, stdout, stderr).
async fn mcp_login(env: &TestEnv, args: &[&str], follow: bool) -> (bool, String, String) {
    let mut child = tokio::process::Command::new(bin())
        .args(["mcp", "login", "remote", "--no-browser"])
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
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut stderr = String::new();
    if follow {
        let url = tokio::time::timeout(WAIT, async {
            loop {
                let line = lines.next_line().await.unwrap().expect("a URL");
                stderr.push_str(&line);
                stderr.push('\n');
                if line.starts_with("http") {
                    return line;
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(follow_authorize_url(&url).await.unwrap(), 200);
    }
    let output = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            stderr.push_str(&line);
            stderr.push('\n');
        }
        child.wait_with_output().await.unwrap()
    })
    .await
    .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr,
    )
}

/// The one stored sign-in of the environment.
fn stored(env: &TestEnv) -> PathBuf {
    std::fs::read_dir(env.mc_home().join("auth"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("mcp-remote-")
        })
        .expect("a stored sign-in")
}

/// One turn calling `add` on the server; the tool's output.
async fn add_through_a_turn(env: &TestEnv, model: &MockServer) -> String {
    model.enqueue(Reply::stream().tool_call("sum", "mcp__remote__add", ["{\"a\":20,\"b\":22}"]));
    model.enqueue(Reply::stream().text(["Done."]));
    let asked = model.requests().len();
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    session_with_turn(&mut backend, "add").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    tool_outputs(&model.requests()[asked + 1].body).join("\n")
}

#[tokio::test]
async fn login_discovers_registers_and_a_backend_connects_with_the_sign_in() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = gated_server(&oauth, &dir.path().join("rejected")).await;
    let env = env_with(&model, &url, "oauth = true");
    mcp_command(&env, &["approve", "remote"]);
    let (ok, stdout, stderr) = mcp_login(&env, &["--timeout", "20"], true).await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("signed in to MCP server \"remote\""),
        "{stdout}"
    );
    // Discovery went through the server's metadata to the authorization server; the
    // client registered itself; the resource was named in the sign-in.
    let requests = oauth.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.path == "/.well-known/oauth-authorization-server")
    );
    let register = requests.iter().position(|r| r.path == "/register").unwrap();
    let authorize = requests
        .iter()
        .position(|r| r.path == "/authorize")
        .unwrap();
    assert!(register < authorize);
    assert_eq!(requests[authorize].params["resource"], url);
    assert_eq!(requests[authorize].params["scope"], "mcp");
    assert_eq!(requests[authorize].params["code_challenge_method"], "S256");
    let file = stored(&env);
    let entry: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let access = entry["tokens"]["access_token"].as_str().unwrap().to_owned();
    let status = env.run_cli(&["login", "status"]).await;
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(
        said.contains("MCP server \"remote\"") && said.contains("signed in at"),
        "{said}"
    );
    assert!(!said.contains(&access));

    let output = add_through_a_turn(&env, &model).await;
    assert!(output.contains("The sum of 20 and 22 is 42."), "{output}");
    assert_eq!(oauth.refreshes(), 0, "a fresh token is used as it is");

    // Run without blocking this test's runtime, which serves the mock OAuth server.
    let out = env.run_cli(&["mcp", "logout", "remote"]).await;
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("the server revoked the sign-in"), "{out}");
    assert!(!file.exists());
}

#[tokio::test]
async fn a_server_needing_a_sign_in_it_lacks_fails_startup_and_front_ends_name_the_command() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = gated_server(&oauth, &dir.path().join("rejected")).await;
    let env = env_with(&model, &url, "oauth = true");
    mcp_command(&env, &["approve", "remote"]);
    let mut backend = env.spawn();
    assert_eq!(
        backend.initialize(&METHODS).await.unwrap().unwrap_err(),
        ErrorCode::McpUnavailable
    );
    shutdown_clean(&mut backend).await;
    let out = env.run_cli(&["exec", "hi"]).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("the MCP server `remote` needs a sign-in")
            && said.contains("magi-code mcp login remote")
            && said.contains("[mcp_unavailable]"),
        "{said}"
    );
    let out = env.run_cli(&["doctor"]).await;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(said.contains("fix: magi-code mcp login remote"), "{said}");
    assert!(
        said.contains("the MCP server `remote` needs a sign-in"),
        "{said}"
    );
    // An editor over `magi-code acp` is told the same, where it asked for a session.
    let mut acp = crate::common::acp::Acp::spawn(&env);
    let init = serde_json::json!({"protocolVersion": 1});
    acp.call("initialize", init).await.unwrap();
    let new = serde_json::json!({"cwd": env.cwd(), "mcpServers": []});
    let refused = acp.call("session/new", new).await.unwrap_err();
    let said = refused["data"].as_str().unwrap_or_default().to_owned();
    assert!(
        said.contains("the MCP server `remote` needs a sign-in")
            && said.contains("magi-code mcp login remote")
            && said.contains("[mcp_unavailable]"),
        "{refused}"
    );
    // Without `oauth`, the server's refusal is explained with what to add.
    let env = env_with(&model, &url, "");
    mcp_command(&env, &["approve", "remote"]);
    let out = env.run_cli(&["exec", "hi"]).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("`oauth = true`"), "{said}");
    let out = env.run_cli(&["mcp", "login", "remote"]).await;
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        said.contains("add `oauth = true` to [mcp.servers.remote]"),
        "{said}"
    );
}

#[tokio::test]
async fn an_expired_token_is_refreshed_at_startup_and_a_refused_one_before_the_call() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let dir = tempfile::tempdir().unwrap();
    let rejected = dir.path().join("rejected");
    let (_server, url) = gated_server(&oauth, &rejected).await;
    let env = env_with(&model, &url, "oauth = true");
    mcp_command(&env, &["approve", "remote"]);
    // Signed in with a token already expired: startup refreshes it, with no prompt.
    oauth.set_access_lifetime(-60);
    let (ok, _, stderr) = mcp_login(&env, &["--timeout", "20"], true).await;
    assert!(ok, "{stderr}");
    oauth.set_access_lifetime(3_600);
    let output = add_through_a_turn(&env, &model).await;
    assert!(output.contains("is 42."), "{output}");
    assert_eq!(oauth.refreshes(), 1);
    let refresh = oauth
        .requests()
        .into_iter()
        .find(|r| r.params.get("grant_type").map(String::as_str) == Some("refresh_token"))
        .unwrap();
    assert_eq!(refresh.params["resource"], url);
    // The server now refuses the stored token: the call's request is made again with a
    // refreshed one.
    let entry: Value = serde_json::from_slice(&std::fs::read(stored(&env)).unwrap()).unwrap();
    std::fs::write(&rejected, entry["tokens"]["access_token"].as_str().unwrap()).unwrap();
    let output = add_through_a_turn(&env, &model).await;
    assert!(output.contains("is 42."), "{output}");
    assert_eq!(oauth.refreshes(), 2);
}

#[tokio::test]
async fn login_needs_approval_registration_or_a_client_and_the_device_flow_works() {
    let (model, oauth) = (MockServer::start().await, MockOAuth::start().await);
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = gated_server(&oauth, &dir.path().join("rejected")).await;
    let env = env_with(&model, &url, "oauth = true");
    let (ok, _, stderr) = mcp_login(&env, &[], false).await;
    assert!(!ok);
    assert!(
        stderr.contains("approve it first (magi-code mcp approve remote)"),
        "{stderr}"
    );
    assert!(
        oauth.requests().is_empty(),
        "nothing reached before approval"
    );
    mcp_command(&env, &["approve", "remote"]);
    oauth.set_registration(false);
    let (ok, _, stderr) = mcp_login(&env, &[], false).await;
    assert!(!ok);
    assert!(
        stderr.contains("offers no client registration")
            && stderr.contains("[mcp.servers.remote.oauth]"),
        "{stderr}"
    );
    // A client registered beforehand: the changed definition needs approving again.
    let env = env_with(
        &model,
        &url,
        "[mcp.servers.remote.oauth]\nclient_id = \"pre-registered\"",
    );
    let list = mcp_command(&env, &["list"]);
    assert!(list.contains("needs approval"), "{list}");
    mcp_command(&env, &["approve", "remote"]);
    let (ok, stdout, stderr) = mcp_login(&env, &["--device"], false).await;
    assert!(ok, "{stderr}");
    assert!(stderr.contains(magi_testkit::MOCK_USER_CODE), "{stderr}");
    assert!(stdout.contains("signed in"), "{stdout}");
    let device = oauth
        .requests()
        .into_iter()
        .find(|r| r.path == "/device")
        .unwrap();
    assert_eq!(device.params["client_id"], "pre-registered");
    let output = add_through_a_turn(&env, &model).await;
    assert!(output.contains("is 42."), "{output}");
}
