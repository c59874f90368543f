//! `model.catalog` over 2,048 cached, enabled models: the time of a full paging pass
//! (a fresh snapshot, then every continuation, each of which scans the caches again)
//! over `serve --stdio`. Run with `cargo bench -p magi-cli --bench catalog`; it prints
//! figures and asserts nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::time::{Duration, Instant};

use magi_client::BackendCommand;
use magi_protocol::limits::CATALOG_MODELS;
use magi_protocol::messages::ModelCatalogParams;
use magi_protocol::methods;
use serde_json::json;

const ROUNDS: usize = 10;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let work = root.path().join("work");
    std::fs::create_dir_all(home.join("data/catalog")).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let models: Vec<String> = (0..CATALOG_MODELS)
        .map(|n| format!("model-{n:04}"))
        .collect();
    let cache = json!({
        "format": 1,
        "provider": "openai-chat",
        "fetched_at": "2026-11-29T00:00:00.000Z",
        "models": models.iter().map(|m| json!({"id": m, "name": format!("Model {m}")})).collect::<Vec<_>>(),
    });
    std::fs::write(
        home.join("data/catalog/openai-chat.json"),
        cache.to_string(),
    )
    .unwrap();
    let enabled: Vec<String> = models.iter().map(|m| format!("openai-chat/{m}")).collect();
    std::fs::write(
        home.join("settings.toml"),
        format!("[providers.catalog]\nenabled = {:?}\n", enabled),
    )
    .unwrap();
    let mut backend = BackendCommand::new(env!("CARGO_BIN_EXE_magi-code"))
        .env_clear()
        .env("MC_HOME", &home)
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "model-0000")
        .current_dir(&work)
        .spawn()
        .unwrap();
    backend
        .initialize(&["model.catalog", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let mut passes = Vec::new();
    let mut pages = 0;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let mut params = ModelCatalogParams::default();
        let mut choices = 0;
        pages = 0;
        loop {
            let page = backend
                .call::<methods::ModelCatalog>(&params)
                .await
                .unwrap()
                .unwrap();
            choices += page.choices.len();
            pages += 1;
            match page.next_cursor {
                Some(cursor) => {
                    params = ModelCatalogParams {
                        revision: Some(page.revision),
                        cursor: Some(cursor),
                        limit: None,
                    }
                }
                None => break,
            }
        }
        passes.push(started.elapsed());
        assert_eq!(choices, CATALOG_MODELS);
    }
    passes.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "model.catalog over {CATALOG_MODELS} cached models: full pass of {pages} pages, median {:.1} ms (min {:.1}, max {:.1}) of {ROUNDS}",
        ms(passes[ROUNDS / 2]),
        ms(passes[0]),
        ms(passes[ROUNDS - 1])
    );
    let _ = backend.shutdown().await;
}
