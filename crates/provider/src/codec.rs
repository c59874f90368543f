//! What the three wire formats' codecs share: the stream decoder each implements, and
//! the small rules for event data, tool arguments and credential headers. The
//! transport (`http`) drives the codecs; the codecs know nothing of it.

use reqwest::header::HeaderValue;

use crate::sse::SseEvent;
use crate::{ModelEvent, ProviderError};

/// What a wire format's stream decoder does with each event.
pub(crate) trait Decode {
    /// Takes one SSE event and appends what it yields to `out`; `Ok(true)` means the
    /// terminal event arrived and `out` ends with [`ModelEvent::Completed`].
    fn event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>)
    -> Result<bool, ProviderError>;
}

/// Only an event's `type`, read first to pick the shape of the rest (Responses and
/// Anthropic events name their shape there).
#[derive(serde::Deserialize)]
pub(crate) struct EventType<'a> {
    #[serde(rename = "type", borrow)]
    pub(crate) kind: std::borrow::Cow<'a, str>,
}

/// A header value holding a credential: marked sensitive, and a key that cannot be a
/// header value is a credential the provider would refuse anyway.
pub(crate) fn secret(value: &str) -> Result<HeaderValue, ProviderError> {
    let mut value =
        HeaderValue::from_str(value).map_err(|_| ProviderError::AuthenticationFailed)?;
    value.set_sensitive(true);
    Ok(value)
}

/// Parses an event's JSON data; data that is not the JSON expected is a malformed
/// stream.
pub(crate) fn parse<'a, T: serde::Deserialize<'a>>(data: &'a str) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|_| ProviderError::MalformedStream)
}

/// Tool arguments as sent, except that none at all means an empty object.
pub(crate) fn arguments(text: String) -> String {
    if text.trim().is_empty() {
        "{}".to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_arguments_become_an_empty_object() {
        assert_eq!(arguments(String::new()), "{}");
        assert_eq!(arguments(" ".to_owned()), "{}");
        assert_eq!(arguments("{\"a\":1}".to_owned()), "{\"a\":1}");
    }
}
