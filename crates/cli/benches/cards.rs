//! What cards add to a run's event stream: one response asking for 100 `read` calls,
//! then a text reply, over `serve --stdio`, once with `tool.cards` negotiated and once
//! without; the bytes of every event frame the client received are summed. Run with
//! `cargo bench -p magi-cli --bench cards`; it prints figures and asserts nothing
//! about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

mod support;

use magi_client::Incoming;
use magi_protocol::messages::{EmptyParams, Event, TurnStartParams};
use magi_protocol::methods;
use magi_protocol::wire::EventFrame;
use magi_testkit::{MockServer, Reply};

const CALLS: usize = 100;

/// The event bytes of one run (frames as the client received them, LF included), and
/// how many of them were `tool.card` events.
async fn run(root: &std::path::Path, tool_cards: bool) -> (usize, usize, usize) {
    let mock = MockServer::start().await;
    let mut reply = Reply::stream();
    for n in 0..CALLS {
        reply = reply.tool_call(format!("c{n}"), "read", ["{\"path\":\"notes.txt\"}"]);
    }
    mock.enqueue(reply);
    mock.enqueue(Reply::stream().text(["Read them all."]));
    let mut backend = support::command(&root.join("home"), &root.join("work"), &mock)
        .spawn()
        .unwrap();
    let mut required = vec!["session.create", "turn.start", "shutdown"];
    if tool_cards {
        required.push("tool.cards");
    }
    backend.initialize(&required).await.unwrap().unwrap();
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap();
    let params = TurnStartParams {
        session_id: session.session_id,
        prompt: "Go".into(),
        attachments: None,
    };
    backend
        .call::<methods::TurnStart>(&params)
        .await
        .unwrap()
        .unwrap();
    let (mut bytes, mut card_bytes, mut cards) = (0, 0, 0);
    loop {
        let Some(Incoming::Event { seq, event }) = backend.next_incoming().await else {
            continue;
        };
        let frame = EventFrame {
            protocol: Default::default(),
            version: Default::default(),
            kind: Default::default(),
            instance_id: backend.instance_id().unwrap_or_default(),
            seq,
            event: event.clone(),
        };
        let size = serde_json::to_vec(&frame).unwrap().len() + 1;
        bytes += size;
        if matches!(event, Event::ToolCard(_)) {
            card_bytes += size;
            cards += 1;
        }
        if matches!(event, Event::RunFinished(_)) {
            break;
        }
    }
    let _ = backend.shutdown().await;
    (bytes, card_bytes, cards)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(root.path().join("work")).unwrap();
    std::fs::write(
        root.path().join("work/notes.txt"),
        "a line of notes\n".repeat(40),
    )
    .unwrap();
    let (base, _, _) = run(root.path(), false).await;
    let (rich, card_bytes, cards) = run(root.path(), true).await;
    println!("cards in a {CALLS}-call run's event stream (read calls, over serve --stdio)");
    println!("  without tool.cards: {base} bytes of events");
    println!(
        "  with tool.cards: {rich} bytes of events, of which {card_bytes} in {cards} tool.card events ({:.0} bytes per card, {:.2}x the base stream)",
        card_bytes as f64 / cards.max(1) as f64,
        rich as f64 / base as f64
    );
}
