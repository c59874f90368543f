//! Responses as the client receives them, and the answers still to come: a raw
//! request's response, a typed request's result.

use std::marker::PhantomData;

use magi_protocol::{ErrorCode, Request};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;

use super::negotiation::Negotiation;
use crate::ClientError;

/// A response as the client received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Its sequence number.
    pub seq: u64,
    /// The request ID it answers, or `None` for `id=null`.
    pub id: Option<String>,
    /// The result, or the error code.
    pub outcome: Result<Value, ErrorCode>,
}

impl Response {
    /// The result as `T`, or the error code; a result of another shape is an error.
    pub fn parse<T: DeserializeOwned>(self) -> Result<Result<T, ErrorCode>, ClientError> {
        match self.outcome {
            Ok(value) => serde_json::from_value(value)
                .map(Ok)
                .map_err(|_| ClientError::UnexpectedResult),
            Err(code) => Ok(Err(code)),
        }
    }
}

/// A response that has not arrived yet.
pub struct PendingResponse {
    pub(super) id: String,
    pub(super) receiver: oneshot::Receiver<Result<Response, ClientError>>,
}

impl PendingResponse {
    /// The request ID this waits for.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits for the response.
    pub async fn response(self) -> Result<Response, ClientError> {
        self.receiver.await.unwrap_or(Err(ClientError::Closed))
    }
}

/// The answer to a typed request that has not arrived yet.
pub struct PendingCall<R> {
    pub(super) pending: PendingResponse,
    pub(super) negotiation: Option<Negotiation>,
    pub(super) method: PhantomData<fn() -> R>,
}

impl<R: Request> PendingCall<R> {
    /// The request ID this waits for.
    pub fn id(&self) -> &str {
        self.pending.id()
    }

    /// Waits for the answer: the result, or the error code.
    pub async fn result(self) -> Result<Result<R::Result, ErrorCode>, ClientError> {
        let response = self.pending.response().await?;
        if let (Some(negotiation), Ok(result)) = (self.negotiation, &response.outcome) {
            negotiation.admitted(result)?;
        }
        response.parse()
    }
}
