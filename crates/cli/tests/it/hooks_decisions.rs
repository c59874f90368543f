//! What a `pre_tool_use` hook decided, as cards, records, the model's requests and a
//! crash's recovery show it, and the hooks that run outside a turn's ordinary course:
//! `turn_end` of a cancelled or failed turn (and none once the backend is ending),
//! `pre_compact` of `session.compact` (`docs/hooks.md`). Over `serve --stdio` against
//! the mock model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use magi_client::Incoming;
use magi_protocol::cards::{Block, Card, CardOutcome, ProtectionDecision};
use magi_protocol::messages::{
    ActivityState, Event, RunOutcome, SessionCompactParams, SessionCompactResult, TurnCancelParams,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::Value;

use super::hooks::{bash, records, script};
use crate::common::*;

/// The value of the row labelled `label` in any results block of `card`.
fn row<'c>(card: &'c Card, label: &str) -> Option<&'c str> {
    card.blocks.iter().find_map(|block| match block {
        Block::Results(results) => results
            .rows
            .iter()
            .find(|row| row.label == label)
            .and_then(|row| row.value.as_deref()),
        _ => None,
    })
}

/// The last live card of each activity, in the order the activities started.
fn final_cards(seen: &[Event]) -> Vec<Card> {
    let mut order: Vec<String> = Vec::new();
    let mut last: std::collections::HashMap<String, Card> = Default::default();
    for event in seen {
        if let Event::ToolCard(card) = event {
            if !order.contains(&card.activity_id) {
                order.push(card.activity_id.clone());
            }
            last.insert(card.activity_id.clone(), card.card.clone());
        }
    }
    order.iter().map(|id| last[id].clone()).collect()
}

/// The arguments of the calls the model made, as a Chat Completions request gives
/// them back to it.
fn replayed_arguments(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["function"]["arguments"].as_str().unwrap().to_owned())
        .collect()
}

