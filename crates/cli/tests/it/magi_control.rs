//! `magi_control` through the real binary against the mock model: `usage` gives the
//! model the figures the mock reported, summed over the session; `compact` compacts
//! before the next request; `title` records the session's title, which `session.list`
//! shows and no model title replaces; its cards live and from `history.page`;
//! `[tools] disabled` or a subagent's offer leave it out; and `magi-code exec` runs it
//! without asking anyone.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::approval::{env_for, records};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::cards::{Block, Card, CardOutcome, Changes, Origin, ToolKind};
use magi_protocol::messages::{ActivityKind, ActivityState, Event, RunOutcome, SessionListParams};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const METHODS: [&str; 7] = [
    "session.create",
    "session.list",
    "turn.start",
    "history.page",
    "shutdown",
    "tool.cards",
    "session.usage",
];

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    backend
}

fn control(id: &str, arguments: serde_json::Value) -> Reply {
    Reply::stream().tool_call(id, "magi_control", [arguments.to_string()])
}

/// Runs one turn to its end; returns its events and revision.
async fn turn(backend: &mut Backend, session: &str, prompt: &str) -> (Vec<Event>, String) {
    start_turn(backend, session, prompt).await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    (seen, finished.revision.unwrap())
}

/// The final live cards of a run, in order.
fn final_cards(seen: &[Event]) -> Vec<Card> {
    seen.iter()
        .filter_map(|e| match e {
            Event::ToolCard(e) if e.card.outcome.is_some() => Some(e.card.clone()),
            _ => None,
        })
        .collect()
}

/// A card's rows as (label, value).
fn rows(card: &Card) -> Vec<(String, Option<String>)> {
    match card.blocks.as_slice() {
        [Block::Results(results)] => results
            .rows
            .iter()
            .map(|r| (r.label.clone(), r.value.clone()))
            .collect(),
        other => panic!("one results block expected: {other:?}"),
    }
}

fn row<'a>(card: &'a Card, label: &str) -> Option<&'a str> {
    match card.blocks.as_slice() {
        [Block::Results(results)] => results
            .rows
            .iter()
            .find(|r| r.label == label)
            .and_then(|r| r.value.as_deref()),
        _ => None,
    }
}

#[tokio::test]
async fn usage_gives_the_figures_the_mock_reported_summed_over_the_session() {
    let mock = MockServer::start().await;
    mock.enqueue(control("u1", json!({"operation": "usage"})).usage(40, 6));
    mock.enqueue(Reply::stream().text(["Noted."]).usage(55, 3));
    mock.enqueue(control("u2", json!({"operation": "usage"})).usage(70, 2));
    mock.enqueue(Reply::stream().text(["Done."]).usage(90, 4));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (first, _) = turn(&mut backend, &session, "How much have we used?").await;
    let (second, revision) = turn(&mut backend, &session, "And now?").await;

    // The model is told the sums of the requests recorded before the call: its own
    // request's usage is recorded before its calls run.
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert!(offered_tool_names(&requests[0].body).contains(&"magi_control".to_owned()));
    let told = tool_outputs(&requests[1].body);
    let told = told.last().unwrap();
    for line in [
        "model requests: 1\n",
        "tool calls: 1\n",
        "input tokens: 40 tokens\n",
        "cached input tokens: not reported\n",
        "output tokens: 6 tokens\n",
        "reasoning tokens: not reported\n",
        "context window: 32768 tokens\n",
        "context used after the latest request: 46 tokens (0.1% of the window)",
    ] {
        assert!(told.contains(line), "{line:?} in {told}");
    }
    let told = tool_outputs(&requests[3].body);
    let told = told.last().unwrap();
    for line in [
        "model requests: 3\n",
        "tool calls: 2\n",
        "input tokens: 165 tokens\n",
        "output tokens: 11 tokens\n",
        "context used after the latest request: 72 tokens (0.2% of the window)",
    ] {
        assert!(told.contains(line), "{line:?} in {told}");
    }

    // The live card and the saved one show the same public figures.
    let live = final_cards(&second);
    assert_eq!(live.len(), 1);
    let card = &live[0];
    assert_eq!(
        (card.tool_kind, card.outcome, card.changes),
        (
            ToolKind::Other,
            Some(CardOutcome::Success),
            Changes::NotApplicable
        )
    );
    assert_eq!(card.metadata.tool_name.as_deref(), Some("magi_control"));
    let expected: Vec<(String, Option<String>)> = [
        ("Operation", Some("usage")),
        ("Request status", Some("answered from the session log")),
        ("Input tokens", Some("165 tokens")),
        ("Cached input tokens", None),
        ("Output tokens", Some("11 tokens")),
        ("Reasoning tokens", None),
        ("Context window", Some("32768 tokens")),
        ("Context used", Some("72 tokens (0.2% of the window)")),
        ("Model requests", Some("3 requests")),
        ("Tool calls", Some("2 calls")),
    ]
    .into_iter()
    .map(|(l, v)| (l.to_owned(), v.map(str::to_owned)))
    .collect();
    assert_eq!(rows(card), expected);
    assert_eq!(
        row(&final_cards(&first)[0], "Input tokens"),
        Some("40 tokens")
    );
    let saved = saved_cards(&mut backend, &session, &revision).await;
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[1].origin, Origin::Saved);
    assert_eq!(saved[1].blocks, card.blocks);
    assert_eq!(saved[0].blocks, final_cards(&first)[0].blocks);
    shutdown_clean(&mut backend).await;
    // The result text is the model's; the card holds only the figures.
    let result = records(&env, &session)
        .into_iter()
        .find(|r| r["kind"] == "tool_result")
        .unwrap();
    assert_eq!(result["facts"]["tool"], "control");
    assert_eq!(result["facts"]["usage"]["input_tokens"]["tokens"], 40);
}

