//! Fetching a provider's model list, for a deliberate `model.refresh`: `GET
//! {base}/models` for the OpenAI formats, `GET {base}/v1/models` paged by `after_id` for
//! Anthropic, `GET {base}/models?client_version=…` with the sign-in for ChatGPT's Codex
//! backend.
//!
//! The fetch is bounded as a whole: at most `REFRESH_RESPONSE_BYTES` read over every
//! page, at most `CATALOG_MODELS` models, at most `REFRESH_TIMEOUT_MS` from the first
//! connection to the last byte. Redirects are not followed, nothing is retried, and the
//! body of an error response is never read.

use std::collections::HashSet;
use std::time::Duration;

use magi_protocol::ErrorCode;
use magi_protocol::limits::{
    CATALOG_MODELS, CATALOG_STRING_BYTES, PROVIDER_CONNECT_TIMEOUT_MS, REFRESH_RESPONSE_BYTES,
    REFRESH_TIMEOUT_MS,
};
use reqwest::header::{ACCEPT, HeaderMap};
use reqwest::{StatusCode, Url};
use tokio_util::sync::CancellationToken;

use crate::codec::secret;
use crate::sign_in::SignIn;
use crate::{Endpoint, ProviderError, WireFormat, anthropic, codex};

mod lists;
#[cfg(test)]
mod tests;

use lists::{AnthropicPage, CodexList, OpenAiList, parse};

/// The whole refresh's deadline, `REFRESH_TIMEOUT_MS`.
pub const REFRESH_TIMEOUT: Duration = Duration::from_millis(REFRESH_TIMEOUT_MS);

/// Models asked for per Anthropic page: the most the API serves at once.
const ANTHROPIC_PAGE_LIMIT: &str = "1000";

/// One model as the provider listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedModel {
    /// The model ID, exactly as listed: 1 to `CATALOG_STRING_BYTES` bytes. It may hold
    /// anything else the provider put there; whoever shows it checks it first.
    pub id: String,
    /// The display name, when the provider gave a non-empty one (Anthropic's
    /// `display_name`; the OpenAI formats have none). Not checked for safety: the
    /// catalog cache drops names that are not safe to show.
    pub name: Option<String>,
    /// What the list said the model can take, where it said.
    pub limits: ListedLimits,
}

/// What a provider's list says one model can take; `None` where it does not say. Read
/// from OpenRouter-style lists (`context_length`, `top_provider.max_completion_tokens`,
/// `architecture.input_modalities`), llama.cpp's server (`meta.n_ctx`, else
/// `meta.n_ctx_train`) and Anthropic's (`max_input_tokens`, `max_tokens`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListedLimits {
    /// The context window in tokens.
    pub context_window: Option<u64>,
    /// The most tokens of one response.
    pub max_output_tokens: Option<u64>,
    /// Whether the model takes images.
    pub images: Option<bool>,
}

/// Why a model list could not be fetched. Only these codes leave the crate: never a
/// key, a header or a provider's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshError {
    /// The provider refused the credential (HTTP 401 or 403), or the key cannot be a
    /// header value.
    Unauthorized,
    /// The provider could not be reached, failed (5xx), asked to slow down (429), or
    /// did not finish within the deadline.
    Unreachable,
    /// The response was over `REFRESH_RESPONSE_BYTES`, listed more than
    /// `CATALOG_MODELS` models, or an ID over `CATALOG_STRING_BYTES` bytes.
    Limit,
    /// The response was not a model list: another status, not the JSON expected, an
    /// empty or repeated ID, or paging that does not advance.
    Malformed,
    /// The fetch was cancelled.
    Cancelled,
}

impl RefreshError {
    /// The protocol error code `model.refresh` answers with.
    pub const fn error_code(self) -> ErrorCode {
        match self {
            RefreshError::Unauthorized | RefreshError::Unreachable => {
                ErrorCode::ProviderUnavailable
            }
            RefreshError::Limit => ErrorCode::CatalogLimit,
            RefreshError::Malformed => ErrorCode::CatalogUnavailable,
            RefreshError::Cancelled => ErrorCode::OperationCancelled,
        }
    }
}

impl std::fmt::Display for RefreshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RefreshError::Unauthorized => "the provider refused the credential",
            RefreshError::Unreachable => "the provider could not be reached",
            RefreshError::Limit => "the model list exceeds its bounds",
            RefreshError::Malformed => "the response is not a model list",
            RefreshError::Cancelled => "the model list fetch was cancelled",
        })
    }
}

impl std::error::Error for RefreshError {}

