//! `user.questions` through the real binary: negotiation, the `question.asked` event,
//! answers checked and settled once, declines, cancellation, a lost client and a
//! question a crashed backend left open. The 15-minute expiry is tested on a paused
//! clock (`magi_core::questions`), since waiting it out here would take 15 minutes.

use crate::common::approval::{env_for, records};
use crate::common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::ErrorCode;
use magi_protocol::cards::{Card, CardState, Changes, ToolKind};
use magi_protocol::messages::{
    EmptyParams, Event, QuestionAnswerParams, QuestionAnswerResult, QuestionAsked, QuestionReply,
    RunOutcome, TurnCancelParams,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const REQUIRED: [&str; 6] = [
    "session.create",
    "session.open",
    "turn.start",
    "turn.cancel",
    "shutdown",
    "user.questions",
];

/// Two questions: a single choice with a header and descriptions, and a multi-select.
fn arguments() -> String {
    json!({"questions": [
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "Postgres", "description": "a server"},
                     {"label": "SQLite", "description": "a file"}]},
        {"question": "Which extras?", "multi_select": true,
         "options": [{"label": "cache"}, {"label": "metrics"}, {"label": "tracing"}]}
    ]})
    .to_string()
}

fn reply(selected: &[&str], other: Option<&str>) -> QuestionReply {
    QuestionReply {
        selected: selected.iter().map(|s| (*s).to_owned()).collect(),
        other: other.map(str::to_owned),
    }
}

/// A backend with `user.questions` and a turn whose model asks the two questions.
/// `then` is the model's reply after the call, if the test gets that far.
async fn asking(mock: &MockServer, env: &TestEnv, then: Option<&str>) -> (Backend, String, String) {
    mock.enqueue(Reply::stream().tool_call("q1", "ask_user", [arguments().as_str()]));
    if let Some(text) = then {
        mock.enqueue(Reply::stream().text([text]));
    }
    let mut backend = env.spawn();
    let result = backend.initialize(&REQUIRED).await.unwrap().unwrap();
    assert_eq!(result.capabilities.len(), 17);
    assert_eq!(result.capabilities[16], "user.questions");
    let descriptor = result.extensions.unwrap().user_questions.unwrap();
    assert_eq!(
        serde_json::to_value(descriptor).unwrap(),
        json!({"schema_version": 1, "questions": 4, "min_options": 2, "max_options": 6,
               "question_expiry_ms": 900_000})
    );
    let session = backend
        .call::<methods::SessionCreate>(&EmptyParams {})
        .await
        .unwrap()
        .unwrap()
        .session_id;
    let run = start_turn(&mut backend, &session, "Set it up").await;
    (backend, session, run)
}

async fn until_asked(backend: &mut Backend, seen: &mut Vec<Event>) -> QuestionAsked {
    loop {
        if let Incoming::Event { event, .. } = next(backend).await {
            seen.push(event.clone());
            match event {
                Event::QuestionAsked(asked) => return *asked,
                Event::RunFinished(f) => panic!("no question: {f:?}"),
                _ => {}
            }
        }
    }
}

async fn answer(
    backend: &mut Backend,
    asked: &QuestionAsked,
    answers: Option<Vec<QuestionReply>>,
) -> Result<QuestionAnswerResult, ErrorCode> {
    let params = QuestionAnswerParams {
        session_id: asked.session_id.clone(),
        run_id: asked.run_id.clone(),
        question_id: asked.question_id.clone(),
        answers,
    };
    backend
        .call::<methods::QuestionAnswer>(&params)
        .await
        .unwrap()
}

/// The result recorded for call `call_id`.
fn result_of(env: &TestEnv, session: &str, call_id: &str) -> Value {
    records(env, session)
        .into_iter()
        .find(|r| r["kind"] == "tool_result" && r["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no result of {call_id}"))
}

