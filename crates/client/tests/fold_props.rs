//! Property tests of the transcript fold: it is a pure function of its inputs, lost
//! deltas lose nothing once reconciliation completes, a missing reconciliation part
//! never shows complete, and history pages of the same content show the same text.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use magi_client::fold::{FoldInput, Item, MessageState, PromptId, Role, Transcript};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    Activity, ActivityKind, ActivityState, ApprovalRequested, EntryKind, Event, HistoryEntry,
    HistoryPageResult, InputPersisted, MessageDelta, MessageReconcile, Persistence, RunFinished,
    RunOutcome,
};
use proptest::prelude::*;

const S: &str = "s1";
const R: &str = "r1";

fn delta(m: &str, part: u64, text: &str) -> FoldInput {
    FoldInput::Event(Event::MessageDelta(MessageDelta {
        session_id: S.into(),
        run_id: R.into(),
        message_id: m.into(),
        part,
        text: text.into(),
    }))
}

fn rec(m: &str, part: u64, text: &str, last_part: bool) -> FoldInput {
    FoldInput::Event(Event::MessageReconcile(MessageReconcile {
        session_id: S.into(),
        run_id: R.into(),
        message_id: m.into(),
        part,
        text: text.into(),
        last_part,
        partial: false,
    }))
}

fn finished() -> FoldInput {
    FoldInput::Event(Event::RunFinished(RunFinished {
        session_id: S.into(),
        run_id: R.into(),
        outcome: RunOutcome::Completed,
        persistence: Persistence::Durable,
        revision: Some("h2".into()),
        error_code: None,
    }))
}

fn persisted() -> FoldInput {
    FoldInput::Event(Event::InputPersisted(InputPersisted {
        session_id: S.into(),
        run_id: R.into(),
        message_id: "m0".into(),
        durable: true,
        revision: "h1".into(),
    }))
}

/// Any one input, from a small alphabet so that keys collide and rules interact.
fn any_input() -> impl Strategy<Value = FoldInput> {
    let m = prop_oneof![Just("a1"), Just("a2")];
    let part = 0u64..4;
    let text = "[a-c]{0,3}";
    let activity_state = prop_oneof![
        Just(ActivityState::Started),
        Just(ActivityState::Completed),
        Just(ActivityState::Failed)
    ];
    prop_oneof![
        (m.clone(), part.clone(), text).prop_map(|(m, p, t)| delta(m, p, &t)),
        (m, part, text, any::<bool>()).prop_map(|(m, p, t, l)| rec(m, p, &t, l)),
        (0u8..2, activity_state).prop_map(|(id, state)| FoldInput::Event(Event::Activity(
            Activity {
                session_id: S.into(),
                run_id: R.into(),
                activity_id: format!("tool-{id}"),
                kind: ActivityKind::Tool,
                state,
                name: "read".into(),
                summary: "s".into(),
            }
        ))),
        Just(FoldInput::Event(Event::ApprovalRequested(
            ApprovalRequested {
                session_id: S.into(),
                run_id: R.into(),
                approval_id: "p1".into(),
                summary: "s".into(),
                expires_in_ms: 60_000,
                subject: None,
                suggested_rule: None,
                proposed_change: None,
            }
        ))),
        any::<bool>().prop_map(|allow| FoldInput::ApprovalAnswered {
            run_id: R.into(),
            approval_id: "p1".into(),
            allow,
        }),
        (0u64..2).prop_map(|id| FoldInput::PromptSubmitted {
            id: PromptId(id),
            text: format!("prompt {id}"),
        }),
        (0u64..2).prop_map(|id| FoldInput::TurnAccepted {
            id: PromptId(id),
            run_id: R.into(),
        }),
        (0u64..2).prop_map(|id| FoldInput::TurnRejected {
            id: PromptId(id),
            code: ErrorCode::Busy,
        }),
        Just(persisted()),
        Just(finished()),
        Just(FoldInput::Disconnected),
        (any::<bool>(), "[a-c]{0,3}").prop_map(|(last, text)| {
            FoldInput::HistoryPage(HistoryPageResult {
                session_id: S.into(),
                revision: "h2".into(),
                entries: vec![HistoryEntry {
                    message_id: "m1".into(),
                    kind: EntryKind::Assistant,
                    text,
                    partial: false,
                    part: 0,
                    last_part: true,
                    tool_card: Default::default(),
                }],
                next_cursor: (!last).then(|| "h2.1".into()),
                complete: last,
            })
        }),
    ]
}

