//! The transport shared by the three wire formats: one `reqwest` client with its
//! timeouts, the retry loop, status mapping, and feeding the SSE stream through a
//! format's decoder to the caller.

use std::time::Duration;

use bytes::Bytes;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use magi_protocol::limits::{
    PROVIDER_ATTEMPTS, PROVIDER_BACKOFF_MS, PROVIDER_CONNECT_TIMEOUT_MS, PROVIDER_MODEL_LOOKUP_MS,
    PROVIDER_RETRY_AFTER_MS, PROVIDER_RETRY_TOTAL_MS,
};

use std::sync::Arc;

use crate::codec::{Decode, secret};
use crate::failure::{Cause, Failure, Retry, cause_of};
use crate::sign_in::{Bearer, SignIn};
use crate::sse::SseParser;
use crate::{
    BoxFuture, Endpoint, ModelClient, ModelEvent, ModelRequest, ProviderError, WireFormat,
};
use crate::{anthropic, chat, codex, responses};

/// How long establishing a connection (TCP and TLS) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(PROVIDER_CONNECT_TIMEOUT_MS);
/// How long the provider may stay silent, before its headers or between two reads of
/// the stream. Long, because a reasoning model or a local server still processing a
/// large prompt can be quiet for minutes.
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// Attempts per request, the first included (retries happen only before any event).
pub const MAX_ATTEMPTS: u32 = PROVIDER_ATTEMPTS;
/// The wait before the first retry; it doubles for each further one.
pub const BASE_BACKOFF: Duration = Duration::from_millis(PROVIDER_BACKOFF_MS);
/// The longest `Retry-After` that is honoured; a provider that asks for more gets no
/// retry, since waiting less than it asked would only fail again.
pub const MAX_RETRY_AFTER: Duration = Duration::from_millis(PROVIDER_RETRY_AFTER_MS);
/// The most waiting across the retries of one request; a retry that would pass it is
/// not made.
pub const MAX_RETRY_WAIT: Duration = Duration::from_millis(PROVIDER_RETRY_TOTAL_MS);
/// The largest single SSE event accepted. A Responses API `response.completed` event
/// repeats the whole output, so this is well above the largest reply.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A model client speaking one wire format over HTTP.
pub(crate) struct HttpClient {
    /// The endpoint, for the model list a 404 is explained with.
    endpoint: Endpoint,
    format: WireFormat,
    /// The request URL, or why there is none (a base URL that does not parse).
    url: Result<Url, ProviderError>,
    /// The client, or why it could not be built.
    http: Result<reqwest::Client, ProviderError>,
    /// The authentication and version headers, marked sensitive.
    headers: Result<HeaderMap, ProviderError>,
    /// Where a signed-in provider's token comes from, asked before each request; the
    /// fixed headers above are then unused.
    sign_in: Option<Arc<dyn SignIn>>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the headers: they hold the credential.
        f.debug_struct("HttpClient")
            .field("format", &self.format)
            .field("url", &self.url.as_ref().map(Url::as_str))
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    pub(crate) fn new(endpoint: Endpoint) -> HttpClient {
        let base = endpoint.base_url.trim_end_matches('/');
        let url = match endpoint.format {
            WireFormat::OpenAiResponses | WireFormat::CodexResponses => responses::url(base),
            WireFormat::ChatCompletions => chat::url(base),
            WireFormat::AnthropicMessages => anthropic::url(base),
        };
        // A key that is empty is no key: an empty credential header helps no one.
        let key = endpoint.api_key.as_deref().filter(|k| !k.is_empty());
        let headers = match endpoint.format {
            WireFormat::OpenAiResponses | WireFormat::ChatCompletions => openai_headers(key),
            WireFormat::AnthropicMessages => anthropic::headers(key),
            // Made from the sign-in's token at each request.
            WireFormat::CodexResponses => Ok(HeaderMap::new()),
        };
        let http = crate::client::builder(base)
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            // An API that redirects a POST is not one this client understands, and a
            // redirect must not carry the credential elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| ProviderError::Unavailable);
        HttpClient {
            endpoint: endpoint.clone(),
            format: endpoint.format,
            url: Url::parse(&url).map_err(|_| ProviderError::Unavailable),
            http,
            headers,
            sign_in: None,
        }
    }

