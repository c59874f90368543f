//! Questions to the user (`user.questions`): what an `ask_user` call asks, checked; the
//! gate between a run's open question and `question.answer`; and what the model is
//! told of the answers.
//!
//! A question set is open from just before `question.asked` until exactly one thing
//! settles it: the first valid answer (or decline), its expiry, or the run's
//! cancellation (which is also what a lost client brings). Every later answer is stale.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use magi_protocol::limits::{
    QUESTION_OPTIONS_MAX, QUESTION_OPTIONS_MIN, QUESTION_TEXT_BYTES, QUESTIONS_PER_CALL,
};
use magi_protocol::messages::{Question, QuestionReply};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The tool's name.
pub const ASK_USER_TOOL: &str = "ask_user";

/// What the model reads about the tool.
pub const ASK_USER_DESCRIPTION: &str = "Ask the user one to four questions, each with two \
to six options to choose from, and wait for the answers. The user may always answer in \
their own words instead, or decline. Use it when a decision is the user's to make.";

/// The JSON Schema of the tool's arguments.
pub fn ask_user_parameters() -> serde_json::Value {
    let text =
        serde_json::json!({ "type": "string", "minLength": 1, "maxLength": QUESTION_TEXT_BYTES });
    serde_json::json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": QUESTIONS_PER_CALL,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": text,
                        "header": text,
                        "options": {
                            "type": "array",
                            "minItems": QUESTION_OPTIONS_MIN,
                            "maxItems": QUESTION_OPTIONS_MAX,
                            "items": {
                                "type": "object",
                                "properties": { "label": text, "description": text },
                                "required": ["label"],
                                "additionalProperties": false
                            }
                        },
                        "multi_select": { "type": "boolean" }
                    },
                    "required": ["question", "options"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

/// A text of a question within its bound and without control characters.
fn text_ok(text: &str) -> bool {
    !text.trim().is_empty()
        && text.len() <= QUESTION_TEXT_BYTES
        && !magi_protocol::text::has_control(text)
}

/// The questions an `ask_user` call's arguments ask, checked: 1–4 questions of 2–6
/// options with distinct labels, every text 1–1,024 bytes without control characters.
/// Err says what is wrong, for the model.
pub fn parse_questions(arguments: &str) -> Result<Vec<Question>, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Arguments {
        questions: Vec<Question>,
    }
    let parsed: Arguments = serde_json::from_str(arguments)
        .map_err(|e| format!("The arguments do not match the tool's schema: {e}."))?;
    let questions = parsed.questions;
    if questions.is_empty() || questions.len() > QUESTIONS_PER_CALL {
        return Err(format!(
            "Ask 1 to {QUESTIONS_PER_CALL} questions; {} were given.",
            questions.len()
        ));
    }
    for (n, q) in questions.iter().enumerate() {
        let n = n + 1;
        let count = q.options.len();
        if !(QUESTION_OPTIONS_MIN..=QUESTION_OPTIONS_MAX).contains(&count) {
            return Err(format!(
                "Question {n} has {count} options; give {QUESTION_OPTIONS_MIN} to \
                 {QUESTION_OPTIONS_MAX}."
            ));
        }
        let texts_ok = text_ok(&q.question)
            && q.header.as_deref().is_none_or(text_ok)
            && q.options
                .iter()
                .all(|o| text_ok(&o.label) && o.description.as_deref().is_none_or(text_ok));
        if !texts_ok {
            return Err(format!(
                "Question {n} has an empty text, a control character or a text over \
                 {QUESTION_TEXT_BYTES} bytes."
            ));
        }
        let mut labels = std::collections::HashSet::new();
        if !q.options.iter().all(|o| labels.insert(o.label.as_str())) {
            return Err(format!("Question {n} repeats an option's label."));
        }
    }
    Ok(questions)
}

/// Whether `replies` answer `questions`: one per question in order, each naming known
/// labels at most once, one label at most unless the question is multi-select, a free
/// answer within the bound, and something chosen or said.
pub fn replies_fit(questions: &[Question], replies: &[QuestionReply]) -> bool {
    questions.len() == replies.len()
        && questions.iter().zip(replies).all(|(q, r)| {
            let mut seen = std::collections::HashSet::new();
            let labels_ok = r.selected.iter().all(|label| {
                seen.insert(label.as_str()) && q.options.iter().any(|o| o.label == *label)
            });
            let count_ok = q.multi_select || r.selected.len() <= 1;
            let other_ok = r
                .other
                .as_deref()
                .is_none_or(|o| !o.trim().is_empty() && o.len() <= QUESTION_TEXT_BYTES);
            labels_ok && count_ok && other_ok && (!r.selected.is_empty() || r.other.is_some())
        })
}

