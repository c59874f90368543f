//! What a sign-in's refresh adds to a turn: turns of provider `codex` over `serve
//! --stdio` against the loopback mock model (scenario A, one text reply) and the mock
//! OAuth server, with the ChatGPT sign-in fresh before every turn, then due (its access
//! token expired) before every turn, so that each of those turns refreshes it once
//! first. The difference of the medians is the refresh's cost to a turn; the number of
//! refresh requests the mock received shows it is one round trip for a due token and
//! none for a fresh one. Session titles are off, so every model request is the turn's.
//!
//! Run with `cargo bench -p magi-cli --bench sign_in`. It prints figures; it asserts
//! nothing about them (it stops if a turn fails).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: failures abort the run, figures go to stdout"
)]

mod support;

use std::path::Path;

use magi_client::BackendCommand;
use magi_testkit::{MockOAuth, MockServer, Scenario};
use support::{TURN_METHODS, median, millis, stop, timed_turn};

/// Turns per case.
const RUNS: usize = 25;

/// Writes Codex's credential file with a sign-in whose access token lives
/// `lifetime_secs` (a live refresh token with it).
fn sign_in(path: &Path, oauth: &MockOAuth, lifetime_secs: i64) {
    let tokens = oauth.tokens(lifetime_secs);
    std::fs::write(path, MockOAuth::codex_auth_json(&tokens).to_string()).unwrap();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let model = MockServer::start_scenario(Scenario::Text).await.unwrap();
    let oauth = MockOAuth::start().await;
    let root = tempfile::tempdir().unwrap();
    let (home, work, codex) = (
        root.path().join("home"),
        root.path().join("work"),
        root.path().join("codex"),
    );
    for dir in [&home, &work, &codex] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(
        home.join("settings.toml"),
        format!(
            "[providers.codex]\nbase_url = \"{}\"\nauth_url = \"{}\"\n\n[sessions]\ntitles = \"off\"\n",
            model.base_url(),
            oauth.url()
        ),
    )
    .unwrap();
    let auth = codex.join("auth.json");
    sign_in(&auth, &oauth, 3_600);
    let mut backend = BackendCommand::new(env!("CARGO_BIN_EXE_magi-code"))
        .env_clear()
        .env("MC_HOME", &home)
        .env("CODEX_HOME", &codex)
        .env("MAGI_PROVIDER", "codex")
        .env("MAGI_MODEL", "bench-model")
        .current_dir(&work)
        .spawn()
        .unwrap();
    backend.initialize(&TURN_METHODS).await.unwrap().unwrap();
    // One turn first: the connections and the code's first run are not the figure.
    timed_turn(&mut backend, "warm up").await;

    println!(
        "sign-in refresh at a turn (codex over serve --stdio, mock model and mock OAuth server), {RUNS} turns a case"
    );
    let mut medians = Vec::new();
    for (label, lifetime) in [("fresh token", 3_600), ("token due (expired)", -60)] {
        let before = oauth.refreshes();
        let mut samples = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            sign_in(&auth, &oauth, lifetime);
            samples.push(timed_turn(&mut backend, "hello").await);
        }
        let refreshes = oauth.refreshes() - before;
        let (min, max) = (
            *samples.iter().min().unwrap(),
            *samples.iter().max().unwrap(),
        );
        let median = median(samples);
        medians.push(median);
        println!(
            "  {label:<20} turn median {:.2} ms (min {:.2}, max {:.2}); refresh requests {refreshes} ({:.1} a turn)",
            millis(median),
            millis(min),
            millis(max),
            refreshes as f64 / RUNS as f64,
        );
    }
    let added = medians[1].saturating_sub(medians[0]);
    println!(
        "  added by a refresh: {:.2} ms (difference of the medians)",
        millis(added)
    );
    stop(backend).await;
}
