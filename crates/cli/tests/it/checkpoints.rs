//! `checkpoints` through the real binary: each turn's start is recorded in a store of
//! the backend's own; a restore previews, then puts back an edit and a file a command
//! deleted, and the model is told at its next request; a file the person changed is
//! never overwritten unasked; `session.fork` leaves the original intact; without a
//! `git` program, and with a damaged store, the person is told; the extension's
//! errors; a confined command cannot write the store. The settings and a workspace
//! that cannot be written: `checkpoint_settings`.

use crate::common::approval::{bash, calls, env_for, records};
use crate::common::*;
use magi_client::Backend;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    CheckpointAction, CheckpointListParams, CheckpointListResult, CheckpointRestoreParams,
    CheckpointRestoreResult, CheckpointStore, CheckpointsDescriptor, Event, RunOutcome,
    SessionForkParams,
};
use magi_protocol::methods;
use magi_protocol::names::CHECKPOINTS;
use magi_testkit::{MockServer, Reply};
use serde_json::json;

/// Writes `text` to the workspace's file `name`.
pub(crate) fn put(env: &TestEnv, name: &str, text: &str) {
    std::fs::write(env.cwd().join(name), text).unwrap();
}

/// The capabilities the tests need.
const CAPABILITIES: &[&str] = &[
    "session.create",
    "session.open",
    "history.page",
    "turn.start",
    "shutdown",
    CHECKPOINTS,
];

/// An environment against `mock` where every call runs without asking.
pub(crate) fn env_allowing(mock: &MockServer) -> TestEnv {
    // The settings' mode holds only without the suite's `ask` in the environment.
    let env = env_for(mock).without(MODE_ENV);
    env.write_settings("[permissions]\nmode = \"allow-all\"\n");
    env
}

pub(crate) async fn initialized(env: &TestEnv) -> Backend {
    let mut backend = env.spawn();
    backend.initialize(CAPABILITIES).await.unwrap().unwrap();
    backend
}

/// Runs one turn with `prompt`; its events.
pub(crate) async fn turn(backend: &mut Backend, session: &str, prompt: &str) -> Vec<Event> {
    start_turn(backend, session, prompt).await;
    let mut events = Vec::new();
    let finished = until_finished(backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    events
}

/// A reply writing `content` to `path`, then one closing the turn.
pub(crate) fn enqueue_write(mock: &MockServer, id: &str, path: &str, content: &str) {
    let arguments = json!({ "path": path, "content": content }).to_string();
    mock.enqueue(calls("write", &[(id.to_owned(), arguments)]));
    mock.enqueue(Reply::stream().text(["Done."]));
}

pub(crate) async fn list(backend: &mut Backend, session: &str) -> CheckpointListResult {
    let params = CheckpointListParams {
        session_id: session.to_owned(),
    };
    backend
        .call::<methods::CheckpointList>(&params)
        .await
        .unwrap()
        .unwrap()
}

pub(crate) async fn restore(
    backend: &mut Backend,
    session: &str,
    checkpoint: &str,
    apply: bool,
    overwrite_changed: bool,
) -> Result<CheckpointRestoreResult, ErrorCode> {
    let params = CheckpointRestoreParams {
        session_id: session.to_owned(),
        checkpoint_id: checkpoint.to_owned(),
        apply,
        overwrite_changed,
    };
    backend
        .call::<methods::CheckpointRestore>(&params)
        .await
        .unwrap()
}

pub(crate) fn diagnostics(events: &[Event], code: &str) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Diagnostic(d) if d.code == code => Some(d.summary.clone()),
            _ => None,
        })
        .collect()
}

