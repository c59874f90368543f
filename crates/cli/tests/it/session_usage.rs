//! The `session.usage` extension through the real binary: its negotiation, a
//! `usage.updated` after each model request with the figures the mock reported,
//! `session.titled` once a title is recorded, and
//! `session.compact` (compacting an idle session, nothing to compact, `busy` during a
//! run, refused without the extension, another session).

use crate::common::approval::{env_for, records};
use crate::common::*;
use magi_client::Backend;
use magi_client::Incoming;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    EmptyParams, Event, RunOutcome, SessionCompactParams, SessionCompactResult, SessionTitled,
    SessionUsageDescriptor, TurnCancelParams, UsageUpdated,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};

const WITH_USAGE: [&str; 5] = [
    "session.create",
    "turn.start",
    "turn.cancel",
    "shutdown",
    "session.usage",
];

async fn started(env: &TestEnv, names: &[&str]) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(names).await.unwrap().unwrap();
    backend
}

async fn compact(backend: &mut Backend, session: &str) -> Result<SessionCompactResult, ErrorCode> {
    let params = SessionCompactParams {
        session_id: session.to_owned(),
    };
    backend
        .call::<methods::SessionCompact>(&params)
        .await
        .unwrap()
}

fn updates(events: &[Event]) -> Vec<UsageUpdated> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::UsageUpdated(u) => Some(u.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn negotiated_it_is_advertised_last_and_each_request_is_told() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .tool_call("c1", "list", [r#"{"path":"."}"#])
            .usage(40, 6),
    );
    mock.enqueue(Reply::stream().text(["Done."]).usage(55, 3));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let result = backend.initialize(&WITH_USAGE).await.unwrap().unwrap();
    assert_eq!(
        result.capabilities.last().map(String::as_str),
        Some("session.usage")
    );
    let extensions = result.extensions.unwrap();
    assert_eq!(
        extensions.session_usage,
        Some(SessionUsageDescriptor::schema_1())
    );
    assert!(extensions.tool_cards.is_none() && extensions.approval_scopes.is_none());

    let session = new_session(&mut backend).await;
    let run_id = start_turn(&mut backend, &session, "look around").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let told = |input: u64, output: u64| UsageUpdated {
        session_id: session.clone(),
        run_id: run_id.clone(),
        input_tokens: Some(input),
        cached_input_tokens: None,
        output_tokens: Some(output),
        reasoning_tokens: None,
        context_window: Some(32_768),
        context_used: Some(input + output),
        cache_write_tokens: None,
    };
    assert_eq!(updates(&seen), [told(40, 6), told(55, 3)]);
    // Each update follows its request's response: the first comes before the call runs.
    let first_update = seen
        .iter()
        .position(|e| matches!(e, Event::UsageUpdated(_)))
        .unwrap();
    let first_activity = seen
        .iter()
        .position(|e| matches!(e, Event::Activity(_)))
        .unwrap();
    assert!(first_update < first_activity, "{seen:?}");
    // What was told is what was recorded.
    let recorded: Vec<_> = records(&env, &session)
        .into_iter()
        .filter(|r| r["kind"] == "usage")
        .map(|r| (r["input_tokens"].clone(), r["output_tokens"].clone()))
        .collect();
    assert_eq!(recorded, [(40.into(), 6.into()), (55.into(), 3.into())]);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_it_nothing_is_told_and_session_compact_is_refused() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hi."]).usage(5, 1));
    let env = env_for(&mock);
    // The client library refuses a `usage.updated` it did not negotiate, so a turn that
    // completes cleanly is one that sent none.
    let mut backend = started(&env, &WITH_USAGE[..4]).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "hello").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(updates(&seen).is_empty());
    assert_eq!(
        compact(&mut backend, &session).await,
        Err(ErrorCode::UnsupportedCapability)
    );
    assert_eq!(mock.requests().len(), 1);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn session_compact_summarises_an_idle_session_for_the_next_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["FIRST-ANSWER"]));
    mock.enqueue(Reply::stream().text(["SUMMARY-TEXT"]).usage(70, 9));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    let mut backend = started(&env, &WITH_USAGE).await;
    let session = new_session(&mut backend).await;
    // Nothing to compact yet.
    assert_eq!(
        compact(&mut backend, &session).await,
        Ok(SessionCompactResult {
            compacted: false,
            hook_errors: Vec::new()
        })
    );
    start_turn(&mut backend, &session, "first question").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(
        compact(&mut backend, &session).await,
        Ok(SessionCompactResult {
            compacted: true,
            hook_errors: Vec::new()
        })
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let compacting = requests[1].body.to_string();
    assert!(compacting.contains("Summarise the conversation so far"));
    assert!(compacting.contains("FIRST-ANSWER"));
    let log = records(&env, &session);
    let tail: Vec<&str> = log[log.len() - 2..]
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(tail, ["usage", "compaction"]);
    assert_eq!(log[log.len() - 2]["turn_id"], serde_json::Value::Null);
    assert_eq!(log[log.len() - 2]["input_tokens"], 70);
    // A summary alone is not compacted again.
    assert_eq!(
        compact(&mut backend, &session).await,
        Ok(SessionCompactResult {
            compacted: false,
            hook_errors: Vec::new()
        })
    );
    // The next turn starts from the summary.
    start_turn(&mut backend, &session, "second question").await;
    until_finished(&mut backend, &mut Vec::new()).await;
    let after = mock.requests()[2].body.to_string();
    assert!(after.contains("SUMMARY-TEXT") && !after.contains("FIRST-ANSWER"));
    // Another session than the attached one is stale.
    let other = "0190a000-0000-7000-8000-000000000000".to_owned();
    assert_eq!(
        compact(&mut backend, &other).await,
        Err(ErrorCode::StaleSession)
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn session_compact_is_busy_during_a_run() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["working"]).held());
    let env = env_for(&mock);
    let mut backend = started(&env, &WITH_USAGE).await;
    let session = new_session(&mut backend).await;
    let run_id = start_turn(&mut backend, &session, "go").await;
    assert_eq!(compact(&mut backend, &session).await, Err(ErrorCode::Busy));
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id,
    };
    backend
        .call::<methods::TurnCancel>(&cancel)
        .await
        .unwrap()
        .unwrap();
    mock.release();
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    // Once the run ended the session is idle again.
    mock.enqueue(Reply::stream().text(["SUMMARY-TEXT"]));
    assert!(compact(&mut backend, &session).await.is_ok());
    shutdown_clean(&mut backend).await;
}

