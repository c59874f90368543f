//! JSON-RPC 2.0 envelopes: classifying what the client sent, and the agent's own
//! requests to the client (`session/request_permission`, `fs/*`) with their answers
//! correlated by ID.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol_schema::v1::{Error, RequestId};
use magi_protocol::limits::ACP_PENDING_REQUESTS;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::transport::Writer;

/// One message from the client, classified.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A request: it gets exactly one response.
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    /// A notification: it gets no response, not even an error.
    Notification { method: String, params: Value },
    /// The client's response to one of the agent's requests.
    Response {
        id: RequestId,
        outcome: Result<Value, Error>,
    },
    /// Not a valid JSON-RPC message: answered with this error (and the request's ID when
    /// one could be read).
    Invalid { id: RequestId, error: Error },
}

/// Classifies one line of input.
pub(crate) fn classify(line: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return Incoming::Invalid {
                id: RequestId::Null,
                error: Error::parse_error().data(json!(format!("not JSON: {e}"))),
            };
        }
    };
    let Value::Object(mut object) = value else {
        let why = if value.is_array() {
            "batches are not supported: send one JSON-RPC object per line"
        } else {
            "a JSON-RPC message is an object"
        };
        return invalid(RequestId::Null, why);
    };
    let id = match object.remove("id") {
        None => None,
        Some(Value::Null) => Some(RequestId::Null),
        Some(Value::String(s)) => Some(RequestId::Str(s)),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => Some(RequestId::Number(n)),
            None => return invalid(RequestId::Null, "`id` must be a string or an integer"),
        },
        Some(_) => return invalid(RequestId::Null, "`id` must be a string or an integer"),
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return invalid(id.unwrap_or(RequestId::Null), "`jsonrpc` must be \"2.0\"");
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Null | Value::Object(_) | Value::Array(_)) {
        return invalid(
            id.unwrap_or(RequestId::Null),
            "`params` must be an object or an array",
        );
    }
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request { id, method, params },
        (Some(Value::String(method)), None) => Incoming::Notification { method, params },
        (Some(_), id) => invalid(id.unwrap_or(RequestId::Null), "`method` must be a string"),
        (None, Some(id)) => {
            let outcome = match (object.remove("result"), object.remove("error")) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => match serde_json::from_value::<Error>(error) {
                    Ok(error) => Err(error),
                    Err(_) => return invalid(id, "`error` must be a JSON-RPC error object"),
                },
                _ => return invalid(id, "a response has exactly one of `result` and `error`"),
            };
            Incoming::Response { id, outcome }
        }
        (None, None) => invalid(RequestId::Null, "a message needs `method` or `id`"),
    }
}

fn invalid(id: RequestId, why: &str) -> Incoming {
    Incoming::Invalid {
        id,
        error: Error::invalid_request().data(json!(why)),
    }
}

/// A response to the client's request `id`.
pub(crate) fn response(id: &RequestId, outcome: Result<Value, Error>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

/// A notification to the client.
pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// Why one of the agent's requests got no result.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// The client answered with an error.
    Error(Error),
    /// No answer within the wait, or the connection ended.
    NoAnswer,
    /// Too many requests are waiting already.
    TooMany,
}

type Waiters = HashMap<i64, oneshot::Sender<Result<Value, Error>>>;

/// The agent's side of the connection: the writer and the requests sent to the client.
#[derive(Clone)]
pub(crate) struct Peer {
    writer: Writer,
    waiters: Arc<Mutex<Waiters>>,
    next_id: Arc<std::sync::atomic::AtomicI64>,
}

impl Peer {
    pub(crate) fn new(writer: Writer) -> Peer {
        Peer {
            writer,
            waiters: Arc::default(),
            next_id: Arc::default(),
        }
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, Waiters> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one message; false once the output is gone.
    pub(crate) async fn send(&self, message: Value) -> bool {
        self.writer.send(message).await
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) -> bool {
        self.send(notification(method, params)).await
    }

    /// Sends a request to the client and waits at most `wait` for its result.
    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        wait: Duration,
    ) -> Result<Value, Unanswered> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        {
            let mut waiters = self.waiters();
            if waiters.len() >= ACP_PENDING_REQUESTS {
                return Err(Unanswered::TooMany);
            }
            waiters.insert(id, sender);
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !self.send(message).await {
            self.waiters().remove(&id);
            return Err(Unanswered::NoAnswer);
        }
        let answer = tokio::time::timeout(wait, receiver).await;
        self.waiters().remove(&id);
        match answer {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(Unanswered::Error(error)),
            Ok(Err(_)) | Err(_) => Err(Unanswered::NoAnswer),
        }
    }

    /// Hands the client's response to the request waiting for it; false when none is
    /// (an unknown or late ID).
    pub(crate) fn answered(&self, id: &RequestId, outcome: Result<Value, Error>) -> bool {
        let RequestId::Number(id) = id else {
            return false;
        };
        match self.waiters().remove(id) {
            Some(waiter) => waiter.send(outcome).is_ok(),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use agent_client_protocol_schema::v1::ErrorCode;

    use super::*;

    fn error_of(line: &str) -> (RequestId, ErrorCode, String) {
        match classify(line.as_bytes()) {
            Incoming::Invalid { id, error } => (id, error.code, error.data.unwrap().to_string()),
            other => panic!("{line} classified as {other:?}"),
        }
    }

    #[test]
    fn malformed_messages_are_invalid_with_a_reason() {
        let cases = [
            ("{", ErrorCode::ParseError, "not JSON"),
            ("[]", ErrorCode::InvalidRequest, "batches"),
            ("3", ErrorCode::InvalidRequest, "is an object"),
            (
                r#"{"id":1,"method":"x"}"#,
                ErrorCode::InvalidRequest,
                "jsonrpc",
            ),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
                ErrorCode::InvalidRequest,
                "`id`",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
                ErrorCode::InvalidRequest,
                "`method`",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
                ErrorCode::InvalidRequest,
                "`params`",
            ),
            (
                r#"{"jsonrpc":"2.0"}"#,
                ErrorCode::InvalidRequest,
                "`method` or `id`",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1}"#,
                ErrorCode::InvalidRequest,
                "exactly one",
            ),
        ];
        for (line, code, why) in cases {
            let (_, got, data) = error_of(line);
            assert_eq!(got, code, "{line}");
            assert!(data.contains(why), "{line}: {data}");
        }
        let (id, _, _) = error_of(r#"{"id":"r7","method":"x"}"#);
        assert_eq!(id, RequestId::Str("r7".into()));
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let request = classify(br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}"#);
        assert!(matches!(
            request,
            Incoming::Request {
                id: RequestId::Number(3),
                ..
            }
        ));
        let note = classify(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#);
        assert!(matches!(note, Incoming::Notification { .. }));
        let answer =
            classify(br#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#);
        assert!(matches!(answer, Incoming::Response { outcome: Ok(_), .. }));
        let failed =
            classify(br#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"no"}}"#);
        assert!(matches!(
            failed,
            Incoming::Response {
                outcome: Err(_),
                ..
            }
        ));
    }
}
