//! The scripted model of `--mock`: the loopback mock model server (`magi-testkit`)
//! speaking Chat Completions, answering each request with the next reply of a task's
//! scripted solution, so the whole suite runs offline and proves itself.
//!
//! It reports usage as a provider would, in made-up tokens of 4 bytes: input is the
//! request's conversation and tools, cached input the part of it that repeats the
//! previous request's beginning (what a prompt cache could serve), output the reply.
//! The figures measure what magi-code sends, not a real tokenizer.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use magi_testkit::prefix::{cache_eligible_bytes, segment_bytes};
use magi_testkit::{Format, MockServer, Reply};
use serde_json::Value;

use crate::task::Round;

/// Bytes of a made-up token.
const BYTES_PER_TOKEN: usize = 4;

/// The model the mock plays.
pub const MOCK_MODEL: &str = "eval-mock";

/// A running scripted model for one task.
pub struct MockModel {
    server: MockServer,
    script: Arc<Script>,
}

/// The replies left and the previous request, shared with the server's responder.
struct Script {
    rounds: Mutex<VecDeque<Round>>,
    previous: Mutex<Option<Value>>,
    /// Requests answered, for call IDs unique in the session.
    answered: AtomicUsize,
}

impl MockModel {
    /// Starts a server on the loopback interface answering with `solution`, reply by
    /// reply. A request after the last reply gets HTTP 400, which is not retried, so a
    /// run that wants more than the script ends failed.
    pub async fn start(solution: Vec<Round>) -> std::io::Result<MockModel> {
        let script = Arc::new(Script {
            rounds: Mutex::new(solution.into()),
            previous: Mutex::new(None),
            answered: AtomicUsize::new(0),
        });
        let shared = Arc::clone(&script);
        let server =
            MockServer::start_responder(Box::new(move |body: &Value| shared.reply(body))).await?;
        Ok(MockModel { server, script })
    }

    /// The base URL of its Chat Completions route, for `OPENAI_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.server.base_url()
    }

    /// Replies of the script no request asked for.
    pub fn replies_left(&self) -> usize {
        lock(&self.script.rounds).len()
    }
}

impl Script {
    fn reply(&self, body: &Value) -> Reply {
        let Some(round) = lock(&self.rounds).pop_front() else {
            return Reply::error(
                400,
                r#"{"error":{"message":"the scripted solution has no reply left","type":"invalid_request_error"}}"#,
            );
        };
        let request = self.answered.fetch_add(1, Ordering::Relaxed);
        let input = segment_bytes(Format::ChatCompletions, body);
        let cached = match lock(&self.previous).replace(body.clone()) {
            Some(previous) => cache_eligible_bytes(Format::ChatCompletions, &previous, body),
            None => 0,
        };
        let (reply, output) = match round {
            Round::Answer(text) => (Reply::stream().text([text.as_str()]), text.len()),
            Round::Calls(calls) => {
                let mut reply = Reply::stream();
                let mut output = 0;
                for (n, call) in calls.iter().enumerate() {
                    let arguments = call.arguments.to_string();
                    output += call.tool.len() + arguments.len();
                    reply = reply.tool_call(format!("call_{request}_{n}"), call.tool, [arguments]);
                }
                (reply, output)
            }
        };
        reply
            .usage(tokens(input), tokens(output))
            .cached(tokens(cached), 0)
    }
}

fn tokens(bytes: usize) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN) as u64
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every update is one push, pop or replace: a poisoned lock still holds a
    // consistent value.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