    /// The same client, its token asked of `sign_in` at each request.
    pub(crate) fn with_sign_in(mut self, sign_in: Arc<dyn SignIn>) -> HttpClient {
        self.sign_in = Some(sign_in);
        self
    }

    fn body(&self, request: &ModelRequest) -> serde_json::Value {
        match self.format {
            WireFormat::CodexResponses => codex::body(request),
            WireFormat::OpenAiResponses => responses::body(request),
            WireFormat::ChatCompletions => chat::body(request),
            WireFormat::AnthropicMessages => anthropic::body(request),
        }
    }

    /// The decoder of a response of `model`.
    fn decoder(&self, model: &str) -> Box<dyn Decode + Send> {
        match self.format {
            WireFormat::OpenAiResponses | WireFormat::CodexResponses => {
                Box::new(responses::Decoder::new(model))
            }
            WireFormat::ChatCompletions => Box::new(chat::Decoder::default()),
            WireFormat::AnthropicMessages => Box::new(anthropic::Decoder::new(model)),
        }
    }

    /// The request with its retries: a failure before any event was forwarded is
    /// retried when it may pass (429, 5xx, a connection or a stream that broke off),
    /// within the attempts and the total wait, each retry told as
    /// [`ModelEvent::Retrying`] first.
    async fn run(
        &self,
        request: &ModelRequest,
        events: &mpsc::Sender<ModelEvent>,
    ) -> Result<(), Failure> {
        let http = self.http.as_ref().map_err(|e| Failure::from(*e))?;
        let url = self.url.as_ref().map_err(|e| Failure {
            cause: Cause::BadUrl,
            ..Failure::from(*e)
        })?;
        let (mut headers, mut bearer) = match &self.sign_in {
            Some(sign_in) => {
                let bearer = signed(sign_in.as_ref(), None, url).await?;
                (signed_headers(&bearer, url)?, Some(bearer))
            }
            None => (
                self.headers
                    .as_ref()
                    .map_err(|e| Failure::new(*e, Cause::BadKey, url))?
                    .clone(),
                None,
            ),
        };
        if self.format == WireFormat::AnthropicMessages {
            anthropic::request_headers(request, &mut headers);
        }
        // Serializing plain values cannot fail; were it to, the request is unusable.
        let body = bytes_of(&self.body(request))?;
        let mut attempt = 1;
        let mut waited = Duration::ZERO;
        loop {
            let failed = match self
                .attempt(http, url, &headers, body.clone(), &request.model, events)
                .await
            {
                Ok(()) => return Ok(()),
                Err(failed) => failed,
            };
            // A signed-in provider that refused the token gets the sign-in's next one,
            // once, at once: a token of unknown expiry, or a clock that runs behind.
            if failed.failure.cause == Cause::Status(401)
                && let (Some(sign_in), Some(sent)) = (&self.sign_in, bearer.take())
            {
                let next = signed(sign_in.as_ref(), Some(&sent.token), url).await?;
                if next.token != sent.token {
                    headers = signed_headers(&next, url)?;
                    attempt += 1;
                    continue;
                }
            }
            let mut failure = failed.failure;
            failure.attempts = attempt;
            let wait = failure.retry_after.unwrap_or_else(|| backoff(attempt));
            let retry = failed.retryable
                && attempt < MAX_ATTEMPTS
                && wait <= MAX_RETRY_AFTER
                && waited + wait <= MAX_RETRY_WAIT;
            if !retry {
                if failure.cause == Cause::Status(404) {
                    failure.listed_models = self.listed_models().await;
                }
                return Err(failure);
            }
            attempt += 1;
            let notice = ModelEvent::Retrying(Retry {
                failure,
                wait,
                attempt,
                attempts: MAX_ATTEMPTS,
            });
            events
                .send(notice)
                .await
                .map_err(|_| Failure::from(ProviderError::Cancelled))?;
            tokio::time::sleep(wait).await;
            waited += wait;
        }
    }

