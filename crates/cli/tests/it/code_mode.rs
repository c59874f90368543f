//! `code_mode` through the real binary against the mock model: the model's script runs
//! and the model is given what it printed and returned; its card's execution facts
//! live and from `history.page`, and in the client fold of the reopened session; an
//! error names its line; the time limit, the memory limit and the output bound stop a
//! script, each named; `turn.cancel` interrupts
//! one at once; a huge result is cut and kept whole; a crash while a script runs settles
//! it `indeterminate` without running it again; `[tools] disabled` removes the tool.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use crate::common::approval::{env_for, records};
use crate::common::*;
use magi_client::Backend;
use magi_client::fold::{FoldInput, Item, Transcript};
use magi_protocol::cards::{Block, Card, CardOutcome, Changes, Origin, ToolKind};
use magi_protocol::messages::{Event, HistoryPageParams, RunOutcome, TurnCancelParams};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

const METHODS: [&str; 7] = [
    "session.create",
    "turn.start",
    "turn.cancel",
    "approval.answer",
    "history.page",
    "shutdown",
    "tool.cards",
];

/// A backend of `env`, initialized with what the Code Mode tests use.
pub(crate) async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(&METHODS).await.unwrap().unwrap();
    backend
}

/// A reply asking for one `code_mode` call of `code`.
pub(crate) fn script(id: &str, code: &str) -> Reply {
    Reply::stream().tool_call(id, "code_mode", [json!({ "code": code }).to_string()])
}

/// Runs one turn to its end; returns its events and how it ended.
async fn turn(backend: &mut Backend, session: &str) -> (Vec<Event>, RunOutcome, Option<String>) {
    start_turn(backend, session, "Work it out in a script.").await;
    let mut seen = Vec::new();
    let finished = until_finished(backend, &mut seen).await;
    (seen, finished.outcome, finished.revision)
}

/// The final live cards of a run, in order.
pub(crate) fn final_cards(seen: &[Event]) -> Vec<Card> {
    seen.iter()
        .filter_map(|e| match e {
            Event::ToolCard(e) if e.card.outcome.is_some() => Some(e.card.clone()),
            _ => None,
        })
        .collect()
}

/// A card's rows as (label, value).
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
        .unwrap_or_default()
}

fn row(card: &Card, label: &str) -> Option<String> {
    rows(card)
        .into_iter()
        .find(|(l, _)| l == label)
        .and_then(|(_, v)| v)
}

#[tokio::test]
async fn a_script_runs_and_the_model_gets_what_it_printed_and_returned() {
    let mock = MockServer::start().await;
    let code = "const words = ['alpha', 'beta', 'gamma'];\n\
                for (const w of words) console.log(w.toUpperCase());\n\
                const n = await Promise.resolve(words.length);\n\
                return { count: n, longest: words.reduce((a, b) => b.length > a.length ? b : a) };";
    mock.enqueue(script("s1", code));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (seen, outcome, revision) = turn(&mut backend, &session).await;
    assert_eq!(outcome, RunOutcome::Completed, "{seen:?}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(offered_tool_names(&requests[0].body).contains(&"code_mode".to_owned()));
    assert_eq!(
        tool_outputs(&requests[1].body),
        ["ALPHA\nBETA\nGAMMA\n\nReturned:\n{\"count\":3,\"longest\":\"alpha\"}"]
    );

    let live = final_cards(&seen);
    assert_eq!(live.len(), 1);
    let card = &live[0];
    assert_eq!(
        (card.tool_kind, card.outcome, card.changes),
        (
            ToolKind::CodeMode,
            Some(CardOutcome::Success),
            Changes::NotApplicable
        )
    );
    assert_eq!(card.metadata.tool_name.as_deref(), Some("code_mode"));
    let labels: Vec<String> = rows(card).into_iter().map(|(l, _)| l).collect();
    assert_eq!(
        labels,
        [
            "Nested calls started",
            "Nested calls completed",
            "Nested calls failed",
            "Wall time",
            "Output",
            "Stopped by",
            "Error line"
        ]
    );
    assert_eq!(
        row(card, "Nested calls started").as_deref(),
        Some("0 calls")
    );
    assert_eq!(row(card, "Output").as_deref(), Some("17 bytes"));
    assert_eq!(row(card, "Stopped by").as_deref(), Some("no limit"));
    assert_eq!(row(card, "Error line"), None);
    let saved = saved_cards(&mut backend, &session, &revision.unwrap()).await;
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].origin, Origin::Saved);
    assert_eq!(saved[0].blocks, card.blocks);
    shutdown_clean(&mut backend).await;

    let result = records(&env, &session)
        .into_iter()
        .find(|r| r["kind"] == "tool_result")
        .unwrap();
    assert_eq!(result["outcome"], "completed");
    assert_eq!(result["facts"]["tool"], "code_mode");
    assert_eq!(result["facts"]["output_bytes"], 17);

    // A new client reopens the saved session: its fold shows the saved card.
    let folded = reopened_cards(&env, &session).await;
    assert_eq!(folded.len(), 1, "{folded:?}");
    assert_eq!(folded[0].tool_kind, ToolKind::CodeMode);
    assert_eq!(folded[0].blocks, card.blocks);
}

