//! `model.catalog` and `status.selection` through the real binary: choices from
//! validated caches and enabled settings only, paging, notices, stale snapshots and
//! every parameter rule.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    Availability, CatalogStatusParams, Effort, EffortRequest, EffortSupport, EmptyParams,
    ModelCatalogParams, ModelCatalogResult, ModelRefreshParams, ModelRefreshResult,
    OperationCancelParams, SelectionScope, SelectionSetParams, SelectionSetResult, StatusResult,
    TurnStartParams,
};
use magi_protocol::methods;
use serde_json::{Value, json};

const CAPABILITIES: [&str; 4] = ["model.catalog", "selection.set", "status", "shutdown"];

fn env() -> TestEnv {
    TestEnv::new()
        .var("MAGI_PROVIDER", "openai")
        .var("MAGI_MODEL", "gpt-4.1")
        .var("OPENAI_API_KEY", "test-openai-key-123")
        .without("ANTHROPIC_API_KEY")
}

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(&CAPABILITIES).await.unwrap().unwrap();
    backend
}

async fn catalog(
    backend: &mut Backend,
    params: ModelCatalogParams,
) -> Result<ModelCatalogResult, ErrorCode> {
    backend
        .call::<methods::ModelCatalog>(&params)
        .await
        .unwrap()
}

/// A fresh snapshot of at most `limit` choices a page.
fn first_page(limit: u64) -> ModelCatalogParams {
    ModelCatalogParams {
        limit: Some(limit),
        ..ModelCatalogParams::default()
    }
}

/// The page after `cursor` of the snapshot `revision`.
fn next_page(revision: &str, cursor: Option<String>, limit: Option<u64>) -> ModelCatalogParams {
    ModelCatalogParams {
        revision: Some(revision.to_owned()),
        cursor,
        limit,
    }
}