    /// One POST and the stream it answers.
    async fn attempt(
        &self,
        http: &reqwest::Client,
        url: &Url,
        headers: &HeaderMap,
        body: Bytes,
        model: &str,
        events: &mpsc::Sender<ModelEvent>,
    ) -> Result<(), Attempt> {
        let response = send(http, url, headers, body).await?;
        read(response, self.decoder(model), events, url).await
    }

    /// The model IDs the provider lists, within a short deadline; none when the list
    /// cannot be had.
    async fn listed_models(&self) -> Option<Vec<String>> {
        let deadline = Duration::from_millis(PROVIDER_MODEL_LOOKUP_MS);
        let sign_in = self.sign_in.as_deref();
        crate::models::list_within(&self.endpoint, sign_in, &CancellationToken::new(), deadline)
            .await
            .ok()
            .map(|models| models.into_iter().map(|m| m.id).collect())
    }
}

impl ModelClient for HttpClient {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::Sender<ModelEvent>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), Failure>> {
        Box::pin(async move {
            tokio::select! {
                // Cancellation wins a tie, and dropping the request future closes the
                // connection at once.
                biased;
                () = cancel.cancelled() => Err(ProviderError::Cancelled.into()),
                result = self.run(request, &events) => result,
            }
        })
    }
}

/// The sign-in's token for a request to `url`, or its failure said as the request's.
async fn signed(
    sign_in: &dyn SignIn,
    rejected: Option<&str>,
    url: &Url,
) -> Result<Bearer, Failure> {
    sign_in.bearer(rejected).await.map_err(|failure| {
        Failure::new(
            failure.error,
            Cause::SignIn {
                what: failure.what,
                fix: failure.fix,
            },
            url,
        )
    })
}

/// The headers of a signed-in request.
fn signed_headers(bearer: &Bearer, url: &Url) -> Result<HeaderMap, Failure> {
    codex::headers(bearer).map_err(|e| Failure::new(e, Cause::BadKey, url))
}

fn bytes_of(body: &serde_json::Value) -> Result<Bytes, Failure> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|_| Failure::from(ProviderError::Rejected))
}

/// `Authorization: Bearer <key>` when there is a key, nothing otherwise.
fn openai_headers(key: Option<&str>) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            secret(&format!("Bearer {key}"))?,
        );
    }
    Ok(headers)
}

/// Why one attempt failed, and whether another may follow.
struct Attempt {
    failure: Failure,
    retryable: bool,
}

/// The wait before retry number `attempt` (1-based): 250 ms, 500 ms, 1 s, ...
fn backoff(attempt: u32) -> Duration {
    BASE_BACKOFF.saturating_mul(1 << (attempt - 1).min(16))
}

/// One POST, up to the response headers. A response that is not a success is consumed
/// as a status only: its body is never read.
async fn send(
    http: &reqwest::Client,
    url: &Url,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, Attempt> {
    let sent = http
        .post(url.clone())
        .headers(headers.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "text/event-stream")
        .body(body)
        .send()
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(error) => {
            let cause = cause_of(&error);
            // Refused, unresolvable and TLS failures will fail the same way again; a
            // timeout has already waited its bound.
            let retryable = cause == Cause::Connection;
            return Err(Attempt {
                failure: Failure::new(ProviderError::Unavailable, cause, url),
                retryable,
            });
        }
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let (error, retryable) = match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            (ProviderError::AuthenticationFailed, false)
        }
        StatusCode::TOO_MANY_REQUESTS => (ProviderError::RateLimited, true),
        s if s.is_server_error() => (ProviderError::ServerError, true),
        _ => (ProviderError::Rejected, false),
    };
    Err(Attempt {
        failure: Failure {
            retry_after: retry_after(response.headers()),
            ..Failure::new(error, Cause::Status(status.as_u16()), url)
        },
        retryable,
    })
}