fn titled_events(events: &[Event]) -> Vec<SessionTitled> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::SessionTitled(titled) => Some(titled.clone()),
            _ => None,
        })
        .collect()
}

/// The next `session.titled`, skipping other frames.
async fn next_titled(backend: &mut Backend) -> SessionTitled {
    loop {
        if let Incoming::Event {
            event: Event::SessionTitled(titled),
            ..
        } = next(backend).await
        {
            return titled;
        }
    }
}

#[tokio::test]
async fn a_title_back_before_the_loop_took_run_finished_is_still_told_after_it() {
    // The ordering point makes the run ask for its title before sending its terminal
    // event, and send that only once the protocol loop took the title: what a busy
    // machine brings about now and then (the title told first, the test below
    // waiting for it in vain).
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hi."]));
    mock.enqueue_title(Reply::stream().text(["Greeting the user"]));
    let env = env_for(&mock).var("MAGI_FAULT", "title_first:1");
    let mut backend = started(&env, &WITH_USAGE).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "hello").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(mock.title_requests().len(), 1, "asked before the run ended");
    assert_eq!(titled_events(&seen), [], "told before run.finished");
    assert_eq!(next_titled(&mut backend).await.title, "Greeting the user");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_title_recorded_after_the_turn_is_told_and_never_without_the_extension() {
    for negotiated in [true, false] {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text(["Hi."]));
        mock.enqueue_title(Reply::stream().text(["Greeting the user"]));
        let env = env_for(&mock);
        let names = if negotiated {
            &WITH_USAGE[..]
        } else {
            &WITH_USAGE[..4]
        };
        let mut backend = started(&env, names).await;
        let session = new_session(&mut backend).await;
        start_turn(&mut backend, &session, "hello").await;
        let mut seen = Vec::new();
        until_finished(&mut backend, &mut seen).await;
        assert_eq!(titled_events(&seen), [], "told before run.finished");
        if negotiated {
            // It follows `run.finished`, once the title the model gave is recorded.
            assert_eq!(
                next_titled(&mut backend).await,
                SessionTitled {
                    session_id: session.clone(),
                    title: "Greeting the user".into(),
                }
            );
        } else {
            // Once the title is recorded, whatever the backend sent before answering a
            // later request has arrived when the answer does: none of it is the event.
            let deadline = std::time::Instant::now() + WAIT;
            while !records(&env, &session).iter().any(|r| r["kind"] == "title") {
                assert!(std::time::Instant::now() < deadline, "no title recorded");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            // Bounded: a client that met a violation may answer nothing more.
            let answered =
                tokio::time::timeout(WAIT, backend.call::<methods::Status>(&EmptyParams {})).await;
            assert!(
                answered.is_ok_and(|answered| answered.is_ok()),
                "the backend answered after the title was recorded"
            );
            while let Some(incoming) = backend
                .next_incoming_within(std::time::Duration::ZERO)
                .await
            {
                assert!(
                    !matches!(
                        incoming,
                        Incoming::Event {
                            event: Event::SessionTitled(_),
                            ..
                        } | Incoming::Violation(_)
                    ),
                    "{incoming:?}"
                );
            }
        }
        // Without the extension the client library would have reported a violation
        // for any such event; the child ends cleanly, the title recorded either way.
        shutdown_clean(&mut backend).await;
        let titles: Vec<_> = records(&env, &session)
            .into_iter()
            .filter(|r| r["kind"] == "title")
            .map(|r| r["title"].clone())
            .collect();
        assert_eq!(titles, ["Greeting the user"], "negotiated: {negotiated}");
    }
}

