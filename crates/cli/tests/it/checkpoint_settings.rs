//! Checkpoints as the settings have them (`[checkpoints] enabled`, `keep_turns`), a
//! turn that only talks, and a restore into a workspace that cannot be written, through
//! the real binary.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::checkpoints::{
    diagnostics, enqueue_write, env_allowing, initialized, list, put, restore, turn,
};
use crate::common::approval::records;
use crate::common::*;
use magi_protocol::ErrorCode;
use magi_protocol::messages::CheckpointStore;
use magi_testkit::{MockServer, Reply};

#[tokio::test]
async fn checkpoints_turned_off_record_nothing_and_say_so_when_asked() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    env.write_settings("[permissions]\nmode = \"allow-all\"\n[checkpoints]\nenabled = false\n");
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    enqueue_write(&mock, "w1", "a.txt", "a\n");
    let events = turn(&mut backend, &session, "Write a").await;
    // Off by choice: no turn says it was not recorded.
    assert!(
        diagnostics(&events, "checkpoint_not_recorded").is_empty(),
        "{events:?}"
    );
    let listed = list(&mut backend, &session).await;
    assert_eq!(listed.store, CheckpointStore::Off);
    assert!(!listed.checkpoints[0].available);
    let id = listed.checkpoints[0].checkpoint_id.clone();
    let refused = restore(&mut backend, &session, &id, false, false).await;
    assert_eq!(refused, Err(ErrorCode::CheckpointsUnavailable));
    // No store was made.
    assert!(!env.mc_home().join("checkpoints").exists());
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn the_store_keeps_the_newest_turns_the_settings_ask_for() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    env.write_settings("[permissions]\nmode = \"allow-all\"\n[checkpoints]\nkeep_turns = 1\n");
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    for n in 1..=3 {
        enqueue_write(&mock, &format!("w{n}"), "a.txt", &format!("turn {n}\n"));
        turn(&mut backend, &session, &format!("Turn {n}")).await;
    }
    // The third turn's end finds three turns held, over one kept and a tenth (at least
    // one) more: the two older ones go, beside the turn.
    let deadline = Instant::now() + Duration::from_secs(30);
    let available = loop {
        let listed = list(&mut backend, &session).await;
        let available: Vec<bool> = listed.checkpoints.iter().map(|c| c.available).collect();
        if available != [true, true, true] || Instant::now() > deadline {
            break available;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(available, [false, false, true]);
    let listed = list(&mut backend, &session).await;
    let pruned = listed.checkpoints[0].checkpoint_id.clone();
    let refused = restore(&mut backend, &session, &pruned, false, false).await;
    assert_eq!(refused, Err(ErrorCode::CheckpointMissing));
    // The one kept still puts its turn back.
    let kept = listed.checkpoints[2].checkpoint_id.clone();
    restore(&mut backend, &session, &kept, true, false)
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "turn 2\n"
    );
    shutdown_clean(&mut backend).await;
}

/// A file no process of ours can change until dropped: immutable (`chattr +i`) when
/// we run as root, whom permissions do not stop; otherwise in a folder without write
/// permission.
struct Unwritable {
    file: PathBuf,
    folder: PathBuf,
    as_root: bool,
}