/// The user messages of a Chat Completions request body.
fn user_texts(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn an_edit_and_a_file_a_command_deleted_are_put_back_after_a_preview() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    put(&env, "notes.txt", "original\n");
    put(&env, "keep.txt", "kept\n");
    let mut backend = env.spawn();
    let result = backend.initialize(CAPABILITIES).await.unwrap().unwrap();
    // Advertised last, with its descriptor.
    assert_eq!(
        result.capabilities.last().map(String::as_str),
        Some(CHECKPOINTS)
    );
    let descriptor = result.extensions.and_then(|e| e.checkpoints);
    assert_eq!(descriptor, Some(CheckpointsDescriptor::schema_1()));
    let session = new_session(&mut backend).await;

    // Turn 1 edits a file and adds one.
    let arguments = json!({ "path": "notes.txt", "content": "edited\n" }).to_string();
    let added = json!({ "path": "new.txt", "content": "new\n" }).to_string();
    mock.enqueue(calls(
        "write",
        &[("w1".to_owned(), arguments), ("w2".to_owned(), added)],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let events = turn(&mut backend, &session, "Edit the notes").await;
    assert!(diagnostics(&events, "checkpoint_not_recorded").is_empty());
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("notes.txt")).unwrap(),
        "edited\n"
    );
    let listed = list(&mut backend, &session).await;
    assert_eq!(listed.store, CheckpointStore::Ready);
    assert_eq!(listed.checkpoints.len(), 1);
    let first = listed.checkpoints[0].clone();
    assert_eq!((first.turn, first.prompt.as_str()), (1, "Edit the notes"));
    assert!(first.available);

    // The preview changes nothing and says what a restore would do.
    let preview = restore(&mut backend, &session, &first.checkpoint_id, false, false)
        .await
        .unwrap();
    assert!(!preview.applied);
    let shown: Vec<(&str, CheckpointAction, bool)> = preview
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.action, c.changed_outside))
        .collect();
    assert_eq!(
        shown,
        [
            ("new.txt", CheckpointAction::Delete, false),
            ("notes.txt", CheckpointAction::Write, false)
        ]
    );
    assert_eq!((preview.more, preview.changed_outside), (0, 0));
    assert!(env.cwd().join("new.txt").exists());

    // Applied, the files are as they were; the log says so.
    let applied = restore(&mut backend, &session, &first.checkpoint_id, true, false)
        .await
        .unwrap();
    assert!(applied.applied);
    assert_eq!(applied.changes, preview.changes);
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("notes.txt")).unwrap(),
        "original\n"
    );
    assert!(!env.cwd().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("keep.txt")).unwrap(),
        "kept\n"
    );
    let logged = records(&env, &session);
    let note = logged
        .iter()
        .find(|r| r["kind"] == "checkpoint_restored")
        .expect("a checkpoint_restored record");
    assert_eq!(note["checkpoint_id"], first.checkpoint_id.as_str());
    assert_eq!(note["paths"], json!(["new.txt", "notes.txt"]));

    // Turn 2 deletes a file with a command; undoing it brings the file back.
    mock.enqueue(calls("bash", &[bash("b1", "rm keep.txt")]));
    mock.enqueue(Reply::stream().text(["Removed."]));
    turn(&mut backend, &session, "Remove keep.txt").await;
    assert!(!env.cwd().join("keep.txt").exists());
    let second = list(&mut backend, &session).await.checkpoints[1].clone();
    let preview = restore(&mut backend, &session, &second.checkpoint_id, false, false)
        .await
        .unwrap();
    assert_eq!(preview.changes.len(), 1);
    assert_eq!(preview.changes[0].path, "keep.txt");
    assert_eq!(preview.changes[0].action, CheckpointAction::Create);
    restore(&mut backend, &session, &second.checkpoint_id, true, false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("keep.txt")).unwrap(),
        "kept\n"
    );

    // The model's next request tells it which files were put back.
    mock.enqueue(Reply::stream().text(["Noted."]));
    turn(&mut backend, &session, "What changed?").await;
    let body = mock.requests().last().unwrap().body.clone();
    let body = &body;
    let notes: Vec<String> = user_texts(body)
        .into_iter()
        .filter(|t| t.starts_with("<checkpoint_restored>"))
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("- notes.txt (restored)"), "{}", notes[0]);
    assert!(notes[0].contains("- new.txt (removed)"), "{}", notes[0]);
    assert!(notes[1].contains("- keep.txt (recreated)"), "{}", notes[1]);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_file_the_person_changed_since_is_not_overwritten_unasked() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    put(&env, "a.txt", "a before\n");
    put(&env, "b.txt", "b before\n");
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    enqueue_write(&mock, "w1", "a.txt", "a by the turn\n");
    turn(&mut backend, &session, "Change a").await;
    // The person changes b between turns.
    put(&env, "b.txt", "b by the person\n");
    let checkpoint = list(&mut backend, &session).await.checkpoints[0]
        .checkpoint_id
        .clone();

    let preview = restore(&mut backend, &session, &checkpoint, false, false)
        .await
        .unwrap();
    let shown: Vec<(&str, bool)> = preview
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.changed_outside))
        .collect();
    // The person's file first.
    assert_eq!(shown, [("b.txt", true), ("a.txt", false)]);
    assert_eq!(preview.changed_outside, 1);

    // Not asked to overwrite it: refused, nothing changed, nothing recorded.
    let refused = restore(&mut backend, &session, &checkpoint, true, false).await;
    assert_eq!(refused, Err(ErrorCode::CheckpointConflict));
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "a by the turn\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("b.txt")).unwrap(),
        "b by the person\n"
    );
    assert!(
        !records(&env, &session)
            .iter()
            .any(|r| r["kind"] == "checkpoint_restored")
    );

    // Asked: both are put back.
    let applied = restore(&mut backend, &session, &checkpoint, true, true)
        .await
        .unwrap();
    assert_eq!(applied.changed_outside, 1);
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "a before\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("b.txt")).unwrap(),
        "b before\n"
    );
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_fork_before_a_turn_is_a_new_session_and_the_original_stays_intact() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    mock.enqueue(Reply::stream().text(["One."]));
    turn(&mut backend, &session, "first").await;
    mock.enqueue(Reply::stream().text(["Two."]));
    turn(&mut backend, &session, "second").await;
    let original = std::fs::read(log_path(&env, &session)).unwrap();
    let second = list(&mut backend, &session).await.checkpoints[1]
        .checkpoint_id
        .clone();

    let params = SessionForkParams {
        session_id: session.clone(),
        checkpoint_id: second.clone(),
    };
    let forked = backend
        .call::<methods::SessionFork>(&params)
        .await
        .unwrap()
        .unwrap();
    assert_ne!(forked.session_id, session);
    assert_eq!(forked.forked_from, session);
    assert_eq!(forked.checkpoint_id, second);
    assert_eq!(std::fs::read(log_path(&env, &session)).unwrap(), original);

    // The fork holds the first turn only, and goes on from there.
    let kinds: Vec<String> = records(&env, &forked.session_id)
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds[..2], ["session_meta", "session_forked"]);
    assert_eq!(kinds.iter().filter(|k| *k == "turn_started").count(), 1);
    open_session(&mut backend, &forked.session_id)
        .await
        .unwrap();
    let turns = list(&mut backend, &forked.session_id).await.checkpoints;
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].prompt, "first");
    mock.enqueue(Reply::stream().text(["Three."]));
    turn(&mut backend, &forked.session_id, "third").await;
    let body = mock.requests().last().unwrap().body.clone();
    let body = &body;
    let said: Vec<String> = user_texts(body)
        .into_iter()
        .filter(|t| !is_turn_context(t))
        .collect();
    assert_eq!(said, ["first", "third"]);
    assert_eq!(std::fs::read(log_path(&env, &session)).unwrap(), original);

    // A turn the session does not have.
    let params = SessionForkParams {
        session_id: forked.session_id.clone(),
        checkpoint_id: second,
    };
    let missing = backend.call::<methods::SessionFork>(&params).await.unwrap();
    assert_eq!(missing, Err(ErrorCode::CheckpointMissing));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_a_git_program_a_turn_says_it_is_not_recorded() {
    let mock = MockServer::start().await;
    let empty = tempfile::tempdir().unwrap();
    let env = env_allowing(&mock).var("PATH", &empty.path().display().to_string());
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    enqueue_write(&mock, "w1", "a.txt", "a\n");
    let events = turn(&mut backend, &session, "Write a").await;
    let said = diagnostics(&events, "checkpoint_not_recorded");
    assert_eq!(said.len(), 1, "{events:?}");
    assert!(said[0].contains("no git program"), "{}", said[0]);
    let listed = list(&mut backend, &session).await;
    assert_eq!(listed.store, CheckpointStore::GitMissing);
    assert!(!listed.checkpoints[0].available);
    let id = listed.checkpoints[0].checkpoint_id.clone();
    let refused = restore(&mut backend, &session, &id, false, false).await;
    assert_eq!(refused, Err(ErrorCode::CheckpointsUnavailable));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_damaged_store_is_rebuilt_and_the_person_told() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    enqueue_write(&mock, "w1", "a.txt", "a\n");
    turn(&mut backend, &session, "one").await;
    let store = std::fs::read_dir(env.mc_home().join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    std::fs::write(store.join("HEAD"), "not a reference\n").unwrap();
    std::fs::write(store.join("index"), "not an index").unwrap();

    enqueue_write(&mock, "w2", "b.txt", "b\n");
    let events = turn(&mut backend, &session, "two").await;
    let said = diagnostics(&events, "checkpoint_store_rebuilt");
    assert_eq!(said.len(), 1, "{events:?}");
    assert!(said[0].contains("rebuilt"), "{}", said[0]);
    assert!(diagnostics(&events, "checkpoint_not_recorded").is_empty());
    let listed = list(&mut backend, &session).await;
    let available: Vec<bool> = listed.checkpoints.iter().map(|c| c.available).collect();
    assert_eq!(available, [false, true]);
    let gone = listed.checkpoints[0].checkpoint_id.clone();
    let refused = restore(&mut backend, &session, &gone, false, false).await;
    assert_eq!(refused, Err(ErrorCode::CheckpointMissing));
    // The new one works: b.txt goes, a.txt stays.
    let kept = listed.checkpoints[1].checkpoint_id.clone();
    restore(&mut backend, &session, &kept, true, false)
        .await
        .unwrap();
    assert!(!env.cwd().join("b.txt").exists());
    assert!(env.cwd().join("a.txt").exists());
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_extensions_operations_refuse_what_is_off_their_contract() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    // Not negotiated: nothing happens.
    let mut plain = env.spawn();
    plain
        .initialize(&["session.create", "turn.start", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut plain).await;
    let params = CheckpointListParams {
        session_id: session.clone(),
    };
    let refused = plain
        .call::<methods::CheckpointList>(&params)
        .await
        .unwrap();
    assert_eq!(refused, Err(ErrorCode::UnsupportedCapability));
    shutdown_clean(&mut plain).await;

    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    mock.enqueue(Reply::stream().text(["One."]));
    turn(&mut backend, &session, "first").await;
    let bad = [
        ("checkpoint.list", json!({})),
        (
            "checkpoint.list",
            json!({ "session_id": session, "extra": 1 }),
        ),
        ("checkpoint.restore", json!({ "session_id": session })),
        (
            "checkpoint.restore",
            json!({ "session_id": session, "checkpoint_id": "a/b" }),
        ),
        (
            "checkpoint.restore",
            json!({ "session_id": session, "checkpoint_id": "x", "apply": null }),
        ),
        (
            "session.fork",
            json!({ "session_id": session, "checkpoint_id": "" }),
        ),
    ];
    for (method, params) in bad {
        let answer = backend.request_raw(method, params.clone()).await.unwrap();
        assert_eq!(
            answer.outcome.err(),
            Some(ErrorCode::InvalidParams),
            "{method} {params}"
        );
    }
    // Another session than the attached one; a turn it does not have.
    let stale = restore(&mut backend, "other-session", "x", false, false).await;
    assert_eq!(stale, Err(ErrorCode::StaleSession));
    let missing = restore(&mut backend, &session, "no-such-turn", false, false).await;
    assert_eq!(missing, Err(ErrorCode::CheckpointMissing));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_confined_command_cannot_write_the_store() {
    if !crate::sandbox::available() {
        return;
    }
    let mock = MockServer::start().await;
    // `MC_HOME` outside the workspace and the temporary directories.
    let env = TestEnv::outside_temp()
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url())
        .var("PATH", &std::env::var("PATH").unwrap())
        .without(MODE_ENV);
    env.write_settings("[permissions]\nmode = \"allow-all\"\n");
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    enqueue_write(&mock, "w1", "a.txt", "a\n");
    turn(&mut backend, &session, "one").await;
    let store = std::fs::read_dir(env.mc_home().join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();
    let command = format!(
        "echo x > '{0}/intruder'; echo y >> '{0}/HEAD'",
        store.display()
    );
    mock.enqueue(calls("bash", &[bash("b1", &command)]));
    mock.enqueue(Reply::stream().text(["Tried."]));
    turn(&mut backend, &session, "two").await;
    assert!(!store.join("intruder").exists());
    let head = std::fs::read_to_string(store.join("HEAD")).unwrap();
    assert!(!head.contains('y'), "{head}");
    let told = mock.requests()[3].body.clone();
    let outputs = tool_outputs(&told);
    assert!(
        outputs.last().unwrap().contains("Permission denied"),
        "{outputs:?}"
    );
    shutdown_clean(&mut backend).await;
}

/// A `git` that takes `seconds` more before its first command, then is the real one:
/// a large workspace's first snapshot, made slow on purpose. `slept` appears once the
/// wait is over.
fn slow_git(dir: &std::path::Path, seconds: u32) -> std::path::PathBuf {
    let real = ["/usr/bin/git", "/usr/local/bin/git", "/bin/git"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
        .expect("a git program");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nif mkdir '{mark}' 2>/dev/null; then sleep {seconds}; : > '{slept}'; fi\nexec {real} \"$@\"\n",
        mark = dir.join("first").display(),
        slept = dir.join("slept").display(),
    );
    let path = bin.join("git");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[tokio::test]
async fn the_model_is_asked_while_the_start_is_recorded_and_calls_wait_for_it() {
    let mock = MockServer::start().await;
    let slow = tempfile::tempdir().unwrap();
    let bin = slow_git(slow.path(), 3);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let env = env_allowing(&mock).var("PATH", &path);
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    // The model's answer (a write) is held until the test has seen its request.
    let arguments = json!({ "path": "made.txt", "content": "new\n" }).to_string();
    mock.enqueue(calls("write", &[("w1".to_owned(), arguments)]).held());
    mock.enqueue(Reply::stream().text(["Done."]));
    start_turn(&mut backend, &session, "Make a file").await;
    let asked = tokio::time::timeout(WAIT, async {
        while mock.requests().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    asked.await.expect("the model is asked");
    // The request did not wait for the checkpoint, whose git is still sleeping (it may
    // begin only after the request: the start runs beside it).
    let began = tokio::time::timeout(WAIT, async {
        while !slow.path().join("first").exists() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    began.await.expect("the checkpoint began");
    assert!(
        !slow.path().join("slept").exists(),
        "the model waited for git"
    );
    mock.release();
    let mut events = Vec::new();
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{events:?}");
    assert!(diagnostics(&events, "checkpoint_not_recorded").is_empty());
    // The write waited for the start: undoing the turn removes the file it made.
    assert!(env.cwd().join("made.txt").exists());
    let listed = list(&mut backend, &session).await;
    let id = listed.checkpoints[0].checkpoint_id.clone();
    let undone = restore(&mut backend, &session, &id, true, false)
        .await
        .unwrap();
    assert!(undone.applied);
    assert!(!env.cwd().join("made.txt").exists());
    shutdown_clean(&mut backend).await;
}
