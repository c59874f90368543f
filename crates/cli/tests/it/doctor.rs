//! `magi-code doctor`: what the configuration is made of and where each part came
//! from, checks with their fixes, a failing exit status when something is broken, and
//! the same as JSON.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use serde_json::Value;

use crate::common::*;
use magi_testkit::{MockServer, Reply};

const KEY: &str = "sk-doctor-test-0123456789abcdef";

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {report}"))
}

#[tokio::test]
async fn a_working_setup_shows_its_sources_and_passes_online() {
    let mock = MockServer::start().await;
    mock.set_models([("test-model", None)]);
    let env = TestEnv::new()
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("OPENAI_API_KEY", KEY);
    env.write_settings("[permissions]\n");
    let output = env.run_cli(&["doctor", "--online"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = stdout(&output);
    for expected in [
        format!("MC_HOME      {} (from MC_HOME)", env.mc_home().display()),
        format!(
            "settings     {} (global): read",
            env.mc_home().join("settings.toml").display()
        ),
        "(project): absent".to_owned(),
        "provider     openai-chat (from MAGI_PROVIDER)".to_owned(),
        format!("base URL     {} (from OPENAI_BASE_URL)", mock.base_url()),
        "credential   OPENAI_API_KEY: present".to_owned(),
        "model        test-model (from MAGI_MODEL)".to_owned(),
        "ok       backend: started and initialized".to_owned(),
        "ok       provider: the provider lists 1 model(s), \"test-model\" among them".to_owned(),
    ] {
        assert!(text.contains(&expected), "{expected}\n{text}");
    }
    assert!(!text.contains("error"), "{text}");
    assert!(!text.contains(KEY), "{text}");
    // The model list answered: no model request was needed.
    assert!(mock.requests().iter().all(|r| r.method == "GET"));

    let output = env.run_cli(&["doctor", "--json"]).await;
    assert_eq!(output.status.code(), Some(0));
    let report = json(&output);
    assert_eq!(report["ok"], true);
    assert_eq!(report["online"], false);
    assert_eq!(report["provider"]["name"], "openai-chat");
    assert_eq!(report["provider"]["credential"], "OPENAI_API_KEY");
    assert_eq!(report["provider"]["credential_present"], true);
    assert_eq!(report["model"]["from"], "MAGI_MODEL");
    assert_eq!(report["settings_files"][0]["present"], true);
    assert_eq!(report["settings_files"][1]["present"], false);
    assert_eq!(check(&report, "backend")["status"], "ok");
    assert!(!stdout(&output).contains(KEY));
}

#[tokio::test]
async fn a_missing_credential_is_an_error_with_its_variable_and_no_other_advice() {
    let env = TestEnv::new().var("MAGI_PROVIDER", "anthropic");
    let output = env.run_cli(&["doctor"]).await;
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains("credential   ANTHROPIC_API_KEY: missing"),
        "{text}"
    );
    assert!(
        text.contains(
            "error    configuration: provider \"anthropic\" needs an API key: set the \
             environment variable ANTHROPIC_API_KEY"
        ),
        "{text}"
    );
    assert!(
        text.contains("ok       settings: no settings file present"),
        "{text}"
    );
    // Advice for another cause is not given.
    assert!(!text.contains("MAGI_PROVIDER=openai-chat"), "{text}");
    assert!(!text.contains("no provider is selected"), "{text}");
}

#[tokio::test]
async fn a_broken_settings_file_is_an_error_naming_its_line() {
    let env = TestEnv::new();
    env.write_settings("[tools]\ndisabled = \"bash\"\n");
    let output = env.run_cli(&["doctor", "--json"]).await;
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    assert_eq!(report["ok"], false);
    let settings = check(&report, "settings");
    assert_eq!(settings["status"], "error");
    let place = format!(
        "{}:2:12: key `tools.disabled`",
        env.mc_home().join("settings.toml").display()
    );
    assert!(
        settings["message"].as_str().unwrap().contains(&place),
        "{settings}"
    );
    assert!(
        settings["fix"]
            .as_str()
            .unwrap()
            .contains("docs/configuration.md")
    );

    // A header left open: the place names no key of the table above it, and the
    // provider and model the unread settings would select are unknown, not absent.
    env.write_settings("[tools]\ndisabled = [\"bash\"]\n[agent\n");
    let output = env.run_cli(&["doctor"]).await;
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    let place = format!(
        "{}:3:7: unclosed table",
        env.mc_home().join("settings.toml").display()
    );
    assert!(text.contains(&place), "{text}");
    assert!(!text.contains("(none)"), "{text}");
    assert!(
        text.contains("provider     unknown: the settings could not be read"),
        "{text}"
    );
}

#[tokio::test]
async fn a_well_formed_file_naming_an_unknown_tool_is_a_configuration_error() {
    let env = TestEnv::new();
    env.write_settings("[tools]\ndisabled = [\"bahs\"]\n");
    let output = env.run_cli(&["doctor"]).await;
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    // The file's form is fine; what it names is not, and only that is the error.
    assert!(
        text.contains("ok       settings: 1 settings file(s) read and well-formed"),
        "{text}"
    );
    let place = format!(
        "error    configuration: invalid settings: {}:2:13: key `tools.disabled`: \"bahs\" is \
         no tool this backend offers",
        env.mc_home().join("settings.toml").display()
    );
    assert!(text.contains(&place), "{text}");
}

#[tokio::test]
async fn online_a_refused_credential_is_an_error_naming_the_variable() {
    let mock = MockServer::start().await;
    mock.set_models_status(Some(401));
    mock.enqueue(Reply::error(401, "{}"));
    let env = TestEnv::new()
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("OPENAI_API_KEY", KEY);
    let output = env.run_cli(&["doctor", "--online"]).await;
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.contains("error    provider: provider \"openai-chat\" at "),
        "{text}"
    );
    assert!(
        text.contains("refused the credential: check OPENAI_API_KEY"),
        "{text}"
    );
    assert!(!text.contains(KEY), "{text}");
}

#[tokio::test]
async fn online_a_closed_port_is_a_refused_connection() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/v1");
    let env = TestEnv::new().var("OPENAI_BASE_URL", &base);
    let output = env.run_cli(&["doctor", "--online", "--json"]).await;
    assert_eq!(output.status.code(), Some(1));
    let report = json(&output);
    let provider = check(&report, "provider");
    assert_eq!(provider["status"], "error");
    let expected =
        format!("connection refused by provider \"openai-chat\" at {base}/chat/completions");
    assert!(
        provider["message"].as_str().unwrap().starts_with(&expected),
        "{provider}"
    );
}

#[tokio::test]
async fn an_unapproved_mcp_server_is_a_warning_with_the_command_to_approve_it() {
    let env = TestEnv::new();
    env.write_settings("[mcp.servers.tools]\ncommand = \"/bin/true\"\n");
    let output = env.run_cli(&["doctor"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = stdout(&output);
    assert!(
        text.contains("MCP server   tools: needs approval"),
        "{text}"
    );
    assert!(
        text.contains("warning  mcp: MCP server \"tools\" is not approved"),
        "{text}"
    );
    assert!(text.contains("fix: magi-code mcp approve tools"), "{text}");
}
