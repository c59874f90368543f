//! `view_image` through the real binary against the mock model: the image reaches the
//! next request in each wire format's own shape, is kept with the call's assets (never
//! inline in the log) and is attached again after a restart; its cards live and from
//! `history.page` say what the image is; a model without images is not offered it;
//! `[tools] disabled` takes it away.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::io::Cursor;

use crate::common::*;
use magi_client::Backend;
use magi_client::Incoming;
use magi_protocol::cards::{Block, Card, CardOutcome, ToolKind};
use magi_protocol::messages::{ApprovalAnswerParams, Event, RunOutcome};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const METHODS: [&str; 7] = [
    "session.create",
    "session.open",
    "turn.start",
    "approval.answer",
    "history.page",
    "shutdown",
    "tool.cards",
];

/// A 24×16 PNG, as the image crate writes it.
pub(crate) fn png() -> Vec<u8> {
    let image =
        image::RgbImage::from_fn(24, 16, |x, y| image::Rgb([x as u8 * 10, y as u8 * 15, 99]));
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(image)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

/// Standard base64, written here so the test does not share the code it checks.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn view(id: &str, path: &str) -> Reply {
    Reply::stream().tool_call(id, "view_image", [json!({ "path": path }).to_string()])
}

/// The images a request body carries, as (media type, base64 data), in the wire
/// format's own shape.
pub(crate) fn images(wire: Wire, body: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    walk(body, &mut |v| {
        let data_url = |url: &str| {
            let (head, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
            Some((head.to_owned(), data.to_owned()))
        };
        let image = match (wire, v["type"].as_str()) {
            (Wire::Responses, Some("input_image")) => v["image_url"].as_str().and_then(data_url),
            (Wire::Chat, Some("image_url")) => v["image_url"]["url"].as_str().and_then(data_url),
            (Wire::Anthropic, Some("image")) if v["source"]["type"] == "base64" => Some((
                v["source"]["media_type"].as_str().unwrap().to_owned(),
                v["source"]["data"].as_str().unwrap().to_owned(),
            )),
            _ => None,
        };
        found.extend(image);
    });
    found
}

fn walk(value: &Value, visit: &mut dyn FnMut(&Value)) {
    visit(value);
    match value {
        Value::Array(items) => items.iter().for_each(|v| walk(v, visit)),
        Value::Object(fields) => fields.values().for_each(|v| walk(v, visit)),
        _ => {}
    }
}

pub(crate) fn provider(wire: Wire) -> &'static str {
    match wire {
        Wire::Responses => "openai",
        Wire::Chat => "openai-chat",
        Wire::Anthropic => "anthropic",
    }
}

