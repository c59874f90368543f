//! `question.answer` (`user.questions`): the client's one answer to the questions a
//! run asked, routed to the run's question gate.

use magi_core::questions::Refusal;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{QuestionAnswerParams, QuestionAnswerResult, ResultBody};
use magi_protocol::names::is_valid_name;
use serde_json::value::RawValue;

use super::*;

/// The method a client answers questions with.
pub(super) const QUESTION_ANSWER_METHOD: &str = "question.answer";

impl Connection {
    /// Settles the active run's open question set with the client's answers (or its
    /// decline). Refused without effect when `user.questions` was not negotiated;
    /// replies that do not fit the questions are `invalid_params` and leave them open;
    /// a set not open (unknown, answered, expired, withdrawn, another run's) is
    /// `stale_question`.
    pub(super) fn question_answer(&self, params: &RawValue) -> Result<ResultBody, ErrorCode> {
        self.ready_for(self.has(Extension::UserQuestions))?;
        let params: QuestionAnswerParams = parse_params(params)?;
        if !is_valid_name(&params.question_id) {
            return Err(ErrorCode::InvalidParams);
        }
        let run = self
            .active_run(&params.session_id, &params.run_id)?
            .ok_or(ErrorCode::StaleQuestion)?;
        match run.questions.answer(&params.question_id, params.answers) {
            Ok(()) => Ok(ResultBody::QuestionAnswer(QuestionAnswerResult {
                recorded: true,
            })),
            Err(Refusal::Invalid) => Err(ErrorCode::InvalidParams),
            Err(Refusal::Stale) => Err(ErrorCode::StaleQuestion),
        }
    }
}