/// The JSON objects a logging hook appended to `name`, one per line.
fn logged(env: &TestEnv, name: &str) -> Vec<Value> {
    std::fs::read_to_string(env.cwd().join(name))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn a_hooks_block_and_replaced_arguments_are_rows_of_the_cards_and_recorded() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("c1", "bash", [bash("rm -rf build")])
            .tool_call("c2", "bash", [bash("touch original")]),
    );
    mock.enqueue(Reply::stream().text(["Done."]));
    mock.enqueue(Reply::stream().text(["Again."]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_ALLOW_ALL", "1");
    script(
        &env,
        "policy",
        "case \"$(cat)\" in\n\
         *rm\\ -rf*) echo 'not here' >&2; exit 2;;\n\
         *original*) echo '{\"updated_arguments\": {\"command\": \"touch rewritten\"}}';;\n\
         *) echo '{\"decision\": \"allow\"}';;\n\
         esac\n",
    );
    env.write_settings("[[hooks.pre_tool_use]]\ncommand = \"./policy\"\n");
    let mut backend = env.spawn();
    let methods = [
        "session.create",
        "turn.start",
        "history.page",
        "shutdown",
        "tool.cards",
    ];
    backend.initialize(&methods).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "clean up").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    assert!(env.cwd().join("rewritten").exists());
    assert!(!env.cwd().join("original").exists());

    // Each call's hook runs before the call's activity starts, which names what runs.
    let activities: Vec<(String, ActivityState, String)> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Activity(a) => Some((a.name.clone(), a.state, a.summary.clone())),
            _ => None,
        })
        .collect();
    let started: Vec<&(String, ActivityState, String)> = activities
        .iter()
        .filter(|(_, state, _)| *state == ActivityState::Started)
        .collect();
    assert_eq!(started[0].0, "hook", "{activities:?}");
    assert_eq!(started[1].0, "bash", "{activities:?}");
    assert_eq!(started[2].0, "hook", "{activities:?}");
    assert_eq!(started[3].0, "bash", "{activities:?}");
    assert!(started[3].2.contains("touch rewritten"), "{activities:?}");
    assert!(!activities.iter().any(|a| a.2.contains("touch original")));

    // Live: the cards carry the hook's decision as a row of their own; the protection
    // decision of the block stays a refusal with no label.
    let live = final_cards(&seen);
    assert_eq!(live.len(), 2, "{live:?}");
    assert_eq!(
        row(&live[0], "Hook"),
        Some("denied by hook ./policy: not here")
    );
    assert_eq!(live[0].outcome, Some(CardOutcome::Failure));
    let protection = &live[0].metadata.public_protection;
    assert_eq!(protection.decision, ProtectionDecision::Denied);
    assert_eq!(protection.summary, None);
    assert_eq!(
        row(&live[1], "Hook"),
        Some("arguments replaced by hook ./policy")
    );
    assert!(live[1].title.contains("touch rewritten"), "{:?}", live[1]);
    assert_eq!(
        row(&live[1], "Bash protection"),
        Some("allowed automatically")
    );

    // Saved: the same rows and title.
    let revision = finished.revision.unwrap();
    let saved = saved_cards(&mut backend, &session, &revision).await;
    assert_eq!(saved.len(), 2);
    assert_eq!(row(&saved[0], "Hook"), row(&live[0], "Hook"));
    assert_eq!(row(&saved[1], "Hook"), row(&live[1], "Hook"));
    assert_eq!(saved[1].title, live[1].title);

    // Recorded: the model's call as it made it, and the hook's decision beside it.
    let calls = records(&env, &session, "tool_call");
    assert_eq!(calls[1]["arguments"], bash("touch original"));
    let hooked = records(&env, &session, "tool_call_hook");
    assert_eq!(hooked.len(), 2, "{hooked:?}");
    assert_eq!(hooked[0]["call_id"], "c1");
    assert_eq!(hooked[0]["decision"], "blocked");
    assert_eq!(hooked[0]["hook"], "./policy");
    assert_eq!(hooked[0]["reason"], "not here");
    assert_eq!(hooked[1]["call_id"], "c2");
    assert_eq!(hooked[1]["decision"], "arguments_replaced");
    assert_eq!(hooked[1]["arguments"], bash("touch rewritten"));
    assert!(
        hooked[1]["summary"]
            .as_str()
            .unwrap()
            .contains("touch rewritten")
    );

    // The provider is given the model's own call back, and the result says what ran.
    let requests = mock.requests();
    assert_eq!(
        replayed_arguments(&requests[1].body),
        [bash("rm -rf build"), bash("touch original")]
    );
    let told = tool_outputs(&requests[1].body);
    assert!(
        told[1].starts_with("[A pre_tool_use hook replaced this call's arguments"),
        "{told:?}"
    );
    assert!(told[1].contains("touch rewritten"), "{told:?}");
    // A later turn replays the same from the log.
    start_turn(&mut backend, &session, "again").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let requests = mock.requests();
    assert_eq!(
        replayed_arguments(&requests[2].body),
        replayed_arguments(&requests[1].body)
    );
    assert_eq!(tool_outputs(&requests[2].body), told);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn turn_end_hooks_run_for_a_cancelled_turn_and_a_failed_one_and_say_so() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [bash("touch ran")]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_ALLOW_ALL", "1");
    script(&env, "log", "cat >> ends.log\necho >> ends.log\n");
    env.write_settings(
        "[[hooks.pre_tool_use]]\ncommand = \"sleep 30\"\n\
         [[hooks.user_prompt_submit]]\ncommand = \"case \\\"$(cat)\\\" in *refuse*) exit 2;; esac\"\n\
         [[hooks.turn_end]]\ncommand = \"./log\"\n",
    );
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "turn.cancel", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "go").await;
    let mut seen = Vec::new();
    loop {
        if let Incoming::Event { event, .. } = next(&mut backend).await {
            seen.push(event.clone());
            if matches!(&event, Event::Activity(a)
                if a.name == "hook" && a.state == ActivityState::Started)
            {
                break;
            }
        }
    }
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id: run.clone(),
    };
    assert!(
        backend
            .call::<methods::TurnCancel>(&cancel)
            .await
            .unwrap()
            .is_ok()
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled, "{seen:?}");
    // The turn_end hook ran after the cancel, shown like any hook, before the end.
    let ends = logged(&env, "ends.log");
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["event"], "turn_end");
    assert_eq!(ends[0]["outcome"], "cancelled");
    assert_eq!(ends[0]["run_id"], run.as_str());
    let turn_end_shown = seen.iter().any(|e| {
        matches!(e, Event::Activity(a)
            if a.name == "hook" && a.state == ActivityState::Started
                && a.summary == "turn_end ./log")
    });
    assert!(turn_end_shown, "{seen:?}");
    assert!(!env.cwd().join("ran").exists());

    // A turn a hook refused failed: its turn_end hook hears that.
    start_turn(&mut backend, &session, "refuse this").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Failed);
    let ends = logged(&env, "ends.log");
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert_eq!(ends[1]["outcome"], "failed");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn shutdown_during_a_turn_starts_no_turn_end_hook_and_ends_cleanly() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [bash("touch ran")]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_ALLOW_ALL", "1");
    env.write_settings(
        "[[hooks.pre_tool_use]]\ncommand = \"sleep 30\"\n\
         [[hooks.turn_end]]\ncommand = \"touch turn-ended; sleep 30\"\n",
    );
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    session_with_turn(&mut backend, "go").await;
    loop {
        if let Incoming::Event { event, .. } = next(&mut backend).await
            && matches!(&event, Event::Activity(a)
                if a.name == "hook" && a.state == ActivityState::Started)
        {
            break;
        }
    }
    // The backend is ending: the cancelled turn's turn_end hook does not hold it up.
    shutdown_clean(&mut backend).await;
    assert!(!env.cwd().join("turn-ended").exists());
    assert!(!env.cwd().join("ran").exists());
}