/// The wait a provider asked for: `retry-after-ms` (OpenAI) or `retry-after` in
/// seconds. An HTTP date is not followed; the backoff applies instead.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
    }
    number(RETRY_AFTER.as_str()).map(|s| Duration::from_secs_f64(s.min(1e9)))
}

/// Reads the stream to its terminal event, forwarding what the decoder yields. A
/// failure is retryable only while nothing was forwarded, so a partial reply is never
/// replayed.
async fn read(
    mut response: reqwest::Response,
    mut decoder: Box<dyn Decode + Send>,
    events: &mpsc::Sender<ModelEvent>,
    url: &Url,
) -> Result<(), Attempt> {
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut out = Vec::new();
    let mut forwarded = false;
    let fail = |error: ProviderError, cause: Cause, retryable: bool| Attempt {
        failure: Failure::new(error, cause, url),
        retryable,
    };
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            // The body ended without the terminal event.
            Ok(None) => {
                return Err(fail(
                    ProviderError::MalformedStream,
                    Cause::StreamCut,
                    !forwarded,
                ));
            }
            Err(error) if error.is_timeout() => {
                return Err(fail(ProviderError::Unavailable, Cause::Timeout, false));
            }
            Err(_) => {
                return Err(fail(
                    ProviderError::MalformedStream,
                    Cause::StreamCut,
                    !forwarded,
                ));
            }
        };
        parser.push(&chunk);
        loop {
            let event = match parser.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => break,
                Err(error) => return Err(fail(error, Cause::Malformed, false)),
            };
            let done = match decoder.event(&event, &mut out) {
                Ok(done) => done,
                Err(ProviderError::MalformedStream) => {
                    return Err(fail(
                        ProviderError::MalformedStream,
                        Cause::Malformed,
                        false,
                    ));
                }
                // An error event: an overload or a rate limit before any output may
                // pass; anything else will not.
                Err(error) => {
                    let passing = matches!(
                        error,
                        ProviderError::RateLimited | ProviderError::ServerError
                    );
                    return Err(fail(error, Cause::StreamError, passing && !forwarded));
                }
            };
            for event in out.drain(..) {
                forwarded = true;
                // A receiver that went away wants nothing more: end quietly.
                if events.send(event).await.is_err() {
                    return Err(fail(ProviderError::Cancelled, Cause::Unknown, false));
                }
            }
            if done {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn backoff_doubles() {
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(2), Duration::from_millis(500));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(2));
    }

    #[test]
    fn the_whole_retry_schedule_fits_its_bounds() {
        // Every wait the client's own backoff may choose is honoured, and together
        // they stay within the total.
        let waits: Vec<Duration> = (1..MAX_ATTEMPTS).map(backoff).collect();
        assert_eq!(waits.len(), 4);
        assert!(waits.iter().all(|w| *w <= MAX_RETRY_AFTER));
        assert!(waits.iter().sum::<Duration>() <= MAX_RETRY_WAIT);
        // A provider may ask for the longest single wait twice at most.
        assert!(MAX_RETRY_AFTER * 2 <= MAX_RETRY_WAIT);
        assert!(MAX_RETRY_AFTER * 3 > MAX_RETRY_WAIT);
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&date), None);
        let mut negative = HeaderMap::new();
        negative.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&negative), None);
    }

    #[test]
    fn debug_never_shows_the_key() {
        let client = HttpClient::new(Endpoint {
            format: WireFormat::ChatCompletions,
            base_url: "http://127.0.0.1:1/v1".to_owned(),
            api_key: Some("sk-secret-value".to_owned()),
        });
        let shown = format!("{client:?}");
        assert!(!shown.contains("sk-secret-value"), "{shown}");
        assert!(shown.contains("chat/completions"));
    }
}