impl Unwritable {
    /// Locks `file`; none where nothing here can (root in a container without the
    /// capability to make files immutable, or a file system without the flag), said on
    /// stderr.
    fn lock(file: &Path) -> Option<Unwritable> {
        let folder = file.parent().unwrap().to_owned();
        let as_root = nix::unistd::geteuid().is_root();
        if as_root {
            let made = std::process::Command::new("chattr")
                .arg("+i")
                .arg(file)
                .output();
            if !made.as_ref().is_ok_and(|out| out.status.success()) {
                eprintln!(
                    "NOT RUN: as root, a file can be made unwritable only with chattr +i, \
                     which failed here: {made:?}"
                );
                return None;
            }
        } else {
            set_mode(&folder, 0o555);
        }
        let locked = Unwritable {
            file: file.to_owned(),
            folder,
            as_root,
        };
        // The lock holds: nothing can replace the file.
        assert!(std::fs::write(file, "probe").is_err());
        Some(locked)
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        if self.as_root {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&self.file)
                .status();
        } else {
            set_mode(&self.folder, 0o755);
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn a_restore_into_a_workspace_that_cannot_be_written_puts_back_what_it_can_and_says_so() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    std::fs::create_dir(env.cwd().join("locked")).unwrap();
    put(&env, "locked/a.txt", "a before\n");
    put(&env, "b.txt", "b before\n");
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    enqueue_write(&mock, "w1", "locked/a.txt", "a by the turn\n");
    turn(&mut backend, &session, "Change a").await;
    enqueue_write(&mock, "w2", "b.txt", "b by the turn\n");
    turn(&mut backend, &session, "Change b").await;
    let first = list(&mut backend, &session).await.checkpoints[0]
        .checkpoint_id
        .clone();
    let Some(_locked) = Unwritable::lock(&env.cwd().join("locked/a.txt")) else {
        shutdown_clean(&mut backend).await;
        return;
    };

    let failed = restore(&mut backend, &session, &first, true, false).await;
    assert_eq!(failed, Err(ErrorCode::CheckpointFailed));
    // What could be put back was; what could not is as the turn left it.
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("b.txt")).unwrap(),
        "b before\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("locked/a.txt")).unwrap(),
        "a by the turn\n"
    );
    // The record, and so the model, names only the file put back.
    let restored: Vec<serde_json::Value> = records(&env, &session)
        .into_iter()
        .filter(|r| r["kind"] == "checkpoint_restored")
        .collect();
    assert_eq!(restored.len(), 1, "{restored:?}");
    assert_eq!(restored[0]["paths"], serde_json::json!(["b.txt"]));
    // A preview now shows the one file still to put back.
    let preview = restore(&mut backend, &session, &first, false, false)
        .await
        .unwrap();
    let left: Vec<&str> = preview.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(left, ["locked/a.txt"]);
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_turn_that_only_talks_ends_as_it_began_and_a_change_meanwhile_is_the_persons() {
    let mock = MockServer::start().await;
    let env = env_allowing(&mock);
    put(&env, "a.txt", "a before\n");
    let mut backend = initialized(&env).await;
    let session = new_session(&mut backend).await;
    // The reply waits until the person has changed a file during the turn.
    mock.enqueue(Reply::stream().text(["Nothing to change."]).held());
    start_turn(&mut backend, &session, "Just tell me").await;
    // The start is recorded beside the model's request: the person's change comes
    // once both are in.
    let deadline = Instant::now() + WAIT;
    while mock.requests().is_empty() || recorded_starts(&env) == 0 {
        assert!(
            Instant::now() < deadline,
            "no model request or no start recorded"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    put(&env, "a.txt", "a by the person\n");
    mock.release();
    let mut events = Vec::new();
    until_finished(&mut backend, &mut events).await;
    let checkpoint = list(&mut backend, &session).await.checkpoints[0]
        .checkpoint_id
        .clone();
    // The turn ran nothing: its end is its start, not a second walk that would take
    // the person's change for the turn's.
    let refs = store_of(&env).unwrap().join("refs/magi").join(&checkpoint);
    let start = std::fs::read_to_string(refs.join("start")).unwrap();
    assert_eq!(std::fs::read_to_string(refs.join("end")).unwrap(), start);
    let preview = restore(&mut backend, &session, &checkpoint, false, false)
        .await
        .unwrap();
    let shown: Vec<(&str, bool)> = preview
        .changes
        .iter()
        .map(|c| (c.path.as_str(), c.changed_outside))
        .collect();
    assert_eq!(shown, [("a.txt", true)]);
    let refused = restore(&mut backend, &session, &checkpoint, true, false).await;
    assert_eq!(refused, Err(ErrorCode::CheckpointConflict));
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "a by the person\n"
    );
    shutdown_clean(&mut backend).await;
}

/// The workspace's checkpoint store, once made.
fn store_of(env: &TestEnv) -> Option<PathBuf> {
    std::fs::read_dir(env.mc_home().join("checkpoints"))
        .ok()?
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
}

/// How many turns' starts the store holds.
fn recorded_starts(env: &TestEnv) -> usize {
    let Some(store) = store_of(env) else {
        return 0;
    };
    std::fs::read_dir(store.join("refs/magi"))
        .map(|turns| {
            turns
                .flatten()
                .filter(|t| t.path().join("start").is_file())
                .count()
        })
        .unwrap_or(0)
}
