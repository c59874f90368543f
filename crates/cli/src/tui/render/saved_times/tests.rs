use magi_client::fold::{FoldInput, Transcript};
use magi_protocol::cards::Card;
use magi_protocol::messages::{EntryKind, HistoryEntry, HistoryPageResult, SavedCard};
use serde_json::json;

use super::*;

/// A saved `bash` card of entry `message_id`, titled `title`.
fn saved_card(message_id: &str, title: &str) -> Card {
    serde_json::from_value(json!({
        "schema_version": 1, "card_id": message_id, "activity_id": message_id,
        "parent_activity_id": null, "parent_state": "root", "task_id": null,
        "tool_kind": "command", "state": "finished", "outcome": "success",
        "changes": "unknown", "revision": 0, "origin": "saved",
        "detail": {"availability": "complete", "reason": null}, "title": title,
        "metadata": {"tool_name": "bash", "resource_path": null, "working_directory": null,
                     "public_protection": {"decision": "not_reported", "summary": null}},
        "blocks": [], "omissions": []
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// A session's history of a prompt, then one saved call per `(message ID, title)`.
fn history(calls: &[(&str, &str)]) -> Transcript {
    let mut entries = vec![HistoryEntry {
        message_id: "p".into(),
        kind: EntryKind::User,
        text: "go".into(),
        partial: false,
        part: 0,
        last_part: true,
        tool_card: SavedCard::Absent,
    }];
    for (id, title) in calls {
        entries.push(HistoryEntry {
            message_id: (*id).into(),
            kind: EntryKind::Activity,
            text: format!("bash: completed. {title}"),
            partial: false,
            part: 0,
            last_part: true,
            tool_card: SavedCard::Card(Box::new(saved_card(id, title))),
        });
    }
    let mut transcript = Transcript::default();
    transcript.apply(FoldInput::HistoryPage(HistoryPageResult {
        session_id: "s".into(),
        revision: "h".into(),
        entries,
        next_cursor: None,
        complete: true,
    }));
    transcript
}

fn secs(n: u64) -> Option<Duration> {
    Some(Duration::from_secs(n))
}

fn ran(calls: &[(&str, Option<Duration>)]) -> SeenCalls {
    calls.iter().map(|(t, d)| ((*t).to_owned(), *d)).collect()
}

#[test]
fn the_last_runs_calls_keep_the_times_seen_live() {
    let shown = history(&[("m1", "bash a"), ("m2", "bash b"), ("m3", "bash c")]);
    assert_eq!(saved_calls(shown.items()).len(), 3, "{:?}", shown.items());
    let mut times = SavedTimes::default();
    times.history_shown(
        "s",
        shown.items(),
        &ran(&[("bash b", secs(1)), ("bash c", secs(2))]),
    );
    assert_eq!(times.took("m1"), None, "not seen run here");
    assert_eq!(times.took("m2"), secs(1));
    assert_eq!(times.took("m3"), secs(2));
}

#[test]
fn times_carry_over_while_the_history_only_grows() {
    let mut times = SavedTimes::default();
    let first = history(&[("m1", "bash a"), ("m2", "bash b")]);
    times.history_shown("s", first.items(), &ran(&[("bash b", secs(1))]));
    // The next revision names its entries anew: the order carries the times.
    let next = history(&[("n1", "bash a"), ("n2", "bash b"), ("n3", "bash c")]);
    times.history_shown("s", next.items(), &ran(&[("bash c", secs(3))]));
    assert_eq!(times.took("n1"), None);
    assert_eq!(times.took("n2"), secs(1));
    assert_eq!(times.took("n3"), secs(3));
    assert_eq!(times.took("m2"), None, "the old revision's IDs are gone");
}

#[test]
fn a_history_that_changed_otherwise_shows_no_earlier_time() {
    let mut times = SavedTimes::default();
    let first = history(&[("m1", "bash a"), ("m2", "bash b")]);
    times.history_shown(
        "s",
        first.items(),
        &ran(&[("bash a", secs(1)), ("bash b", secs(2))]),
    );
    // Compacted: the earlier calls are no longer the same, in order.
    let compacted = history(&[("n1", "bash b"), ("n2", "bash c")]);
    times.history_shown("s", compacted.items(), &ran(&[("bash c", secs(3))]));
    assert_eq!(times.took("n1"), None);
    assert_eq!(times.took("n2"), secs(3));
}

#[test]
fn a_run_whose_calls_are_not_the_last_saved_ones_gives_no_time() {
    let mut times = SavedTimes::default();
    let shown = history(&[("m1", "bash a"), ("m2", "bash b")]);
    times.history_shown(
        "s",
        shown.items(),
        &ran(&[("bash a", secs(1)), ("bash z", secs(2))]),
    );
    assert_eq!(times.took("m1"), None);
    assert_eq!(times.took("m2"), None);
    let more_than_shown = ran(&[
        ("bash x", secs(1)),
        ("bash a", secs(1)),
        ("bash b", secs(2)),
    ]);
    times.history_shown("s", shown.items(), &more_than_shown);
    assert_eq!(times.took("m2"), None);
}

#[test]
fn another_sessions_times_are_not_carried_over() {
    let mut times = SavedTimes::default();
    let first = history(&[("m1", "bash a")]);
    times.history_shown("s1", first.items(), &ran(&[("bash a", secs(1))]));
    assert_eq!(times.took("m1"), secs(1));
    let other = history(&[("m1", "bash a"), ("m2", "bash b")]);
    times.history_shown("s2", other.items(), &SeenCalls::new());
    assert_eq!(times.took("m1"), None);
}
