//! The `reasoning.summaries` extension through the real binary: negotiated, a
//! provider's reasoning summary streams as `reasoning.delta` before the reply, its
//! parts joined as the recorded summary is; not negotiated, nothing of it appears; raw
//! reasoning of the other formats never streams.

use magi_protocol::messages::{Event, ReasoningSummariesDescriptor, RunOutcome};
use magi_testkit::{MockServer, Reply};

use crate::common::*;

const WITH_REASONING: [&str; 4] = [
    "session.create",
    "turn.start",
    "shutdown",
    "reasoning.summaries",
];

/// One turn of `prompt` on a backend initialized with `names`: its events.
async fn turn(env: &TestEnv, names: &[&str]) -> Vec<Event> {
    let mut backend = env.spawn();
    backend.initialize(names).await.unwrap().unwrap();
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Think").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    seen
}

fn summary_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta(d) => Some(d.text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn negotiated_a_summary_streams_before_the_reply() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .reasoning_summary(["Checking ", "the question."])
            .text(["Answer."]),
    );
    let env = env_for_wire(Wire::Responses, &mock);
    env.write_settings("[providers.openai]\nreasoning_summaries = true\n");
    let mut backend = env.spawn();
    let result = backend.initialize(&WITH_REASONING).await.unwrap().unwrap();
    assert_eq!(
        result.capabilities.last().map(String::as_str),
        Some("reasoning.summaries")
    );
    assert_eq!(
        result.extensions.unwrap().reasoning_summaries,
        Some(ReasoningSummariesDescriptor::schema_1())
    );
    shutdown_clean(&mut backend).await;

    let events = turn(&env, &WITH_REASONING).await;
    assert_eq!(summary_text(&events), "Checking the question.");
    let deltas: Vec<(String, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ReasoningDelta(d) => Some((d.summary_id.clone(), d.part)),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, [("s0".to_owned(), 0), ("s0".to_owned(), 1)]);
    let first_summary = events
        .iter()
        .position(|e| matches!(e, Event::ReasoningDelta(_)))
        .unwrap();
    let first_text = events
        .iter()
        .position(|e| matches!(e, Event::MessageDelta(_)))
        .unwrap();
    assert!(first_summary < first_text);
}

#[tokio::test]
async fn not_negotiated_or_raw_reasoning_nothing_streams() {
    // Without the extension: the summary is recorded (see turns.rs) but not streamed.
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .reasoning_summary(["Checking."])
            .text(["Answer."]),
    );
    let env = env_for_wire(Wire::Responses, &mock);
    env.write_settings("[providers.openai]\nreasoning_summaries = true\n");
    let events = turn(&env, &WITH_REASONING[..3]).await;
    assert!(summary_text(&events).is_empty());
    // Chat's `reasoning_content` and Anthropic's thinking are raw reasoning: never
    // streamed, even negotiated.
    for wire in [Wire::Chat, Wire::Anthropic] {
        let mock = MockServer::start().await;
        mock.enqueue(
            Reply::stream()
                .reasoning_summary(["private thoughts"])
                .text(["Answer."]),
        );
        let env = env_for_wire(wire, &mock);
        let events = turn(&env, &WITH_REASONING).await;
        assert!(summary_text(&events).is_empty(), "{wire:?}");
    }
}