#[tokio::test]
async fn questions_are_asked_answered_once_and_given_to_the_model() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let (mut backend, session, run) = asking(&mock, &env, Some("SQLite with a cache, then.")).await;
    let mut seen = Vec::new();
    let asked = until_asked(&mut backend, &mut seen).await;
    // The event carries the questions as the model gave them.
    assert_eq!(
        (asked.session_id.as_str(), asked.run_id.as_str()),
        (session.as_str(), run.as_str())
    );
    let questions = serde_json::to_value(&asked.questions).unwrap();
    assert_eq!(
        questions,
        json!([
            {"question": "Which database?", "header": "Database", "multi_select": false,
             "options": [{"label": "Postgres", "description": "a server"},
                         {"label": "SQLite", "description": "a file"}]},
            {"question": "Which extras?", "header": null, "multi_select": true,
             "options": [{"label": "cache", "description": null},
                         {"label": "metrics", "description": null},
                         {"label": "tracing", "description": null}]}
        ])
    );
    // Answers that do not fit are refused and leave the questions open.
    for bad in [
        vec![reply(&["SQLite"], None)],
        vec![reply(&["Oracle"], None), reply(&["cache"], None)],
        vec![
            reply(&["SQLite", "Postgres"], None),
            reply(&["cache"], None),
        ],
        vec![reply(&[], None), reply(&["cache"], None)],
    ] {
        assert_eq!(
            answer(&mut backend, &asked, Some(bad)).await,
            Err(ErrorCode::InvalidParams)
        );
    }
    // Unknown fields and a malformed answer are refused too.
    let raw = json!({"session_id": session, "run_id": run, "question_id": asked.question_id,
                     "answers": null, "extra": 1});
    assert_eq!(
        backend
            .request_raw("question.answer", raw)
            .await
            .unwrap()
            .outcome,
        Err(ErrorCode::InvalidParams)
    );
    let good = vec![
        reply(&["SQLite"], None),
        reply(&["cache", "tracing"], Some("and logs")),
    ];
    assert_eq!(
        answer(&mut backend, &asked, Some(good)).await,
        Ok(QuestionAnswerResult { recorded: true })
    );
    // One answer settles them; the next is stale.
    assert_eq!(
        answer(&mut backend, &asked, None).await,
        Err(ErrorCode::StaleQuestion)
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let requests = mock.requests();
    assert!(offered_tool_names(&requests[0].body).contains(&"ask_user".to_owned()));
    let outputs = tool_outputs(&requests[1].body);
    assert_eq!(
        outputs,
        [
            "The user answered:\n- Which database?: SQLite\n- Which extras?: cache; tracing; \
          (in their own words) and logs"
        ]
    );
    let settled = result_of(&env, &session, "q1");
    assert_eq!(settled["outcome"], "completed");
    assert_eq!(settled["summary"], "answered");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn without_the_extension_nothing_is_offered_or_answered() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hello."]));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let base = &REQUIRED[..5];
    let result = backend.initialize(base).await.unwrap().unwrap();
    assert_eq!(result.capabilities.len(), 16);
    assert!(result.extensions.is_none());
    let session = session_with_turn(&mut backend, "Hi").await;
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    let offered = offered_tool_names(&mock.requests()[0].body);
    assert!(!offered.iter().any(|t| t == "ask_user"), "{offered:?}");
    let refused = backend
        .call::<methods::QuestionAnswer>(&QuestionAnswerParams {
            session_id: session,
            run_id: "r".into(),
            question_id: "q".into(),
            answers: None,
        })
        .await
        .unwrap();
    assert_eq!(refused, Err(ErrorCode::UnsupportedCapability));
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_decline_is_told_to_the_model() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let (mut backend, session, _) = asking(&mock, &env, Some("I will choose myself.")).await;
    let mut seen = Vec::new();
    let asked = until_asked(&mut backend, &mut seen).await;
    assert_eq!(
        answer(&mut backend, &asked, None).await,
        Ok(QuestionAnswerResult { recorded: true })
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert_eq!(
        tool_outputs(&mock.requests()[1].body),
        ["The user declined to answer."]
    );
    assert_eq!(result_of(&env, &session, "q1")["summary"], "declined");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn cancelling_the_run_declines_and_a_late_answer_is_stale() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let (mut backend, session, run) = asking(&mock, &env, None).await;
    let mut seen = Vec::new();
    let asked = until_asked(&mut backend, &mut seen).await;
    backend
        .call::<methods::TurnCancel>(&TurnCancelParams {
            session_id: session.clone(),
            run_id: run,
        })
        .await
        .unwrap()
        .unwrap();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    assert_eq!(
        answer(&mut backend, &asked, None).await,
        Err(ErrorCode::StaleQuestion)
    );
    let settled = result_of(&env, &session, "q1");
    assert_eq!(settled["summary"], "declined; cancelled");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn a_lost_client_declines_the_open_questions() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let (mut backend, session, _) = asking(&mock, &env, None).await;
    until_asked(&mut backend, &mut Vec::new()).await;
    backend.close_stdin();
    // The backend ends its run, says so and exits.
    let finished = until_finished(&mut backend, &mut Vec::new()).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    expect_end_of_output(&mut backend).await;
    assert_eq!(exit_status(&mut backend).await.code(), Some(0));
    let settled = result_of(&env, &session, "q1");
    assert_eq!(settled["summary"], "declined; cancelled");
    assert!(
        settled["content"]
            .as_str()
            .unwrap()
            .contains("withdrawn before the user answered")
    );
}

#[tokio::test]
async fn a_question_open_when_the_backend_died_is_declined_at_the_next_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Then I will pick."]));
    let env = env_for(&mock);
    let id = "questioned-session";
    let cwd = env.cwd().canonicalize().unwrap().display().to_string();
    let crashed = [
        record(id, "session_meta", json!({"cwd": cwd})),
        record(id, "turn_started", json!({"turn_id": "t1"})),
        record(
            id,
            "user_input",
            json!({"turn_id": "t1", "message_id": "u1", "text": "Set it up"}),
        ),
        record(
            id,
            "tool_call",
            json!({"turn_id": "t1", "call_id": "q1", "name": "ask_user", "summary": "ask_user",
                   "arguments": arguments()}),
        ),
        record(
            id,
            "tool_call_state",
            json!({"turn_id": "t1", "call_id": "q1", "state": "running"}),
        ),
        record(
            id,
            "tool_call_state",
            json!({"turn_id": "t1", "call_id": "q1", "state": "awaiting_input"}),
        ),
    ]
    .concat();
    write_log(&env, id, &crashed);
    let mut backend = env.spawn();
    backend.initialize(&REQUIRED).await.unwrap().unwrap();
    open_session(&mut backend, id).await.unwrap();
    start_turn(&mut backend, id, "Go on").await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(
        !seen.iter().any(|e| matches!(e, Event::QuestionAsked(_))),
        "not asked again"
    );
    let settled = result_of(&env, id, "q1");
    assert_eq!(settled["outcome"], "completed");
    assert_eq!(settled["summary"], "declined; the backend ended");
    // Its facts keep the questions for the card, and say how they ended.
    assert_eq!(settled["facts"]["tool"], "questions");
    assert_eq!(settled["facts"]["settled"], "declined; the backend ended");
    assert_eq!(
        settled["facts"]["questions"][1]["question"],
        "Which extras?"
    );
    let outputs = tool_outputs(&mock.requests()[0].body);
    assert!(
        outputs[0].contains("the backend ended while the questions were open"),
        "{outputs:?}"
    );
    shutdown_clean(&mut backend).await;
}

