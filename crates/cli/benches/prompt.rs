//! What the model is sent, per wire format, against the loopback mock model over
//! `serve --stdio`: the size of a turn's first request; over a 20-round serial turn
//! (each round one `read` call), the share of the bytes sent that repeat the previous
//! request's beginning and so could be served from the provider's prompt cache
//! (Anthropic only up to each request's last `cache_control` breakpoint; see
//! `magi_testkit::prefix`); and the tokens sent per round, estimated at four bytes a
//! token as compaction estimates them.
//!
//! Run with `cargo bench -p magi-cli --bench prompt`. It prints figures; it asserts
//! nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: failures abort the run, figures go to stdout"
)]

mod support;

use std::path::Path;

use magi_client::BackendCommand;
use magi_testkit::prefix::{cache_eligible_bytes, segment_bytes};
use magi_testkit::{Format, MockServer, Reply};
use support::{TURN_METHODS, stop, timed_turn};

/// Rounds of the serial turn.
const ROUNDS: usize = 20;
/// Bytes per token of the estimate (the runner's own estimate).
const BYTES_PER_TOKEN: usize = 4;

/// The backend speaking `format` to `mock`, with a model of that format's provider.
fn command(home: &Path, cwd: &Path, mock: &MockServer, format: Format) -> BackendCommand {
    let command = BackendCommand::new(env!("CARGO_BIN_EXE_magi-code"))
        .env_clear()
        .env("MC_HOME", home)
        .current_dir(cwd);
    match format {
        Format::Responses => command
            .env("MAGI_PROVIDER", "openai")
            .env("MAGI_MODEL", "gpt-5")
            .env("OPENAI_API_KEY", "bench-key")
            .env("OPENAI_BASE_URL", mock.base_url()),
        Format::ChatCompletions => command
            .env("MAGI_PROVIDER", "openai-chat")
            .env("MAGI_MODEL", "bench-model")
            .env("OPENAI_BASE_URL", mock.base_url()),
        Format::AnthropicMessages => command
            .env("MAGI_PROVIDER", "anthropic")
            .env("MAGI_MODEL", "claude-sonnet-4-5")
            .env("ANTHROPIC_API_KEY", "bench-key")
            .env("ANTHROPIC_BASE_URL", mock.origin()),
    }
}

/// The figures of one format.
struct Figures {
    first_request_bytes: usize,
    eligible_percent: f64,
    tokens_per_round: usize,
    last_round_tokens: usize,
}

async fn measure(root: &Path, format: Format) -> Figures {
    let home = root.join(format!("home-{format:?}"));
    let cwd = root.join("work");
    let mock = MockServer::start().await;
    for n in 1..=ROUNDS {
        let arguments = format!("{{\"path\":\"notes.txt\",\"offset\":{n},\"limit\":20}}");
        mock.enqueue(Reply::stream().tool_call(format!("c{n}"), "read", [arguments.as_str()]));
    }
    mock.enqueue(Reply::stream().text(["Done."]));
    let mut backend = command(&home, &cwd, &mock, format).spawn().unwrap();
    backend.initialize(&TURN_METHODS).await.unwrap().unwrap();
    timed_turn(
        &mut backend,
        "Read notes.txt twenty lines at a time and tell me what it says.",
    )
    .await;
    stop(backend).await;
    let bodies: Vec<serde_json::Value> = mock.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), ROUNDS + 1);
    let sizes: Vec<usize> = bodies.iter().map(|b| segment_bytes(format, b)).collect();
    let eligible: usize = bodies
        .windows(2)
        .map(|pair| cache_eligible_bytes(format, &pair[0], &pair[1]))
        .sum();
    let total: usize = sizes.iter().sum();
    Figures {
        first_request_bytes: bodies[0].to_string().len(),
        eligible_percent: 100.0 * eligible as f64 / total as f64,
        tokens_per_round: total / bodies.len() / BYTES_PER_TOKEN,
        last_round_tokens: sizes[ROUNDS] / BYTES_PER_TOKEN,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let notes: String = (1..=400)
        .map(|n| format!("line {n}: a note about the project, kept for the benchmark\n"))
        .collect();
    std::fs::write(cwd.join("notes.txt"), notes).unwrap();
    println!(
        "format | first request | cache-eligible share over {ROUNDS} rounds | tokens per round (mean) | last round"
    );
    for format in [
        Format::ChatCompletions,
        Format::Responses,
        Format::AnthropicMessages,
    ] {
        let figures = measure(root.path(), format).await;
        println!(
            "{format:?} | {:.1} KB ({} bytes) | {:.1}% | {} | {}",
            figures.first_request_bytes as f64 / 1024.0,
            figures.first_request_bytes,
            figures.eligible_percent,
            figures.tokens_per_round,
            figures.last_round_tokens,
        );
    }
}
