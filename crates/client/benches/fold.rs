//! Fold throughput: how many run events per second the transcript fold takes, on a
//! run streaming 10,000 deltas followed by its reconciliation and terminal event.
//!
//! Run with `cargo bench -p magi-client --bench fold`. It prints figures; it asserts
//! nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark binary: figures go to stdout"
)]

use std::time::{Duration, Instant};

use magi_client::fold::{FoldInput, PromptId, Transcript};
use magi_protocol::limits::LIVE_CHUNK_BYTES;
use magi_protocol::messages::{
    Event, InputPersisted, MessageDelta, MessageReconcile, Persistence, RunFinished, RunOutcome,
};

const DELTAS: usize = 10_000;
const ROUNDS: usize = 20;

fn run_inputs() -> Vec<FoldInput> {
    let (session_id, run_id) = ("s".to_owned(), "r".to_owned());
    let mut inputs = vec![
        FoldInput::PromptSubmitted {
            id: PromptId(1),
            text: "go".into(),
        },
        FoldInput::TurnAccepted {
            id: PromptId(1),
            run_id: run_id.clone(),
        },
        FoldInput::Event(Event::InputPersisted(InputPersisted {
            session_id: session_id.clone(),
            run_id: run_id.clone(),
            message_id: "m0".into(),
            durable: true,
            revision: "h1".into(),
        })),
    ];
    let mut text = String::new();
    for part in 0..DELTAS {
        let delta = format!("w{part} ");
        text.push_str(&delta);
        inputs.push(FoldInput::Event(Event::MessageDelta(MessageDelta {
            session_id: session_id.clone(),
            run_id: run_id.clone(),
            message_id: "a0".into(),
            part: part as u64,
            text: delta,
        })));
    }
    let parts: Vec<&str> = text
        .as_bytes()
        .chunks(LIVE_CHUNK_BYTES)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    for (part, chunk) in parts.iter().enumerate() {
        inputs.push(FoldInput::Event(Event::MessageReconcile(
            MessageReconcile {
                session_id: session_id.clone(),
                run_id: run_id.clone(),
                message_id: "a0".into(),
                part: part as u64,
                text: (*chunk).to_owned(),
                last_part: part + 1 == parts.len(),
                partial: false,
            },
        )));
    }
    inputs.push(FoldInput::Event(Event::RunFinished(RunFinished {
        session_id,
        run_id,
        outcome: RunOutcome::Completed,
        persistence: Persistence::Durable,
        revision: Some("h2".into()),
        error_code: None,
    })));
    inputs
}

fn main() {
    let inputs = run_inputs();
    let events = inputs.len();
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..ROUNDS {
        let batch = inputs.clone();
        let started = Instant::now();
        let mut transcript = Transcript::default();
        transcript.apply_all(batch);
        times.push(started.elapsed());
        assert!(transcript.items().iter().any(|item| item.is_complete()));
    }
    times.sort();
    let median = times[ROUNDS / 2];
    println!("magi-client fold benchmark (median of {ROUNDS})");
    println!(
        "  one run of {DELTAS} deltas + reconciliation ({events} inputs): {:.2} ms, {:.1} million inputs/s",
        median.as_secs_f64() * 1e3,
        events as f64 / median.as_secs_f64() / 1e6
    );
}
