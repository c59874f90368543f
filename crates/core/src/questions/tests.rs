use super::*;
use magi_protocol::limits::QUESTION_EXPIRY_MS;

fn runtime(paused: bool) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(paused)
        .build()
        .unwrap()
}

fn asked() -> Vec<Question> {
    parse_questions(
        r#"{"questions":[
            {"question":"Which database?","header":"DB","options":[
                {"label":"Postgres","description":"the server"},{"label":"SQLite"}]},
            {"question":"Which extras?","options":[{"label":"a"},{"label":"b"},{"label":"c"}],
             "multi_select":true}]}"#,
    )
    .unwrap()
}

fn reply(selected: &[&str], other: Option<&str>) -> QuestionReply {
    QuestionReply {
        selected: selected.iter().map(|s| (*s).to_owned()).collect(),
        other: other.map(str::to_owned),
    }
}

#[test]
fn arguments_are_checked_with_a_reason_for_the_model() {
    assert_eq!(asked().len(), 2);
    let one_option = r#"{"questions":[{"question":"q","options":[{"label":"a"}]}]}"#;
    assert!(
        parse_questions(one_option)
            .unwrap_err()
            .contains("1 options")
    );
    let repeated = r#"{"questions":[{"question":"q","options":[{"label":"a"},{"label":"a"}]}]}"#;
    assert!(parse_questions(repeated).unwrap_err().contains("repeats"));
    let five = format!(
        r#"{{"questions":[{}]}}"#,
        [r#"{"question":"q","options":[{"label":"a"},{"label":"b"}]}"#; 5].join(",")
    );
    assert!(parse_questions(&five).unwrap_err().contains("5 were given"));
    assert!(parse_questions(r#"{"questions":[],"x":1}"#).is_err());
    let control =
        r#"{"questions":[{"question":"q\u0007","options":[{"label":"a"},{"label":"b"}]}]}"#;
    assert!(parse_questions(control).is_err());
}

#[test]
fn replies_must_fit_the_questions() {
    let q = asked();
    assert!(replies_fit(
        &q,
        &[reply(&["SQLite"], None), reply(&["a", "c"], None)]
    ));
    assert!(replies_fit(
        &q,
        &[reply(&[], Some("MySQL")), reply(&["b"], Some("and d"))]
    ));
    // One reply per question.
    assert!(!replies_fit(&q, &[reply(&["SQLite"], None)]));
    // Unknown label, two picks of a single choice, a repeated pick, nothing said.
    assert!(!replies_fit(
        &q,
        &[reply(&["Oracle"], None), reply(&["a"], None)]
    ));
    assert!(!replies_fit(
        &q,
        &[reply(&["SQLite", "Postgres"], None), reply(&["a"], None)]
    ));
    assert!(!replies_fit(
        &q,
        &[reply(&["SQLite"], None), reply(&["a", "a"], None)]
    ));
    assert!(!replies_fit(&q, &[reply(&[], None), reply(&["a"], None)]));
    assert!(!replies_fit(
        &q,
        &[reply(&[], Some(" ")), reply(&["a"], None)]
    ));
}

#[test]
fn one_answer_settles_and_the_rest_are_stale() {
    let gate = QuestionGate::default();
    assert_eq!(gate.answer("q1", None), Err(Refusal::Stale));
    let wait = gate.open("q1", asked());
    let bad = vec![reply(&["Oracle"], None), reply(&["a"], None)];
    assert_eq!(gate.answer("q1", Some(bad)), Err(Refusal::Invalid));
    let good = vec![reply(&["SQLite"], None), reply(&["a"], None)];
    assert_eq!(gate.answer("q1", Some(good.clone())), Ok(()));
    assert_eq!(gate.answer("q1", None), Err(Refusal::Stale));
    let outcome =
        runtime(false).block_on(wait.settled(Duration::from_secs(60), &CancellationToken::new()));
    assert_eq!(outcome, QuestionOutcome::Answered(good));
    assert!(
        outcome
            .for_model(&asked())
            .contains("- Which database?: SQLite")
    );
}

#[test]
fn decline_expiry_and_cancellation_settle_as_declined() {
    let gate = QuestionGate::default();
    let wait = gate.open("q1", asked());
    assert_eq!(gate.answer("q1", None), Ok(()));
    let outcome =
        runtime(false).block_on(wait.settled(Duration::from_secs(60), &CancellationToken::new()));
    assert_eq!(outcome, QuestionOutcome::Declined);

    let expiry = Duration::from_millis(QUESTION_EXPIRY_MS);
    let rt = runtime(true);
    let outcome = rt.block_on(async {
        let wait = gate.open("q2", asked());
        let started = tokio::time::Instant::now();
        let outcome = wait.settled(expiry, &CancellationToken::new()).await;
        // The paused clock jumped exactly to the expiry: 15 minutes, not a moment less.
        assert_eq!(started.elapsed(), expiry);
        outcome
    });
    assert_eq!(outcome, QuestionOutcome::Expired);
    assert_eq!(
        gate.answer("q2", None),
        Err(Refusal::Stale),
        "an expired question is stale"
    );

    let cancel = CancellationToken::new();
    cancel.cancel();
    let wait = gate.open("q3", asked());
    assert_eq!(
        runtime(false).block_on(wait.settled(expiry, &cancel)),
        QuestionOutcome::Cancelled
    );
    assert_eq!(gate.answer("q3", None), Err(Refusal::Stale));
}
