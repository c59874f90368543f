//! Errors a person can act on, through the real binary: each failure says what
//! happened, where (file:line:column and key, provider and URL) and what to do, on
//! stderr, while the protocol's answers stay bare codes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::Output;

use crate::common::*;
use magi_testkit::{MockServer, Reply, Stop};

/// The key the 401 test sends: it must never be shown.
const KEY: &str = "sk-errors-test-0123456789abcdef";

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `exec PROMPT` against the mock as the keyless `openai-chat` provider.
async fn exec_against(env: TestEnv, mock: &MockServer, args: &[&str]) -> Output {
    let env = env.var("OPENAI_BASE_URL", &mock.base_url());
    let mut all = vec!["exec"];
    all.extend_from_slice(args);
    env.run_cli(&all).await
}

#[tokio::test]
async fn a_settings_syntax_error_names_the_file_line_column_and_key() {
    let env = TestEnv::new();
    env.write_settings("model = \"m\"\nprovider = \n");
    let output = env.run_cli(&["exec", "hi"]).await;
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    let settings = env.mc_home().join("settings.toml");
    let place = format!("{}:2:12: key `provider`", settings.display());
    assert!(said.contains(&place), "{said}");
    assert!(said.contains("[configuration_invalid]"), "{said}");
}

#[tokio::test]
async fn an_unknown_key_is_named_with_its_table() {
    let env = TestEnv::new();
    env.write_settings("[providers.local]\nkind = \"openai-chat\"\ncolour = \"red\"\n");
    let said = stderr(&env.run_cli(&["exec", "hi"]).await);
    let place = format!(
        "{}:3:1: key `providers.local.colour`: unknown field `colour`",
        env.mc_home().join("settings.toml").display()
    );
    assert!(said.contains(&place), "{said}");
}

#[tokio::test]
async fn a_typo_in_disabled_tools_is_named_where_it_is() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.cwd().join(".magi")).unwrap();
    let project = env.cwd().join(".magi/settings.toml");
    std::fs::write(
        &project,
        "[tools]\ndisabled = [\n  \"bash\",\n  \"bahs\",\n]\n",
    )
    .unwrap();
    let said = stderr(&env.run_cli(&["exec", "hi"]).await);
    // The path as the backend saw it: the canonical working directory's.
    let canonical = env
        .cwd()
        .canonicalize()
        .unwrap()
        .join(".magi/settings.toml");
    let place = format!(
        "{}:4:3: key `tools.disabled`: \"bahs\" is no tool",
        canonical.display()
    );
    assert!(said.contains(&place), "{said}");
}

#[tokio::test]
async fn each_cause_of_an_unavailable_provider_has_its_own_message() {
    let cases: [(TestEnv, &str); 4] = [
        (
            TestEnv::new()
                .without("MAGI_PROVIDER")
                .without("MAGI_MODEL"),
            "no provider is selected: set MAGI_PROVIDER",
        ),
        (
            TestEnv::new().var("MAGI_PROVIDER", "nowhere"),
            "provider \"nowhere\" is not defined: use one of anthropic, codex, openai, \
             openai-chat",
        ),
        (
            TestEnv::new().without("MAGI_MODEL"),
            "no model is selected for provider \"openai-chat\": set MAGI_MODEL",
        ),
        (
            TestEnv::new().var("MAGI_PROVIDER", "anthropic"),
            "provider \"anthropic\" needs an API key: set the environment variable \
             ANTHROPIC_API_KEY",
        ),
    ];
    for (env, expected) in cases {
        let output = env.run_cli(&["exec", "hi"]).await;
        assert_eq!(output.status.code(), Some(1));
        let said = stderr(&output);
        assert!(said.contains(expected), "{expected}: {said}");
        assert!(said.contains("[provider_unavailable]"), "{said}");
    }
}

