//! Table tests of each fold rule: messages, activities, approvals and prompts here,
//! terminals, lost transports and history in `lifecycle`.

mod lifecycle;

use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    Activity, ActivityKind, ActivityState, ApprovalRequested, EntryKind, Event, HistoryEntry,
    HistoryPageResult, InputPersisted, MessageDelta, MessageReconcile, Persistence, ProposedChange,
    RunFinished, RunOutcome,
};

use super::*;

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

fn act(id: &str, state: ActivityState) -> FoldInput {
    FoldInput::Event(Event::Activity(Activity {
        session_id: S.into(),
        run_id: R.into(),
        activity_id: id.into(),
        kind: ActivityKind::Tool,
        state,
        name: "read".into(),
        summary: format!("{state:?}"),
    }))
}

fn approval(id: &str) -> FoldInput {
    FoldInput::Event(Event::ApprovalRequested(ApprovalRequested {
        session_id: S.into(),
        run_id: R.into(),
        approval_id: id.into(),
        summary: "run ls".into(),
        expires_in_ms: 60_000,
        subject: None,
        suggested_rule: None,
        proposed_change: None,
    }))
}

fn submit(id: u64, text: &str) -> FoldInput {
    FoldInput::PromptSubmitted {
        id: PromptId(id),
        text: text.into(),
    }
}

fn accept(id: u64) -> FoldInput {
    FoldInput::TurnAccepted {
        id: PromptId(id),
        run_id: R.into(),
    }
}

fn persisted() -> FoldInput {
    FoldInput::Event(Event::InputPersisted(InputPersisted {
        session_id: S.into(),
        run_id: R.into(),
        message_id: "m1".into(),
        durable: true,
        revision: "h-ack".into(),
    }))
}

fn finished(revision: Option<&str>) -> FoldInput {
    FoldInput::Event(Event::RunFinished(RunFinished {
        session_id: S.into(),
        run_id: R.into(),
        outcome: RunOutcome::Completed,
        persistence: Persistence::Durable,
        revision: revision.map(Into::into),
        error_code: None,
    }))
}

fn entry(id: &str, kind: EntryKind, text: &str, part: u64, last_part: bool) -> HistoryEntry {
    HistoryEntry {
        message_id: id.into(),
        kind,
        text: text.into(),
        partial: false,
        part,
        last_part,
        tool_card: Default::default(),
    }
}

fn page(revision: &str, entries: Vec<HistoryEntry>, next: Option<&str>) -> FoldInput {
    FoldInput::HistoryPage(HistoryPageResult {
        session_id: S.into(),
        revision: revision.into(),
        entries,
        next_cursor: next.map(Into::into),
        complete: next.is_none(),
    })
}

fn fold(inputs: Vec<FoldInput>) -> Transcript {
    let mut t = Transcript::default();
    t.apply_all(inputs);
    t
}

fn message(t: &Transcript) -> &Message {
    t.items()
        .iter()
        .find_map(|i| match i {
            Item::Message(m) => Some(m),
            _ => None,
        })
        .unwrap()
}

fn shown(t: &Transcript) -> Vec<(Role, &str, bool)> {
    t.items()
        .iter()
        .map(|i| (i.role(), i.text(), i.is_complete()))
        .collect()
}

#[test]
fn deltas_accumulate_and_any_irregular_part_marks_incomplete() {
    let cases: Vec<(Vec<FoldInput>, &str, MessageState)> = vec![
        (
            vec![delta("a1", 0, "Hel"), delta("a1", 1, "lo")],
            "Hello",
            MessageState::Streaming,
        ),
        // Part 1 dropped: the gap shows.
        (
            vec![delta("a1", 0, "a"), delta("a1", 2, "c")],
            "ac",
            MessageState::Incomplete,
        ),
        // The first part missing is a gap too.
        (vec![delta("a1", 1, "b")], "b", MessageState::Incomplete),
        // Out of order: the late part is not placed.
        (
            vec![delta("a1", 1, "b"), delta("a1", 0, "a")],
            "b",
            MessageState::Incomplete,
        ),
        // A repeated part is not shown twice.
        (
            vec![delta("a1", 0, "a"), delta("a1", 0, "a")],
            "a",
            MessageState::Incomplete,
        ),
    ];
    for (inputs, text, state) in cases {
        let t = fold(inputs);
        assert_eq!((message(&t).text(), message(&t).state()), (text, state));
    }
}

