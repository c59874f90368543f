//! The question prompt of `exec` (`user.questions`): the model's questions are put to
//! the person at the terminal, on stderr, and answered on stdin, one question at a
//! time. With no terminal on stdin nobody can be asked: the questions are declined and
//! stderr says so. Everything waits at most until the questions expire; no answer by
//! then, or an empty line, declines them all.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Duration;

use magi_protocol::limits::{QUESTION_EXPIRY_MS, QUESTION_TEXT_BYTES};
use magi_protocol::messages::{Question, QuestionAnswerParams, QuestionAsked, QuestionReply};
use tokio::time::Instant;

use super::approval::{read_line, show};

/// Asks `asked` and returns the answer (or decline) to send.
pub(super) async fn answer(asked: &QuestionAsked) -> QuestionAnswerParams {
    let answers = if std::io::stdin().is_terminal() {
        let deadline = Instant::now() + Duration::from_millis(QUESTION_EXPIRY_MS);
        let answers = ask(&asked.questions, deadline).await;
        if answers.is_none() {
            eprintln!("(no answer; the questions were declined)");
        }
        answers
    } else {
        eprintln!("magi-code exec: the model asked a question: declined: no terminal to ask");
        None
    };
    QuestionAnswerParams {
        session_id: asked.session_id.clone(),
        run_id: asked.run_id.clone(),
        question_id: asked.question_id.clone(),
        answers,
    }
}

/// Asks each question in turn; none when the person declined, the questions expired
/// or stdin closed.
async fn ask(questions: &[Question], deadline: Instant) -> Option<Vec<QuestionReply>> {
    let mut replies = Vec::with_capacity(questions.len());
    for question in questions {
        let mut prompt = String::from("\nmagi-code exec: the model asks\n");
        if let Some(header) = &question.header {
            let _ = writeln!(prompt, "[{header}]");
        }
        let _ = writeln!(prompt, "{}", question.question);
        for (n, option) in question.options.iter().enumerate() {
            match &option.description {
                Some(description) => {
                    let _ = writeln!(prompt, "  [{}] {} — {description}", n + 1, option.label);
                }
                None => {
                    let _ = writeln!(prompt, "  [{}] {}", n + 1, option.label);
                }
            }
        }
        let how = if question.multi_select {
            "numbers separated by commas"
        } else {
            "a number"
        };
        let _ = write!(
            prompt,
            "Choice ({how}, or an answer in your own words; an empty line declines): "
        );
        show(&prompt);
        let line = read_line(deadline).await?;
        replies.push(parse_reply(question, &line)?);
    }
    Some(replies)
}

/// The reply a line gives: the options its numbers name (one unless multi-select), or
/// else the line as a free answer; none for an empty line (a decline).
fn parse_reply(question: &Question, line: &str) -> Option<QuestionReply> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let picks: Option<Vec<usize>> = line
        .split(',')
        .map(|n| n.trim().parse::<usize>().ok())
        .collect();
    let labels: Option<Vec<String>> = picks.and_then(|picks| {
        let mut labels: Vec<String> = Vec::new();
        for n in picks {
            let label = &question.options.get(n.checked_sub(1)?)?.label;
            if !labels.contains(label) {
                labels.push(label.clone());
            }
        }
        (question.multi_select || labels.len() == 1).then_some(labels)
    });
    Some(match labels {
        Some(selected) => QuestionReply {
            selected,
            other: None,
        },
        None => QuestionReply {
            selected: Vec::new(),
            other: Some(bounded(line)),
        },
    })
}

/// `text` cut to the protocol's bound, on a character boundary.
fn bounded(text: &str) -> String {
    let mut end = text.len().min(QUESTION_TEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use magi_protocol::messages::QuestionOption;

    fn question(multi_select: bool) -> Question {
        Question {
            question: "Which?".into(),
            header: None,
            options: ["a", "b", "c"]
                .map(|label| QuestionOption {
                    label: label.into(),
                    description: None,
                })
                .to_vec(),
            multi_select,
        }
    }

    fn picked(labels: &[&str]) -> Option<QuestionReply> {
        Some(QuestionReply {
            selected: labels.iter().map(|l| (*l).to_owned()).collect(),
            other: None,
        })
    }

    fn other(text: &str) -> Option<QuestionReply> {
        Some(QuestionReply {
            selected: Vec::new(),
            other: Some(text.into()),
        })
    }

    #[test]
    fn numbers_pick_options_and_anything_else_is_a_free_answer() {
        assert_eq!(parse_reply(&question(false), " 2\n"), picked(&["b"]));
        assert_eq!(parse_reply(&question(true), "3, 1, 3"), picked(&["c", "a"]));
        // Two picks of a single choice, or a number out of range, are words.
        assert_eq!(parse_reply(&question(false), "1,2"), other("1,2"));
        assert_eq!(parse_reply(&question(false), "4"), other("4"));
        assert_eq!(parse_reply(&question(false), "0"), other("0"));
        assert_eq!(parse_reply(&question(false), "neither"), other("neither"));
        assert_eq!(parse_reply(&question(true), "  \n"), None);
    }
}
