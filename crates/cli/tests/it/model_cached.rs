//! The `model.cached` extension through the real binary: its negotiation, a provider's
//! refreshed list paged in order with its enabled flags, a cursor gone stale after
//! another refresh, caches that are missing, invalid, empty or hold unsafe IDs, every
//! parameter rule, unknown providers and `busy` during a run.

use crate::common::approval::env_for;
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    CacheState, CachedModelEntry, ModelCachedDescriptor, ModelCachedParams, ModelCachedResult,
    ModelRefreshParams, RunOutcome, TurnCancelParams,
};
use magi_protocol::methods;
use magi_protocol::names::MODEL_CACHED;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const WITH_CACHED: [&str; 4] = ["model.refresh", "status", "shutdown", MODEL_CACHED];

async fn started(env: &TestEnv, names: &[&str]) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(names).await.unwrap().unwrap();
    backend
}

fn params(provider: &str, cursor: Option<String>) -> ModelCachedParams {
    ModelCachedParams {
        provider: provider.to_owned(),
        cursor,
    }
}

async fn cached(
    backend: &mut Backend,
    provider: &str,
    cursor: Option<String>,
) -> Result<ModelCachedResult, ErrorCode> {
    backend
        .call::<methods::ModelCached>(&params(provider, cursor))
        .await
        .unwrap()
}

async fn refresh(backend: &mut Backend, provider: &str) {
    let params = ModelRefreshParams {
        provider: provider.to_owned(),
    };
    backend
        .call::<methods::ModelRefresh>(&params)
        .await
        .unwrap()
        .unwrap();
}

/// An `openai` child (keyed, so the catalog's rules apply as for a person's).
fn openai_env() -> TestEnv {
    TestEnv::new()
        .var("MAGI_PROVIDER", "openai")
        .var("MAGI_MODEL", "gpt-4.1")
        .var("OPENAI_API_KEY", "test-openai-key-123")
}