#[tokio::test]
async fn compact_compacts_before_the_next_request() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["EARLIER-ANSWER"]));
    mock.enqueue(control("c1", json!({"operation": "compact"})));
    mock.enqueue(Reply::stream().text(["SUMMARY-TEXT: the user asked twice."]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    turn(&mut backend, &session, "first question").await;
    let (seen, revision) = turn(&mut backend, &session, "make room").await;

    // The request after the call is the summary's; the one after it carries the
    // summary instead of the earlier conversation.
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let compacting = requests[2].body.to_string();
    assert!(compacting.contains("Summarise the conversation so far"));
    assert!(compacting.contains("EARLIER-ANSWER"));
    let after = requests[3].body.to_string();
    assert!(after.contains("SUMMARY-TEXT"), "{after}");
    assert!(!after.contains("EARLIER-ANSWER"), "{after}");
    // Compaction came after the call had settled.
    let settled = seen
        .iter()
        .position(|e| {
            matches!(e, Event::Activity(a)
            if a.kind == ActivityKind::Tool && a.state == ActivityState::Completed)
        })
        .unwrap();
    let compacted = seen
        .iter()
        .position(|e| {
            matches!(e, Event::Activity(a)
            if a.kind == ActivityKind::Compaction && a.summary == "conversation compacted")
        })
        .unwrap();
    assert!(settled < compacted);
    // The model was told it will happen; its card says so and nothing of the summary.
    let told = tool_outputs(&requests[2].body);
    assert!(
        told.iter()
            .any(|t| t.starts_with("Compaction will run before your next"))
    );
    let card = &final_cards(&seen)[0];
    assert_eq!(
        rows(card),
        [
            ("Operation".to_owned(), Some("compact".to_owned())),
            (
                "Request status".to_owned(),
                Some("compaction requested; runs before the next model request".to_owned())
            ),
        ]
    );
    let saved = saved_cards(&mut backend, &session, &revision).await;
    assert_eq!(saved.last().unwrap().blocks, card.blocks);
    assert!(
        !serde_json::to_string(&saved)
            .unwrap()
            .contains("SUMMARY-TEXT")
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn title_sets_the_listed_title_and_no_model_title_replaces_it() {
    let mock = MockServer::start().await;
    let long = format!("Parser work {}", "x".repeat(60));
    mock.enqueue(control("t1", json!({"operation": "title", "title": long})));
    mock.enqueue(Reply::stream().text(["Titled."]));
    mock.enqueue_title(Reply::stream().text(["A model title"]));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (seen, revision) = turn(&mut backend, &session, "name this session").await;

    let kept: String = long.chars().take(50).collect();
    let told = tool_outputs(&mock.requests()[1].body);
    assert_eq!(
        told.last().unwrap(),
        &format!(
            "The session's title is now {kept:?}. The title given was cut to 50 characters (22 left out)."
        )
    );
    // A client that negotiated `session.usage` is told the title before the run ends.
    let titled: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            Event::SessionTitled(t) => Some((t.session_id.as_str(), t.title.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(titled, [(session.as_str(), kept.as_str())]);
    let card = &final_cards(&seen)[0];
    assert_eq!(row(card, "Request status"), Some("title set"));
    assert_eq!(row(card, "Title"), Some(kept.as_str()));
    assert_eq!(
        row(card, "Title cut"),
        Some("22 characters left out to fit 50")
    );
    let saved = saved_cards(&mut backend, &session, &revision).await;
    assert_eq!(saved[0].blocks, card.blocks);
    let listed = backend
        .call::<methods::SessionList>(&SessionListParams::default())
        .await
        .unwrap()
        .unwrap();
    let entry = listed
        .sessions
        .iter()
        .find(|s| s.session_id == session)
        .unwrap();
    assert_eq!(entry.title.as_deref(), Some(kept.as_str()));
    shutdown_clean(&mut backend).await;
    // The model was not asked for another title after the turn.
    assert!(mock.title_requests().is_empty());
}

#[tokio::test]
async fn a_bad_title_fails_without_facts_and_changes_nothing() {
    let mock = MockServer::start().await;
    mock.enqueue(control(
        "t1",
        json!({"operation": "title", "title": "two\nlines"}),
    ));
    mock.enqueue(control("t2", json!({"operation": "rename"})));
    mock.enqueue(Reply::stream().text(["Sorry."]));
    let env = env_for(&mock);
    env.write_settings("[sessions]\ntitles = \"off\"\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (seen, _) = turn(&mut backend, &session, "name it").await;
    let cards = final_cards(&seen);
    assert_eq!(cards.len(), 2);
    assert!(
        cards
            .iter()
            .all(|c| c.outcome == Some(CardOutcome::Failure) && c.blocks.is_empty())
    );
    let requests = mock.requests();
    let told = tool_outputs(&requests[1].body);
    assert!(told[0].starts_with("The title was not set"), "{told:?}");
    let told = tool_outputs(&requests[2].body);
    assert!(told[1].contains("usage, compact and title"), "{told:?}");
    shutdown_clean(&mut backend).await;
    assert!(!records(&env, &session).iter().any(|r| r["kind"] == "title"));
}

#[tokio::test]
async fn disabled_or_for_a_subagent_it_is_not_offered() {
    let mock = MockServer::start().await;
    let task = json!({"subagent": "helper", "task": "Look around."});
    mock.enqueue(Reply::stream().tool_call("t1", "task", [task.to_string()]));
    mock.enqueue(control("s1", json!({"operation": "usage"})));
    mock.enqueue(Reply::stream().text(["Nothing."]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings(
        r#"
[profiles.helper]
subagent = true
description = "Looks around."
tools = ["list", "magi_control"]
"#,
    );
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    turn(&mut backend, &session, "delegate").await;
    let requests = mock.requests();
    assert!(offered_tool_names(&requests[0].body).contains(&"magi_control".to_owned()));
    // The subagent's profile lists it, yet it is the session's agent's alone.
    let offered = offered_tool_names(&requests[1].body);
    assert_eq!(offered, ["list"]);
    let told = tool_outputs(&requests[2].body);
    assert_eq!(
        told,
        ["The call was not run: magi_control is not offered to this agent."]
    );
    shutdown_clean(&mut backend).await;

    let mock = MockServer::start().await;
    mock.enqueue(control("u1", json!({"operation": "usage"})));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[tools]\ndisabled = [\"magi_control\"]\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    turn(&mut backend, &session, "usage?").await;
    let requests = mock.requests();
    assert!(!offered_tool_names(&requests[0].body).contains(&"magi_control".to_owned()));
    assert_eq!(
        tool_outputs(&requests[1].body),
        ["The call was not run: magi_control is disabled in this backend's settings."]
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn exec_runs_it_without_an_approval() {
    let mock = MockServer::start().await;
    mock.enqueue(control("u1", json!({"operation": "usage"})).usage(12, 3));
    mock.enqueue(
        Reply::stream()
            .text(["Fifteen tokens so far."])
            .usage(20, 4),
    );
    let env = TestEnv::new();
    // No `--allow-all` and no terminal: a call that asked would be denied.
    let output = crate::exec::exec(&env, &mock, &["How many tokens?"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        String::from_utf8(output.stdout.clone()).unwrap(),
        "Fifteen tokens so far.\n"
    );
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert!(
        stderr.contains("✓ magi_control usage: usage: answered from the session log ("),
        "{stderr}"
    );
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(told[0].contains("input tokens: 12 tokens\n"), "{told:?}");
    assert!(told[0].contains("output tokens: 3 tokens\n"), "{told:?}");
}

/// One `exec` turn in which the model uses the three tools one after another: each
/// answer reaches the model in the next request and stderr shows each call settled.
#[tokio::test]
async fn one_exec_turn_uses_ast_grep_view_image_and_magi_control() {
    let mock = MockServer::start().await;
    let search = json!({"pattern": "target($A)", "language": "rust"});
    mock.enqueue(Reply::stream().tool_call("g1", "ast_grep", [search.to_string()]));
    let view = json!({"path": "shot.png"});
    mock.enqueue(Reply::stream().tool_call("v1", "view_image", [view.to_string()]));
    mock.enqueue(control("u1", json!({"operation": "usage"})).usage(30, 5));
    mock.enqueue(Reply::stream().text(["Done looking."]).usage(40, 6));
    let env = TestEnv::new();
    env.write_settings("[models.\"openai-chat/mock-model\"]\nimages = true\n");
    std::fs::write(env.cwd().join("a.rs"), "fn f() {\n    target(1);\n}\n").unwrap();
    std::fs::write(env.cwd().join("shot.png"), crate::view_image::png()).unwrap();
    let output = crate::exec::exec(&env, &mock, &["Look around"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Done looking.\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for tool in ["ast_grep", "view_image", "magi_control"] {
        assert!(stderr.contains(&format!("✓ {tool}")), "{tool}: {stderr}");
    }
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        tool_outputs(&requests[1].body),
        ["a.rs:2:5: target(1)\n[scanned 1 file of rust]"]
    );
    let sent = crate::view_image::images(Wire::Chat, &requests[2].body);
    assert_eq!(sent.len(), 1, "the image goes with the next request");
    let usage = tool_outputs(&requests[3].body);
    let usage = usage.last().unwrap();
    // Only the third request's reply reported usage, and the answer says so.
    assert!(
        usage.contains("input tokens: 30 tokens; reported by 1 of 3 requests\n"),
        "{usage}"
    );
}