#[tokio::test]
async fn choices_come_from_enabled_cached_models_in_order() {
    let env = env();
    env.write_settings(
        "[providers.catalog]\nenabled = [\"openai/o3\", \"openai/gpt-4.1\", \"anthropic/claude-sonnet-4\", \"openai/retired\", \"openai-chat/qwen\"]\n",
    );
    write_cache(
        &env,
        "openai",
        &[
            ("gpt-4.1", Some("GPT-4.1")),
            ("o3", None),
            ("not-enabled", None),
        ],
    );
    write_cache(
        &env,
        "anthropic",
        &[("claude-sonnet-4", Some("Claude Sonnet 4"))],
    );
    let mut backend = ready(&env).await;
    let result = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    let pairs: Vec<(&str, &str)> = result
        .choices
        .iter()
        .map(|c| (c.provider.as_str(), c.model.as_str()))
        .collect();
    assert_eq!(
        pairs,
        vec![
            ("anthropic", "claude-sonnet-4"),
            ("openai", "gpt-4.1"),
            ("openai", "o3")
        ]
    );
    assert!(result.complete);
    assert_eq!(result.next_cursor, None);
    // openai-chat is enabled but has no cache.
    assert_eq!(result.notices, vec!["provider_catalog_unavailable"]);
    let anthropic = &result.choices[0];
    assert_eq!(
        anthropic.availability,
        Availability::AuthenticationUnavailable
    );
    assert_eq!(anthropic.provider_name.as_deref(), Some("Anthropic"));
    assert_eq!(anthropic.model_name.as_deref(), Some("Claude Sonnet 4"));
    let o3 = &result.choices[2];
    assert_eq!(o3.availability, Availability::Available);
    assert_eq!(o3.effort_support, EffortSupport::Supported);
    assert_eq!(
        o3.permitted_efforts,
        vec![Effort::Default, Effort::Low, Effort::Medium, Effort::High]
    );
    assert_eq!(o3.selection_id.len(), 64);
    assert_eq!(result.choices[1].effort_support, EffortSupport::Unsupported);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn pages_continue_and_a_changed_cache_is_stale_for_good() {
    let env = env();
    let models: Vec<String> = (0..5).map(|n| format!("model-{n}")).collect();
    let enabled: Vec<String> = models.iter().map(|m| format!("\"openai/{m}\"")).collect();
    env.write_settings(&format!(
        "[providers.catalog]\nenabled = [{}]\n",
        enabled.join(", ")
    ));
    let cached: Vec<(&str, Option<&str>)> = models.iter().map(|m| (m.as_str(), None)).collect();
    write_cache(&env, "openai", &cached);
    let mut backend = ready(&env).await;
    let first = catalog(&mut backend, first_page(2)).await.unwrap();
    assert_eq!(first.choices.len(), 2);
    assert!(!first.complete);
    let cursor = first.next_cursor.clone().unwrap();
    let second = catalog(
        &mut backend,
        next_page(&first.revision, Some(cursor), Some(2)),
    )
    .await
    .unwrap();
    assert_eq!(second.choices[0].model, "model-2");
    assert_eq!(second.revision, first.revision);
    // The cache changes: the snapshot is stale, and stays so after restoring it.
    write_cache(&env, "openai", &cached[..4]);
    let next = next_page(&second.revision, second.next_cursor, Some(2));
    assert_eq!(
        catalog(&mut backend, next.clone()).await,
        Err(ErrorCode::StaleCatalog)
    );
    write_cache(&env, "openai", &cached);
    assert_eq!(
        catalog(&mut backend, next).await,
        Err(ErrorCode::StaleCatalog)
    );
    // A fresh request starts over with a new revision.
    let fresh = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    assert_ne!(fresh.revision, first.revision);
    assert_eq!(fresh.choices.len(), 5);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn nothing_enabled_means_no_choices_and_bad_caches_are_notices() {
    let env = env();
    write_cache(&env, "openai", &[("gpt-4.1", None)]);
    let mut backend = ready(&env).await;
    let result = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    assert!(result.choices.is_empty());
    assert!(result.complete);
    shutdown_clean(&mut backend).await;

    let env = self::env();
    env.write_settings("[providers.catalog]\nenabled = [\"openai/gpt-4.1\", \"openai/sk-abcdefghijklmnopqrstuvwxyz0123456789\"]\n");
    write_cache(
        &env,
        "openai",
        &[
            ("gpt-4.1", None),
            ("sk-abcdefghijklmnopqrstuvwxyz0123456789", None),
        ],
    );
    let mut backend = ready(&env).await;
    let result = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    assert_eq!(result.choices.len(), 1);
    assert_eq!(result.notices, vec!["catalog_entries_omitted_unsafe"]);
    assert!(!format!("{result:?}").contains("sk-abc"));
    shutdown_clean(&mut backend).await;

    let env = self::env();
    env.write_settings("[providers.catalog]\nenabled = [\"openai/gpt-4.1\"]\n");
    std::fs::create_dir_all(env.mc_home().join("data/catalog")).unwrap();
    std::fs::write(env.mc_home().join("data/catalog/openai.json"), "not json").unwrap();
    let mut backend = ready(&env).await;
    let result = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    assert!(result.choices.is_empty());
    assert_eq!(result.notices, vec!["provider_catalog_unavailable"]);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn catalog_params_are_exact() {
    let env = env();
    let mut backend = ready(&env).await;
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 101}),
        json!({"limit": null}),
        json!({"revision": "c1"}),
        json!({"cursor": "c1.1"}),
        json!({"revision": "bad id!", "cursor": "x"}),
        json!({"extra": 1}),
    ] {
        let response = backend
            .request_raw("model.catalog", bad.clone())
            .await
            .unwrap();
        assert_eq!(response.outcome, Err(ErrorCode::InvalidParams), "{bad}");
    }
    // A continuation this child never issued is stale.
    assert_eq!(
        catalog(&mut backend, next_page("c1", Some("c1.1".into()), None)).await,
        Err(ErrorCode::StaleCatalog)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn status_reports_the_selection_once_ready() {
    let env = env();
    let mut backend = ready(&env).await;
    let status = backend.status().await.unwrap().unwrap();
    let selection = status.selection.unwrap();
    assert_eq!(selection.provider.as_deref(), Some("openai"));
    assert_eq!(selection.model.as_deref(), Some("gpt-4.1"));
    assert_eq!(selection.requested_effort, Effort::Default);
    assert_eq!(selection.effective_effort, None);
    assert_eq!(selection.effort_support, EffortSupport::Unsupported);
    assert_eq!(selection.permitted_efforts, vec![Effort::Default]);
    assert!(selection.revision.len() <= 64);
    shutdown_clean(&mut backend).await;

    // A failed startup reports no selection.
    let failed = TestEnv::new().without("MAGI_PROVIDER");
    let mut backend = failed.spawn();
    let _ = backend.initialize(&CAPABILITIES).await.unwrap();
    let status = backend.status().await.unwrap().unwrap();
    assert_eq!(status.selection, None);
    shutdown_clean(&mut backend).await;
}

/// A child with `o3` and `gpt-4.1` cached and enabled at `openai` (keyed), and
/// `claude-sonnet-4` cached and enabled at `anthropic` (no key).
fn selection_env(mock_base: Option<&str>) -> TestEnv {
    let mut env = env();
    if let Some(base) = mock_base {
        env = env.var("OPENAI_BASE_URL", base);
    }
    env.write_settings(
        "[providers.catalog]\nenabled = [\"openai/o3\", \"openai/gpt-4.1\", \"anthropic/claude-sonnet-4\"]\n",
    );
    write_cache(&env, "openai", &[("gpt-4.1", None), ("o3", None)]);
    write_cache(&env, "anthropic", &[("claude-sonnet-4", None)]);
    env
}

async fn status(backend: &mut Backend) -> StatusResult {
    backend.status().await.unwrap().unwrap()
}

async fn select(
    backend: &mut Backend,
    params: &SelectionSetParams,
) -> Result<SelectionSetResult, ErrorCode> {
    backend.call::<methods::SelectionSet>(params).await.unwrap()
}

fn refresh_of(provider: &str) -> ModelRefreshParams {
    ModelRefreshParams {
        provider: provider.to_owned(),
    }
}

const SELECTING: [&str; 7] = [
    "model.catalog",
    "selection.set",
    "session.create",
    "session.open",
    "turn.start",
    "status",
    "shutdown",
];

#[tokio::test]
async fn a_selection_is_validated_persisted_and_restored_after_a_restart() {
    let mock = magi_testkit::MockServer::start().await;
    let env = selection_env(Some(&mock.base_url()));
    let mut backend = env.spawn();
    backend.initialize(&SELECTING).await.unwrap().unwrap();
    let session_id = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id;
    let before = status(&mut backend).await.selection.unwrap();
    let catalog = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    let request =
        |revision: &str, provider: &str, model: &str, effort: EffortRequest| SelectionSetParams {
            session_id: session_id.clone(),
            selection_revision: revision.to_owned(),
            catalog_revision: catalog.revision.clone(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            effort: Some(effort),
        };
    let high = EffortRequest::Set {
        value: Effort::High,
    };
    // Refusals write nothing.
    let log = log_path(&env, &session_id);
    let refusals = [
        (
            request(&before.revision, "openai", "gpt-9", EffortRequest::Keep),
            ErrorCode::SelectionInvalid,
        ),
        (
            request(
                &before.revision,
                "anthropic",
                "claude-sonnet-4",
                EffortRequest::Keep,
            ),
            ErrorCode::ProviderUnavailable,
        ),
        (
            request(&before.revision, "openai", "gpt-4.1", high),
            ErrorCode::EffortUnsupported,
        ),
        (
            request("s0", "openai", "o3", EffortRequest::Keep),
            ErrorCode::StaleSelection,
        ),
        (
            SelectionSetParams {
                session_id: "other-session".into(),
                ..request(&before.revision, "openai", "o3", EffortRequest::Keep)
            },
            ErrorCode::StaleSession,
        ),
        (
            SelectionSetParams {
                catalog_revision: "c0".into(),
                ..request(&before.revision, "openai", "o3", EffortRequest::Keep)
            },
            ErrorCode::StaleCatalog,
        ),
    ];
    for (params, code) in refusals {
        assert_eq!(select(&mut backend, &params).await, Err(code), "{params:?}");
    }
    let keep = serde_json::to_value(request(
        &before.revision,
        "openai",
        "o3",
        EffortRequest::Keep,
    ))
    .unwrap();
    let malformed = [
        {
            let mut params = keep.clone();
            params["effort"] = Value::Null;
            params
        },
        {
            let mut params = keep;
            params["provider"] = json!("");
            params
        },
    ];
    for params in malformed {
        let response = backend
            .request_raw("selection.set", params.clone())
            .await
            .unwrap();
        assert_eq!(response.outcome, Err(ErrorCode::InvalidParams), "{params}");
    }
    assert!(!log.exists(), "a refused selection writes nothing");

    let chosen = select(
        &mut backend,
        &request(&before.revision, "openai", "o3", high),
    )
    .await
    .unwrap();
    assert!(chosen.durable);
    assert_eq!(chosen.scope, SelectionScope::Session);
    assert_eq!(chosen.catalog_revision, catalog.revision);
    assert!(chosen.history_revision.is_some());
    assert_eq!(chosen.selection.model.as_deref(), Some("o3"));
    assert_eq!(chosen.selection.requested_effort, Effort::High);
    assert_eq!(chosen.selection.effective_effort, Some(Effort::High));
    let now = status(&mut backend).await;
    assert_eq!(now.selection.as_ref(), Some(&chosen.selection));
    assert_eq!(now.model.as_deref(), Some("o3"));
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("\"kind\":\"session_preferences\"")
    );
    // The old revision is stale now.
    assert_eq!(
        select(
            &mut backend,
            &request(&before.revision, "openai", "o3", EffortRequest::Keep)
        )
        .await,
        Err(ErrorCode::StaleSelection)
    );
    // A turn sends the selected model and effort.
    mock.enqueue(magi_testkit::Reply::stream().text(["Thought hard."]));
    let think = TurnStartParams {
        session_id: session_id.clone(),
        prompt: "Think".into(),
        attachments: None,
    };
    backend
        .call::<methods::TurnStart>(&think)
        .await
        .unwrap()
        .unwrap();
    loop {
        if let magi_client::Incoming::Event {
            event: magi_protocol::messages::Event::RunFinished(_),
            ..
        } = next(&mut backend).await
        {
            break;
        }
    }
    let body = &mock.requests()[0].body;
    assert_eq!(body["model"], "o3");
    assert_eq!(body["reasoning"]["effort"], "high");
    shutdown_clean(&mut backend).await;

    // A new child restores the saved selection on open.
    let mut backend = env.spawn();
    backend.initialize(&SELECTING).await.unwrap().unwrap();
    let opened = open_session(&mut backend, &session_id).await.unwrap();
    assert!(opened.notices.is_empty());
    let restored = status(&mut backend).await.selection.unwrap();
    assert_eq!(restored.model.as_deref(), Some("o3"));
    assert_eq!(restored.requested_effort, Effort::High);
    shutdown_clean(&mut backend).await;

    // Retired from the cache: the startup selection, the saved request kept, a notice.
    write_cache(&env, "openai", &[("gpt-4.1", None)]);
    let mut backend = env.spawn();
    backend.initialize(&SELECTING).await.unwrap().unwrap();
    let opened = open_session(&mut backend, &session_id).await.unwrap();
    assert_eq!(opened.notices, vec!["saved_selection_unavailable"]);
    let fallback = status(&mut backend).await.selection.unwrap();
    assert_eq!(fallback.model.as_deref(), Some("gpt-4.1"));
    assert_eq!(fallback.requested_effort, Effort::High);
    assert_eq!(fallback.effective_effort, None);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn selection_needs_an_attachment() {
    let env = selection_env(None);
    let mut backend = env.spawn();
    backend.initialize(&SELECTING).await.unwrap().unwrap();
    let revision = status(&mut backend).await.selection.unwrap().revision;
    let catalog = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    let params = SelectionSetParams {
        session_id: "s1".into(),
        selection_revision: revision,
        catalog_revision: catalog.revision,
        provider: "openai".into(),
        model: "o3".into(),
        effort: None,
    };
    assert_eq!(
        select(&mut backend, &params).await,
        Err(ErrorCode::SessionMissing)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_deliberate_refresh_fills_the_cache_and_failures_keep_it() {
    let mock = magi_testkit::MockServer::start().await;
    mock.set_models([("local-a", None), ("local-b", Some("Local B"))]);
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "local-a")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .without("OPENAI_API_KEY");
    env.write_settings(
        "[providers.catalog]\nenabled = [\"openai-chat/local-a\", \"openai-chat/local-b\"]\n",
    );
    // Without negotiation the operation does not exist for this client.
    let mut base = env.spawn();
    base.initialize(&CAPABILITIES).await.unwrap().unwrap();
    let refused = base
        .call::<methods::ModelRefresh>(&refresh_of("openai-chat"))
        .await
        .unwrap();
    assert_eq!(refused, Err(ErrorCode::UnsupportedCapability));
    shutdown_clean(&mut base).await;

    let mut backend = env.spawn();
    backend
        .initialize(&["model.catalog", "model.refresh", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let before = catalog(&mut backend, first_page(1)).await.unwrap();
    assert!(before.choices.is_empty());
    let refreshed = backend
        .call::<methods::ModelRefresh>(&refresh_of("openai-chat"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        refreshed,
        ModelRefreshResult {
            provider: "openai-chat".into(),
            cached_models: 2,
            notices: Vec::new(),
        }
    );
    let cache = env.mc_home().join("data/catalog/openai-chat.json");
    let written = std::fs::read_to_string(&cache).unwrap();
    let after = catalog(&mut backend, ModelCatalogParams::default())
        .await
        .unwrap();
    let models: Vec<&str> = after.choices.iter().map(|c| c.model.as_str()).collect();
    assert_eq!(models, vec!["local-a", "local-b"]);
    // An OpenAI-style list has IDs only: no display names.
    assert_eq!(after.choices[1].model_name, None);

    let refresh = |provider: &str| json!({ "provider": provider });
    for (params, code) in [
        (refresh("nowhere"), ErrorCode::SelectionInvalid),
        (refresh("anthropic"), ErrorCode::ProviderUnavailable),
        (json!({"provider": ""}), ErrorCode::InvalidParams),
        (
            json!({"provider": "openai-chat", "x": 1}),
            ErrorCode::InvalidParams,
        ),
    ] {
        let answer = backend
            .request_raw("model.refresh", params.clone())
            .await
            .unwrap();
        assert_eq!(answer.outcome, Err(code), "{params}");
    }
    // A failing server and a garbage answer leave the cache as it was.
    mock.set_models_status(Some(500));
    let failed = backend
        .call::<methods::ModelRefresh>(&refresh_of("openai-chat"))
        .await
        .unwrap();
    assert_eq!(failed, Err(ErrorCode::ProviderUnavailable));
    mock.set_models_status(None);
    mock.set_models_body(Some("not a model list".into()));
    let garbage = backend
        .call::<methods::ModelRefresh>(&refresh_of("openai-chat"))
        .await
        .unwrap();
    assert_eq!(garbage, Err(ErrorCode::CatalogUnavailable));
    assert_eq!(std::fs::read_to_string(&cache).unwrap(), written);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn catalog_status_says_why_choices_are_missing() {
    let env = env();
    env.write_settings(
        "[providers.catalog]\nenabled = [\"openai/gpt-4.1\", \"openai/o3\", \"ghost/x\"]\n",
    );
    write_cache(&env, "openai", &[("gpt-4.1", None)]);
    let mut backend = env.spawn();
    backend
        .initialize(&["model.catalog.status", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let all = backend
        .call::<methods::ModelCatalogStatus>(&CatalogStatusParams::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::to_value(all).unwrap(),
        json!({"providers": [
            {"provider": "anthropic", "cache": "missing", "authentication": "unavailable",
             "enabled_models": 0, "cached_models": 0,
             "reasons": ["cache_missing", "authentication_unavailable", "no_enabled_models"]},
            {"provider": "codex", "cache": "missing", "authentication": "unavailable",
             "enabled_models": 0, "cached_models": 0,
             "reasons": ["cache_missing", "authentication_unavailable", "no_enabled_models"]},
            {"provider": "ghost", "cache": "missing", "authentication": "not_required",
             "enabled_models": 1, "cached_models": 0, "reasons": ["provider_not_configured"]},
            {"provider": "openai", "cache": "ready", "authentication": "available",
             "enabled_models": 2, "cached_models": 1, "reasons": ["enabled_model_not_cached"]},
            {"provider": "openai-chat", "cache": "missing", "authentication": "not_required",
             "enabled_models": 0, "cached_models": 0,
             "reasons": ["cache_missing", "no_enabled_models"]}
        ], "notices": []})
    );
    let openai = CatalogStatusParams {
        provider: Some("openai".into()),
    };
    let one = backend
        .call::<methods::ModelCatalogStatus>(&openai)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(one.providers.len(), 1);
    for (params, code) in [
        (json!({"provider": "nope"}), ErrorCode::SelectionInvalid),
        (json!({"provider": ""}), ErrorCode::InvalidParams),
        (json!({"provider": null}), ErrorCode::InvalidParams),
        (json!({"x": 1}), ErrorCode::InvalidParams),
    ] {
        let answer = backend
            .request_raw("model.catalog.status", params.clone())
            .await
            .unwrap();
        assert_eq!(answer.outcome, Err(code), "{params}");
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn operation_cancel_stops_a_hanging_refresh() {
    let mock = magi_testkit::MockServer::start().await;
    mock.set_models([("m", None)]);
    mock.set_models_hang(true);
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "m")
        .var("OPENAI_BASE_URL", &mock.base_url());
    let mut backend = env.spawn();
    backend
        .initialize(&["model.refresh", "operation.cancel", "status", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let refresh = backend
        .send::<methods::ModelRefresh>(&refresh_of("openai-chat"))
        .await
        .unwrap();
    // Wait until the fetch is on its way.
    let deadline = std::time::Instant::now() + WAIT;
    while mock.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the refresh never fetched"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    // Status stays answered while the worker runs.
    backend.status().await.unwrap().unwrap();
    let cancel = OperationCancelParams {
        request_id: refresh.id().to_owned(),
    };
    let cancelled = backend
        .call::<methods::OperationCancel>(&cancel)
        .await
        .unwrap()
        .unwrap();
    assert!(cancelled.cancellation_requested);
    let answer = tokio::time::timeout(WAIT, refresh.result())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer, Err(ErrorCode::OperationCancelled));
    assert!(!env.mc_home().join("data/catalog/openai-chat.json").exists());
    let nothing = OperationCancelParams {
        request_id: "nothing-running".into(),
    };
    let idle = backend
        .call::<methods::OperationCancel>(&nothing)
        .await
        .unwrap()
        .unwrap();
    assert!(!idle.cancellation_requested);
    let bad = backend
        .request_raw("operation.cancel", json!({"request_id": "bad id!"}))
        .await
        .unwrap();
    assert_eq!(bad.outcome, Err(ErrorCode::InvalidParams));
    shutdown_clean(&mut backend).await;
}
