//! Session titles through the real binary against the mock model: asked for after the
//! first turn's terminal event, recorded in the log, listed by `session.list`, asked
//! for once while under way; a failed request leaves the session untitled, listing asks
//! for nothing, `[sessions] titles = "off"` turns them off, and `exec` asks beside its
//! turn where the provider serves requests side by side (none on a local server).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::Backend;
use magi_protocol::messages::{RunOutcome, SessionListParams, SessionListResult};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply, TITLE_PROMPT_START};
use serde_json::{Value, json};

async fn ready(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend
        .initialize(&[
            "session.create",
            "session.list",
            "session.open",
            "turn.start",
            "history.page",
            "shutdown",
        ])
        .await
        .unwrap()
        .unwrap();
    backend
}

/// One completed turn in a new session; returns the session ID.
async fn one_turn(backend: &mut Backend, prompt: &str) -> String {
    let session = session_with_turn(backend, prompt).await;
    let finished = until_finished(backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    session
}

/// The `title` records of a session's log.
fn titles_in_log(env: &TestEnv, session: &str) -> Vec<String> {
    std::fs::read_to_string(log_path(env, session))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["kind"] == "title")
        .map(|record| record["title"].as_str().unwrap().to_owned())
        .collect()
}

/// The title `session.list` shows for `session`, from a fresh child.
async fn listed_title(env: &TestEnv, session: &str) -> Option<String> {
    let mut backend = ready(env).await;
    let listed: SessionListResult = backend
        .call::<methods::SessionList>(&SessionListParams::default())
        .await
        .unwrap()
        .unwrap();
    shutdown_clean(&mut backend).await;
    let entry = listed.sessions.iter().find(|s| s.session_id == session);
    entry.expect("the session is listed").title.clone()
}

/// The text of every message of a recorded request body, in any wire format.
fn texts(body: &Value) -> String {
    body.to_string()
}

#[tokio::test]
async fn a_title_is_recorded_after_the_first_turn_without_holding_it_back() {
    for wire in [Wire::Responses, Wire::Chat, Wire::Anthropic] {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text(["The parser now accepts tabs."]));
        // The title's answer is held until released: the turn must end without it.
        mock.enqueue_title(Reply::stream().text(["\"Fix the ", "parser\""]).held());
        let env = env_for_wire(wire, &mock);
        let mut backend = ready(&env).await;
        let session = one_turn(&mut backend, "make the parser accept tabs").await;
        // `run.finished` arrived while the title's answer is still held back.
        mock.release();
        // The backend owns the title until cleanup: after shutdown it is on disk.
        shutdown_clean(&mut backend).await;
        assert_eq!(
            titles_in_log(&env, &session),
            ["Fix the parser"],
            "{wire:?}"
        );
        assert_eq!(
            listed_title(&env, &session).await.as_deref(),
            Some("Fix the parser")
        );
        // One turn request, one title request: tool-less, with the prompt and reply.
        assert_eq!(mock.requests().len(), 1, "{wire:?}");
        let titles = mock.title_requests();
        assert_eq!(titles.len(), 1, "{wire:?}");
        let body = &titles[0].body;
        assert!(
            body.get("tools")
                .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
            "{wire:?}: {body}"
        );
        let text = texts(body);
        assert!(text.contains(TITLE_PROMPT_START), "{wire:?}");
        assert!(text.contains("make the parser accept tabs"), "{wire:?}");
        assert!(text.contains("The parser now accepts tabs."), "{wire:?}");
    }
}

#[tokio::test]
async fn a_turn_ending_while_the_first_title_is_asked_for_asks_for_none() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["first"]));
    mock.enqueue(Reply::stream().text(["second"]));
    // The first title's answer is held until both turns ended.
    mock.enqueue_title(Reply::stream().text(["First title"]).held());
    mock.enqueue_title(Reply::stream().text(["Second title"]));
    let env = env_for_wire(Wire::Chat, &mock);
    let mut backend = ready(&env).await;
    let session = one_turn(&mut backend, "one").await;
    start_turn(&mut backend, &session, "two").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    mock.release();
    shutdown_clean(&mut backend).await;
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(mock.title_requests().len(), 1, "one title request");
    assert_eq!(titles_in_log(&env, &session), ["First title"]);
}

#[tokio::test]
async fn a_titled_session_is_not_titled_again() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["first"]));
    mock.enqueue(Reply::stream().text(["second"]));
    mock.enqueue_title(Reply::stream().text(["First title"]));
    let env = env_for_wire(Wire::Chat, &mock);
    let mut backend = ready(&env).await;
    let session = one_turn(&mut backend, "one").await;
    shutdown_clean(&mut backend).await;
    assert_eq!(titles_in_log(&env, &session), ["First title"]);
    let mut backend = env.spawn();
    backend
        .initialize(&["session.open", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    open_session(&mut backend, &session).await.unwrap();
    start_turn(&mut backend, &session, "two").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    assert_eq!(mock.title_requests().len(), 1);
    assert_eq!(titles_in_log(&env, &session), ["First title"]);
}

#[tokio::test]
async fn a_failed_title_request_leaves_the_session_untitled() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["done"]));
    mock.enqueue_title(Reply::error(500, r#"{"error":{"message":"down"}}"#));
    let env = env_for_wire(Wire::Chat, &mock);
    let mut backend = ready(&env).await;
    let session = one_turn(&mut backend, "do it").await;
    shutdown_clean(&mut backend).await;
    assert!(!mock.title_requests().is_empty());
    assert_eq!(titles_in_log(&env, &session), Vec::<String>::new());
    assert_eq!(listed_title(&env, &session).await, None);
}

#[tokio::test]
async fn an_unusable_title_answer_leaves_the_session_untitled() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["done"]));
    // A secret-looking title would not be listed, so it is not recorded.
    mock.enqueue_title(Reply::stream().text(["use sk-abc123def456"]));
    let env = env_for_wire(Wire::Chat, &mock);
    let mut backend = ready(&env).await;
    let session = one_turn(&mut backend, "do it").await;
    shutdown_clean(&mut backend).await;
    assert_eq!(mock.title_requests().len(), 1);
    assert_eq!(titles_in_log(&env, &session), Vec::<String>::new());
}

