//! `user.questions`: the model asks the person to choose (`ask_user`), the backend
//! tells the client with `question.asked`, and the client answers with
//! `question.answer` (docs/protocol/extensions.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One option of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// What the person picks, unique within its question.
    pub label: String,
    /// What picking it means, if the model said.
    #[serde(default)]
    pub description: Option<String>,
}

/// One question, as the model asked it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The question.
    pub question: String,
    /// A short heading, if the model gave one.
    #[serde(default)]
    pub header: Option<String>,
    /// Two to six options; an `other` free answer is always allowed besides.
    pub options: Vec<QuestionOption>,
    /// Whether more than one option may be picked.
    #[serde(default)]
    pub multi_select: bool,
}

/// Data of `question.asked`: the run waits for the person's answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionAsked {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The question set, as `question.answer` names it.
    pub question_id: String,
    /// One to four questions, as the model gave them.
    pub questions: Vec<Question>,
}

/// The answer to one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionReply {
    /// The labels picked: at most one unless the question is multi-select.
    pub selected: Vec<String>,
    /// A free answer besides or instead of the options.
    pub other: Option<String>,
}

/// Params of `question.answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionAnswerParams {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The question set answered.
    pub question_id: String,
    /// One answer per question, in order; `null` declines them all.
    pub answers: Option<Vec<QuestionReply>>,
}

/// Result of `question.answer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionAnswerResult {
    /// Always `true`: the answer settled the question.
    pub recorded: bool,
}

/// The `extensions["user.questions"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UserQuestionsDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// Most questions one call asks.
    pub questions: u64,
    /// Fewest options of one question.
    pub min_options: u64,
    /// Most options of one question.
    pub max_options: u64,
    /// Milliseconds a question waits for its answer before it is declined.
    pub question_expiry_ms: u64,
}

impl UserQuestionsDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> UserQuestionsDescriptor {
        use crate::limits::{QUESTION_EXPIRY_MS, QUESTION_OPTIONS_MAX, QUESTION_OPTIONS_MIN};
        UserQuestionsDescriptor {
            schema_version: 1,
            questions: crate::limits::QUESTIONS_PER_CALL as u64,
            min_options: QUESTION_OPTIONS_MIN as u64,
            max_options: QUESTION_OPTIONS_MAX as u64,
            question_expiry_ms: QUESTION_EXPIRY_MS,
        }
    }
}
