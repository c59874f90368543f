//! The transport shared by the three wire formats: one `reqwest` client with its
//! timeouts, the retry loop, status mapping, and feeding the SSE stream through a
//! format's decoder to the caller.

use std::time::Duration;

use bytes::Bytes;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::codec::{Decode, secret};
use crate::sse::SseParser;
use crate::{
    BoxFuture, Endpoint, ModelClient, ModelEvent, ModelRequest, ProviderError, WireFormat,
};
use crate::{anthropic, chat, responses};

/// How long establishing a connection (TCP and TLS) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the provider may stay silent, before its headers or between two reads of
/// the stream. Long, because a reasoning model or a local server still processing a
/// large prompt can be quiet for minutes.
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// Attempts per request, the first included (retries happen only before any event).
pub const MAX_ATTEMPTS: u32 = 3;
/// The wait before the first retry; it doubles for each further one.
pub const BASE_BACKOFF: Duration = Duration::from_millis(250);
/// The longest `Retry-After` that is honoured; a provider that asks for more gets no
/// retry, since waiting less than it asked would only fail again.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// The largest single SSE event accepted. A Responses API `response.completed` event
/// repeats the whole output, so this is well above the largest reply.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A model client speaking one wire format over HTTP.
pub(crate) struct HttpClient {
    format: WireFormat,
    /// The request URL, or why there is none (a base URL that does not parse).
    url: Result<Url, ProviderError>,
    /// The client, or why it could not be built.
    http: Result<reqwest::Client, ProviderError>,
    /// The authentication and version headers, marked sensitive.
    headers: Result<HeaderMap, ProviderError>,
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
            WireFormat::OpenAiResponses => responses::url(base),
            WireFormat::ChatCompletions => chat::url(base),
            WireFormat::AnthropicMessages => anthropic::url(base),
        };
        // A key that is empty is no key: an empty credential header helps no one.
        let key = endpoint.api_key.as_deref().filter(|k| !k.is_empty());
        let headers = match endpoint.format {
            WireFormat::OpenAiResponses | WireFormat::ChatCompletions => openai_headers(key),
            WireFormat::AnthropicMessages => anthropic::headers(key),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            // An API that redirects a POST is not one this client understands, and a
            // redirect must not carry the credential elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|_| ProviderError::Unavailable);
        HttpClient {
            format: endpoint.format,
            url: Url::parse(&url).map_err(|_| ProviderError::Unavailable),
            http,
            headers,
        }
    }

    fn body(&self, request: &ModelRequest) -> serde_json::Value {
        match self.format {
            WireFormat::OpenAiResponses => responses::body(request),
            WireFormat::ChatCompletions => chat::body(request),
            WireFormat::AnthropicMessages => anthropic::body(request),
        }
    }

    fn decoder(&self) -> Box<dyn Decode + Send> {
        match self.format {
            WireFormat::OpenAiResponses => Box::new(responses::Decoder::default()),
            WireFormat::ChatCompletions => Box::new(chat::Decoder::default()),
            WireFormat::AnthropicMessages => Box::new(anthropic::Decoder::default()),
        }
    }

    async fn run(
        &self,
        request: &ModelRequest,
        events: &mpsc::Sender<ModelEvent>,
    ) -> Result<(), ProviderError> {
        let http = self.http.as_ref().map_err(|e| *e)?;
        let url = self.url.as_ref().map_err(|e| *e)?;
        let headers = self.headers.as_ref().map_err(|e| *e)?;
        // Serializing plain values cannot fail; were it to, the request is unusable.
        let body = bytes_of(&self.body(request))?;
        let mut attempt = 1;
        let response = loop {
            let failure = match send(http, url, headers, body.clone()).await {
                Ok(response) => break response,
                Err(failure) => failure,
            };
            let wait = failure.retry_after.unwrap_or_else(|| backoff(attempt));
            if !failure.retryable || attempt >= MAX_ATTEMPTS || wait > MAX_RETRY_AFTER {
                return Err(failure.error);
            }
            tokio::time::sleep(wait).await;
            attempt += 1;
        };
        read(response, self.decoder(), events).await
    }
}

impl ModelClient for HttpClient {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: mpsc::Sender<ModelEvent>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            tokio::select! {
                // Cancellation wins a tie, and dropping the request future closes the
                // connection at once.
                biased;
                () = cancel.cancelled() => Err(ProviderError::Cancelled),
                result = self.run(request, &events) => result,
            }
        })
    }
}

fn bytes_of(body: &serde_json::Value) -> Result<Bytes, ProviderError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|_| ProviderError::Rejected)
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
struct Failure {
    error: ProviderError,
    retryable: bool,
    retry_after: Option<Duration>,
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
) -> Result<reqwest::Response, Failure> {
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
            return Err(Failure {
                error: ProviderError::Unavailable,
                retryable: error.is_connect(),
                retry_after: None,
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
    Err(Failure {
        error,
        retryable,
        retry_after: retry_after(response.headers()),
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

/// Reads the stream to its terminal event, forwarding what the decoder yields.
async fn read(
    mut response: reqwest::Response,
    mut decoder: Box<dyn Decode + Send>,
    events: &mpsc::Sender<ModelEvent>,
) -> Result<(), ProviderError> {
    let mut parser = SseParser::new(MAX_EVENT_BYTES);
    let mut out = Vec::new();
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            // The body ended without the terminal event.
            Ok(None) => return Err(ProviderError::MalformedStream),
            Err(error) if error.is_timeout() => return Err(ProviderError::Unavailable),
            Err(_) => return Err(ProviderError::MalformedStream),
        };
        parser.push(&chunk);
        while let Some(event) = parser.next_event()? {
            let done = decoder.event(&event, &mut out)?;
            for event in out.drain(..) {
                // A receiver that went away wants nothing more: end quietly.
                events
                    .send(event)
                    .await
                    .map_err(|_| ProviderError::Cancelled)?;
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
