//! Hooks over `serve --stdio` against the mock model (`docs/hooks.md`): cancelling a
//! turn during a hook, a hook's denial as the live activities, the history and the
//! saved card show it, and hooks running in turns only (never on `session.open` or
//! `session.list`), `session_start` saying how the session began.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use magi_client::Incoming;
use magi_protocol::messages::{ActivityState, Event, RunOutcome, TurnCancelParams};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::Value;

use super::hooks::{bash, records, script};
use crate::common::*;

#[tokio::test]
async fn cancelling_a_turn_during_a_hook_kills_it_and_runs_nothing() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [bash("touch ran")]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_ALLOW_ALL", "1");
    env.write_settings("[[hooks.pre_tool_use]]\ncommand = \"sleep 30; touch hook-finished\"\n");
    let mut backend = env.spawn();
    backend
        .initialize(&["session.create", "turn.start", "turn.cancel", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "go").await;
    // The hook's activity starts: it is running.
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
        run_id: run,
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
    assert!(seen.iter().any(|e| matches!(e, Event::Activity(a)
        if a.name == "hook" && a.state == ActivityState::Failed)));
    assert!(!env.cwd().join("ran").exists());
    assert!(!env.cwd().join("hook-finished").exists());
    let results = records(&env, &session, "tool_result");
    assert_eq!(results[0]["outcome"], "cancelled", "{results:?}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_live_activity_history_and_cards_show_a_hooks_denial() {
    use magi_protocol::cards::{CardOutcome, ProtectionDecision};
    use magi_protocol::messages::{EntryKind, HistoryPageParams};
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("c1", "bash", [bash("rm -rf build")]));
    mock.enqueue(Reply::stream().text(["Understood."]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("MAGI_ALLOW_ALL", "1");
    env.write_settings(
        "[[hooks.pre_tool_use]]\nmatcher = \"bash\"\ncommand = \"echo 'not here' >&2; exit 2\"\n",
    );
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
    let session = session_with_turn(&mut backend, "clean").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    let said = "denied by hook: not here";
    // Live: the hook's own activity, then the call's end with the hook's reason.
    let hook_ended = seen.iter().any(|e| {
        matches!(e, Event::Activity(a)
        if a.name == "hook" && a.state == ActivityState::Completed
            && a.summary == "blocked")
    });
    assert!(hook_ended, "{seen:?}");
    let call_ended = seen.iter().any(|e| {
        matches!(e, Event::Activity(a)
        if a.name == "bash" && a.state == ActivityState::Failed && a.summary == said)
    });
    assert!(call_ended, "{seen:?}");
    // Saved: the history entry says the same, and the card is a denial with the
    // protection rows a refusal without a label has.
    let revision = finished.revision.unwrap();
    let params = HistoryPageParams {
        session_id: session.clone(),
        revision: revision.clone(),
        cursor: None,
    };
    let page = backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    assert!(
        page.entries
            .iter()
            .any(|e| e.kind == EntryKind::Activity && e.text.contains(said)),
        "{:?}",
        page.entries
    );
    let cards = saved_cards(&mut backend, &session, &revision).await;
    assert_eq!(cards.len(), 1);
    assert_eq!(cards[0].outcome, Some(CardOutcome::Failure));
    let protection = &cards[0].metadata.public_protection;
    assert_eq!(protection.decision, ProtectionDecision::Denied);
    assert_eq!(protection.summary, None);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn hooks_run_in_turns_only_and_session_start_says_how_the_session_began() {
    use magi_protocol::messages::SessionListParams;
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["One."]));
    mock.enqueue(Reply::stream().text(["Two."]));
    let env = TestEnv::new()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    script(&env, "log", "cat >> hooks.log\necho >> hooks.log\n");
    env.write_settings(
        "[[hooks.session_start]]\ncommand = \"./log\"\n\
         [[hooks.user_prompt_submit]]\ncommand = \"./log\"\n\
         [[hooks.turn_end]]\ncommand = \"./log\"\n",
    );
    let logged = || -> Vec<Value> {
        std::fs::read_to_string(env.cwd().join("hooks.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let methods = [
        "session.create",
        "session.open",
        "session.list",
        "turn.start",
        "shutdown",
    ];
    let mut backend = env.spawn();
    backend.initialize(&methods).await.unwrap().unwrap();
    let session = session_with_turn(&mut backend, "first").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let events: Vec<(String, String)> = logged()
        .iter()
        .map(|v| {
            let detail = v["source"].as_str().or(v["outcome"].as_str());
            let detail = detail.or(v["prompt"].as_str()).unwrap_or_default();
            (v["event"].as_str().unwrap().to_owned(), detail.to_owned())
        })
        .collect();
    let expected = [
        ("session_start", "new"),
        ("user_prompt_submit", "first"),
        ("turn_end", "completed"),
    ]
    .map(|(e, d)| (e.to_owned(), d.to_owned()));
    assert_eq!(events, expected);
    assert_eq!(logged()[0]["invocation"], "local_agent");
    shutdown_clean(&mut backend).await;

    // Opening and listing sessions run no hook; the next turn of the reopened session
    // starts it again, as resumed.
    let mut backend = env.spawn();
    backend.initialize(&methods).await.unwrap().unwrap();
    open_session(&mut backend, &session).await.unwrap();
    let params = SessionListParams {
        revision: None,
        cursor: None,
        limit: None,
    };
    backend
        .call::<methods::SessionList>(&params)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(logged().len(), 3);
    start_turn(&mut backend, &session, "second").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let after = logged();
    assert_eq!(after.len(), 6);
    assert_eq!(after[3]["event"], "session_start");
    assert_eq!(after[3]["source"], "resume");
    shutdown_clean(&mut backend).await;
}