/// The phases recorded for call `call_id` (`tool_call_state`), in order.
fn phases(env: &TestEnv, session: &str, call_id: &str) -> Vec<String> {
    records(env, session)
        .into_iter()
        .filter(|r| r["kind"] == "tool_call_state" && r["call_id"] == call_id)
        .map(|r| r["state"].as_str().unwrap().to_owned())
        .collect()
}

/// The rows of a card's one results block, as (label, value) pairs.
fn rows(card: &Card) -> Vec<(String, String)> {
    let value = serde_json::to_value(card).unwrap();
    let block = value["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "results")
        .unwrap_or_else(|| panic!("no results block: {value}"))
        .clone();
    block["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["label"].as_str().unwrap().to_owned(),
                r["value"].as_str().unwrap_or("null").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_card_keeps_the_questions_and_answers_live_and_saved() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("q1", "ask_user", [arguments().as_str()]));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    let mut backend = env.spawn();
    let required = [
        &REQUIRED[..5],
        &["tool.cards", "history.page", "user.questions"],
    ]
    .concat();
    let result = backend.initialize(&required).await.unwrap().unwrap();
    assert_eq!(result.capabilities[16..], ["tool.cards", "user.questions"]);
    let session = session_with_turn(&mut backend, "Set it up").await;
    let mut seen = Vec::new();
    let asked = until_asked(&mut backend, &mut seen).await;
    // While the questions wait, the live card already shows them, and says it awaits
    // input (its `state` has only `running` and `finished`).
    let waiting = loop {
        if let Incoming::Event {
            event: Event::ToolCard(e),
            ..
        } = next(&mut backend).await
            && e.card.state == CardState::Running
            && !e.card.blocks.is_empty()
        {
            break e.card;
        }
    };
    let expected_questions = [
        ("Question", "Database: Which database?"),
        ("Options", "one of: Postgres (a server) | SQLite (a file)"),
    ];
    let waiting_rows = rows(&waiting);
    assert_eq!(
        waiting_rows[0],
        ("State".to_owned(), "awaiting input".to_owned())
    );
    assert_eq!(
        waiting_rows[1..3],
        expected_questions.map(|(l, v)| (l.to_owned(), v.to_owned()))
    );
    assert_eq!(
        waiting_rows[3],
        ("Answer".to_owned(), "awaiting the answer".to_owned())
    );
    // The log holds the phase too: claimed, then awaiting the person's input.
    assert_eq!(phases(&env, &session, "q1"), ["running", "awaiting_input"]);
    let good = vec![reply(&["SQLite"], None), reply(&[], Some("none needed"))];
    answer(&mut backend, &asked, Some(good)).await.unwrap();
    let finished = until_finished(&mut backend, &mut seen).await;
    // Settled, the call's phases are the same and its result follows them.
    assert_eq!(phases(&env, &session, "q1"), ["running", "awaiting_input"]);
    assert_eq!(result_of(&env, &session, "q1")["summary"], "answered");
    let last = seen
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::ToolCard(e) => Some(e.card.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(last.state, CardState::Finished);
    assert_eq!(last.tool_kind, ToolKind::Other);
    assert_eq!(last.changes, Changes::NotApplicable);
    let answered = [
        ("Question", "Database: Which database?"),
        ("Options", "one of: Postgres (a server) | SQLite (a file)"),
        ("Answer", "SQLite"),
        ("Question", "Which extras?"),
        ("Options", "any of: cache | metrics | tracing"),
        ("Answer", "other: none needed"),
    ]
    .map(|(l, v)| (l.to_owned(), v.to_owned()));
    assert_eq!(rows(&last), answered);
    // The saved card, projected from the log, keeps the same.
    let saved = saved_cards(
        &mut backend,
        &session,
        finished.revision.as_deref().unwrap(),
    )
    .await;
    assert_eq!(saved.len(), 1);
    assert_eq!(rows(&saved[0]), answered);
    assert_eq!(saved[0].changes, Changes::NotApplicable);
    shutdown_clean(&mut backend).await;
}
