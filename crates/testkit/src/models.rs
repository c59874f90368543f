//! The model-list route (`GET …/models`): what the mock lists, how it misbehaves, and
//! the two response shapes (OpenAI's single list, Anthropic's pages).

use serde_json::{Value, json};

/// Anthropic's own default page size when a request names no `limit`.
const ANTHROPIC_DEFAULT_LIMIT: usize = 20;
/// The largest `limit` Anthropic accepts.
const ANTHROPIC_MAX_LIMIT: usize = 1_000;

/// How the server answers model-list requests. Set through `MockServer::set_models`
/// and its sibling knobs; the default lists no models.
#[derive(Debug, Clone, Default)]
pub(crate) struct ModelsRoute {
    /// The models listed, in order: ID and optional display name.
    pub(crate) models: Vec<(String, Option<String>)>,
    /// Answer with this status and a JSON error body instead of the list.
    pub(crate) status: Option<u16>,
    /// Answer 200 with exactly this body instead of the list.
    pub(crate) body: Option<String>,
    /// Most models on one Anthropic page, whatever the request's `limit`.
    pub(crate) page_size: Option<usize>,
    /// Never answer: no status line, no headers.
    pub(crate) hang: bool,
}

/// What the route answers: a status and a body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: String,
}

impl ModelsRoute {
    /// The answer to one request with `query`; `anthropic` chooses the paged shape.
    /// The caller handles `hang` before asking.
    pub(crate) fn answer(&self, query: Option<&str>, anthropic: bool) -> Answer {
        if let Some(status) = self.status {
            return Answer {
                status,
                body: json!({ "error": { "type": "mock_error", "message": "mock: scripted models status" } })
                    .to_string(),
            };
        }
        if let Some(body) = &self.body {
            return Answer {
                status: 200,
                body: body.clone(),
            };
        }
        if anthropic {
            self.anthropic_page(query)
        } else {
            self.openai_list()
        }
    }

    /// `{"object":"list","data":[{"id","object":"model","created","owned_by"}]}`, every
    /// model at once, as OpenAI and the OpenAI-compatible servers answer.
    fn openai_list(&self) -> Answer {
        let data: Vec<Value> = self
            .models
            .iter()
            .map(|(id, _)| json!({ "id": id, "object": "model", "created": 0, "owned_by": "mock" }))
            .collect();
        Answer {
            status: 200,
            body: json!({ "object": "list", "data": data }).to_string(),
        }
    }

    /// One page after `after_id`, at most `limit` (and the page size knob) long, with
    /// `has_more`, `first_id` and `last_id` as Anthropic sends them. An `after_id` that
    /// names no listed model is a 400, as the real API refuses it.
    fn anthropic_page(&self, query: Option<&str>) -> Answer {
        let limit = param(query, "limit")
            .and_then(|l| l.parse::<usize>().ok())
            .unwrap_or(ANTHROPIC_DEFAULT_LIMIT)
            .clamp(1, ANTHROPIC_MAX_LIMIT);
        let size = limit.min(self.page_size.unwrap_or(usize::MAX)).max(1);
        let start = match param(query, "after_id") {
            None => 0,
            Some(after) => match self.models.iter().position(|(id, _)| *id == after) {
                Some(index) => index + 1,
                None => {
                    return Answer {
                        status: 400,
                        body: json!({ "type": "error", "error": { "type": "invalid_request_error", "message": "mock: unknown after_id" } })
                            .to_string(),
                    };
                }
            },
        };
        let end = start.saturating_add(size).min(self.models.len());
        let page = self.models.get(start..end).unwrap_or_default();
        let data: Vec<Value> = page
            .iter()
            .map(|(id, name)| {
                let mut model = json!({
                    "type": "model",
                    "id": id,
                    "created_at": "2025-01-01T00:00:00Z",
                });
                // A model without a display name is sent without the field, so clients
                // are exercised on its absence.
                if let Some(name) = name {
                    model["display_name"] = json!(name);
                }
                model
            })
            .collect();
        let body = json!({
            "data": data,
            "has_more": end < self.models.len(),
            "first_id": page.first().map(|(id, _)| id),
            "last_id": page.last().map(|(id, _)| id),
        });
        Answer {
            status: 200,
            body: body.to_string(),
        }
    }
}