/// A text cut into 1–4 nonempty-or-empty chunks.
fn chunks() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z ]{0,4}", 1..5)
}

/// The live events of one segment: some deltas dropped, then every reconciliation
/// part (cut differently) in any order.
fn reconciled_segment(m: &'static str) -> impl Strategy<Value = (String, Vec<FoldInput>)> {
    (chunks(), chunks()).prop_flat_map(move |(deltas, recs)| {
        let n = deltas.len();
        (
            Just(deltas),
            prop::collection::vec(any::<bool>(), n),
            Just((0..recs.len()).collect::<Vec<usize>>()).prop_shuffle(),
            Just(recs),
        )
            .prop_map(move |(deltas, keep, order, recs)| {
                let mut inputs: Vec<FoldInput> = deltas
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| keep[*i])
                    .map(|(i, t)| delta(m, i as u64, t))
                    .collect();
                let last = recs.len() - 1;
                inputs.extend(order.iter().map(|&i| rec(m, i as u64, &recs[i], i == last)));
                (recs.concat(), inputs)
            })
    })
}

fn visible(t: &Transcript) -> Vec<(Role, String, bool)> {
    t.items()
        .iter()
        .map(|i| (i.role(), i.text().to_owned(), i.is_complete()))
        .collect()
}

fn message_state(t: &Transcript) -> Option<(String, MessageState)> {
    t.items().iter().find_map(|i| match i {
        Item::Message(m) => Some((m.text().to_owned(), m.state())),
        _ => None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// (1) Snapshot plus suffix equals the fold from genesis.
    #[test]
    fn snapshot_plus_suffix_equals_genesis(
        inputs in prop::collection::vec(any_input(), 0..40),
        cut in any::<prop::sample::Index>(),
    ) {
        let cut = cut.index(inputs.len() + 1);
        let mut whole = Transcript::default();
        whole.apply_all(inputs.clone());
        let mut prefix = Transcript::default();
        prefix.apply_all(inputs[..cut].iter().cloned());
        let mut snapshot = prefix.clone();
        snapshot.apply_all(inputs[cut..].iter().cloned());
        prop_assert_eq!(snapshot, whole);
    }

    /// (2) Dropped deltas, then complete reconciliation: exactly the reconciled text.
    #[test]
    fn lost_deltas_lose_nothing_after_reconciliation(
        (text, inputs) in reconciled_segment("a1"),
    ) {
        let mut t = Transcript::default();
        t.apply_all(inputs);
        prop_assert_eq!(
            message_state(&t),
            Some((text, MessageState::Complete { partial: false }))
        );
    }

    /// (3) A missing reconciliation part never shows the message complete, at any
    /// point, nor after the run ends.
    #[test]
    fn a_missing_part_is_never_complete(
        recs in prop::collection::vec("[a-z]{0,3}", 2..6),
        missing in any::<prop::sample::Index>(),
        order in Just((0..6usize).collect::<Vec<_>>()).prop_shuffle(),
        deltas in chunks(),
    ) {
        let missing = missing.index(recs.len());
        let last = recs.len() - 1;
        let mut t = Transcript::default();
        for (i, d) in deltas.iter().enumerate() {
            t.apply(delta("a1", i as u64, d));
        }
        let parts = order.into_iter().filter(|&i| i < recs.len() && i != missing);
        for i in parts {
            t.apply(rec("a1", i as u64, &recs[i], i == last));
            let complete = matches!(
                message_state(&t),
                Some((_, MessageState::Complete { .. }))
            );
            prop_assert!(!complete, "complete with part {} missing", missing);
        }
        t.apply(finished());
        prop_assert_eq!(message_state(&t).map(|(_, s)| s), Some(MessageState::Unknown));
    }

    /// (4) The history pages of the same content show the same text as the live run.
    #[test]
    fn history_replacement_shows_the_same_text(
        prompt in "[a-z]{1,6}",
        first in reconciled_segment("a1"),
        second in reconciled_segment("a2"),
        cuts in prop::collection::vec(1usize..4, 2),
        page_size in 1usize..4,
    ) {
        let mut t = Transcript::default();
        t.apply(FoldInput::PromptSubmitted { id: PromptId(1), text: prompt.clone() });
        t.apply(FoldInput::TurnAccepted { id: PromptId(1), run_id: R.into() });
        t.apply(persisted());
        t.apply_all(first.1);
        t.apply_all(second.1);
        t.apply(finished());
        let live = visible(&t);

        let mut entries = vec![HistoryEntry {
            message_id: "m0".into(),
            kind: EntryKind::User,
            text: prompt,
            partial: false,
            part: 0,
            last_part: true,
            tool_card: Default::default(),
        }];
        for (n, (text, cut)) in [(first.0, cuts[0]), (second.0, cuts[1])].into_iter().enumerate() {
            // Cut the text into `cut` parts (ASCII, so any byte is a boundary).
            let step = text.len().div_ceil(cut).max(1);
            let pieces: Vec<String> = if text.is_empty() {
                vec![String::new()]
            } else {
                text.as_bytes().chunks(step).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect()
            };
            let last = pieces.len() - 1;
            entries.extend(pieces.into_iter().enumerate().map(|(i, piece)| HistoryEntry {
                message_id: format!("m{}", n + 1),
                kind: EntryKind::Assistant,
                text: piece,
                partial: false,
                part: i as u64,
                last_part: i == last,
                tool_card: Default::default(),
            }));
        }
        let pages: Vec<&[HistoryEntry]> = entries.chunks(page_size).collect();
        let count = pages.len();
        for (i, page) in pages.into_iter().enumerate() {
            t.apply(FoldInput::HistoryPage(HistoryPageResult {
                session_id: S.into(),
                revision: "h2".into(),
                entries: page.to_vec(),
                next_cursor: (i + 1 < count).then(|| format!("h2.{i}")),
                complete: i + 1 == count,
            }));
        }
        prop_assert!(t.items().iter().all(|i| matches!(i, Item::History(_))));
        prop_assert_eq!(visible(&t), live);
    }
}

/// A snapshot of the card of activity `tool-1` at `revision`, its outcome a function of
/// `variant` so that two snapshots of one revision may differ.
fn card_input(revision: u64, variant: bool) -> FoldInput {
    let card: magi_protocol::cards::Card = serde_json::from_value(serde_json::json!({
        "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
        "parent_activity_id": null, "parent_state": "root", "task_id": null,
        "tool_kind": "read", "state": "finished",
        "outcome": if variant { "success" } else { "failure" },
        "changes": "not_applicable", "revision": revision, "origin": "live",
        "detail": {"availability": "none", "reason": null}, "title": "read",
        "metadata": {"tool_name": "read", "resource_path": null, "working_directory": null,
                     "public_protection": {"decision": "not_reported", "summary": null}},
        "blocks": [], "omissions": []
    }))
    .unwrap();
    FoldInput::Event(Event::ToolCard(Box::new(
        magi_protocol::cards::ToolCardEvent {
            session_id: S.into(),
            run_id: R.into(),
            activity_id: "tool-1".into(),
            part: 0,
            last_part: true,
            card,
        },
    )))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Card snapshots apply only forward: while revisions strictly increase the latest
    /// shows; the first lower (or equal but different) one makes the card unknown, and
    /// nothing after it applies.
    #[test]
    fn lower_card_revisions_never_apply(
        snapshots in prop::collection::vec((0u64..8, any::<bool>()), 1..12),
    ) {
        let started = FoldInput::Event(Event::Activity(Activity {
            session_id: S.into(),
            run_id: R.into(),
            activity_id: "tool-1".into(),
            kind: ActivityKind::Tool,
            state: ActivityState::Started,
            name: "read".into(),
            summary: "read".into(),
        }));
        let mut t = Transcript::default();
        t.apply(started);
        let mut expected: Option<(u64, bool)> = None;
        let mut failed = false;
        for (revision, variant) in &snapshots {
            t.apply(card_input(*revision, *variant));
            if failed {
                continue;
            }
            expected = match expected {
                None => Some((*revision, *variant)),
                Some((r, _)) if *revision > r => Some((*revision, *variant)),
                Some((r, v)) if *revision == r && *variant == v => Some((r, v)),
                Some(_) => {
                    failed = true;
                    None
                }
            };
        }
        let Item::Activity(activity) = &t.items()[0] else {
            panic!("not an activity")
        };
        match (&activity.card, failed, expected) {
            (magi_client::fold::CardView::Unknown, true, _) => {}
            (magi_client::fold::CardView::Card(card), false, Some((r, v))) => {
                prop_assert_eq!(card.revision, r);
                let outcome = if v {
                    magi_protocol::cards::CardOutcome::Success
                } else {
                    magi_protocol::cards::CardOutcome::Failure
                };
                prop_assert_eq!(card.outcome, Some(outcome));
            }
            other => prop_assert!(false, "unexpected card state {:?}", other.0),
        }
    }
}
