//! Table tests of run terminals, lost transports, history replacement and reopening.

use magi_protocol::messages::{
    ActivityState, DIAGNOSTIC_PROVIDER_RETRYING, Diagnostic, EntryKind, SessionResult,
};

use super::*;

#[test]
fn a_lost_transport_shows_unfinished_items_unknown() {
    let t = fold(vec![
        submit(1, "p"),
        accept(1),
        persisted(),
        rec("a1", 0, "done", true),
        delta("a2", 0, "stream"),
        rec("a3", 0, "half", false),
        act("tool-1", ActivityState::Started),
        act("tool-2", ActivityState::Completed),
        FoldInput::Disconnected,
    ]);
    let states: Vec<(bool, bool)> = t
        .items()
        .iter()
        .map(|i| (i.is_complete(), i.is_unknown()))
        .collect();
    assert_eq!(
        states,
        [
            (true, false),
            (true, false),
            (false, true),
            (false, true),
            (false, true),
            (true, false)
        ]
    );
    assert_eq!(t.runs()[0].state, RunState::Unknown);
    assert!(t.transport_lost() && !t.run_active());
    // A terminal cannot arrive for a lost run; if one did, it is not believed.
    let mut t = t;
    t.apply(finished(Some("h2")));
    assert_eq!(t.runs()[0].state, RunState::Unknown);
}

#[test]
fn run_finished_settles_the_run_and_names_the_revision() {
    let t = fold(vec![
        submit(1, "p"),
        accept(1),
        persisted(),
        delta("a1", 0, "never reconciled"),
        act("tool-1", ActivityState::Started),
        finished(Some("h2")),
    ]);
    let RunState::Finished(end) = &t.runs()[0].state else {
        panic!("not finished")
    };
    assert_eq!(end.revision.as_deref(), Some("h2"));
    assert_eq!(
        t.history_due(),
        Some(&HistoryDue {
            session_id: S.into(),
            revision: Some("h2".into())
        })
    );
    // Started items terminate or show unknown; nothing open survives the terminal.
    assert!(t.items()[1..].iter().all(Item::is_unknown));
}

#[test]
fn history_pages_replace_the_live_projection() {
    let mut t = fold(vec![
        submit(1, "p"),
        accept(1),
        persisted(),
        rec("a1", 0, "answer", true),
        finished(Some("h2")),
        page(
            "h2",
            vec![
                entry("m1", EntryKind::User, "p", 0, true),
                entry("m2", EntryKind::Assistant, "ans", 0, false),
            ],
            Some("h2.2"),
        ),
    ]);
    // Until the last page arrives, the live projection stays.
    assert!(matches!(t.items()[1], Item::Message(_)));
    t.apply(page(
        "h2",
        vec![
            entry("m2", EntryKind::Assistant, "wer", 1, true),
            // A gap in parts is never joined and never complete.
            entry("m3", EntryKind::Assistant, "x", 0, false),
            entry("m3", EntryKind::Assistant, "z", 2, true),
            // The same ID after an ended message starts a new entry.
            entry("m4", EntryKind::Diagnostic, "d", 1, true),
        ],
        None,
    ));
    assert_eq!(
        shown(&t),
        [
            (Role::User, "p", true),
            (Role::Assistant, "answer", true),
            (Role::Assistant, "x", false),
            (Role::Assistant, "z", false),
            (Role::Diagnostic, "d", false),
        ]
    );
    assert_eq!(t.history_due(), None);
    assert_eq!(t.history().map(|h| h.complete), Some(true));
}

#[test]
fn reopening_folds_pages_into_the_same_state() {
    let attach = |id: &str| {
        FoldInput::SessionAttached(SessionResult {
            session_id: id.into(),
            durable: true,
            revision: "h9".into(),
            notices: vec![],
        })
    };
    let mut t = fold(vec![
        attach("other"),
        submit(1, "draft"),
        attach(S),
        page(
            "h9",
            vec![entry("m1", EntryKind::User, "old", 0, true)],
            None,
        ),
        submit(2, "next"),
    ]);
    assert_eq!(t.restored_prompt(), Some("draft"));
    assert_eq!(t.durable_session(), Some(S));
    // A reload of the same session re-anchors the pending prompt after the history.
    t.apply(page(
        "h10",
        vec![
            entry("m1", EntryKind::User, "old", 0, true),
            entry("m2", EntryKind::Assistant, "reply", 0, true),
        ],
        None,
    ));
    assert_eq!(
        shown(&t),
        [
            (Role::User, "old", true),
            (Role::Assistant, "reply", true),
            (Role::User, "next", false),
        ]
    );
}

fn diagnostic(code: &str, summary: &str) -> FoldInput {
    FoldInput::Event(Event::Diagnostic(Diagnostic {
        session_id: S.into(),
        run_id: R.into(),
        code: code.into(),
        summary: summary.into(),
    }))
}

#[test]
fn live_diagnostics_stay_where_they_were_when_history_replaces_the_projection() {
    let mut t = fold(vec![
        submit(1, "p"),
        accept(1),
        persisted(),
        diagnostic(DIAGNOSTIC_PROVIDER_RETRYING, "retrying in 1s (2/5)"),
        diagnostic(
            "provider_http_status",
            "the provider answered 400: bad model",
        ),
        finished(Some("h2")),
        page(
            "h2",
            vec![
                entry("m1", EntryKind::User, "p", 0, true),
                entry("m2", EntryKind::Diagnostic, "The turn failed.", 0, true),
            ],
            None,
        ),
    ]);
    // The cause the backend never stores stays after the run's history; the retry
    // notice, news while it happened, goes.
    assert_eq!(
        shown(&t),
        [
            (Role::User, "p", true),
            (Role::Diagnostic, "The turn failed.", true),
            (
                Role::Diagnostic,
                "the provider answered 400: bad model",
                true
            ),
        ]
    );
    // A later run's history keeps it in its place, after the first run's messages.
    t.apply(page(
        "h3",
        vec![
            entry("m1", EntryKind::User, "p", 0, true),
            entry("m2", EntryKind::Diagnostic, "The turn failed.", 0, true),
            entry("m3", EntryKind::User, "again", 0, true),
            entry("m4", EntryKind::Assistant, "fine", 0, true),
        ],
        None,
    ));
    let texts: Vec<&str> = shown(&t).into_iter().map(|(_, text, _)| text).collect();
    assert_eq!(
        texts,
        [
            "p",
            "The turn failed.",
            "the provider answered 400: bad model",
            "again",
            "fine"
        ]
    );
    // Another session has none of them.
    t.apply(FoldInput::SessionAttached(SessionResult {
        session_id: "other".into(),
        durable: true,
        revision: "o1".into(),
        notices: Vec::new(),
    }));
    assert!(t.items().is_empty());
}