/// The decoded value of query parameter `name` (form encoding: `+` is a space, `%XX`
/// a byte), if present.
pub(crate) fn param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(key) == name).then(|| decode(value))
    })
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    fn route(ids: &[&str]) -> ModelsRoute {
        ModelsRoute {
            models: ids
                .iter()
                .map(|id| ((*id).to_owned(), Some(id.to_uppercase())))
                .collect(),
            ..ModelsRoute::default()
        }
    }

    fn json_of(answer: &Answer) -> Value {
        serde_json::from_str(&answer.body).unwrap()
    }

    #[test]
    fn the_openai_shape_lists_every_model_at_once() {
        let answer = route(&["a", "b", "c"]).answer(Some("limit=1"), false);
        assert_eq!(answer.status, 200);
        let body = json_of(&answer);
        assert_eq!(body["object"], "list");
        let ids: Vec<&str> = body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert!(body["data"][0].get("display_name").is_none());
    }

    #[test]
    fn anthropic_pages_follow_limit_page_size_and_after_id() {
        let mut models = route(&["a", "b", "c", "d", "e"]);
        models.models[4].1 = None;
        let first = json_of(&models.answer(Some("limit=2"), true));
        assert_eq!(first["data"].as_array().unwrap().len(), 2);
        assert_eq!(first["data"][0]["display_name"], "A");
        assert_eq!(first["has_more"], true);
        assert_eq!(first["first_id"], "a");
        assert_eq!(first["last_id"], "b");
        let last = json_of(&models.answer(Some("limit=2&after_id=d"), true));
        assert_eq!(last["data"].as_array().unwrap().len(), 1);
        assert!(last["data"][0].get("display_name").is_none());
        assert_eq!(last["has_more"], false);
        models.page_size = Some(3);
        let capped = json_of(&models.answer(Some("limit=1000"), true));
        assert_eq!(capped["data"].as_array().unwrap().len(), 3);
        assert_eq!(capped["last_id"], "c");
        // Without a limit, Anthropic's default of 20 applies.
        models.page_size = None;
        let all = json_of(&models.answer(None, true));
        assert_eq!(all["data"].as_array().unwrap().len(), 5);
        assert_eq!(all["has_more"], false);
        assert_eq!(models.answer(Some("after_id=zz"), true).status, 400);
    }

    #[test]
    fn an_empty_list_has_null_ids() {
        let body = json_of(&route(&[]).answer(None, true));
        assert_eq!(body["data"], json!([]));
        assert_eq!(body["has_more"], false);
        assert_eq!(body["last_id"], Value::Null);
    }

    #[test]
    fn status_wins_over_body_and_body_over_the_list() {
        let mut models = route(&["a"]);
        models.body = Some("not json".to_owned());
        let answer = models.answer(None, false);
        assert_eq!((answer.status, answer.body.as_str()), (200, "not json"));
        models.status = Some(401);
        let answer = models.answer(None, true);
        assert_eq!(answer.status, 401);
        assert!(json_of(&answer)["error"].is_object());
    }

    #[test]
    fn query_parameters_are_decoded() {
        let query = Some("limit=1000&after_id=a%2Fb+c&flag");
        assert_eq!(param(query, "limit").as_deref(), Some("1000"));
        assert_eq!(param(query, "after_id").as_deref(), Some("a/b c"));
        assert_eq!(param(query, "flag").as_deref(), Some(""));
        assert_eq!(param(query, "missing"), None);
        assert_eq!(param(None, "limit"), None);
        assert_eq!(param(Some("x=%4"), "x").as_deref(), Some("%4"));
        assert_eq!(param(Some("x=%zz"), "x").as_deref(), Some("%zz"));
    }
}
