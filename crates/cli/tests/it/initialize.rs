//! `initialize`, `status` and `shutdown` through the real binary.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_protocol::Method;
use magi_protocol::limits::Limits;
use magi_protocol::messages::{EmptyParams, Readiness, ReadinessPhase, RuntimeState};
use magi_protocol::methods;
use serde_json::json;

#[tokio::test]
async fn initialize_reports_capabilities_limits_and_a_ready_status() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    let result = backend
        .initialize(&["session.create", "turn.start", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let sixteen: Vec<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(result.capabilities, sixteen);
    assert_eq!(result.capabilities[0], "initialize");
    assert_eq!(result.capabilities[15], "approval.answer");
    assert_eq!(result.limits, Limits::V1);
    assert_eq!(result.status.state, RuntimeState::Idle);
    assert_eq!(
        result.status.readiness,
        Readiness::Phase(ReadinessPhase::Ready)
    );
    assert_eq!(result.status.provider.as_deref(), Some("openai-chat"));
    assert_eq!(result.status.model.as_deref(), Some("test-model"));
    let context = result.status.context_id.clone().unwrap();
    assert!(context.len() == 64 && context.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(
        (
            result.status.session_id.clone(),
            result.status.run_id.clone()
        ),
        (None, None)
    );
    let instance = backend.instance_id().unwrap();
    assert!(uuid_like(&instance), "{instance}");

    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(status, result.status);
    assert!(env.mc_home().join("sessions").is_dir());
    shutdown_clean(&mut backend).await;
}

fn uuid_like(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && text.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit())
}

#[tokio::test]
async fn initialize_result_frame_is_exact() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    backend
        .send_raw(&frame(
            "i1",
            "initialize",
            json!({"required_capabilities": []}),
        ))
        .await
        .unwrap();
    let response = next_response(&mut backend).await;
    assert_eq!(response.seq, 1);
    let result = response.outcome.unwrap();
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["capabilities", "limits", "status"],
        "no extensions without negotiation"
    );
    let mut status_keys: Vec<&String> = result["status"].as_object().unwrap().keys().collect();
    // Sorted here: the map's order depends on serde_json's features, and the set is what
    // the protocol fixes.
    status_keys.sort();
    assert_eq!(
        status_keys,
        [
            "context_id",
            "model",
            "provider",
            "readiness",
            "run_id",
            "selection",
            "session_id",
            "state"
        ]
    );
    assert_eq!(result["limits"].as_object().unwrap().len(), 47);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn every_instance_gets_a_fresh_id_and_seq_restarts() {
    let env = TestEnv::new();
    let mut first = env.spawn();
    let mut second = env.spawn();
    let a = first.status().await.unwrap();
    let b = second.status().await.unwrap();
    assert_eq!(
        (a, b),
        (
            Err(magi_protocol::ErrorCode::NotInitialized),
            Err(magi_protocol::ErrorCode::NotInitialized)
        )
    );
    assert_ne!(first.instance_id(), second.instance_id());
    shutdown_clean(&mut first).await;
    shutdown_clean(&mut second).await;
}

#[tokio::test]
async fn status_and_methods_before_initialize() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    let methods = Method::ALL
        .iter()
        .filter(|m| !matches!(m, Method::Initialize | Method::Shutdown));
    for (n, method) in methods.enumerate() {
        let id = format!("m{n}");
        backend
            .send_raw(&frame(&id, method.as_str(), json!({})))
            .await
            .unwrap();
        expect_error(&mut backend, Some(&id), "not_initialized").await;
    }
    assert!(
        !env.mc_home().exists(),
        "nothing is created before initialization"
    );
    shutdown_clean(&mut backend).await;
    assert!(!env.mc_home().exists());
}

