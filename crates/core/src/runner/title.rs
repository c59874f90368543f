//! Session titles: after a completed turn of an untitled session, the model is asked for
//! a short title with one small tool-less request, sent only after the run's terminal
//! event so that the turn never waits for it (and a single-slot local server never
//! queues the turn behind it).
//!
//! The request carries no system instructions and no tools: one user message with the
//! turn's prompt and reply, each cut to [`SOURCE_BYTES`]. The answer's first non-empty
//! line, without quotes or a `Title:` label, redacted and sanitized like any listed
//! title and cut to `title_chars`, becomes the title; a failure, a timeout or an answer
//! that is not a safe title leaves the session untitled. The runner hands the outcome to
//! the server ([`TitleOutcome`]), which records it once it holds the sessions again.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use magi_protocol::limits::TITLE_CHARS;
use magi_protocol::text::redact_values;
use magi_provider::{Item, ModelClient, ModelEvent, ModelRequest};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::estimate::BYTES_PER_TOKEN;
use super::text::bounded;
use crate::discovery::safe_title;

/// Longest piece of the prompt and of the reply the title request carries, in bytes.
const SOURCE_BYTES: usize = 2048;
/// Most answer text collected, in bytes: a title is one short line.
const ANSWER_BYTES: usize = 1024;
/// The most tokens a title request is estimated at: its prompt and the two pieces it
/// carries, at [`BYTES_PER_TOKEN`] bytes a token; the room its answer may take is what
/// that leaves in the window.
pub(super) const REQUEST_TOKENS: usize =
    (TITLE_PROMPT.len() + 2 * SOURCE_BYTES).div_ceil(BYTES_PER_TOKEN);
/// Longest the title request may take, retries included; then it is abandoned.
pub(super) const TITLE_WAIT: Duration = Duration::from_secs(30);

/// What the model is asked.
const TITLE_PROMPT: &str = "Write a title for the conversation below: at most 50 \
    characters, in the language of the request, naming the task. Answer with the title \
    alone, on one line, without quotes.";

/// Where the runner sends a title it obtained (the server records it), and which
/// sessions have their title request under way.
///
/// A session is asked for a title at most once at a time: a turn that ends while an
/// earlier turn's request is still unanswered asks for none. The request is under way
/// from the turn that plans it until it fails (the job releases it) or its title was
/// recorded or could not be (the server releases it); an untitled session is asked
/// again only after that.
#[derive(Debug, Clone)]
pub struct TitleSink {
    sender: mpsc::Sender<TitleOutcome>,
    asking: Arc<Mutex<HashSet<String>>>,
}

impl TitleSink {
    /// A sink sending the titles it is given to `sender`.
    pub fn new(sender: mpsc::Sender<TitleOutcome>) -> TitleSink {
        TitleSink {
            sender,
            asking: Arc::default(),
        }
    }

    fn asking(&self) -> MutexGuard<'_, HashSet<String>> {
        self.asking.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Claims `session_id`'s title request; false when one is already under way.
    pub(super) fn claim(&self, session_id: &str) -> bool {
        self.asking().insert(session_id.to_owned())
    }

    /// Ends `session_id`'s title request: it failed, or its title was recorded or could
    /// not be.
    pub fn release(&self, session_id: &str) {
        self.asking().remove(session_id);
    }
}

/// A title the model gave for a session, ready to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TitleOutcome {
    /// The session it names.
    pub session_id: String,
    /// The title: safe to list, at most `title_chars` characters.
    pub title: String,
}

/// One title request to make after a turn.
pub(super) struct TitleJob {
    pub(super) client: Arc<dyn ModelClient>,
    pub(super) model: String,
    /// The credentials redacted from the answer.
    pub(super) secrets: Vec<String>,
    pub(super) session_id: String,
    pub(super) prompt: String,
    pub(super) reply: String,
    /// The request's output bound (`Agent::output_bound`).
    pub(super) max_output_tokens: Option<u64>,
    pub(super) sink: TitleSink,
}

impl TitleJob {
    /// What the model is asked: the prompt, and the reply when there is one (a request
    /// made beside the turn has only the prompt).
    fn question(&self) -> String {
        let request = bounded(&self.prompt, SOURCE_BYTES);
        if self.reply.is_empty() {
            return format!("{TITLE_PROMPT}\n\nRequest:\n{request}");
        }
        let reply = bounded(&self.reply, SOURCE_BYTES);
        format!("{TITLE_PROMPT}\n\nRequest:\n{request}\n\nReply:\n{reply}")
    }

    /// Asks the model, within [`TITLE_WAIT`], and hands a usable title to the sink.
    pub(super) async fn run(self) {
        let request = ModelRequest {
            model: self.model.clone(),
            instructions: None,
            items: vec![Item::User {
                text: self.question(),
            }],
            tools: Vec::new(),
            reasoning_summaries: false,
            reasoning: None,
            max_output_tokens: self.max_output_tokens,
            cache_key: None,
        };
        let (events, mut received) = mpsc::channel(64);
        let cancel = CancellationToken::new();
        let collect = async {
            let mut text = String::new();
            while let Some(event) = received.recv().await {
                if let ModelEvent::TextDelta(delta) = event
                    && text.len() <= ANSWER_BYTES
                {
                    text.push_str(&delta);
                }
            }
            text
        };
        let asked = async { tokio::join!(self.client.stream(&request, events, &cancel), collect) };
        let title = match tokio::time::timeout(TITLE_WAIT, asked).await {
            Ok((Ok(()), answer)) => title_of(&answer, &self.secrets),
            _ => None,
        };
        let Some(title) = title else {
            // No title: a later turn of the still untitled session may ask again.
            self.sink.release(&self.session_id);
            return;
        };
        let outcome = TitleOutcome {
            session_id: self.session_id.clone(),
            title,
        };
        // The server releases the request once it recorded the title; a server that is
        // gone has nothing left to record it in.
        if self.sink.sender.send(outcome).await.is_err() {
            self.sink.release(&self.session_id);
        }
    }
}