/// Runs one turn to its end; returns its events and revision.
async fn turn(backend: &mut Backend, session: &str, prompt: &str) -> (Vec<Event>, String) {
    start_turn(backend, session, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    (seen, finished.revision.unwrap())
}

fn final_card(seen: &[Event]) -> Card {
    seen.iter()
        .rev()
        .find_map(|e| match e {
            Event::ToolCard(e) if e.card.outcome.is_some() => Some(e.card.clone()),
            _ => None,
        })
        .expect("a final card")
}

async fn saved_card(backend: &mut Backend, session: &str, revision: &str) -> Card {
    saved_cards(backend, session, revision)
        .await
        .into_iter()
        .next()
        .expect("a saved card")
}

fn rows(card: &Card) -> Vec<(String, Option<String>)> {
    card.blocks
        .iter()
        .find_map(|b| match b {
            Block::Results(results) => Some(
                results
                    .rows
                    .iter()
                    .map(|r| (r.label.clone(), r.value.clone()))
                    .collect(),
            ),
            _ => None,
        })
        .expect("a results block")
}

#[tokio::test]
async fn the_image_reaches_each_wire_format_and_is_attached_again_after_a_restart() {
    let bytes = png();
    let data = base64(&bytes);
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(view("v1", "shots/screen.png"));
        mock.enqueue(Reply::stream().text(["A gradient."]));
        mock.enqueue(Reply::stream().text(["Still a gradient."]));
        let env = env_for_wire(wire, &mock);
        env.write_settings(&format!(
            "[models.\"{}/mock-model\"]\nimages = true\n",
            provider(wire)
        ));
        std::fs::create_dir_all(env.cwd().join("shots")).unwrap();
        std::fs::write(env.cwd().join("shots/screen.png"), &bytes).unwrap();
        let mut backend = env.spawn();
        backend.initialize(&METHODS).await.unwrap().unwrap();
        let session = new_session(&mut backend).await;
        let (seen, revision) = turn(&mut backend, &session, "What is in the screenshot?").await;

        let requests = mock.requests();
        assert_eq!(images(wire, &requests[0].body), [], "{wire:?}");
        assert_eq!(
            images(wire, &requests[1].body),
            [("image/png".to_owned(), data.clone())],
            "{wire:?}"
        );
        let expected = vec![
            ("Format".to_owned(), Some("PNG".to_owned())),
            ("Width".to_owned(), Some("24 pixels".to_owned())),
            ("Height".to_owned(), Some("16 pixels".to_owned())),
            ("Bytes".to_owned(), Some(format!("{} bytes", bytes.len()))),
            (
                "Sent to the model".to_owned(),
                Some(format!("24 x 16 PNG, {} bytes", bytes.len())),
            ),
        ];
        let live = final_card(&seen);
        assert_eq!(live.tool_kind, ToolKind::Read);
        assert_eq!(live.outcome, Some(CardOutcome::Success));
        assert_eq!(rows(&live), expected, "{wire:?}");
        let saved = saved_card(&mut backend, &session, &revision).await;
        assert_eq!(rows(&saved), expected, "{wire:?}");
        assert_eq!(
            saved.metadata.resource_path.as_deref(),
            Some("shots/screen.png")
        );
        // The log keeps the image's facts, never its bytes; the bytes are an asset.
        let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
        assert!(!log.contains(&data[..64]), "{wire:?}");
        let kept = env
            .mc_home()
            .join("data/conversations")
            .join(&session)
            .join("tool-calls/v1/image.png");
        assert_eq!(std::fs::read(&kept).unwrap(), bytes, "{wire:?}");
        shutdown_clean(&mut backend).await;

        // A new backend replays the conversation with the image attached again.
        let mut backend = env.spawn();
        backend.initialize(&METHODS).await.unwrap().unwrap();
        open_session(&mut backend, &session).await.unwrap();
        turn(&mut backend, &session, "And now?").await;
        let requests = mock.requests();
        assert_eq!(
            images(wire, &requests[2].body),
            [("image/png".to_owned(), data.clone())],
            "{wire:?}"
        );
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn a_model_without_images_is_not_offered_view_image_and_a_call_sends_no_image() {
    let mock = MockServer::start().await;
    mock.enqueue(view("v1", "a.png"));
    mock.enqueue(Reply::stream().text(["I cannot see it."]));
    // Nothing says `mock-model` takes images: the default is that it does not.
    let env = env_for_wire(Wire::Chat, &mock);
    std::fs::write(env.cwd().join("a.png"), png()).unwrap();
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = new_session(&mut backend).await;
    turn(&mut backend, &session, "Look").await;
    let requests = mock.requests();
    let offered = offered_tool_names(&requests[0].body);
    assert!(!offered.contains(&"view_image".to_owned()), "{offered:?}");
    assert!(offered.contains(&"read".to_owned()));
    // A call made anyway runs nothing and says why.
    assert_eq!(images(Wire::Chat, &requests[1].body), []);
    let told = tool_outputs(&requests[1].body);
    assert!(told[0].contains("takes no images"), "{told:?}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_corrupt_image_fails_and_a_disabled_tool_is_not_offered() {
    let mock = MockServer::start().await;
    mock.enqueue(view("v1", "cut.png"));
    mock.enqueue(Reply::stream().text(["Broken."]));
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[models.\"openai-chat/mock-model\"]\nimages = true\n");
    let mut cut = png();
    cut.truncate(40);
    std::fs::write(env.cwd().join("cut.png"), &cut).unwrap();
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = new_session(&mut backend).await;
    let (seen, _) = turn(&mut backend, &session, "Look").await;
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(told[0].contains("could not be decoded"), "{told:?}");
    let card = final_card(&seen);
    assert_eq!(card.outcome, Some(CardOutcome::Failure));
    assert!(rows(&card).contains(&("Format".to_owned(), Some("PNG".to_owned()))));
    assert!(rows(&card).contains(&("Width".to_owned(), None)));
    shutdown_clean(&mut backend).await;

    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hi."]));
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[tools]\ndisabled = [\"view_image\"]\n");
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = new_session(&mut backend).await;
    turn(&mut backend, &session, "Hello").await;
    let offered = offered_tool_names(&mock.requests()[0].body);
    assert!(!offered.contains(&"view_image".to_owned()), "{offered:?}");
    assert!(offered.contains(&"read".to_owned()));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_path_outside_the_workspace_asks_and_a_refusal_sends_no_image() {
    let mock = MockServer::start().await;
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[models.\"openai-chat/mock-model\"]\nimages = true\n");
    let outside = env.root().join("outside.png");
    std::fs::write(&outside, png()).unwrap();
    mock.enqueue(view("v1", &outside.display().to_string()));
    mock.enqueue(Reply::stream().text(["Not allowed."]));
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Look outside").await;
    let mut seen = Vec::new();
    let request = loop {
        match next(&mut backend).await {
            Incoming::Event {
                event: Event::ApprovalRequested(request),
                ..
            } => break request,
            Incoming::Event {
                event: Event::RunFinished(f),
                ..
            } => panic!("no approval was asked: {f:?}"),
            Incoming::Event { event, .. } => seen.push(event),
            _ => {}
        }
    };
    let params = ApprovalAnswerParams {
        session_id: session.clone(),
        run_id: run,
        approval_id: request.approval_id,
        allow: false,
        scope: None,
        message: None,
        unavailable: None,
    };
    backend
        .call::<methods::ApprovalAnswer>(&params)
        .await
        .unwrap()
        .unwrap();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(images(Wire::Chat, &mock.requests()[1].body), []);
    shutdown_clean(&mut backend).await;
}