/// The cards a new client's fold shows for the saved session `session`, reopened with
/// `session.open` and its first history page.
pub(crate) async fn reopened_cards(env: &TestEnv, session: &str) -> Vec<Card> {
    let mut backend = ready(env).await;
    let attached = open_session(&mut backend, session).await.unwrap();
    let params = HistoryPageParams {
        session_id: session.to_owned(),
        revision: attached.revision.clone(),
        cursor: None,
    };
    let page = backend
        .call::<methods::HistoryPage>(&params)
        .await
        .unwrap()
        .unwrap();
    shutdown_clean(&mut backend).await;
    let mut transcript = Transcript::default();
    transcript.apply_all([
        FoldInput::SessionAttached(attached),
        FoldInput::HistoryPage(page),
    ]);
    transcript
        .items()
        .iter()
        .filter_map(|item| match item {
            Item::History(message) => message.card.as_deref().cloned(),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_uncaught_error_fails_the_call_with_its_line() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "console.log('start');\nconst x = null;\nx.field;",
    ));
    mock.enqueue(script("s2", "let ok = 1;\nlet = = 2;"));
    mock.enqueue(Reply::stream().text(["I see."]));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (seen, outcome, _) = turn(&mut backend, &session).await;
    assert_eq!(outcome, RunOutcome::Completed, "{seen:?}");
    let requests = mock.requests();
    let told = tool_outputs(&requests[1].body);
    assert!(
        told[0].starts_with("The script failed at line 3: TypeError"),
        "{told:?}"
    );
    assert!(told[0].ends_with("What it printed before it stopped:\nstart"));
    let told = tool_outputs(&requests[2].body);
    assert!(
        told[1].starts_with("The script failed at line 2: SyntaxError"),
        "{told:?}"
    );
    let cards = final_cards(&seen);
    assert_eq!(cards[0].outcome, Some(CardOutcome::Failure));
    assert_eq!(row(&cards[0], "Error line").as_deref(), Some("line 3"));
    assert_eq!(row(&cards[1], "Error line").as_deref(), Some("line 2"));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_time_limit_stops_a_busy_script() {
    let mock = MockServer::start().await;
    mock.enqueue(script("s1", "console.log('spinning');\nwhile (true) {}"));
    mock.enqueue(Reply::stream().text(["Too slow."]));
    let env = env_for(&mock);
    env.write_settings("[code_mode]\ntimeout_secs = 1\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (seen, outcome, _) = turn(&mut backend, &session).await;
    assert_eq!(outcome, RunOutcome::Completed, "{seen:?}");
    let told = tool_outputs(&mock.requests()[1].body);
    assert!(
        told[0].starts_with(
            "The script was stopped: it ran past the time limit of 1 s ([code_mode] \
             timeout_secs), after 0 tool calls (0 completed, 0 failed) and 9 bytes printed."
        ),
        "{told:?}"
    );
    let card = &final_cards(&seen)[0];
    assert_eq!(card.outcome, Some(CardOutcome::Failure));
    assert_eq!(row(card, "Stopped by").as_deref(), Some("time limit"));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn turn_cancel_interrupts_a_running_script() {
    let mock = MockServer::start().await;
    mock.enqueue(script("s1", "while (true) {}"));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let run = start_turn(&mut backend, &session, "Spin.").await;
    // The script runs once its claim is durable: wait for the claim, bounded.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let claimed = std::fs::read_to_string(log_path(&env, &session))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("\"tool_call_state\"") && l.contains("\"running\""));
        if claimed {
            break;
        }
        assert!(Instant::now() < deadline, "the call was never claimed");
        tokio::time::sleep(Duration::from_millis(20)).await;
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
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    shutdown_clean(&mut backend).await;
    let result = records(&env, &session)
        .into_iter()
        .find(|r| r["kind"] == "tool_result")
        .unwrap();
    // Cancelled, not stopped by the 30-second time limit.
    assert_eq!(result["outcome"], "cancelled", "{result}");
    assert!(result["facts"]["limit"].is_null(), "{result}");
}

#[tokio::test]
async fn disabled_it_is_not_offered() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Fine."]));
    let env = env_for(&mock);
    env.write_settings("[tools]\ndisabled = [\"code_mode\"]\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (_, outcome, _) = turn(&mut backend, &session).await;
    assert_eq!(outcome, RunOutcome::Completed);
    let offered = offered_tool_names(&mock.requests()[0].body);
    assert!(offered.contains(&"read".to_owned()));
    assert!(!offered.contains(&"code_mode".to_owned()));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_huge_result_is_cut_for_the_model_and_kept_whole() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "for (let i = 0; i < 2000; i++) console.log('line ' + i + ' ' + 'x'.repeat(40));",
    ));
    mock.enqueue(Reply::stream().text(["Long."]));
    let env = env_for(&mock);
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (seen, outcome, _) = turn(&mut backend, &session).await;
    assert_eq!(outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let told = tool_outputs(&mock.requests()[1].body).remove(0);
    let marker = "\n[result cut: the first 16384 of ";
    let at = told.find(marker).expect("the cut is said");
    assert!(told.starts_with("line 0 x"));
    assert_eq!(at, 16_384);
    let kept = told
        .split("the whole result is in ")
        .nth(1)
        .unwrap()
        .trim_end_matches(']');
    let whole = std::fs::read_to_string(kept).unwrap();
    assert_eq!(whole.lines().count(), 2000);
    assert!(whole.ends_with(&format!("line 1999 {}", "x".repeat(40))));
    assert!(told.contains(&format!(" of {} bytes shown", whole.len())));
    let card = &final_cards(&seen)[0];
    assert_eq!(
        row(card, "Output"),
        Some(format!("{} bytes", whole.len() + 1))
    );
}

#[tokio::test]
async fn a_crash_while_a_script_runs_settles_it_indeterminate_and_runs_nothing_again() {
    let mock = MockServer::start().await;
    mock.enqueue(script("s1", "console.log('ran');\nreturn 1;"));
    let env = env_for(&mock).var("MAGI_FAULT", "after_claim:1");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Script it.").await;
    while backend.next_incoming_within(WAIT).await.is_some() {}
    let status = exit_status(&mut backend).await;
    assert_eq!(status.signal(), Some(9), "killed at its crash point");
    let crashed = records(&env, &session);
    assert!(crashed.iter().any(|r| r["kind"] == "tool_call_state"));
    assert!(!crashed.iter().any(|r| r["kind"] == "tool_result"));

    mock.enqueue(Reply::stream().text(["Noted."]));
    let env = env.without("MAGI_FAULT");
    let mut backend = ready(&env).await;
    open_session(&mut backend, &session).await.unwrap();
    let (_, outcome, _) = turn(&mut backend, &session).await;
    assert_eq!(outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    let results: Vec<_> = records(&env, &session)
        .into_iter()
        .filter(|r| r["kind"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["call_id"], "s1");
    assert_eq!(results[0]["outcome"], "indeterminate");
    let told = tool_outputs(&mock.requests().last().unwrap().body);
    assert!(told[0].contains("its outcome is unknown"), "{told:?}");
}

#[tokio::test]
async fn the_memory_limit_and_the_output_bound_stop_a_script() {
    let mock = MockServer::start().await;
    mock.enqueue(script(
        "s1",
        "const kept = [];\nwhile (true) kept.push('x'.repeat(4096) + kept.length);",
    ));
    mock.enqueue(script(
        "s2",
        "const line = 'y'.repeat(1023);\nwhile (true) console.log(line);",
    ));
    mock.enqueue(Reply::stream().text(["Stopped twice."]));
    let env = env_for(&mock);
    env.write_settings("[code_mode]\nmemory_mib = 8\n");
    let mut backend = ready(&env).await;
    let session = new_session(&mut backend).await;
    let (seen, outcome, _) = turn(&mut backend, &session).await;
    assert_eq!(outcome, RunOutcome::Completed, "{seen:?}");
    shutdown_clean(&mut backend).await;
    let told = tool_outputs(&mock.requests()[2].body);
    assert!(
        told[0].starts_with(
            "The script was stopped: it ran out of its 8 MiB of memory ([code_mode] memory_mib)"
        ),
        "{told:?}"
    );
    assert!(
        told[1].starts_with(
            "The script was stopped: it printed more than the 1048576-byte output bound, \
             after 0 tool calls (0 completed, 0 failed) and 1048576 bytes printed."
        ),
        "{:?}",
        &told[1][..200]
    );
    let cards = final_cards(&seen);
    assert_eq!(
        row(&cards[0], "Stopped by").as_deref(),
        Some("memory limit")
    );
    assert_eq!(
        row(&cards[1], "Stopped by").as_deref(),
        Some("output limit")
    );
    assert_eq!(row(&cards[1], "Output").as_deref(), Some("1048576 bytes"));
}