/// How an open question set was settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionOutcome {
    /// The person answered, one reply per question.
    Answered(Vec<QuestionReply>),
    /// The person declined (`answers: null`).
    Declined,
    /// Nobody answered before it expired (declined).
    Expired,
    /// The run was cancelled or its client went away first (declined).
    Cancelled,
}

impl QuestionOutcome {
    /// What the model is told: the answers, or that there are none and why.
    pub fn for_model(&self, questions: &[Question]) -> String {
        match self {
            QuestionOutcome::Answered(replies) => {
                let mut text = String::from("The user answered:");
                for (q, r) in questions.iter().zip(replies) {
                    text.push_str(&format!("\n- {}: ", q.question));
                    let mut parts: Vec<String> = r.selected.clone();
                    if let Some(other) = &r.other {
                        parts.push(format!("(in their own words) {other}"));
                    }
                    text.push_str(&parts.join("; "));
                }
                text
            }
            QuestionOutcome::Declined => "The user declined to answer.".into(),
            QuestionOutcome::Expired => {
                "The user did not answer in time; the questions were declined.".into()
            }
            QuestionOutcome::Cancelled => {
                "The questions were withdrawn before the user answered.".into()
            }
        }
    }

    /// The short summary of the call.
    pub fn summary(&self) -> &'static str {
        match self {
            QuestionOutcome::Answered(_) => "answered",
            QuestionOutcome::Declined => "declined",
            QuestionOutcome::Expired => "declined; no answer in time",
            QuestionOutcome::Cancelled => "declined; cancelled",
        }
    }
}

/// Why an answer was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No open question set of that ID: unknown, answered, expired or withdrawn.
    Stale,
    /// The replies do not fit the questions.
    Invalid,
}

struct Open {
    questions: Vec<Question>,
    sender: oneshot::Sender<Option<Vec<QuestionReply>>>,
}

/// The open question sets of one run. Cloning shares it.
#[derive(Clone, Default)]
pub struct QuestionGate {
    open: Arc<Mutex<HashMap<String, Open>>>,
}

impl std::fmt::Debug for QuestionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuestionGate").finish_non_exhaustive()
    }
}

/// An open question set being waited for.
pub struct QuestionWait {
    gate: QuestionGate,
    question_id: String,
    receiver: oneshot::Receiver<Option<Vec<QuestionReply>>>,
}

impl QuestionGate {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Open>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens `question_id` for one answer. Call it before announcing the questions, so
    /// an answer racing the announcement is not lost.
    pub fn open(&self, question_id: &str, questions: Vec<Question>) -> QuestionWait {
        let (sender, receiver) = oneshot::channel();
        self.lock()
            .insert(question_id.to_owned(), Open { questions, sender });
        QuestionWait {
            gate: self.clone(),
            question_id: question_id.to_owned(),
            receiver,
        }
    }

    /// Delivers an answer (`None` declines). A set not open is stale; replies that do
    /// not fit its questions are invalid and leave it open.
    pub fn answer(
        &self,
        question_id: &str,
        replies: Option<Vec<QuestionReply>>,
    ) -> Result<(), Refusal> {
        let mut open = self.lock();
        let Some(entry) = open.get(question_id) else {
            return Err(Refusal::Stale);
        };
        if replies
            .as_deref()
            .is_some_and(|r| !replies_fit(&entry.questions, r))
        {
            return Err(Refusal::Invalid);
        }
        match open.remove(question_id) {
            Some(entry) => entry.sender.send(replies).map_err(|_| Refusal::Stale),
            None => Err(Refusal::Stale),
        }
    }
}

impl QuestionWait {
    /// Waits for the answer, the expiry or cancellation, whichever comes first; the
    /// set is closed when this returns, so later answers are stale.
    pub async fn settled(self, expiry: Duration, cancel: &CancellationToken) -> QuestionOutcome {
        let QuestionWait {
            gate,
            question_id,
            receiver,
        } = self;
        let outcome = tokio::select! {
            answered = receiver => match answered {
                Ok(Some(replies)) => QuestionOutcome::Answered(replies),
                Ok(None) => QuestionOutcome::Declined,
                Err(_) => QuestionOutcome::Cancelled,
            },
            () = tokio::time::sleep(expiry) => QuestionOutcome::Expired,
            () = cancel.cancelled() => QuestionOutcome::Cancelled,
        };
        gate.lock().remove(&question_id);
        outcome
    }
}

#[cfg(test)]
mod tests;
