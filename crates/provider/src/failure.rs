//! Why a model request failed, for a person: the safe code, and what was learned on the
//! way (the URL asked, the status or the kind of connection failure, the wait the
//! provider asked for, the models it lists). Never a key, a header or a provider's
//! body: error bodies are not even read.

use std::time::Duration;

use magi_protocol::limits::PROVIDER_LISTED_MODELS;
use reqwest::Url;

use crate::ProviderError;

/// What happened, as far as the client could tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Nothing listens at the address (TCP connection refused).
    ConnectionRefused,
    /// The host name does not resolve.
    Dns,
    /// The TLS handshake or the certificate check failed.
    Tls,
    /// The provider stayed silent past the connect or read timeout.
    Timeout,
    /// Another failure to connect or to send the request.
    Connection,
    /// The provider answered with this HTTP status (not a success).
    Status(u16),
    /// The connection broke, or the body ended, before the stream's terminal event.
    StreamCut,
    /// The stream carried an error event of the provider.
    StreamError,
    /// The stream's data was not the format expected.
    Malformed,
    /// The base URL does not parse.
    BadUrl,
    /// The key cannot be sent as a header value.
    BadKey,
    /// The sign-in could give no token (its refresh was refused, or could not be made):
    /// what happened and what to do, as the sign-in said them.
    SignIn {
        /// What happened.
        what: String,
        /// What to do.
        fix: String,
    },
    /// Whatever the code alone says (a failure made without more to tell).
    Unknown,
}

/// A failed model request: its code, and the facts a person needs to act on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The safe code.
    pub error: ProviderError,
    /// What happened.
    pub cause: Cause,
    /// The URL asked, without credentials, query or fragment; empty when unknown.
    pub url: String,
    /// Attempts made, the failed one included.
    pub attempts: u32,
    /// The wait the provider asked for (`Retry-After`), when it named one.
    pub retry_after: Option<Duration>,
    /// The models the provider lists, fetched after a 404; none when not fetched or
    /// the list could not be had.
    pub listed_models: Option<Vec<String>>,
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Failure {
        Failure {
            error,
            cause: Cause::Unknown,
            url: String::new(),
            attempts: 1,
            retry_after: None,
            listed_models: None,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.error.code())
    }
}

impl std::error::Error for Failure {}

/// Who was asked what, for the sentences: the provider's name, the model, and where
/// its credential comes from (a variable or a file, never the value).
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// The provider's name.
    pub provider: &'a str,
    /// The model asked for.
    pub model: &'a str,
    /// Where the credential comes from, when the provider takes one.
    pub credential: Option<&'a str>,
}

impl Failure {
    pub(crate) fn new(error: ProviderError, cause: Cause, url: &Url) -> Failure {
        Failure {
            error,
            cause,
            url: shown_url(url),
            ..Failure::from(error)
        }
    }

    /// What happened, in one sentence naming the provider and the URL.
    pub fn what(&self, asked: &Asked<'_>) -> String {
        let at = if self.url.is_empty() {
            format!("provider {:?}", asked.provider)
        } else {
            format!("provider {:?} at {}", asked.provider, self.url)
        };
        match &self.cause {
            Cause::ConnectionRefused => format!("connection refused by {at}"),
            Cause::Dns => format!("the host of {at} could not be resolved (DNS)"),
            Cause::Tls => format!("the TLS connection to {at} failed"),
            Cause::Timeout => format!("{at} did not answer in time"),
            Cause::Connection => format!("the request to {at} could not be sent"),
            Cause::Status(401 | 403) => format!("{at} refused the credential"),
            Cause::Status(404) => {
                format!("{at} answered 404 Not Found for model {:?}", asked.model)
            }
            Cause::Status(429) => format!("{at} is rate-limiting requests (HTTP 429)"),
            Cause::Status(status) if *status >= 500 => {
                format!("{at} failed with HTTP {status}")
            }
            Cause::Status(status) => format!("{at} rejected the request with HTTP {status}"),
            Cause::StreamCut => format!("the connection to {at} broke before the reply ended"),
            Cause::StreamError => format!("{at} reported an error ({})", self.error.code()),
            Cause::Malformed => format!("the reply of {at} is not the stream expected"),
            Cause::BadUrl => format!("the base URL of {at} is not a valid URL"),
            Cause::BadKey => format!("the API key of {at} cannot be sent in a header"),
            Cause::SignIn { what, .. } => what.clone(),
            Cause::Unknown => format!("the request to {at} failed ({})", self.error.code()),
        }
    }

