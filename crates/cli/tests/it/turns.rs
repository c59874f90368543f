//! Turns end to end through the real binary, against the loopback mock model server
//! speaking each provider's real streaming wire format.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityState, ApprovalAnswerParams, EmptyParams, EntryKind, Event, HistoryPageParams,
    HistoryPageResult, Persistence, RunFinished, RunOutcome, SessionResult, TurnCancelParams,
    TurnCancelResult, TurnStartParams, TurnStartResult,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const KEY: &str = WIRE_KEY;

async fn ready(env: &TestEnv) -> (Backend, String) {
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = create(&mut backend).await;
    (backend, session.session_id)
}

async fn create(backend: &mut Backend) -> SessionResult {
    backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
}

async fn try_start(
    backend: &mut Backend,
    session: &str,
    prompt: &str,
) -> Result<TurnStartResult, ErrorCode> {
    let params = TurnStartParams {
        session_id: session.to_owned(),
        prompt: prompt.to_owned(),
        attachments: None,
    };
    backend.call::<methods::TurnStart>(&params).await.unwrap()
}

async fn start(backend: &mut Backend, session: &str, prompt: &str) -> String {
    let started = try_start(backend, session, prompt).await.unwrap();
    assert!(started.accepted);
    started.run_id
}

async fn cancel(
    backend: &mut Backend,
    session: &str,
    run: &str,
) -> Result<TurnCancelResult, ErrorCode> {
    let params = TurnCancelParams {
        session_id: session.to_owned(),
        run_id: run.to_owned(),
    };
    backend.call::<methods::TurnCancel>(&params).await.unwrap()
}