#[test]
fn reconciliation_replaces_deltas_only_when_every_part_arrived() {
    let complete = MessageState::Complete { partial: false };
    let cases: Vec<(Vec<FoldInput>, &str, MessageState)> = vec![
        // Replaces, never appends.
        (
            vec![delta("a1", 0, "Hel"), rec("a1", 0, "Hello", true)],
            "Hello",
            complete,
        ),
        // Deltas lost entirely: the reconciled text is the whole truth.
        (
            vec![
                delta("a1", 3, "x"),
                rec("a1", 0, "ab", false),
                rec("a1", 1, "c", true),
            ],
            "abc",
            complete,
        ),
        // Parts out of order still complete once all are present.
        (
            vec![rec("a1", 1, "c", true), rec("a1", 0, "ab", false)],
            "abc",
            complete,
        ),
        // A missing middle part: never complete, deltas not claimed whole.
        (
            vec![
                delta("a1", 0, "abc"),
                rec("a1", 0, "a", false),
                rec("a1", 2, "c", true),
            ],
            "abc",
            MessageState::Incomplete,
        ),
        // A part beyond last_part: the set is not exactly 0..=last.
        (
            vec![rec("a1", 0, "a", true), rec("a1", 1, "b", false)],
            "a",
            complete,
        ),
        (
            vec![rec("a1", 1, "b", false), rec("a1", 0, "a", true)],
            "",
            MessageState::Incomplete,
        ),
        // Nothing changes a complete message: late deltas, re-delivered parts.
        (
            vec![
                rec("a1", 0, "done", true),
                delta("a1", 0, "zzz"),
                rec("a1", 0, "other", true),
            ],
            "done",
            complete,
        ),
    ];
    for (i, (inputs, text, state)) in cases.into_iter().enumerate() {
        let t = fold(inputs);
        assert_eq!(
            (message(&t).text(), message(&t).state()),
            (text, state),
            "case {i}"
        );
    }
}

#[test]
fn partial_reconciliation_is_complete_and_partial() {
    let mut input = rec("a1", 0, "half", true);
    if let FoldInput::Event(Event::MessageReconcile(r)) = &mut input {
        r.partial = true;
    }
    let t = fold(vec![input]);
    assert_eq!(
        message(&t).state(),
        MessageState::Complete { partial: true }
    );
}

#[test]
fn activities_only_move_forward() {
    use ActivityState::{Completed, Failed, Started};
    let cases: Vec<(Vec<ActivityState>, ActivityDisplay)> = vec![
        (vec![Started], ActivityDisplay::Started),
        (vec![Started, Completed], ActivityDisplay::Completed),
        (vec![Started, Failed], ActivityDisplay::Failed),
        (vec![Completed], ActivityDisplay::Completed),
        (
            vec![Started, Completed, Started],
            ActivityDisplay::Completed,
        ),
        (vec![Started, Failed, Completed], ActivityDisplay::Failed),
    ];
    for (states, expected) in cases {
        let t = fold(states.iter().map(|s| act("tool-1", *s)).collect());
        assert_eq!(t.items().len(), 1);
        let Item::Activity(a) = &t.items()[0] else {
            panic!("not an activity")
        };
        assert_eq!(a.state, expected, "{states:?}");
    }
}