    /// What to do about it, when there is something to say.
    pub fn fix(&self, asked: &Asked<'_>) -> Option<String> {
        let credential = asked.credential.map_or_else(
            || "the provider's credential (api_key_env or api_key_file in settings)".to_owned(),
            str::to_owned,
        );
        Some(match &self.cause {
            Cause::SignIn { fix, .. } => fix.clone(),
            Cause::ConnectionRefused => {
                "check that the server is running and listens at that address, or fix the \
                 base URL (the provider's base_url in settings, or its *_BASE_URL variable)"
                    .to_owned()
            }
            Cause::Dns => "check the host name in the base URL and the network".to_owned(),
            Cause::Tls => "check the base URL's scheme (http or https) and the server's \
                           certificate"
                .to_owned(),
            Cause::Timeout | Cause::Connection => {
                "check that the server is up and reachable from here".to_owned()
            }
            Cause::Status(401 | 403) | Cause::BadKey => format!("check {credential}"),
            Cause::Status(404) => match &self.listed_models {
                Some(models) if !models.is_empty() => {
                    format!("the server lists: {}", model_list(models))
                }
                Some(_) => {
                    "the server lists no models; check the model name and the base URL".to_owned()
                }
                None => "check the model name (MAGI_MODEL or `model` in settings) and the \
                         base URL"
                    .to_owned(),
            },
            Cause::Status(429) => match self.retry_after {
                Some(wait) => format!(
                    "still limited after {}; the provider asks to wait {}",
                    attempts(self.attempts),
                    seconds(wait)
                ),
                None => format!(
                    "still limited after {}; wait and try again",
                    attempts(self.attempts)
                ),
            },
            Cause::Status(status) if *status >= 500 => {
                format!(
                    "still failing after {}; try again later",
                    attempts(self.attempts)
                )
            }
            Cause::Malformed => "check that the provider's kind (openai, openai-chat or \
                                 anthropic) is the API the server speaks"
                .to_owned(),
            Cause::BadUrl => "fix the provider's base_url in settings, or its *_BASE_URL \
                              variable"
                .to_owned(),
            Cause::StreamCut if self.attempts > 1 => {
                format!("it broke off {} times; try again later", self.attempts)
            }
            _ => return None,
        })
    }

    /// The sentence a person is shown: what happened, then what to do.
    pub fn describe(&self, asked: &Asked<'_>) -> String {
        match self.fix(asked) {
            Some(fix) => format!("{}: {fix}", self.what(asked)),
            None => self.what(asked),
        }
    }
}

/// A retry about to happen: the failure that caused it, the wait, and which attempt
/// comes next out of how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// Why the last attempt failed.
    pub failure: Failure,
    /// The wait before the next attempt.
    pub wait: Duration,
    /// The next attempt's number (2 for the first retry).
    pub attempt: u32,
    /// Attempts allowed in all.
    pub attempts: u32,
}

impl Retry {
    /// "<what happened>; retrying in 2s (2/5)".
    pub fn describe(&self, asked: &Asked<'_>) -> String {
        format!(
            "{}; retrying in {} ({}/{})",
            self.failure.what(asked),
            seconds(self.wait),
            self.attempt,
            self.attempts
        )
    }
}

/// `1 attempt`, `5 attempts`.
fn attempts(count: u32) -> String {
    if count == 1 {
        "1 attempt".to_owned()
    } else {
        format!("{count} attempts")
    }
}

