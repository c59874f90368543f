//! The blocks of an `ask_user` card (`user.questions`): each question with its
//! options, and the person's answer or how the questions were settled without one.
//! They stay after resolution, live and saved. While the questions wait, a first row
//! says the call is awaiting input: the card's `state` has only `running` and
//! `finished` (`tool.cards`), so the lifecycle's `awaiting_input` is said in a row.

use magi_protocol::cards::{STRING_BYTES, Subject};
use magi_protocol::messages::{Question, QuestionReply};

use super::Settlement;
use super::blocks::Context;
use super::labels::{ROW_ANSWER, ROW_OPTIONS, ROW_QUESTION, ROW_STATE};
use super::part::{Part, row};
use super::text::Notes;

/// The value of the state row while the questions wait for the person.
const AWAITING_INPUT: &str = "awaiting input";

impl Context<'_, '_> {
    pub(super) fn questions(
        &self,
        questions: &[Question],
        answers: Option<&[QuestionReply]>,
        settled: Option<&str>,
    ) -> Vec<Part> {
        let mut notes = Notes::default();
        let mut rows = Vec::new();
        if answers.is_none() && settled.is_none() && self.source.settlement == Settlement::Running {
            rows.push(row(ROW_STATE, Some(AWAITING_INPUT.to_owned())));
        }
        for (n, question) in questions.iter().enumerate() {
            let asked = match &question.header {
                Some(header) => format!("{header}: {}", question.question),
                None => question.question.clone(),
            };
            rows.push(row(
                ROW_QUESTION,
                Some(notes.text(Subject::Text, &asked, STRING_BYTES)),
            ));
            let options: Vec<String> = question
                .options
                .iter()
                .map(|o| match &o.description {
                    Some(description) => format!("{} ({description})", o.label),
                    None => o.label.clone(),
                })
                .collect();
            let choice = if question.multi_select {
                "any of"
            } else {
                "one of"
            };
            let listed = format!("{choice}: {}", options.join(" | "));
            rows.push(row(
                ROW_OPTIONS,
                Some(notes.text(Subject::Text, &listed, STRING_BYTES)),
            ));
            let answer = match (answers.and_then(|a| a.get(n)), settled) {
                (Some(reply), _) => {
                    let mut parts = reply.selected.clone();
                    if let Some(other) = &reply.other {
                        parts.push(format!("other: {other}"));
                    }
                    parts.join("; ")
                }
                (None, Some(how)) => how.to_owned(),
                (None, None) => "awaiting the answer".to_owned(),
            };
            rows.push(row(
                ROW_ANSWER,
                Some(notes.text(Subject::Text, &answer, STRING_BYTES)),
            ));
        }
        vec![Part::results(rows, notes)]
    }
}