/// A snapshot of the card of activity `tool-1`, from the spec's example card.
fn card(revision: u64, outcome: Option<&str>) -> FoldInput {
    let state = if outcome.is_some() {
        "finished"
    } else {
        "running"
    };
    let card: magi_protocol::cards::Card = serde_json::from_value(serde_json::json!({
        "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
        "parent_activity_id": null, "parent_state": "root", "task_id": null,
        "tool_kind": "read", "state": state, "outcome": outcome,
        "changes": "not_applicable", "revision": revision, "origin": "live",
        "detail": {"availability": "none", "reason": null}, "title": "read a.rs",
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

fn card_view(t: &Transcript) -> &CardView {
    match &t.items()[0] {
        Item::Activity(a) => &a.card,
        _ => panic!("not an activity"),
    }
}

#[test]
fn card_snapshots_replace_only_forward_and_fail_closed() {
    let revision = |t: &Transcript| match card_view(t) {
        CardView::Card(c) => Some(c.revision),
        _ => None,
    };
    let started = act("tool-1", ActivityState::Started);
    // A card before its activity shows nothing.
    assert!(fold(vec![card(0, None)]).items().is_empty());
    let t = fold(vec![
        started.clone(),
        card(0, None),
        card(2, Some("success")),
    ]);
    assert_eq!(revision(&t), Some(2));
    // The same revision again, identical, changes nothing.
    let t = fold(vec![started.clone(), card(1, None), card(1, None)]);
    assert_eq!(revision(&t), Some(1));
    // A lower revision, or an equal one with other content, fails the card for good.
    for bad in [card(0, None), card(1, Some("failure"))] {
        let t = fold(vec![
            started.clone(),
            card(1, None),
            bad,
            card(5, Some("success")),
        ]);
        assert_eq!(card_view(&t), &CardView::Unknown);
    }
}

#[test]
fn approvals_are_answered_locally_and_lapse_or_turn_unknown() {
    let answer = |allow| FoldInput::ApprovalAnswered {
        run_id: R.into(),
        approval_id: "p1".into(),
        allow,
    };
    let state = |t: &Transcript| match &t.items()[0] {
        Item::Approval(a) => a.state,
        _ => panic!("not an approval"),
    };
    assert_eq!(state(&fold(vec![approval("p1")])), ApprovalState::Pending);
    let answered = fold(vec![approval("p1"), answer(true), answer(false)]);
    assert_eq!(state(&answered), ApprovalState::Answered { allow: true });
    let lapsed = fold(vec![approval("p1"), finished(Some("h2")), answer(true)]);
    assert_eq!(state(&lapsed), ApprovalState::Lapsed);
    let lost = fold(vec![approval("p1"), FoldInput::Disconnected]);
    assert_eq!(state(&lost), ApprovalState::Unknown);
}

#[test]
fn a_backend_that_ended_is_said_in_the_transcript_and_kept_over_history() {
    let said = "the backend crashed: boom at a.rs:1 (report: /r)";
    let t = fold(vec![
        approval("p1"),
        FoldInput::BackendEnded { said: said.into() },
    ]);
    // As a disconnection: what was open is unknown.
    assert!(matches!(&t.items()[0], Item::Approval(a) if a.state == ApprovalState::Unknown));
    assert_eq!(shown(&t).last(), Some(&(Role::Diagnostic, said, true)));
    // A reopened session's history keeps it where it was.
    let mut t = t;
    t.apply(page(
        "h2",
        vec![entry("m1", EntryKind::User, "earlier", 0, true)],
        None,
    ));
    assert!(
        shown(&t)
            .iter()
            .any(|(role, text, _)| *role == Role::Diagnostic && *text == said)
    );
}

#[test]
fn an_approval_keeps_its_subject_and_suggested_rule() {
    let change = ProposedChange {
        diff: "--- a\n+++ a\n@@ -1 +1 @@\n-x\n+y\n".into(),
        truncated: false,
        added: Some(1),
        removed: Some(1),
    };
    let scoped = |subject: Option<Option<&str>>, rule: Option<Option<&str>>| {
        let t = fold(vec![FoldInput::Event(Event::ApprovalRequested(
            ApprovalRequested {
                session_id: S.into(),
                run_id: R.into(),
                approval_id: "p1".into(),
                summary: "bash".into(),
                expires_in_ms: 60_000,
                subject: subject.map(|s| s.map(str::to_owned)),
                suggested_rule: rule.map(|r| r.map(str::to_owned)),
                proposed_change: subject.map(|s| s.map(|_| change.clone())),
            },
        ))]);
        match &t.items()[0] {
            Item::Approval(a) => a.clone(),
            _ => panic!("not an approval"),
        }
    };
    let with = scoped(Some(Some("cargo test -q")), Some(Some("bash(cargo test*)")));
    assert_eq!(with.subject.as_deref(), Some("cargo test -q"));
    assert_eq!(with.suggested_rule.as_deref(), Some("bash(cargo test*)"));
    assert_eq!(with.description(), "bash: cargo test -q");
    assert_eq!(with.proposed_change, Some(change.clone()));
    // Present null (the extension, nothing offered) and absence (no extension) alike.
    for (subject, rule) in [(Some(None), Some(None)), (None, None)] {
        let without = scoped(subject, rule);
        assert_eq!((without.subject, without.suggested_rule), (None, None));
        assert_eq!(without.proposed_change, None);
    }
    // A summary that already names the subject is not repeated.
    assert_eq!(
        describe_approval("write notes.txt", Some("notes.txt")),
        "write notes.txt"
    );
}

#[test]
fn a_persisted_prompt_keeps_its_anchor() {
    let t = fold(vec![
        page(
            "h1",
            vec![entry("m0", EntryKind::User, "earlier", 0, true)],
            None,
        ),
        submit(1, "hello"),
        accept(1),
        delta("a1", 0, "hi"),
        persisted(),
    ]);
    let roles: Vec<Role> = t.items().iter().map(Item::role).collect();
    assert_eq!(roles, [Role::User, Role::User, Role::Assistant]);
    let Item::Prompt(p) = &t.items()[1] else {
        panic!("not the prompt")
    };
    assert!(matches!(p.state, PromptState::Persisted { .. }));
    assert_eq!(t.restored_prompt(), None);
    assert_eq!(t.durable_session(), Some(S));
}

#[test]
fn prompts_return_to_the_composer_without_settlement() {
    let cases: Vec<(&str, Vec<FoldInput>, Option<&str>)> = vec![
        ("pending", vec![submit(1, "p")], None),
        (
            "rejected",
            vec![
                submit(1, "p"),
                FoldInput::TurnRejected {
                    id: PromptId(1),
                    code: ErrorCode::Busy,
                },
            ],
            Some("p"),
        ),
        (
            "finished without input.persisted",
            vec![submit(1, "p"), accept(1), finished(None)],
            Some("p"),
        ),
        (
            "disconnect before admission",
            vec![submit(1, "p"), FoldInput::Disconnected],
            Some("p"),
        ),
        (
            "disconnect after admission",
            vec![submit(1, "p"), accept(1), FoldInput::Disconnected],
            Some("p"),
        ),
        (
            "disconnect after persistence",
            vec![
                submit(1, "p"),
                accept(1),
                persisted(),
                FoldInput::Disconnected,
            ],
            None,
        ),
        (
            "finished after persistence",
            vec![submit(1, "p"), accept(1), persisted(), finished(Some("h2"))],
            None,
        ),
        (
            "two restored",
            vec![submit(1, "p"), submit(2, "q"), FoldInput::Disconnected],
            Some("p\n\nq"),
        ),
    ];
    for (name, inputs, restored) in cases {
        let t = fold(inputs);
        assert_eq!(t.restored_prompt(), restored, "{name}");
        let shown = t.items().iter().any(|i| matches!(i, Item::Prompt(_)));
        assert_eq!(
            shown,
            restored.is_none(),
            "{name}: shown or restored, never both"
        );
    }
}
