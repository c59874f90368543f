//! `ask_user` (`user.questions`): the call waits, in `awaiting_input`, for the
//! person's answers to its questions; the model is given them as the call's result.
//! A decline, the expiry, the run's cancellation and a lost client all settle the call
//! as declined. Its card shows the questions while they wait and keeps them, with the
//! answers, once settled.

use magi_protocol::limits::QUESTION_EXPIRY_MS;
use magi_protocol::messages::{Event, Question, QuestionAsked};
use magi_store::records::{RecordBody, ToolCallPhase};
use magi_tools::facts::Facts;
use magi_tools::{ToolOutput, ToolReport};

use super::reports::running_card;
use super::role::Role;
use super::{Call, CallService};
use crate::questions::{QuestionOutcome, parse_questions};
use crate::runner::live_cards::Snapshot;

impl CallService<'_, '_> {
    /// Asks the person the call's questions and waits for the one answer.
    pub(super) async fn ask_user(
        &mut self,
        role: &mut Role<'_>,
        call: &Call,
        activity_id: &str,
    ) -> ToolReport {
        let questions = match parse_questions(&call.arguments) {
            Ok(questions) => questions,
            Err(why) => {
                return ToolReport::from(ToolOutput {
                    content: format!("The questions were not asked. {why}"),
                    summary: "invalid questions".into(),
                    is_error: true,
                });
            }
        };
        // The call now waits on the person: recorded before the questions are
        // announced, as a call's wait for an approval is.
        self.journal.append(RecordBody::ToolCallState {
            turn_id: self.turn_id.to_owned(),
            call_id: call.call_id.clone(),
            state: ToolCallPhase::AwaitingInput,
            protection: None,
        });
        let question_id = uuid::Uuid::new_v4().to_string();
        // Opened before it is announced, so an answer racing the event is not lost.
        let wait = self.gates.questions.open(&question_id, questions.clone());
        let event = Event::QuestionAsked(Box::new(QuestionAsked {
            session_id: self.output.session_id().to_owned(),
            run_id: self.output.run_id().to_owned(),
            question_id,
            questions: questions.clone(),
        }));
        self.output.critical(event).await;
        // The card shows the questions while they wait for the person, and says so.
        let waiting = serde_json::to_value(questions_facts(&questions, None)).ok();
        let mut source = running_card(call, None, false);
        source.facts = waiting.as_ref();
        self.card(role, activity_id, Snapshot::Interim, source)
            .await;
        let expiry = std::time::Duration::from_millis(QUESTION_EXPIRY_MS);
        let outcome = wait.settled(expiry, &self.output.cancel).await;
        ToolReport {
            facts: Some(questions_facts(&questions, Some(&outcome))),
            ..ToolReport::from(ToolOutput {
                content: outcome.for_model(&questions),
                summary: outcome.summary().into(),
                is_error: false,
            })
        }
    }
}

/// The facts of an `ask_user` call: its questions and, once settled, the answers and
/// how.
fn questions_facts(questions: &[Question], outcome: Option<&QuestionOutcome>) -> Facts {
    Facts::Questions {
        questions: questions.to_vec(),
        answers: match outcome {
            Some(QuestionOutcome::Answered(replies)) => Some(replies.clone()),
            _ => None,
        },
        settled: outcome.map(|o| o.summary().to_owned()),
    }
}