/// A wait as a person reads it: `2s`, `0.5s`.
fn seconds(wait: Duration) -> String {
    let ms = wait.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", wait.as_secs_f64())
    }
}

/// The first models of a list, and how many more.
fn model_list(models: &[String]) -> String {
    let shown: Vec<&str> = models
        .iter()
        .take(PROVIDER_LISTED_MODELS)
        .map(String::as_str)
        .collect();
    let more = models.len().saturating_sub(PROVIDER_LISTED_MODELS);
    if more == 0 {
        shown.join(", ")
    } else {
        format!("{} and {more} more", shown.join(", "))
    }
}

/// A URL as it may be shown: no user name or password, query or fragment.
pub(crate) fn shown_url(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

/// The cause of a transport error, read from its chain of sources.
pub(crate) fn cause_of(error: &reqwest::Error) -> Cause {
    if error.is_timeout() {
        return Cause::Timeout;
    }
    let mut text = String::new();
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return Cause::ConnectionRefused,
                std::io::ErrorKind::TimedOut => return Cause::Timeout,
                _ => {}
            }
        }
        text.push_str(&current.to_string().to_ascii_lowercase());
        text.push('\n');
        source = current.source();
    }
    // The resolver's and rustls's errors are not types reqwest exposes: their messages
    // are all there is to go by.
    if [
        "dns error",
        "failed to lookup address",
        "name or service not known",
    ]
    .iter()
    .any(|m| text.contains(m))
    {
        Cause::Dns
    } else if ["certificate", "tls", "handshake", "invalid peer"]
        .iter()
        .any(|m| text.contains(m))
    {
        Cause::Tls
    } else if text.contains("connection refused") {
        Cause::ConnectionRefused
    } else {
        Cause::Connection
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASKED: Asked<'static> = Asked {
        provider: "openai",
        model: "gpt-x",
        credential: Some("OPENAI_API_KEY"),
    };

    fn failure(error: ProviderError, cause: Cause) -> Failure {
        let url = Url::parse("https://user:pw@api.example/v1/responses?key=k#f").unwrap();
        Failure::new(error, cause, &url)
    }

    #[test]
    fn urls_are_shown_without_credentials() {
        let shown = failure(ProviderError::Unavailable, Cause::Dns).url;
        assert_eq!(shown, "https://api.example/v1/responses");
    }

    #[test]
    fn each_cause_says_what_and_what_to_do() {
        let unauthorized = failure(ProviderError::AuthenticationFailed, Cause::Status(401));
        assert_eq!(
            unauthorized.describe(&ASKED),
            "provider \"openai\" at https://api.example/v1/responses refused the credential: \
             check OPENAI_API_KEY"
        );
        let mut missing = failure(ProviderError::Rejected, Cause::Status(404));
        missing.listed_models = Some((0..25).map(|i| format!("m{i}")).collect());
        let text = missing.describe(&ASKED);
        assert!(text.contains("404 Not Found for model \"gpt-x\""), "{text}");
        assert!(text.ends_with("m18, m19 and 5 more"), "{text}");
        let mut limited = failure(ProviderError::RateLimited, Cause::Status(429));
        limited.attempts = 5;
        limited.retry_after = Some(Duration::from_secs(40));
        assert!(
            limited
                .describe(&ASKED)
                .ends_with("still limited after 5 attempts; the provider asks to wait 40s")
        );
        let refused = failure(ProviderError::Unavailable, Cause::ConnectionRefused);
        assert!(
            refused
                .describe(&ASKED)
                .starts_with("connection refused by provider")
        );
        let retry = Retry {
            failure: failure(ProviderError::ServerError, Cause::Status(503)),
            wait: Duration::from_millis(500),
            attempt: 2,
            attempts: 5,
        };
        assert_eq!(
            retry.describe(&ASKED),
            "provider \"openai\" at https://api.example/v1/responses failed with HTTP 503; \
             retrying in 0.5s (2/5)"
        );
    }
}
