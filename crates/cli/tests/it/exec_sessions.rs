//! `magi-code exec --resume ID` and `--continue`: the conversation carries on, and the
//! model is sent the earlier messages.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use serde_json::json;

use crate::common::*;
use crate::exec::{exec, session_of, user_messages};
use magi_testkit::{MockServer, Reply};

/// The texts of a Chat Completions request's messages, role by role, without the
/// turns' context notes.
fn conversation(body: &serde_json::Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .filter(|(_, text)| !is_turn_context(text))
        .collect()
}

#[tokio::test]
async fn resume_and_continue_send_the_earlier_messages() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    mock.enqueue(Reply::stream().text(["Noted: kiwi."]));
    let first = exec(&env, &mock, &["Remember the word kiwi."]).await;
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let session = session_of(&first);

    // Another session in between, so "newest" is not the only one.
    mock.enqueue(Reply::stream().text(["Other."]));
    let other = exec(&env, &mock, &["Something else."]).await;
    assert_ne!(session_of(&other), session);

    mock.enqueue(Reply::stream().text(["Kiwi."]));
    let resumed = exec(&env, &mock, &["--resume", &session, "Which word?"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{resumed:?}");
    assert_eq!(session_of(&resumed), session);
    assert_eq!(String::from_utf8(resumed.stdout).unwrap(), "Kiwi.\n");
    let sent = &mock.requests()[2].body;
    let role = |r: &str, t: &str| (r.to_owned(), t.to_owned());
    assert_eq!(
        conversation(sent),
        [
            role("user", "Remember the word kiwi."),
            role("assistant", "Noted: kiwi."),
            role("user", "Which word?"),
        ]
    );

    // The resumed session is now the newest: --continue carries it on again.
    mock.enqueue(Reply::stream().text(["Still kiwi."]));
    let continued = exec(&env, &mock, &["--continue", "And now?"]).await;
    assert_eq!(continued.status.code(), Some(0), "{continued:?}");
    assert_eq!(session_of(&continued), session);
    assert_eq!(
        user_messages(&mock.requests()[3].body),
        ["Remember the word kiwi.", "Which word?", "And now?"]
    );
}

#[tokio::test]
async fn a_session_that_cannot_be_resumed_is_named() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let missing = exec(&env, &mock, &["--resume", "no-such-session", "Hi"]).await;
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    let stderr = String::from_utf8(missing.stderr).unwrap();
    assert!(
        stderr.contains("there is no session no-such-session in this directory"),
        "{stderr}"
    );
    let nothing = exec(&env, &mock, &["--continue", "Hi"]).await;
    assert_eq!(nothing.status.code(), Some(1), "{nothing:?}");
    let stderr = String::from_utf8(nothing.stderr).unwrap();
    assert!(
        stderr.contains("there is no session in this directory to continue"),
        "{stderr}"
    );
    let both = exec(&env, &mock, &["--continue", "--resume", "x", "Hi"]).await;
    assert_eq!(both.status.code(), Some(2), "{both:?}");
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn continue_finds_the_newest_of_more_sessions_than_session_list_holds() {
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    // 300 sessions, more than session.list's 256; the newest sits in the middle of the
    // ID order, so only the times can find it.
    for n in 0..300 {
        let id = format!("0190a1b2-c3d4-7e5f-8a9b-{n:012}");
        let (ts, text) = if n == 150 {
            ("2026-11-02T10:00:00.000Z", "The newest one.".to_owned())
        } else {
            ("2026-11-01T10:00:00.000Z", format!("Session {n}."))
        };
        let log = [
            record_at(&id, ts, "session_meta", json!({"cwd": cwd})),
            record_at(&id, ts, "turn_started", json!({"turn_id": "t"})),
            record_at(
                &id,
                ts,
                "user_input",
                json!({"turn_id": "t", "message_id": "u", "text": text}),
            ),
            record_at(
                &id,
                ts,
                "turn_finished",
                json!({"turn_id": "t", "outcome": "completed"}),
            ),
        ]
        .concat();
        write_log(&env, &id, &log);
    }
    mock.enqueue(Reply::stream().text(["Found it."]));
    let output = exec(&env, &mock, &["--continue", "Which one is this?"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(session_of(&output), "0190a1b2-c3d4-7e5f-8a9b-000000000150");
    assert_eq!(
        user_messages(&mock.requests()[0].body),
        ["The newest one.", "Which one is this?"]
    );
}