#[tokio::test]
async fn negotiated_it_is_advertised_last_and_without_it_the_method_is_refused() {
    let env = openai_env();
    write_cache(&env, "openai", &[("gpt-4.1", None)]);
    // Before initialization, and without the extension whatever the params.
    let mut backend = env.spawn();
    assert_eq!(
        cached(&mut backend, "openai", None).await,
        Err(ErrorCode::NotInitialized)
    );
    backend
        .initialize(&["model.catalog", "status", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        cached(&mut backend, "openai", None).await,
        Err(ErrorCode::UnsupportedCapability)
    );
    let bad = backend
        .request_raw("model.cached", json!({"x": 1}))
        .await
        .unwrap();
    assert_eq!(bad.outcome, Err(ErrorCode::UnsupportedCapability));
    shutdown_clean(&mut backend).await;

    let mut backend = env.spawn();
    let result = backend.initialize(&WITH_CACHED).await.unwrap().unwrap();
    assert_eq!(
        result.capabilities.last().map(String::as_str),
        Some(MODEL_CACHED)
    );
    let extensions = result.extensions.unwrap();
    assert_eq!(
        extensions.model_cached,
        Some(ModelCachedDescriptor::schema_1())
    );
    assert!(extensions.tool_cards.is_none() && extensions.session_usage.is_none());
    // The result's field set is exact.
    let raw = backend
        .request_raw("model.cached", json!({"provider": "openai"}))
        .await
        .unwrap();
    assert_eq!(
        raw.outcome,
        Ok(json!({
            "provider": "openai",
            "cache": "ready",
            "models": [{"model": "gpt-4.1", "display_name": null, "enabled": false}],
            "next_cursor": null,
            "notices": []
        }))
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_refreshed_list_is_paged_in_its_order_with_the_enabled_flags() {
    let mock = MockServer::start().await;
    let ids: Vec<String> = (0..250).map(|n| format!("local-{n:03}")).collect();
    mock.set_models(ids.iter().map(|id| (id.as_str(), None)));
    let env = env_for(&mock);
    env.write_settings(
        "[providers.catalog]\nenabled = [\"openai-chat/local-007\", \"openai-chat/local-200\", \"openai/local-001\"]\n",
    );
    let mut backend = started(&env, &WITH_CACHED).await;
    // Never fetched: an empty listing that says why.
    let before = cached(&mut backend, "openai-chat", None).await.unwrap();
    assert_eq!(
        before,
        ModelCachedResult {
            provider: "openai-chat".into(),
            cache: CacheState::Missing,
            models: Vec::new(),
            next_cursor: None,
            notices: Vec::new(),
        }
    );
    refresh(&mut backend, "openai-chat").await;
    let mut listed: Vec<CachedModelEntry> = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = cached(&mut backend, "openai-chat", cursor.take())
            .await
            .unwrap();
        pages += 1;
        assert!(page.models.len() <= 100, "{}", page.models.len());
        assert_eq!(page.cache, CacheState::Ready);
        assert!(page.notices.is_empty());
        let bytes = serde_json::to_vec(&page).unwrap().len();
        assert!(
            bytes <= magi_protocol::limits::CATALOG_PAGE_BYTES,
            "{bytes}"
        );
        listed.extend(page.models);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
        assert!(pages < 10, "the listing never ended");
    }
    assert_eq!(pages, 3);
    let models: Vec<&str> = listed.iter().map(|m| m.model.as_str()).collect();
    assert_eq!(models, ids);
    let enabled: Vec<&str> = listed
        .iter()
        .filter(|m| m.enabled)
        .map(|m| m.model.as_str())
        .collect();
    // Another provider's entry enables nothing here.
    assert_eq!(enabled, ["local-007", "local-200"]);
    // An OpenAI-style list has IDs only.
    assert!(listed.iter().all(|m| m.display_name.is_none()));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_cursor_goes_stale_for_good_after_another_refresh() {
    let mock = MockServer::start().await;
    let ids: Vec<String> = (0..150).map(|n| format!("m{n}")).collect();
    mock.set_models(ids.iter().map(|id| (id.as_str(), None)));
    let env = env_for(&mock);
    let mut backend = started(&env, &WITH_CACHED).await;
    refresh(&mut backend, "openai-chat").await;
    let cache = env.mc_home().join("data/catalog/openai-chat.json");
    let issued = std::fs::read(&cache).unwrap();
    let first = cached(&mut backend, "openai-chat", None).await.unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    // The same cursor pages the same listing as often as asked while nothing changed.
    for _ in 0..2 {
        let second = cached(&mut backend, "openai-chat", Some(cursor.clone()))
            .await
            .unwrap();
        assert_eq!(second.models[0].model, ids[first.models.len()]);
        assert_eq!(second.next_cursor, None);
    }
    // Another provider's name with this listing's cursor.
    assert_eq!(
        cached(&mut backend, "openai", Some(cursor.clone())).await,
        Err(ErrorCode::StaleCatalog)
    );
    // Another refresh changes the cache under the listing.
    let more: Vec<String> = ids.iter().cloned().chain(["m150".to_owned()]).collect();
    mock.set_models(more.iter().map(|id| (id.as_str(), None)));
    refresh(&mut backend, "openai-chat").await;
    assert_eq!(
        cached(&mut backend, "openai-chat", Some(cursor.clone())).await,
        Err(ErrorCode::StaleCatalog)
    );
    // Stale for good, even with the file it was read from back.
    std::fs::write(&cache, &issued).unwrap();
    assert_eq!(
        cached(&mut backend, "openai-chat", Some(cursor)).await,
        Err(ErrorCode::StaleCatalog)
    );
    // A cursor this child never issued, and a fresh listing starting over.
    let invented = format!("m{}.100", "0".repeat(32));
    assert_eq!(
        cached(&mut backend, "openai-chat", Some(invented)).await,
        Err(ErrorCode::StaleCatalog)
    );
    let fresh = cached(&mut backend, "openai-chat", None).await.unwrap();
    assert_eq!(fresh.models, first.models);
    assert_ne!(fresh.next_cursor, first.next_cursor);
    let rest = cached(&mut backend, "openai-chat", fresh.next_cursor)
        .await
        .unwrap();
    assert_eq!(rest.models.len(), 50);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn unsafe_ids_are_left_out_and_bad_caches_say_why() {
    let env = openai_env();
    env.write_settings("[providers.catalog]\nenabled = [\"openai/gpt-4.1\"]\n");
    let secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789";
    write_cache(
        &env,
        "openai",
        &[
            ("gpt-4.1", Some("GPT-4.1")),
            (secret, Some("a leaked key")),
            ("o3", Some(secret)),
            ("bad\u{7}id", None),
        ],
    );
    write_cache(&env, "openai-chat", &[]);
    std::fs::write(
        env.mc_home().join("data/catalog/anthropic.json"),
        "not json",
    )
    .unwrap();
    let mut backend = started(&env, &WITH_CACHED).await;
    let openai = cached(&mut backend, "openai", None).await.unwrap();
    assert_eq!(
        openai.models,
        [
            CachedModelEntry {
                model: "gpt-4.1".into(),
                display_name: Some("GPT-4.1".into()),
                enabled: true,
            },
            // A name that is not safe to show is no name.
            CachedModelEntry {
                model: "o3".into(),
                display_name: None,
                enabled: false,
            },
        ]
    );
    assert_eq!(openai.notices, ["catalog_entries_omitted_unsafe"]);
    assert!(!format!("{openai:?}").contains("sk-abc"));
    for (provider, state) in [
        ("openai-chat", CacheState::Empty),
        ("anthropic", CacheState::Invalid),
        ("codex", CacheState::Missing),
    ] {
        let result = cached(&mut backend, provider, None).await.unwrap();
        assert_eq!(
            (result.cache, result.models.len(), result.next_cursor),
            (state, 0, None),
            "{provider}"
        );
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn params_are_exact_and_unknown_providers_are_refused() {
    let env = openai_env();
    env.write_settings("[providers.catalog]\nenabled = [\"ghost/x\"]\n");
    let mut backend = started(&env, &WITH_CACHED).await;
    for bad in [
        json!({}),
        json!({"provider": ""}),
        json!({"provider": "p".repeat(257)}),
        json!({"provider": null}),
        json!({"provider": 1}),
        json!({"cursor": null}),
        json!({"provider": "openai", "cursor": "bad cursor!"}),
        json!({"provider": "openai", "cursor": "c".repeat(65)}),
        json!({"provider": "openai", "cursor": 5}),
        json!({"provider": "openai", "limit": 5}),
    ] {
        let response = backend
            .request_raw("model.cached", bad.clone())
            .await
            .unwrap();
        assert_eq!(response.outcome, Err(ErrorCode::InvalidParams), "{bad}");
    }
    // Neither built in nor configured, even when the settings enable one of its models;
    // a provider of 256 bytes is a name that is merely unknown.
    let long = "p".repeat(256);
    for unknown in ["nowhere", "ghost", long.as_str()] {
        assert_eq!(
            cached(&mut backend, unknown, None).await,
            Err(ErrorCode::SelectionInvalid),
            "{unknown}"
        );
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn it_is_busy_during_a_run() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["working"]).held());
    let env = env_for(&mock);
    let names = [
        "session.create",
        "turn.start",
        "turn.cancel",
        "shutdown",
        MODEL_CACHED,
    ];
    let mut backend = started(&env, &names).await;
    let session = new_session(&mut backend).await;
    let run_id = start_turn(&mut backend, &session, "go").await;
    assert_eq!(
        cached(&mut backend, "openai-chat", None).await,
        Err(ErrorCode::Busy)
    );
    // Params are checked before the worker's state.
    let bad = backend
        .request_raw("model.cached", json!({"provider": ""}))
        .await
        .unwrap();
    assert_eq!(bad.outcome, Err(ErrorCode::InvalidParams));
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id,
    };
    backend
        .call::<methods::TurnCancel>(&cancel)
        .await
        .unwrap()
        .unwrap();
    mock.release();
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    // Once the run ended the worker is free again.
    let idle = cached(&mut backend, "openai-chat", None).await.unwrap();
    assert_eq!(idle.cache, CacheState::Missing);
    shutdown_clean(&mut backend).await;
}