/// Asks for the title `job` plans, if any; a title request that panics asks for none.
pub(super) async fn ask(job: Option<TitleJob>) {
    let Some(job) = job else {
        return;
    };
    let (sink, session_id) = (job.sink.clone(), job.session_id.clone());
    if magi_crash::contained(job.run()).await.is_err() {
        sink.release(&session_id);
    }
}

/// Longest the ordering point waits for the protocol loop to take the title.
const TAKEN_WAIT: Duration = Duration::from_secs(10);

/// Asks for the title before the run's terminal event, then waits (at most
/// [`TAKEN_WAIT`]) until the protocol loop took what it sent: the ordering point
/// `title_first` of `crate::fault`, for tests. The channel's every slot free again is
/// the sign that the loop received it.
pub(super) async fn ask_first(job: Option<TitleJob>) {
    let Some(sink) = job.as_ref().map(|job| job.sink.clone()) else {
        return;
    };
    ask(job).await;
    let slots = sink.sender.max_capacity();
    let _ = tokio::time::timeout(TAKEN_WAIT, sink.sender.reserve_many(slots)).await;
}

/// The title an answer gives: its first non-empty line without quotes or a `Title:`
/// label, redacted, then held to the rules of a listed title. `None` when nothing safe
/// is left.
pub(super) fn title_of(answer: &str, secrets: &[String]) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = strip_label(line);
    let line = line.trim_matches(|c| matches!(c, '"' | '\'' | '`' | '*' | '#' | ' '));
    let redacted = redact_values(line, secrets);
    // Cut first, so a long line is shortened rather than refused as over-long input.
    let cut: String = redacted.chars().take(TITLE_CHARS).collect();
    safe_title(&cut)
}

/// `line` without a leading `Title:` label, in any case.
fn strip_label(line: &str) -> &str {
    match line.split_once(':') {
        Some((label, rest)) if label.trim().eq_ignore_ascii_case("title") => rest.trim(),
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magi_provider::ProviderError;

    /// A model that answers `answer`, or fails when there is none.
    struct Model {
        answer: Option<&'static str>,
    }

    impl ModelClient for Model {
        fn stream<'a>(
            &'a self,
            _request: &'a ModelRequest,
            events: mpsc::Sender<ModelEvent>,
            _cancel: &'a CancellationToken,
        ) -> magi_provider::BoxFuture<'a, Result<(), magi_provider::Failure>> {
            Box::pin(async move {
                let Some(answer) = self.answer else {
                    return Err(ProviderError::Cancelled.into());
                };
                let _ = events.send(ModelEvent::TextDelta(answer.to_owned())).await;
                Ok(())
            })
        }
    }

    fn job(answer: Option<&'static str>, sink: &TitleSink) -> TitleJob {
        TitleJob {
            client: Arc::new(Model { answer }),
            model: "m".into(),
            secrets: Vec::new(),
            session_id: "s".into(),
            prompt: "p".into(),
            reply: "r".into(),
            max_output_tokens: None,
            sink: sink.clone(),
        }
    }

    #[tokio::test]
    async fn a_session_has_one_title_request_until_it_fails_or_its_title_is_recorded() {
        let (sender, mut titles) = mpsc::channel(4);
        let sink = TitleSink::new(sender);
        assert!(sink.claim("s"));
        assert!(!sink.claim("s"), "one request at a time");
        assert!(sink.claim("other"), "per session");
        // A failed request ends it: the session may be asked again.
        job(None, &sink).run().await;
        assert!(titles.try_recv().is_err());
        assert!(sink.claim("s"));
        // An answered one stays under way until the server recorded its title.
        job(Some("A title"), &sink).run().await;
        assert_eq!(titles.recv().await.unwrap().title, "A title");
        assert!(!sink.claim("s"));
        sink.release("s");
        assert!(sink.claim("s"));
    }

    #[test]
    fn an_answer_becomes_a_bounded_safe_title() {
        let none: &[String] = &[];
        assert_eq!(
            title_of("\n  \"Fix the parser\"  \nmore", none).as_deref(),
            Some("Fix the parser")
        );
        assert_eq!(
            title_of("Title: Add a cache", none).as_deref(),
            Some("Add a cache")
        );
        assert_eq!(
            title_of("**Speed up tests**", none).as_deref(),
            Some("Speed up tests")
        );
        let long = "word ".repeat(40);
        let title = title_of(&long, none).unwrap();
        assert!(title.chars().count() <= TITLE_CHARS);
        assert!(!title.ends_with(' '));
        assert_eq!(title_of("", none), None);
        assert_eq!(title_of("\"\"", none), None);
        // Secret-looking titles are not listed, so they are not recorded either.
        assert_eq!(title_of("use sk-abc123def456", none), None);
        let secrets = vec!["hunter2-secret-value".to_owned()];
        let title = title_of("Login with hunter2-secret-value", &secrets).unwrap();
        assert!(!title.contains("hunter2"), "{title}");
    }
}