/// Fetches every model `endpoint` lists, in the provider's order, within the refresh
/// bounds and the `REFRESH_TIMEOUT` deadline. Cancelling `cancel` drops the request at
/// once (the connection closes) and returns [`RefreshError::Cancelled`].
pub async fn list_models(
    endpoint: &Endpoint,
    cancel: &CancellationToken,
) -> Result<Vec<ListedModel>, RefreshError> {
    list_models_within(endpoint, cancel, REFRESH_TIMEOUT).await
}

/// [`list_models`] with another deadline for the whole fetch (a caller with less time
/// left, or a test that cannot wait 30 seconds).
pub async fn list_models_within(
    endpoint: &Endpoint,
    cancel: &CancellationToken,
    deadline: Duration,
) -> Result<Vec<ListedModel>, RefreshError> {
    list_within(endpoint, None, cancel, deadline).await
}

/// [`list_models`] for a provider reached with a sign-in (ChatGPT's Codex backend):
/// the token is asked of `sign_in`, and asked again once if the provider refuses it.
pub async fn list_signed_in_models(
    endpoint: &Endpoint,
    sign_in: &dyn SignIn,
    cancel: &CancellationToken,
) -> Result<Vec<ListedModel>, RefreshError> {
    list_within(endpoint, Some(sign_in), cancel, REFRESH_TIMEOUT).await
}

/// The fetch of either kind of provider, within `deadline`, until `cancel`.
pub(crate) async fn list_within(
    endpoint: &Endpoint,
    sign_in: Option<&dyn SignIn>,
    cancel: &CancellationToken,
    deadline: Duration,
) -> Result<Vec<ListedModel>, RefreshError> {
    tokio::select! {
        // Cancellation wins a tie, and dropping the fetch closes the connection.
        biased;
        () = cancel.cancelled() => Err(RefreshError::Cancelled),
        fetched = tokio::time::timeout(deadline, fetch(endpoint, sign_in)) => {
            fetched.unwrap_or(Err(RefreshError::Unreachable))
        }
    }
}

/// The whole fetch, every page, without the deadline.
async fn fetch(
    endpoint: &Endpoint,
    sign_in: Option<&dyn SignIn>,
) -> Result<Vec<ListedModel>, RefreshError> {
    let base = endpoint.base_url.trim_end_matches('/');
    // A key that is empty is no key, as for model requests.
    let key = endpoint.api_key.as_deref().filter(|k| !k.is_empty());
    let http = crate::client::builder(base)
        .connect_timeout(Duration::from_millis(PROVIDER_CONNECT_TIMEOUT_MS))
        // A redirect must not carry the credential elsewhere.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|_| RefreshError::Unreachable)?;
    let mut fetch = Fetch {
        http,
        budget: REFRESH_RESPONSE_BYTES,
        models: Vec::new(),
        seen: HashSet::new(),
    };
    match endpoint.format {
        WireFormat::CodexResponses => {
            let url = Url::parse(&format!(
                "{base}/models?client_version={}",
                codex::CLIENT_VERSION
            ))
            .map_err(|_| RefreshError::Unreachable)?;
            let sign_in = sign_in.ok_or(RefreshError::Unauthorized)?;
            let bearer = sign_in.bearer(None).await.map_err(signed_out)?;
            let headers = codex::headers(&bearer).map_err(from_header_error)?;
            let body = match fetch.get(url.clone(), &headers).await {
                // A token the backend refused gets one more try with the next one.
                Err(RefreshError::Unauthorized) => {
                    let next = sign_in
                        .bearer(Some(&bearer.token))
                        .await
                        .map_err(signed_out)?;
                    if next.token == bearer.token {
                        return Err(RefreshError::Unauthorized);
                    }
                    let headers = codex::headers(&next).map_err(from_header_error)?;
                    fetch.get(url, &headers).await?
                }
                other => other?,
            };
            let list: CodexList = parse(&body)?;
            for model in list.models {
                let limits = model.limits();
                fetch.add(model.slug, model.display_name, limits)?;
            }
        }
        WireFormat::OpenAiResponses | WireFormat::ChatCompletions => {
            let url =
                Url::parse(&format!("{base}/models")).map_err(|_| RefreshError::Unreachable)?;
            let headers = bearer(key)?;
            let body = fetch.get(url, &headers).await?;
            let list: OpenAiList = parse(&body)?;
            for model in list.data {
                let limits = model.limits();
                fetch.add(model.id, None, limits)?;
            }
        }
        WireFormat::AnthropicMessages => {
            let url =
                Url::parse(&anthropic_models_url(base)).map_err(|_| RefreshError::Unreachable)?;
            let headers = anthropic::headers(key).map_err(from_header_error)?;
            let mut after: Option<String> = None;
            loop {
                let mut page_url = url.clone();
                {
                    let mut query = page_url.query_pairs_mut();
                    query.append_pair("limit", ANTHROPIC_PAGE_LIMIT);
                    if let Some(after) = &after {
                        query.append_pair("after_id", after);
                    }
                }
                let body = fetch.get(page_url, &headers).await?;
                let page: AnthropicPage = parse(&body)?;
                let listed = page.data.len();
                for model in page.data {
                    let limits = model.limits();
                    fetch.add(model.id, model.display_name, limits)?;
                }
                if !page.has_more {
                    break;
                }
                // A page that promises more must say where to continue, and from a
                // point it has not continued from before: otherwise it would loop
                // until the deadline.
                match page.last_id {
                    Some(last) if listed > 0 && after.as_deref() != Some(last.as_str()) => {
                        after = Some(last);
                    }
                    _ => return Err(RefreshError::Malformed),
                }
            }
        }
    }
    Ok(fetch.models)
}