#[tokio::test]
async fn capability_preflight_leaves_the_child_unadmitted_and_effect_free() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    let cases: &[(serde_json::Value, &str)] = &[
        (
            json!({"required_capabilities": ["status", "client.tools"]}),
            "invalid_params",
        ),
        (
            json!({"required_capabilities": ["warp.drive"]}),
            "unsupported_capability",
        ),
        (
            json!({"required_capabilities": ["bad name"]}),
            "invalid_params",
        ),
        (
            json!({"required_capabilities": vec!["status"; 17]}),
            "invalid_params",
        ),
        (json!({"required_capabilities": "status"}), "invalid_params"),
        (json!({}), "invalid_params"),
        (
            json!({"required_capabilities": [], "extra": true}),
            "invalid_params",
        ),
    ];
    for (n, (params, code)) in cases.iter().enumerate() {
        let id = format!("p{n}");
        backend
            .send_raw(&frame(&id, "initialize", params.clone()))
            .await
            .unwrap();
        expect_error(&mut backend, Some(&id), code).await;
        assert!(!env.mc_home().exists(), "preflight {n} created MC_HOME");
    }
    backend.send_raw(b"{\"protocol\":\"magi-code.local-agent\",\"version\":1,\"id\":\"dup\",\"method\":\"initialize\",\"params\":{\"required_capabilities\":[],\"required_capabilities\":[]}}\n").await.unwrap();
    expect_error(&mut backend, Some("dup"), "invalid_params").await;
    // Sixteen names, duplicates counted, are within the bound.
    let sixteen = vec!["status"; 16];
    let result = backend.initialize(&sixteen).await.unwrap();
    assert!(result.is_ok(), "{result:?}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn already_initialized_after_success() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    let again = backend.initialize(&[]).await.unwrap();
    assert_eq!(again, Err(magi_protocol::ErrorCode::AlreadyInitialized));
    // Even an invalid one: initialization state outranks params.
    let bad = backend
        .request_raw("initialize", json!({"nope": 1}))
        .await
        .unwrap();
    assert_eq!(
        bad.outcome,
        Err(magi_protocol::ErrorCode::AlreadyInitialized)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn failed_startup_is_reported_and_sticky() {
    let env = TestEnv::new()
        .without("MAGI_PROVIDER")
        .var("MAGI_PROVIDER", "openai");
    let mut backend = env.spawn();
    let failed = backend.initialize(&["status"]).await.unwrap();
    assert_eq!(failed, Err(magi_protocol::ErrorCode::ProviderUnavailable));
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(status.state, RuntimeState::Failed);
    assert_eq!(
        serde_json::to_value(status.readiness).unwrap(),
        json!("provider_unavailable")
    );
    assert_eq!(status.provider.as_deref(), Some("openai"));
    assert!(status.context_id.is_some());
    assert_eq!(
        backend.initialize(&[]).await.unwrap(),
        Err(magi_protocol::ErrorCode::AlreadyInitialized)
    );
    let other = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap();
    assert_eq!(other, Err(magi_protocol::ErrorCode::ProviderUnavailable));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn hosted_provider_with_its_key_is_ready() {
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "anthropic")
        .var("MAGI_MODEL", "claude-test")
        .var("ANTHROPIC_API_KEY", "test-key-value");
    let mut backend = env.spawn();
    let result = initialize_ok(&mut backend).await;
    assert_eq!(result.status.provider.as_deref(), Some("anthropic"));
    assert_eq!(result.status.model.as_deref(), Some("claude-test"));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn invalid_settings_fail_with_configuration_invalid() {
    let env = TestEnv::new();
    env.write_settings("provider = [unclosed");
    let mut backend = env.spawn();
    assert_eq!(
        backend.initialize(&[]).await.unwrap(),
        Err(magi_protocol::ErrorCode::ConfigurationInvalid)
    );
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(
        serde_json::to_value(status.readiness).unwrap(),
        json!("configuration_invalid")
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn settings_select_the_provider_with_project_over_global() {
    let env = TestEnv::new()
        .without("MAGI_PROVIDER")
        .without("MAGI_MODEL");
    env.write_settings("provider = \"local\"\nmodel = \"global-model\"\n[providers.local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nkeyless = true\n");
    std::fs::create_dir_all(env.cwd().join(".magi")).unwrap();
    std::fs::write(
        env.cwd().join(".magi/settings.toml"),
        "model = \"project-model\"\n",
    )
    .unwrap();
    let mut backend = env.spawn();
    let result = initialize_ok(&mut backend).await;
    assert_eq!(result.status.provider.as_deref(), Some("local"));
    assert_eq!(result.status.model.as_deref(), Some("project-model"));
    shutdown_clean(&mut backend).await;

    let env = env.var("MAGI_MODEL", "env-model");
    let mut backend = env.spawn();
    assert_eq!(
        initialize_ok(&mut backend).await.status.model.as_deref(),
        Some("env-model")
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn secret_like_model_names_are_withheld() {
    let env = TestEnv::new().var("MAGI_MODEL", "sk-live-abcdefghijklmnop");
    let mut backend = env.spawn();
    let result = initialize_ok(&mut backend).await;
    assert_eq!(result.status.model, None);
    assert_eq!(result.status.provider.as_deref(), Some("openai-chat"));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn context_identity_follows_canonical_paths() {
    let env = TestEnv::new();
    let context = |home: std::path::PathBuf, cwd: Option<std::path::PathBuf>| {
        let mut command = env.command_with_home(&home);
        if let Some(cwd) = cwd {
            command = command.current_dir(cwd);
        }
        async move {
            let mut backend = command.spawn().unwrap();
            let id = initialize_ok(&mut backend).await.status.context_id.unwrap();
            shutdown_clean(&mut backend).await;
            id
        }
    };
    let real = env.mc_home();
    let a = context(real.clone(), None).await;
    let alias = env.root().join("alias-home");
    std::os::unix::fs::symlink(&real, &alias).unwrap();
    let b = context(alias, None).await;
    let dotted = env.root().join("mc-home/../mc-home");
    let c = context(dotted, None).await;
    assert_eq!(a, b);
    assert_eq!(a, c);
    let other_home = context(env.root().join("other-home"), None).await;
    assert_ne!(a, other_home);
    std::fs::create_dir(env.root().join("other-work")).unwrap();
    let other_cwd = context(real, Some(env.root().join("other-work"))).await;
    assert_ne!(a, other_cwd);
}

#[tokio::test]
async fn gated_methods_need_negotiation() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    for method in Method::GATED {
        let response = backend
            .request_raw(method.as_str(), json!({}))
            .await
            .unwrap();
        assert_eq!(
            response.outcome,
            Err(magi_protocol::ErrorCode::UnsupportedCapability),
            "{method}"
        );
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn every_method_is_answered_after_initialization() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    let all: Vec<&str> = Method::ALL
        .iter()
        .map(|m| m.as_str())
        .filter(|m| *m != "initialize")
        .collect();
    let required: Vec<&str> = all
        .iter()
        .copied()
        .filter(|m| *m != "status")
        .take(15)
        .collect();
    backend.initialize(&required).await.unwrap().unwrap();
    for method in Method::ALL
        .iter()
        .filter(|m| !matches!(m, Method::Initialize | Method::Shutdown | Method::Status))
    {
        // Every method is answered; with these params only `session.create`,
        // `session.list`, `session.discover`, `model.catalog` and `model.catalog.status`
        // are valid.
        let response = backend
            .request_raw(method.as_str(), json!({}))
            .await
            .unwrap();
        assert_eq!(
            response.outcome.is_ok(),
            matches!(
                method,
                Method::SessionCreate
                    | Method::SessionList
                    | Method::SessionDiscover
                    | Method::ModelCatalog
                    | Method::ModelCatalogStatus
            ),
            "{method}: {response:?}"
        );
    }
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(status.state, RuntimeState::Idle);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn status_and_shutdown_params_are_exact() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    initialize_ok(&mut backend).await;
    for (n, method) in ["status", "shutdown"].iter().enumerate() {
        let id = format!("x{n}");
        backend
            .send_raw(&frame(&id, method, json!({"verbose": true})))
            .await
            .unwrap();
        expect_error(&mut backend, Some(&id), "invalid_params").await;
    }
    // The refused shutdown changed nothing.
    assert_eq!(
        backend.status().await.unwrap().unwrap().state,
        RuntimeState::Idle
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn shutdown_before_initialization_exits_cleanly() {
    let env = TestEnv::new();
    let mut backend = env.spawn();
    shutdown_clean(&mut backend).await;
    assert!(!env.mc_home().exists());
}