#[tokio::test]
async fn cache_writes_are_told_only_with_usage_cache_writes_and_recorded_either_way() {
    for negotiated in [true, false] {
        let mock = MockServer::start().await;
        mock.enqueue(
            Reply::stream()
                .text(["Cached."])
                .usage(12_000, 4)
                .cached(9_000, 2_500),
        );
        let env = env_for_wire(Wire::Anthropic, &mock);
        let mut names = WITH_USAGE.to_vec();
        if negotiated {
            names.push("usage.cache_writes");
        }
        let mut backend = env.spawn();
        let result = backend.initialize(&names).await.unwrap().unwrap();
        let descriptor = result.extensions.unwrap().usage_cache_writes;
        assert_eq!(
            descriptor,
            negotiated.then(magi_protocol::messages::UsageCacheWritesDescriptor::schema_1)
        );
        assert_eq!(
            result.capabilities.last().map(String::as_str),
            Some(if negotiated {
                "usage.cache_writes"
            } else {
                "session.usage"
            })
        );
        let session = new_session(&mut backend).await;
        start_turn(&mut backend, &session, "hello").await;
        let mut seen = Vec::new();
        let finished = until_finished(&mut backend, &mut seen).await;
        assert_eq!(finished.outcome, RunOutcome::Completed);
        let told = updates(&seen);
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].input_tokens, Some(12_000));
        assert_eq!(told[0].cached_input_tokens, Some(9_000));
        // The field set is `session.usage`'s exactly unless the writes were asked for.
        assert_eq!(
            told[0].cache_write_tokens,
            negotiated.then_some(Some(2_500))
        );
        shutdown_clean(&mut backend).await;
        let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
        let usage: serde_json::Value = log
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .find(|record| record["kind"] == "usage")
            .unwrap();
        assert_eq!(usage["cache_write_tokens"], 2_500);
    }
}
