//! A running command's card shows its newest output (`tool.cards` interim revisions),
//! through the real binary: a bounded tail at a bounded rate, made safe, without
//! execution notices while it runs, and nothing running after the final card.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::time::Instant;

use crate::common::*;
use magi_protocol::cards::{Block, Card, CardState};
use magi_protocol::limits::{LIVE_OUTPUT_INTERVAL_MS, LIVE_OUTPUT_LINES};
use magi_protocol::messages::{Event, RunOutcome};
use magi_testkit::MockServer;

/// The text block of a card, if it has one.
fn text(card: &Card) -> Option<&str> {
    card.blocks.iter().find_map(|b| match b {
        Block::Text(t) => Some(t.text.as_str()),
        _ => None,
    })
}

#[tokio::test]
async fn a_running_commands_card_shows_its_newest_output_at_a_bounded_rate() {
    let mock = MockServer::start().await;
    // Forty lines over about two seconds, one with colour and a secret-like token.
    let command = "for i in $(seq 1 40); do echo \"line $i 日本\"; sleep 0.05; done; \
                   printf '\\033[31mred\\033[0m sk-abcdefghijklmnop1234\\n'; sleep 0.6";
    let env = bash_turn_env(&mock, command, "Counted.");
    let mut backend = env.spawn();
    backend
        .initialize(&[
            "session.create",
            "turn.start",
            "history.page",
            "shutdown",
            "tool.cards",
        ])
        .await
        .unwrap()
        .unwrap();
    let _session = session_with_turn(&mut backend, "count").await;
    let mut cards: Vec<(Instant, Card)> = Vec::new();
    let finished = loop {
        match next(&mut backend).await {
            magi_client::Incoming::Event {
                event: Event::ToolCard(e),
                ..
            } => cards.push((Instant::now(), e.card)),
            magi_client::Incoming::Event {
                event: Event::RunFinished(f),
                ..
            } => break f,
            _ => {}
        }
    };
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let last_final = cards
        .iter()
        .rposition(|(_, c)| c.state == CardState::Finished)
        .unwrap();
    // Nothing running after the final card, and revisions only go up.
    assert!(
        cards[last_final..]
            .iter()
            .all(|(_, c)| c.state == CardState::Finished)
    );
    assert!(cards.windows(2).all(|w| w[0].1.revision < w[1].1.revision));
    let interim: Vec<&(Instant, Card)> = cards[..last_final]
        .iter()
        .filter(|(_, c)| c.state == CardState::Running && text(c).is_some())
        .collect();
    assert!(interim.len() >= 3, "{} interim revisions", interim.len());
    for (_, card) in &interim {
        let tail = text(card).unwrap();
        // A bounded tail of the newest lines, and no execution notices while running.
        assert!(tail.lines().count() <= LIVE_OUTPUT_LINES, "{tail}");
        let json = serde_json::to_string(card).unwrap();
        assert!(!json.contains("Command timeout"), "{json}");
        assert!(!json.contains("Output lines"), "{json}");
        assert!(card.outcome.is_none());
    }
    // The output moves on from one revision to the next, newest lines last.
    let tails: Vec<&str> = interim.iter().map(|(_, c)| text(c).unwrap()).collect();
    assert!(tails.windows(2).all(|w| w[0] != w[1]));
    assert!(
        tails
            .iter()
            .any(|t| t.lines().last().is_some_and(|l| l.starts_with("line ")))
    );
    // Made safe like every card string: the colour went whole, the token redacted.
    let last = tails.last().unwrap();
    assert!(last.contains("red [redacted]"), "{last}");
    assert!(!last.contains("[31m"), "{last}");
    // At most one a interval, over the time they took.
    let span = interim.last().unwrap().0 - interim[0].0;
    let most = span.as_millis() / u128::from(LIVE_OUTPUT_INTERVAL_MS) + 2;
    assert!(
        interim.len() as u128 <= most,
        "{} in {span:?}",
        interim.len()
    );
    shutdown_clean(&mut backend).await;
}