/// Every event of the run, up to and including `run.finished`.
async fn events_until_finished(backend: &mut Backend) -> (Vec<Event>, RunFinished) {
    let mut events = Vec::new();
    loop {
        match next(backend).await {
            Incoming::Event { event, .. } => {
                if let Event::RunFinished(finished) = &event {
                    let finished = finished.clone();
                    events.push(event);
                    return (events, finished);
                }
                events.push(event);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// The reconciled text of each assistant message, in order.
fn reconciled(events: &[Event]) -> Vec<String> {
    let mut messages: Vec<(String, String)> = Vec::new();
    for event in events {
        if let Event::MessageReconcile(part) = event {
            match messages.iter_mut().find(|(id, _)| *id == part.message_id) {
                Some((_, text)) => text.push_str(&part.text),
                None => messages.push((part.message_id.clone(), part.text.clone())),
            }
        }
    }
    messages.into_iter().map(|(_, text)| text).collect()
}

async fn history(backend: &mut Backend, session: &str, revision: &str) -> HistoryPageResult {
    let params = HistoryPageParams {
        session_id: session.to_owned(),
        revision: revision.to_owned(),
        cursor: None,
    };
    backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap()
}

fn shown(page: &HistoryPageResult) -> Vec<(EntryKind, String, bool)> {
    page.entries
        .iter()
        .map(|e| (e.kind, e.text.clone(), e.partial))
        .collect()
}

#[tokio::test]
async fn a_text_reply_streams_reconciles_and_lands_in_history() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text(["Hello", ", ", "world."]));
        let env = env_for_wire(wire, &mock);
        let (mut backend, session) = ready(&env).await;
        let run_id = start(&mut backend, &session, "Say hello").await;
        let (events, finished) = events_until_finished(&mut backend).await;
        assert!(
            matches!(&events[0], Event::InputPersisted(p) if p.durable && p.run_id == run_id),
            "{wire:?}: {events:?}"
        );
        let deltas: String = events
            .iter()
            .filter_map(|e| match e {
                Event::MessageDelta(d) => Some(d.text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(deltas, "Hello, world.", "{wire:?}");
        assert_eq!(reconciled(&events), vec!["Hello, world."], "{wire:?}");
        assert_eq!(
            (finished.outcome, finished.persistence, finished.error_code),
            (RunOutcome::Completed, Persistence::Durable, None),
            "{wire:?}"
        );
        let page = history(
            &mut backend,
            &session,
            finished.revision.as_deref().unwrap(),
        )
        .await;
        assert_eq!(
            shown(&page),
            vec![
                (EntryKind::User, "Say hello".into(), false),
                (EntryKind::Assistant, "Hello, world.".into(), false)
            ],
            "{wire:?}"
        );
        assert!(page.complete);
        let request = &mock.requests()[0];
        assert_eq!(request.body["model"], json!("mock-model"), "{wire:?}");
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn the_tool_loop_reads_files_and_answers_with_their_content() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(
            Reply::stream()
                .tool_call("call_1", "read", ["{\"path\":", "\"notes.txt\"}"])
                .tool_call("call_2", "read", ["{\"path\":\"missing.txt\"}"]),
        );
        mock.enqueue(Reply::stream().text(["The notes say hi."]));
        let env = env_for_wire(wire, &mock);
        std::fs::write(env.cwd().join("notes.txt"), "hi from the notes\n").unwrap();
        let (mut backend, session) = ready(&env).await;
        start(&mut backend, &session, "What do the notes say?").await;
        let (events, finished) = events_until_finished(&mut backend).await;
        assert_eq!(finished.outcome, RunOutcome::Completed, "{wire:?}");
        let activities: Vec<(String, ActivityState)> = events
            .iter()
            .filter_map(|e| match e {
                Event::Activity(a) => Some((a.activity_id.clone(), a.state)),
                _ => None,
            })
            .collect();
        assert_eq!(
            activities,
            // Read-only calls run side by side: both start before either settles, and
            // they settle in the order they were asked for.
            vec![
                ("tool-1".into(), ActivityState::Started),
                ("tool-2".into(), ActivityState::Started),
                ("tool-1".into(), ActivityState::Completed),
                ("tool-2".into(), ActivityState::Failed),
            ],
            "{wire:?}"
        );
        // The second model request carried both results back.
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "{wire:?}");
        let body = requests[1].body.to_string();
        assert!(body.contains("hi from the notes"), "{wire:?}: {body}");
        assert!(
            body.contains("call_1") && body.contains("call_2"),
            "{wire:?}"
        );
        let page = history(
            &mut backend,
            &session,
            finished.revision.as_deref().unwrap(),
        )
        .await;
        let kinds: Vec<EntryKind> = page.entries.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![
                EntryKind::User,
                EntryKind::Activity,
                EntryKind::Activity,
                EntryKind::Assistant
            ],
            "{wire:?}"
        );
        assert!(
            page.entries[1].text.starts_with("read: completed."),
            "{wire:?}"
        );
        assert!(
            !page
                .entries
                .iter()
                .any(|e| e.text.contains("hi from the notes"))
        );
        shutdown_clean(&mut backend).await;
    }
}

/// A stream that breaks off once its reply has begun (a break before any output is
/// retried), or carries an event that is not JSON.
fn broken_streams(wire: Wire) -> [(Reply, &'static str); 2] {
    // Past the opening events and into the text, wherever each format puts it.
    let cut = match wire {
        Wire::Responses => 6,
        Wire::Chat => 3,
        Wire::Anthropic => 5,
    };
    [
        (
            Reply::stream()
                .text(["Partial ", "answer ", "never finished"])
                .disconnect_after(cut),
            "provider_stream_malformed",
        ),
        (
            Reply::stream()
                .text(["Before ", "garbage"])
                .malformed_after(2),
            "provider_stream_malformed",
        ),
    ]
}

#[tokio::test]
async fn a_broken_stream_keeps_the_partial_reply_and_fails_truthfully() {
    for wire in WIRES {
        for (reply, code) in broken_streams(wire) {
            let mock = MockServer::start().await;
            mock.enqueue(reply);
            let env = env_for_wire(wire, &mock);
            let (mut backend, session) = ready(&env).await;
            start(&mut backend, &session, "Tell me").await;
            let (events, finished) = events_until_finished(&mut backend).await;
            assert_eq!(
                (finished.outcome, finished.persistence, finished.error_code),
                (
                    RunOutcome::Failed,
                    Persistence::Durable,
                    Some(ErrorCode::ExecutionFailed)
                ),
                "{wire:?}"
            );
            let codes: Vec<&str> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Diagnostic(d) => Some(d.code.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(codes, vec![code], "{wire:?}");
            let page = history(
                &mut backend,
                &session,
                finished.revision.as_deref().unwrap(),
            )
            .await;
            let last = page.entries.last().unwrap();
            assert_eq!(last.kind, EntryKind::Diagnostic, "{wire:?}");
            if let Some(partial) = page.entries.iter().find(|e| e.kind == EntryKind::Assistant) {
                assert!(partial.partial, "{wire:?}");
            }
            shutdown_clean(&mut backend).await;
        }
    }
}

#[tokio::test]
async fn a_server_error_is_retried_before_any_output() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::error(500, "{\"error\":\"overloaded\"}"));
        mock.enqueue(Reply::stream().text(["Recovered."]));
        let env = env_for_wire(wire, &mock);
        let (mut backend, session) = ready(&env).await;
        start(&mut backend, &session, "Try").await;
        let (events, finished) = events_until_finished(&mut backend).await;
        assert_eq!(finished.outcome, RunOutcome::Completed);
        assert_eq!(reconciled(&events), vec!["Recovered."]);
        assert_eq!(mock.requests().len(), 2);
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn cancellation_mid_stream_ends_the_run_cancelled() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        let chunks: Vec<String> = (0..50).map(|n| format!("chunk {n} ")).collect();
        // Held before its end, the stream is still in flight whenever the cancel lands.
        mock.enqueue(Reply::stream().text(chunks).held());
        let env = env_for_wire(wire, &mock);
        let (mut backend, session) = ready(&env).await;
        let run_id = start(&mut backend, &session, "Talk slowly").await;
        // Wait for the first delta, then cancel (twice: it is idempotent).
        loop {
            if let Incoming::Event {
                event: Event::MessageDelta(_),
                ..
            } = next(&mut backend).await
            {
                break;
            }
        }
        let status = backend.status().await.unwrap().unwrap();
        assert_eq!(status.run_id.as_deref(), Some(run_id.as_str()));
        // Both cancels in one write: they reach the child together, while the run is
        // still active, so the second shows idempotence rather than a race.
        let params = json!({"session_id": session, "run_id": run_id});
        let mut bytes = frame("cancel-a", "turn.cancel", params.clone());
        bytes.extend_from_slice(&frame("cancel-b", "turn.cancel", params));
        backend.send_raw(&bytes).await.unwrap();
        let mut answered = 0;
        let mut events = Vec::new();
        while answered < 2 {
            match next(&mut backend).await {
                Incoming::Response(response) => {
                    assert_eq!(
                        response.outcome,
                        Ok(json!({"cancellation_requested": true})),
                        "{wire:?}"
                    );
                    answered += 1;
                }
                Incoming::Event { event, .. } => events.push(event),
                other => panic!("{other:?}"),
            }
        }
        let finished = match events.iter().find_map(|e| match e {
            Event::RunFinished(f) => Some(f.clone()),
            _ => None,
        }) {
            Some(finished) => finished,
            None => events_until_finished(&mut backend).await.1,
        };
        assert_eq!(finished.outcome, RunOutcome::Cancelled);
        assert_eq!(finished.persistence, Persistence::Durable);
        // The run is over: cancelling it again is stale.
        assert_eq!(
            cancel(&mut backend, &session, &run_id).await,
            Err(ErrorCode::StaleRun)
        );
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn turn_admission_errors() {
    let mock = MockServer::start().await;
    let env = env_for_wire(Wire::Chat, &mock);
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        try_start(&mut backend, "abc", "hi").await,
        Err(ErrorCode::SessionMissing)
    );
    let session = create(&mut backend).await;
    let id = session.session_id.as_str();
    let cases = [
        (
            json!({"session_id": id, "prompt": "   \n"}),
            ErrorCode::InvalidParams,
        ),
        (
            json!({"session_id": id, "prompt": "x".repeat(16_385)}),
            ErrorCode::InvalidParams,
        ),
        (json!({"session_id": id}), ErrorCode::InvalidParams),
        (
            json!({"session_id": id, "prompt": "hi", "extra": 1}),
            ErrorCode::InvalidParams,
        ),
        (
            json!({"session_id": "other", "prompt": "hi"}),
            ErrorCode::StaleSession,
        ),
    ];
    for (params, code) in cases {
        let response = backend
            .request_raw("turn.start", params.clone())
            .await
            .unwrap();
        assert_eq!(response.outcome, Err(code), "{params}");
    }
    // Nothing was persisted by refused turns.
    assert!(!log_path(&env, id).exists());
    // A prompt of exactly the bound is accepted; a second turn meanwhile is busy (the
    // reply is held until every check of the running turn is done).
    mock.enqueue(Reply::stream().text(["slow"]).held());
    let prompt = "p".repeat(16_384);
    let run = start(&mut backend, id, &prompt).await;
    assert_eq!(
        try_start(&mut backend, id, "again").await,
        Err(ErrorCode::Busy)
    );
    assert_eq!(
        cancel(&mut backend, id, "not-the-run").await,
        Err(ErrorCode::StaleRun)
    );
    let approval = ApprovalAnswerParams {
        session_id: id.to_owned(),
        run_id: run,
        approval_id: "a1".into(),
        allow: true,
        scope: None,
        message: None,
        unavailable: None,
    };
    assert_eq!(
        backend
            .call::<methods::ApprovalAnswer>(&approval)
            .await
            .unwrap(),
        Err(ErrorCode::StaleApproval)
    );
    mock.release();
    let (_, finished) = events_until_finished(&mut backend).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_provider_echoing_the_key_never_reaches_the_client() {
    for wire in [Wire::Responses, Wire::Anthropic] {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::error(
            401,
            format!("{{\"error\":{{\"message\":\"invalid key {KEY}\"}}}}"),
        ));
        let env = env_for_wire(wire, &mock);
        let (mut backend, session) = ready(&env).await;
        start(&mut backend, &session, "hi").await;
        let (events, finished) = events_until_finished(&mut backend).await;
        assert_eq!(finished.outcome, RunOutcome::Failed, "{wire:?}");
        let page = history(
            &mut backend,
            &session,
            finished.revision.as_deref().unwrap(),
        )
        .await;
        let everything = format!("{events:?}{page:?}");
        assert!(!everything.contains(KEY), "{wire:?}");
        assert!(!everything.contains("invalid key"), "{wire:?}");
        let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
        assert!(!log.contains(KEY), "{wire:?}");
        // The key did go to the provider, in its header.
        let request = &mock.requests()[0];
        let sent = format!("{:?}", request.headers);
        assert!(sent.contains(KEY), "{wire:?}");
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn a_second_turn_replays_the_conversation() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["First answer."]));
    mock.enqueue(Reply::stream().text(["Second answer."]));
    let env = env_for_wire(Wire::Chat, &mock);
    let (mut backend, session) = ready(&env).await;
    start(&mut backend, &session, "First question").await;
    events_until_finished(&mut backend).await;
    start(&mut backend, &session, "Second question").await;
    let (_, finished) = events_until_finished(&mut backend).await;
    let body = mock.requests()[1].body.to_string();
    for text in ["First question", "First answer.", "Second question"] {
        assert!(body.contains(text), "{body}");
    }
    let page = history(
        &mut backend,
        &session,
        finished.revision.as_deref().unwrap(),
    )
    .await;
    assert_eq!(page.entries.len(), 4);
    shutdown_clean(&mut backend).await;
    // The session is durable: another child reopens it.
    let mut backend = env.spawn();
    backend
        .initialize(&["session.open", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    assert!(open_session(&mut backend, &session).await.unwrap().durable);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_session_at_its_stored_read_bound_refuses_new_turns_before_appending() {
    let mock = MockServer::start().await;
    let env = env_for_wire(Wire::Chat, &mock);
    let id = "full-session";
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    let mut text = record(id, "session_meta", json!({"cwd": cwd}));
    let line = record(id, "future_kind", json!({}));
    text.push_str(&line.repeat(magi_protocol::limits::STORED_READ_LINES - 1));
    let path = write_log(&env, id, &text);
    let mut backend = env.spawn();
    backend
        .initialize(&["session.open", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    open_session(&mut backend, id).await.unwrap();
    assert_eq!(
        try_start(&mut backend, id, "one more").await,
        Err(ErrorCode::HistoryLimit)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert!(mock.requests().is_empty());
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_multi_step_tool_loop_and_unknown_tools_or_bad_arguments_are_reported() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().tool_call("s1", "read", ["{\"path\":\"a.txt\"}"]));
        mock.enqueue(Reply::stream().tool_call("s2", "teleport", ["{}"]));
        mock.enqueue(Reply::stream().tool_call("s3", "read", ["{not json"]));
        mock.enqueue(Reply::stream().text(["Done after three steps."]));
        let env = env_for_wire(wire, &mock);
        std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
        let (mut backend, session) = ready(&env).await;
        start(&mut backend, &session, "Work").await;
        let (events, finished) = events_until_finished(&mut backend).await;
        assert_eq!(finished.outcome, RunOutcome::Completed);
        let states: Vec<(String, ActivityState)> = events
            .iter()
            .filter_map(|e| match e {
                Event::Activity(a) if a.state != ActivityState::Started => {
                    Some((a.summary.clone(), a.state))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            states,
            vec![
                ("1 line".into(), ActivityState::Completed),
                ("unknown tool".into(), ActivityState::Failed),
                ("invalid arguments".into(), ActivityState::Failed),
            ]
        );
        assert_eq!(mock.requests().len(), 4);
        assert_eq!(reconciled(&events), vec!["Done after three steps."]);
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn cancellation_during_the_tool_phase_ends_the_run_cancelled() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        let mut reply = Reply::stream();
        for n in 0..40 {
            reply = reply.tool_call(format!("c{n}"), "read", ["{\"path\":\"big.txt\"}"]);
        }
        mock.enqueue(reply);
        // No further reply is queued: whatever the timing, the next model request could
        // only fail, so the cancellation is what ends the run.
        let env = env_for_wire(wire, &mock);
        std::fs::write(env.cwd().join("big.txt"), "row\n".repeat(5_000)).unwrap();
        let (mut backend, session) = ready(&env).await;
        let run_id = start(&mut backend, &session, "Read it all").await;
        let mut events = Vec::new();
        loop {
            if let Incoming::Event { event, .. } = next(&mut backend).await {
                let first_activity = matches!(event, Event::Activity(_));
                events.push(event);
                if first_activity {
                    break;
                }
            }
        }
        assert!(cancel(&mut backend, &session, &run_id).await.is_ok());
        let (rest, finished) = events_until_finished(&mut backend).await;
        events.extend(rest);
        assert_eq!(finished.outcome, RunOutcome::Cancelled);
        let started = events
            .iter()
            .filter(|e| matches!(e, Event::Activity(a) if a.state == ActivityState::Started))
            .count();
        let ended = events
            .iter()
            .filter(|e| matches!(e, Event::Activity(a) if a.state != ActivityState::Started))
            .count();
        assert_eq!(started, ended, "every started tool call reports its end");
        let page = history(
            &mut backend,
            &session,
            finished.revision.as_deref().unwrap(),
        )
        .await;
        let last = page.entries.last().unwrap();
        assert_eq!(
            (last.kind, last.text.as_str()),
            (EntryKind::Diagnostic, "The turn was cancelled.")
        );
        assert!(page.complete);
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn assistant_content_over_8_mib_ends_the_run_with_content_limit() {
    let mock = MockServer::start().await;
    let chunk = "z".repeat(64 * 1024);
    mock.enqueue(Reply::stream().text(vec![chunk; 130]));
    let env = env_for_wire(Wire::Chat, &mock);
    let (mut backend, session) = ready(&env).await;
    start(&mut backend, &session, "Say a lot").await;
    let (events, finished) = events_until_finished(&mut backend).await;
    assert_eq!(
        (finished.outcome, finished.error_code),
        (RunOutcome::Failed, Some(ErrorCode::ContentLimit))
    );
    // What was accepted is reconciled truthfully as partial, within the bound.
    let text = reconciled(&events).concat();
    assert!(!text.is_empty() && text.len() <= magi_protocol::limits::RUN_CONTENT_BYTES);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::MessageReconcile(p) if p.partial && p.last_part))
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn provider_reasoning_summaries_are_requested_when_configured_and_kept_with_provenance() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .reasoning_summary(["Checking ", "the question."])
            .text(["Answer."]),
    );
    let env = env_for_wire(Wire::Responses, &mock);
    env.write_settings("[providers.openai]\nreasoning_summaries = true\n");
    let (mut backend, session) = ready(&env).await;
    start(&mut backend, &session, "Think").await;
    let (_, finished) = events_until_finished(&mut backend).await;
    assert_eq!(
        mock.requests()[0].body["reasoning"],
        json!({"summary": "auto"})
    );
    let page = history(
        &mut backend,
        &session,
        finished.revision.as_deref().unwrap(),
    )
    .await;
    assert_eq!(
        shown(&page),
        vec![
            (EntryKind::User, "Think".into(), false),
            (
                EntryKind::ReasoningSummary,
                "Checking the question.".into(),
                false
            ),
            (EntryKind::Assistant, "Answer.".into(), false),
        ]
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn raw_reasoning_of_other_formats_is_never_shown() {
    for wire in [Wire::Chat, Wire::Anthropic] {
        let mock = MockServer::start().await;
        mock.enqueue(
            Reply::stream()
                .reasoning_summary(["private thoughts"])
                .text(["Answer."]),
        );
        let env = env_for_wire(wire, &mock);
        let (mut backend, session) = ready(&env).await;
        start(&mut backend, &session, "Think").await;
        let (events, finished) = events_until_finished(&mut backend).await;
        let page = history(
            &mut backend,
            &session,
            finished.revision.as_deref().unwrap(),
        )
        .await;
        let everything = format!("{events:?}{page:?}");
        assert!(!everything.contains("private thoughts"), "{wire:?}");
        // The log keeps Anthropic's thinking only to send it back (a provider-only
        // record); Chat's raw reasoning is not kept at all.
        let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
        let holding: Vec<&str> = log
            .lines()
            .filter(|line| line.contains("private thoughts"))
            .collect();
        match wire {
            Wire::Anthropic => {
                assert_eq!(holding.len(), 1, "{log}");
                assert!(
                    holding[0].contains(r#""kind":"provider_reasoning""#),
                    "{log}"
                );
            }
            _ => assert!(holding.is_empty(), "{wire:?}: {log}"),
        }
        shutdown_clean(&mut backend).await;
    }
}

#[tokio::test]
async fn the_search_tools_answer_the_model() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("g1", "grep", ["{\"pattern\":\"needle\"}"])
            .tool_call("f1", "find", ["{\"pattern\":\"*.txt\"}"])
            .tool_call("l1", "list", ["{}"]),
    );
    mock.enqueue(Reply::stream().text(["Found it."]));
    let env = env_for_wire(Wire::Chat, &mock);
    std::fs::write(env.cwd().join("hay.txt"), "straw\nneedle\n").unwrap();
    let (mut backend, session) = ready(&env).await;
    start(&mut backend, &session, "Where is the needle?").await;
    let (events, finished) = events_until_finished(&mut backend).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let summaries: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Activity(a) if a.state == ActivityState::Completed => Some(a.summary.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(summaries, vec!["1 match in 1 file", "1 file", "1 entry"]);
    let body = mock.requests()[1].body.to_string();
    assert!(body.contains("hay.txt:2:needle"), "{body}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn calls_a_crashed_run_left_unsettled_are_settled_as_unknown_before_the_next_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Continuing."]));
    let env = env_for_wire(Wire::Chat, &mock);
    let id = "crashed-session";
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    let crashed = [
        record(id, "session_meta", json!({"cwd": cwd})),
        record(id, "turn_started", json!({"turn_id": "t1"})),
        record(id, "user_input", json!({"turn_id": "t1", "message_id": "u1", "text": "Run it"})),
        record(id, "tool_call", json!({"turn_id": "t1", "call_id": "c9", "name": "bash", "summary": "bash", "arguments": "{\"command\":\"make\"}"})),
    ]
    .concat();
    let path = write_log(&env, id, &crashed);
    let mut backend = env.spawn();
    backend
        .initialize(&["session.open", "turn.start", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    open_session(&mut backend, id).await.unwrap();
    // Opening executed and appended nothing.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), crashed);
    start(&mut backend, id, "Go on").await;
    let (_, finished) = events_until_finished(&mut backend).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    // The orphan call was settled as unknown, never run again, and the model was told.
    let log = std::fs::read_to_string(&path).unwrap();
    let settled = log.lines().nth(4).unwrap();
    assert!(
        settled.contains("\"kind\":\"tool_result\"")
            && settled.contains("\"outcome\":\"indeterminate\""),
        "{settled}"
    );
    let body = mock.requests()[0].body.to_string();
    assert!(body.contains("its outcome is unknown"), "{body}");
    let page = history(&mut backend, id, finished.revision.as_deref().unwrap()).await;
    assert!(
        page.entries
            .iter()
            .any(|e| e.text == "bash: outcome unknown. interrupted; outcome unknown")
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_backends_own_credential_never_leaves_it_whatever_it_looks_like() {
    let mock = MockServer::start().await;
    // The model repeats the key, and a tool reads it from a file the user left around.
    mock.enqueue(
        Reply::stream()
            .text([format!("Your key is {KEY}, right?")])
            .tool_call("c1", "read", ["{\"path\":\"leak.txt\"}"]),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for_wire(Wire::Responses, &mock);
    std::fs::write(env.cwd().join("leak.txt"), format!("key={KEY}\n")).unwrap();
    let (mut backend, session) = ready(&env).await;
    start(&mut backend, &session, "hi").await;
    let (events, finished) = events_until_finished(&mut backend).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let page = history(
        &mut backend,
        &session,
        finished.revision.as_deref().unwrap(),
    )
    .await;
    let everything = format!("{events:?}{page:?}");
    assert!(!everything.contains(KEY), "{everything}");
    assert!(everything.contains("Your key is [redacted], right?"));
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(!log.contains(KEY), "{log}");
    // The model is given the file without the key.
    let second = mock.requests()[1].body.to_string();
    assert!(!second.contains(KEY), "{second}");
    assert!(second.contains("key=[redacted]"), "{second}");
    shutdown_clean(&mut backend).await;
}
