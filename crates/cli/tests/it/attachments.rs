//! `input.attachments` through the real binary against the mock model: `turn.start`
//! takes images only when negotiated, refuses a bad one with nothing started, sends
//! each in the prompt's own user message in every wire format, keeps it with the
//! input's assets (never inline in the log) and sends it again after a restart;
//! `exec --image` negotiates it and attaches.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use crate::exec::exec;
use crate::view_image::{base64, images, png, provider};
use magi_client::Backend;
use magi_protocol::messages::{Event, RunOutcome, TurnStartParams};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const METHODS: [&str; 5] = [
    "session.create",
    "session.open",
    "turn.start",
    "shutdown",
    "input.attachments",
];

/// Starts a turn with `attachments`; the backend's answer.
async fn start_with(
    backend: &mut Backend,
    session: &str,
    prompt: &str,
    attachments: &[&str],
) -> Result<String, String> {
    let params = TurnStartParams {
        session_id: session.to_owned(),
        prompt: prompt.to_owned(),
        attachments: Some(attachments.iter().map(|p| (*p).to_owned()).collect()),
    };
    backend
        .call::<methods::TurnStart>(&params)
        .await
        .unwrap()
        .map(|started| started.run_id)
        .map_err(|code| code.as_str().to_owned())
}

/// The user message of a request body whose text is `prompt`, in any wire format.
fn user_message<'a>(body: &'a Value, prompt: &str) -> &'a Value {
    let list = body
        .get("input")
        .or_else(|| body.get("messages"))
        .and_then(Value::as_array)
        .unwrap();
    list.iter()
        .find(|m| {
            m["role"] == "user"
                && m["content"]
                    .as_array()
                    .is_some_and(|parts| parts.iter().any(|p| p["text"] == prompt))
        })
        .unwrap_or_else(|| panic!("no user message with parts for {prompt:?}: {body}"))
}