#[tokio::test]
async fn a_closed_port_is_a_refused_connection_at_that_url() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/v1");
    let env = TestEnv::new().var("OPENAI_BASE_URL", &base);
    let output = env.run_cli(&["exec", "hi"]).await;
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    let expected = format!(
        "provider_unreachable: connection refused by provider \"openai-chat\" at \
         {base}/chat/completions: check that the server is running"
    );
    assert!(said.contains(&expected), "{said}");
    assert!(said.contains("the run failed [execution_failed]"), "{said}");
}

#[tokio::test]
async fn a_401_says_which_variable_to_check_and_never_shows_the_key() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::error(
        401,
        format!("{{\"error\":\"bad key {KEY}\"}}"),
    ));
    let env = TestEnv::new().var("OPENAI_API_KEY", KEY);
    let output = exec_against(env, &mock, &["hi"]).await;
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(
        said.contains("provider_authentication_failed: provider \"openai-chat\" at "),
        "{said}"
    );
    assert!(
        said.contains("refused the credential: check OPENAI_API_KEY"),
        "{said}"
    );
    assert!(!said.contains(KEY), "{said}");
    assert!(!said.contains("bad key"), "{said}");
}

#[tokio::test]
async fn a_404_lists_the_models_the_server_has() {
    let mock = MockServer::start().await;
    mock.set_models([("qwen-7b", None), ("llama-3", None)]);
    mock.enqueue(Reply::error(404, "{}"));
    let output = exec_against(TestEnv::new(), &mock, &["hi"]).await;
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(
        said.contains(
            "answered 404 Not Found for model \"test-model\": the server lists: qwen-7b, llama-3"
        ),
        "{said}"
    );
}

#[tokio::test]
async fn a_429_is_retried_and_each_retry_is_told() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::error(429, "{}").header("retry-after", "0"));
    mock.enqueue(Reply::stream().text(["At last."]));
    let output = exec_against(TestEnv::new(), &mock, &["hi"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "At last.\n");
    let said = stderr(&output);
    assert!(
        said.contains("provider_retrying: provider \"openai-chat\" at "),
        "{said}"
    );
    assert!(
        said.contains("is rate-limiting requests (HTTP 429); retrying in 0s (2/5)"),
        "{said}"
    );
}

#[tokio::test]
async fn a_429_with_a_long_wait_reports_the_retry_time() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::error(429, "{}").header("retry-after", "3600"));
    let output = exec_against(TestEnv::new(), &mock, &["hi"]).await;
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(
        said.contains("provider_rate_limited: provider \"openai-chat\""),
        "{said}"
    );
    assert!(
        said.contains("still limited after 1 attempt; the provider asks to wait 3600s"),
        "{said}"
    );
}

#[tokio::test]
async fn a_reply_cut_at_the_output_limit_is_reported_and_exits_3() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .text(["The answer is"])
            .stop(Stop::MaxTokens),
    );
    let output = exec_against(TestEnv::new(), &mock, &["hi"]).await;
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "The answer is\n");
    let said = stderr(&output);
    assert!(
        said.contains("reply_truncated: the reply was cut off at the output token limit"),
        "{said}"
    );
    assert!(said.contains("the reply is incomplete"), "{said}");

    // The same with JSON events: the diagnostic is among them, and the run completed.
    mock.enqueue(Reply::stream().text(["Half"]).stop(Stop::MaxTokens));
    let output = exec_against(TestEnv::new(), &mock, &["--json", "hi"]).await;
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let frames: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        frames
            .iter()
            .any(|f| f["event"] == "diagnostic" && f["data"]["code"] == "reply_truncated")
    );
    let last = frames.last().unwrap();
    assert_eq!(last["data"]["outcome"], "completed");
}

#[tokio::test]
async fn a_failed_json_run_still_says_why_on_stderr() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::error(400, "{}"));
    let output = exec_against(TestEnv::new(), &mock, &["--json", "hi"]).await;
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(
        said.contains("provider_rejected_request: provider \"openai-chat\" at"),
        "{said}"
    );
    assert!(
        said.contains("rejected the request with HTTP 400"),
        "{said}"
    );
}