#[tokio::test]
async fn listing_asks_the_model_for_nothing_and_writes_nothing() {
    let mock = MockServer::start().await;
    let env = env_for_wire(Wire::Chat, &mock);
    let id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c";
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    let text = [
        record(id, "session_meta", json!({"cwd": cwd})),
        record(id, "turn_started", json!({"turn_id": "t1"})),
        record(
            id,
            "user_input",
            json!({"turn_id": "t1", "message_id": "u1", "text": "an untitled request"}),
        ),
    ]
    .concat();
    let path = write_log(&env, id, &text);
    assert_eq!(listed_title(&env, id).await, None);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert!(mock.requests().is_empty());
    assert!(mock.title_requests().is_empty());
}

#[tokio::test]
async fn titles_off_asks_for_none() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["done"]));
    mock.enqueue_title(Reply::stream().text(["Unused"]));
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[sessions]\ntitles = \"off\"\n");
    let mut backend = ready(&env).await;
    let session = one_turn(&mut backend, "do it").await;
    shutdown_clean(&mut backend).await;
    assert!(mock.title_requests().is_empty());
    assert_eq!(titles_in_log(&env, &session), Vec::<String>::new());
}

/// Waits (bounded) until `mock` has received its first title request.
async fn first_title_request(mock: &MockServer) {
    let waited = tokio::time::timeout(WAIT, async {
        while mock.title_requests().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    waited.await.expect("a title request within the wait");
}

#[tokio::test]
async fn exec_asks_beside_the_turn_where_requests_run_side_by_side() {
    let mock = MockServer::start().await;
    // The turn's reply waits until the title request has arrived: the two are under
    // way at once, and the title is answered before the turn ends.
    mock.enqueue(Reply::stream().text(["The notes are tidy."]).held());
    mock.enqueue_title(Reply::stream().text(["Tidy the notes"]));
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[providers.openai-chat]\nconcurrent_requests = true\n");
    let release = async {
        first_title_request(&mock).await;
        mock.release();
    };
    let (output, ()) = tokio::join!(crate::exec::exec(&env, &mock, &["tidy the notes"]), release);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let session = crate::exec::session_of(&output);
    assert_eq!(titles_in_log(&env, &session), ["Tidy the notes"]);
    // One title request, from the prompt alone: there is no reply yet.
    let titles = mock.title_requests();
    assert_eq!(titles.len(), 1);
    let text = texts(&titles[0].body);
    assert!(text.contains("tidy the notes"), "{text}");
    assert!(!text.contains("Reply:"), "{text}");
    assert!(!text.contains("The notes are tidy."), "{text}");
    // Listed with it.
    assert_eq!(
        listed_title(&env, &session).await.as_deref(),
        Some("Tidy the notes")
    );
}

#[tokio::test]
async fn exec_never_waits_for_a_title_still_asked_for_when_the_turn_ends() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["done"]));
    // Held past the end of exec: a title not answered by the turn's end is dropped.
    mock.enqueue_title(Reply::stream().text(["Too late"]).held());
    let env = env_for_wire(Wire::Chat, &mock);
    env.write_settings("[providers.openai-chat]\nconcurrent_requests = true\n");
    let output = crate::exec::exec(&env, &mock, &["do it"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let session = crate::exec::session_of(&output);
    assert_eq!(mock.title_requests().len(), 1);
    assert_eq!(titles_in_log(&env, &session), Vec::<String>::new());
    // The session is asked again after its next turn in another front end.
    mock.enqueue(Reply::stream().text(["again"]));
    mock.enqueue_title(Reply::stream().text(["In time"]));
    let mut backend = ready(&env).await;
    open_session(&mut backend, &session).await.unwrap();
    start_turn(&mut backend, &session, "and again").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    assert_eq!(titles_in_log(&env, &session), ["In time"]);
}

/// On a local server (loopback, where one request may hold the other back) `exec`
/// asks for no title unless the provider's settings say it serves side by side.
#[tokio::test]
async fn exec_on_a_local_server_asks_for_none_and_does_not_wait_for_one_at_exit() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["done"]));
    // Held: an `exec` that asked would wait at exit for its cleanup bound.
    mock.enqueue_title(Reply::stream().text(["Unused"]).held());
    let env = env_for_wire(Wire::Chat, &mock);
    let output = crate::exec::exec(&env, &mock, &["do it"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let session = crate::exec::session_of(&output);
    assert_eq!(mock.requests().len(), 1);
    assert!(mock.title_requests().is_empty());
    assert_eq!(titles_in_log(&env, &session), Vec::<String>::new());
    // The session gets its title after a turn in another front end.
    mock.enqueue(Reply::stream().text(["again"]));
    mock.release();
    let mut backend = ready(&env).await;
    open_session(&mut backend, &session).await.unwrap();
    start_turn(&mut backend, &session, "and again").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    shutdown_clean(&mut backend).await;
    assert_eq!(mock.title_requests().len(), 1);
    assert_eq!(titles_in_log(&env, &session), ["Unused"]);
}