#[tokio::test]
async fn attachments_need_the_extension_and_a_bad_one_starts_nothing() {
    let mock = MockServer::start().await;
    let env = env_for_wire(Wire::Chat, &mock);
    std::fs::write(env.cwd().join("a.png"), png()).unwrap();
    std::fs::write(env.cwd().join("notes.txt"), "not an image").unwrap();
    // Cut inside its pixel data: the header still reads.
    let mut cut = png();
    cut.truncate(cut.len() - 20);
    std::fs::write(env.cwd().join("cut.png"), &cut).unwrap();
    let outside = env.root().join("outside.png");
    std::fs::write(&outside, png()).unwrap();

    // Without the extension the field is not a param, even with a good image.
    let mut backend = env.spawn();
    let result = backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    assert!(result.extensions.is_none());
    let session = new_session(&mut backend).await;
    let refused = start_with(&mut backend, &session, "Look", &["a.png"]).await;
    assert_eq!(refused, Err("invalid_params".to_owned()));
    shutdown_clean(&mut backend).await;

    // With it, the capability is listed last with its descriptor.
    let mut backend = env.spawn();
    let names = [
        "session.usage",
        "input.attachments",
        "tool.cards",
        "turn.start",
    ];
    let result = backend.initialize(&names).await.unwrap().unwrap();
    let listed = &result.capabilities[result.capabilities.len() - 3..];
    assert_eq!(listed, ["tool.cards", "session.usage", "input.attachments"]);
    let descriptor = serde_json::to_value(result.extensions.unwrap()).unwrap();
    assert_eq!(
        descriptor["input.attachments"],
        json!({ "schema_version": 1, "attachments": 8 })
    );
    shutdown_clean(&mut backend).await;

    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    let session = new_session(&mut backend).await;
    let outside = outside.display().to_string();
    let nine = ["a.png"; 9];
    let long = "a".repeat(1_025);
    for bad in [
        &[][..],
        &nine[..],
        &["missing.png"][..],
        &["notes.txt"][..],
        &["../outside.png"][..],
        &[outside.as_str()][..],
        &["a.png", "notes.txt"][..],
        &["."][..],
        &[long.as_str()][..],
        &["a\u{7}.png"][..],
    ] {
        let refused = start_with(&mut backend, &session, "Look", bad).await;
        assert_eq!(refused, Err("invalid_params".to_owned()), "{bad:?}");
    }
    // Nothing started: no model request, no log.
    assert!(mock.requests().is_empty());
    assert!(!log_path(&env, &session).exists());

    // Admission reads headers only: a file cut after its header, or a model that takes
    // no images (nothing says `mock-model` does), fails the run with why, and nothing
    // is recorded or sent.
    for (attached, why) in [
        ("a.png", "does not take images"),
        ("cut.png", "could not be decoded"),
    ] {
        if attached == "cut.png" {
            env.write_settings("[models.\"openai-chat/mock-model\"]\nimages = true\n");
            shutdown_clean(&mut backend).await;
            backend = env.spawn();
            backend.initialize(&METHODS).await.unwrap().unwrap();
            open_session(&mut backend, &session).await.unwrap_err();
        }
        let session = new_session(&mut backend).await;
        let started = start_with(&mut backend, &session, "Look", &[attached]).await;
        assert!(started.is_ok(), "{attached}: {started:?}");
        let mut seen = Vec::new();
        let finished = until_finished(&mut backend, &mut seen).await;
        assert_eq!(finished.outcome, RunOutcome::Failed, "{seen:?}");
        let told = seen.iter().any(|e| {
            matches!(e, Event::Diagnostic(d) if d.code == "attachment_failed" && d.summary.contains(why))
        });
        assert!(told, "{attached}: {seen:?}");
        assert!(mock.requests().is_empty());
        assert!(!log_path(&env, &session).exists());
    }
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_image_is_in_the_prompts_user_message_and_is_sent_again_after_a_restart() {
    let bytes = png();
    let data = base64(&bytes);
    for wire in WIRES {
        let mock = MockServer::start().await;
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
        let prompt = "What is in the screenshot?";
        let attached = ["shots/screen.png"];
        let run = start_with(&mut backend, &session, prompt, &attached)
            .await
            .unwrap();
        let finished = until_finished(&mut backend, &mut Vec::new()).await;
        assert_eq!(finished.outcome, RunOutcome::Completed, "{wire:?}");

        let expected = [("image/png".to_owned(), data.clone())];
        let first = &mock.requests()[0].body;
        assert_eq!(
            images(wire, user_message(first, prompt)),
            expected,
            "{wire:?}"
        );
        assert_eq!(images(wire, first), expected, "{wire:?}");
        // The log names the image by its facts; the bytes are an asset of the input.
        let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
        assert!(!log.contains(&data[..64]), "{wire:?}");
        assert!(log.contains("\"path\":\"shots/screen.png\""), "{wire:?}");
        let kept = env
            .mc_home()
            .join("data/conversations")
            .join(&session)
            .join(format!("inputs/u-{run}/0/image.png"));
        assert_eq!(std::fs::read(&kept).unwrap(), bytes, "{wire:?}");
        shutdown_clean(&mut backend).await;

        // A new backend replays the prompt with its image.
        let mut backend = env.spawn();
        backend.initialize(&METHODS).await.unwrap().unwrap();
        open_session(&mut backend, &session).await.unwrap();
        start_turn(&mut backend, &session, "And now?").await;
        let finished = until_finished(&mut backend, &mut Vec::new()).await;
        assert_eq!(finished.outcome, RunOutcome::Completed, "{wire:?}");
        let second = &mock.requests()[1].body;
        assert_eq!(
            images(wire, user_message(second, prompt)),
            expected,
            "{wire:?}"
        );
        assert_eq!(images(wire, second), expected, "{wire:?}");
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn exec_image_attaches_and_a_bad_one_is_refused_before_anything_starts() {
    let bytes = png();
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["A gradient."]));
    let env = TestEnv::new();
    env.write_settings("[models.\"openai-chat/mock-model\"]\nimages = true\n");
    std::fs::write(env.cwd().join("a.png"), &bytes).unwrap();
    std::fs::write(env.cwd().join("b.png"), &bytes).unwrap();
    let args = ["--image", "a.png", "--image", "b.png", "What is this?"];
    let output = exec(&env, &mock, &args).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let body = &mock.requests()[0].body;
    let sent = images(Wire::Chat, user_message(body, "What is this?"));
    let one = ("image/png".to_owned(), base64(&bytes));
    assert_eq!(sent, [one.clone(), one]);

    std::fs::write(env.cwd().join("notes.txt"), "text").unwrap();
    let output = exec(&env, &mock, &["--image", "notes.txt", "Look"]).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--image") && stderr.contains("notes.txt is not a PNG"),
        "{stderr}"
    );
    assert_eq!(mock.requests().len(), 1);
}
