//! What `permissions.modes` records between turns is not part of history: the revision
//! `run.finished` announced stays current after a mode switch, as after a title, so a
//! client paging that history is not sent back to reopen the session. The long soak
//! found this: a switch sent as the turn ended was answered after `run.finished`, and
//! its record made the announced revision stale.

use crate::common::approval::{env_for, records};
use crate::common::*;
use magi_protocol::messages::{
    ApprovalMode, HistoryPageParams, PermissionModeSetParams, RunOutcome,
};
use magi_protocol::methods;
use magi_protocol::names::PERMISSION_MODES;
use magi_testkit::{MockServer, Reply};

#[tokio::test]
async fn a_mode_switched_after_a_turn_leaves_its_history_revision_current() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Nothing to do."]));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    backend
        .initialize(&[
            "session.create",
            "turn.start",
            "history.page",
            "shutdown",
            PERMISSION_MODES,
        ])
        .await
        .unwrap()
        .unwrap();
    let session = new_session(&mut backend).await;
    start_turn(&mut backend, &session, "Hello").await;
    let mut events = Vec::new();
    let finished = until_finished(&mut backend, &mut events).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let revision = finished.revision.expect("a durable turn's revision");

    let set = PermissionModeSetParams {
        session_id: session.clone(),
        mode: ApprovalMode::AllowAll,
    };
    backend
        .call::<methods::PermissionModeSet>(&set)
        .await
        .unwrap()
        .unwrap();
    // Recorded, durable before its answer.
    let kinds: Vec<String> = records(&env, &session)
        .iter()
        .map(|r| r["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(kinds.last().map(String::as_str), Some("permission_mode"));

    let page = HistoryPageParams {
        session_id: session.clone(),
        revision,
        cursor: None,
    };
    let page = backend
        .call::<methods::HistoryPage>(&page)
        .await
        .unwrap()
        .expect("the announced revision is still current");
    assert!(page.complete);
    assert!(
        page.entries
            .iter()
            .any(|e| e.text.contains("Nothing to do."))
    );
    shutdown_clean(&mut backend).await;
}