#[tokio::test]
async fn session_compact_runs_the_pre_compact_hooks_first() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["An answer."]));
    mock.enqueue(Reply::stream().text(["The summary."]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    script(&env, "log", "cat >> compact.log\necho >> compact.log\n");
    // The second hook fails: the compaction goes on and its error comes back.
    env.write_settings(
        "[[hooks.pre_compact]]\ncommand = \"./log\"\n\
         [[hooks.pre_compact]]\ncommand = \"echo the archive is full >&2; exit 1\"\n",
    );
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "shutdown", "session.usage"])
        .await
        .unwrap()
        .unwrap();
    let session = session_with_turn(&mut backend, "a question").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    assert!(logged(&env, "compact.log").is_empty());
    let params = SessionCompactParams {
        session_id: session.clone(),
    };
    let compacted = backend
        .call::<methods::SessionCompact>(&params)
        .await
        .unwrap();
    let Ok(SessionCompactResult {
        compacted: true,
        hook_errors,
    }) = compacted
    else {
        panic!("compacted: {compacted:?}");
    };
    assert_eq!(hook_errors.len(), 1, "{hook_errors:?}");
    assert!(
        hook_errors[0].contains("exited 1: the archive is full"),
        "{hook_errors:?}"
    );
    let logged = logged(&env, "compact.log");
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["event"], "pre_compact");
    assert_eq!(logged[0]["trigger"], "manual");
    assert_eq!(logged[0]["session_id"], session.as_str());
    assert_eq!(logged[0]["run_id"], Value::Null);
    assert_eq!(logged[0]["invocation"], "local_agent");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_call_recovered_after_a_crash_runs_with_the_arguments_a_hook_gave_it() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "read", [r#"{"path":"asked.txt"}"#]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_FAULT", "after_claim:1");
    std::fs::write(env.cwd().join("asked.txt"), "what the model asked for\n").unwrap();
    std::fs::write(env.cwd().join("given.txt"), "what the hook gave\n").unwrap();
    env.write_settings(
        "[[hooks.pre_tool_use]]\nmatcher = \"read\"\n\
         command = \"echo '{\\\"updated_arguments\\\": {\\\"path\\\": \\\"given.txt\\\"}}'\"\n",
    );
    let capabilities = ["session.create", "session.open", "turn.start", "shutdown"];
    let mut backend = env.spawn();
    backend.initialize(&capabilities).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "read it").await;
    // Killed right after the claim: the call never ran.
    while backend.next_incoming_within(WAIT).await.is_some() {}
    assert!(records(&env, &session, "tool_result").is_empty());
    assert_eq!(records(&env, &session, "tool_call_hook").len(), 1);

    // The next backend recovers the read, with the hook's arguments.
    let env = env.without("MAGI_FAULT");
    mock.enqueue(Reply::stream().text(["Noted."]));
    let mut backend = env.spawn();
    backend.initialize(&capabilities).await.unwrap().unwrap();
    open_session(&mut backend, &session).await.unwrap();
    start_turn(&mut backend, &session, "what happened?").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let results = records(&env, &session, "tool_result");
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["outcome"], "completed");
    let content = results[0]["content"].as_str().unwrap();
    assert!(content.contains("what the hook gave"), "{content}");
    assert!(!content.contains("what the model asked for"), "{content}");
    shutdown_clean(&mut backend).await;
}