/// The model-list URL of an Anthropic base: the messages URL's folder, so the
/// versioning rule (a base already ending in `/v1` is versioned) is the one
/// [`anthropic::url`] applies.
fn anthropic_models_url(base: &str) -> String {
    let messages = anthropic::url(base);
    let versioned = messages.strip_suffix("/messages").unwrap_or(&messages);
    format!("{versioned}/models")
}

/// `Authorization: Bearer <key>` when there is a key, nothing otherwise, as the OpenAI
/// formats' model requests send it.
fn bearer(key: Option<&str>) -> Result<HeaderMap, RefreshError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            secret(&format!("Bearer {key}")).map_err(from_header_error)?,
        );
    }
    Ok(headers)
}

/// A credential that cannot be a header value is one the provider would refuse.
fn from_header_error(_: ProviderError) -> RefreshError {
    RefreshError::Unauthorized
}

/// A sign-in that gave no token: refused (sign in again), or unreachable for now.
fn signed_out(failure: crate::sign_in::SignInFailure) -> RefreshError {
    match failure.error {
        ProviderError::Unavailable => RefreshError::Unreachable,
        _ => RefreshError::Unauthorized,
    }
}

/// The state of one fetch across its pages.
struct Fetch {
    http: reqwest::Client,
    /// Response bytes still allowed, over every page.
    budget: usize,
    models: Vec<ListedModel>,
    seen: HashSet<String>,
}

impl Fetch {
    /// One GET, its body read whole within the remaining byte budget. A response that
    /// is not a success is judged by its status alone: its body is never read.
    async fn get(&mut self, url: Url, headers: &HeaderMap) -> Result<Vec<u8>, RefreshError> {
        let mut response = self
            .http
            .get(url)
            .headers(headers.clone())
            .header(ACCEPT, "application/json")
            .send()
            .await
            .map_err(|_| RefreshError::Unreachable)?;
        let status = response.status();
        if !status.is_success() {
            return Err(match status {
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => RefreshError::Unauthorized,
                StatusCode::TOO_MANY_REQUESTS => RefreshError::Unreachable,
                s if s.is_server_error() => RefreshError::Unreachable,
                // A redirect, a missing route or another refusal: no model list here.
                _ => RefreshError::Malformed,
            });
        }
        // A declared length over the budget fails before any byte is read.
        if response
            .content_length()
            .is_some_and(|length| length > self.budget as u64)
        {
            return Err(RefreshError::Limit);
        }
        let mut body = Vec::new();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(_) => return Err(RefreshError::Unreachable),
            };
            if chunk.len() > self.budget {
                return Err(RefreshError::Limit);
            }
            self.budget -= chunk.len();
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Adds one listed model, within the model and ID bounds; an empty or repeated ID
    /// is no model list.
    fn add(
        &mut self,
        id: String,
        name: Option<String>,
        limits: ListedLimits,
    ) -> Result<(), RefreshError> {
        if id.is_empty() {
            return Err(RefreshError::Malformed);
        }
        if id.len() > CATALOG_STRING_BYTES || self.models.len() >= CATALOG_MODELS {
            return Err(RefreshError::Limit);
        }
        if !self.seen.insert(id.clone()) {
            return Err(RefreshError::Malformed);
        }
        let name = name.filter(|n| !n.is_empty());
        self.models.push(ListedModel { id, name, limits });
        Ok(())
    }
}
