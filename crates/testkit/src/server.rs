//! The loopback HTTP server: routes, the reply queue, the model-list route, the request
//! log and the SSE body that plays a rendered script (delays, holds, cut connections).
//!
//! This file holds the server's handle and the state its parts share; `routes` accepts
//! connections and answers each request, and `body` plays a rendered script.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::models::ModelsRoute;
use crate::reply::Reply;
use crate::scenario::{Player, Scenario};

mod body;
mod routes;

use routes::serve;

/// `GET` here returns the request count and the gaps as JSON (benchmarks).
pub const STATS_PATH: &str = "/v1/mock/stats";
/// `POST` here clears the request count, the gaps and the request log.
pub const RESET_PATH: &str = "/v1/mock/reset";

/// How a backend's session-title request begins (the first words of its one user
/// message): such a request is answered from the title queue
/// ([`MockServer::enqueue_title`]) and logged apart ([`MockServer::title_requests`]),
/// so that titles never take a turn's reply nor count as a turn's request. It must
/// match the backend's title prompt; the title tests fail when it does not.
pub const TITLE_PROMPT_START: &str = "Write a title for the conversation below";

/// What a benchmark scenario answers a title request with.
const SCENARIO_TITLE: &str = "Benchmark session";

/// One request the server received, as the client sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query, without its `?`, if the request had one.
    pub query: Option<String>,
    /// The headers, lowercase name → value (repeated headers joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON (`Null` when it was empty or not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The value of header `name` (lowercase), if it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// What a [`MockServer::start_responder`] server asks for each model request's reply:
/// given the request's JSON body, the reply to play.
pub type Responder = Box<dyn Fn(&Value) -> Reply + Send + Sync>;

/// Where replies come from.
enum Source {
    /// Per-test scripts, first in first out.
    Queue(Mutex<VecDeque<Reply>>),
    /// A benchmark scenario, answering every request.
    Scenario(Player),
    /// A function of each request, such as a seeded random model.
    Responder(Responder),
}

/// What the server saw, shared by the handlers and the bodies.
#[derive(Default)]
struct Log {
    requests: Vec<RecordedRequest>,
    /// Title requests, apart from the rest.
    title_requests: Vec<RecordedRequest>,
    count: u64,
    gaps: Vec<Duration>,
    /// When the last response body ended, to measure the client's gap.
    last_end: Option<Instant>,
}

struct State {
    source: Source,
    /// Replies for title requests, first in first out.
    titles: Mutex<VecDeque<Reply>>,
    /// Whether full requests are kept (a benchmark scenario only counts them).
    record: bool,
    log: Mutex<Log>,
    /// How model-list requests are answered.
    models: Mutex<ModelsRoute>,
    /// Whether held streams may end ([`MockServer::release`]).
    released: tokio::sync::watch::Sender<bool>,
}

impl State {
    fn log(&self) -> MutexGuard<'_, Log> {
        // A handler that panicked while holding the lock left a consistent log: every
        // update is a single push or assignment.
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn models(&self) -> MutexGuard<'_, ModelsRoute> {
        // Every update is a single assignment, so a poisoned lock still holds a
        // consistent route.
        self.models.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn response_ended(&self) {
        self.log().last_end = Some(Instant::now());
    }
}

/// A loopback mock model server speaking the OpenAI Responses, Chat Completions and
/// Anthropic Messages streaming formats.
///
/// Each model request (`POST /v1/responses`, `POST /v1/chat/completions`,
/// `POST /v1/messages`) takes the next [`Reply`] from one FIFO queue and gets it
/// rendered in the format of the route it used. A model request when the queue is
/// empty gets HTTP 500 with a JSON error body.
///
/// A `GET` of any path ending in `/models` is a model-list request, answered from what
/// [`MockServer::set_models`] and its sibling knobs set, never from the queue: with the
/// `anthropic-version` header, one Anthropic page (`limit` and `after_id` honoured,
/// `has_more`/`first_id`/`last_id` set); without it, OpenAI's
/// `{"object":"list","data":[…]}` with every model at once.
///
/// Every request is recorded. Dropping the server stops it and closes its connections.
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl MockServer {
    /// Starts a server on `127.0.0.1` with an ephemeral port and an empty queue. Must be
    /// called inside a Tokio runtime, which then runs the server.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound: a test cannot go on without its server.
    pub async fn start() -> MockServer {
        match MockServer::bind(Source::Queue(Mutex::new(VecDeque::new())), true).await {
            Ok(server) => server,
            Err(error) => panic!("the mock model server could not bind a loopback port: {error}"),
        }
    }

    /// Starts a server that answers every model request from a benchmark
    /// [`Scenario`] instead of the queue, counting requests without keeping them.
    pub async fn start_scenario(scenario: Scenario) -> std::io::Result<MockServer> {
        MockServer::bind(Source::Scenario(Player::new(scenario)), false).await
    }

    /// Starts a server playing `scenario` whose every answer waits `answer_delay`
    /// before its first byte, as a model takes time to think.
    pub async fn start_scenario_after(
        scenario: Scenario,
        answer_delay: std::time::Duration,
    ) -> std::io::Result<MockServer> {
        let mut player = Player::new(scenario);
        player.answer_delay = answer_delay;
        MockServer::bind(Source::Scenario(player), false).await
    }

    /// Starts a server that answers every model request with what `responder` makes
    /// of its body (title requests included; they are still logged apart), keeping no
    /// request: a long randomized run makes many, and large ones.
    pub async fn start_responder(responder: Responder) -> std::io::Result<MockServer> {
        MockServer::bind(Source::Responder(responder), false).await
    }

    async fn bind(source: Source, record: bool) -> std::io::Result<MockServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            source,
            titles: Mutex::new(VecDeque::new()),
            record,
            log: Mutex::new(Log::default()),
            models: Mutex::new(ModelsRoute::default()),
            released: tokio::sync::watch::Sender::new(false),
        });
        let task = tokio::spawn(serve(listener, Arc::clone(&state)));
        Ok(MockServer { addr, state, task })
    }

    /// The base URL of the OpenAI-style routes, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The server's origin without a path, `http://127.0.0.1:PORT` (Anthropic's base
    /// URLs conventionally stop there).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues `reply` for a later model request.
    pub fn enqueue(&self, reply: Reply) {
        if let Source::Queue(queue) = &self.state.source {
            queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push_back(reply);
        }
    }

    /// Queues `reply` for a later title request (see [`TITLE_PROMPT_START`]). A title
    /// request finding this queue empty gets HTTP 400, which is not retried; under a
    /// benchmark scenario it gets a short title.
    pub fn enqueue_title(&self, reply: Reply) {
        self.state
            .titles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(reply);
    }

    /// The title requests received so far, in arrival order.
    pub fn title_requests(&self) -> Vec<RecordedRequest> {
        self.state.log().title_requests.clone()
    }

    /// Sets the models that model-list requests list, in order: ID and optional
    /// display name (Anthropic's `display_name`, sent only when there is one; OpenAI's
    /// shape has none).
    pub fn set_models<S: Into<String>>(&self, models: impl IntoIterator<Item = (S, Option<S>)>) {
        self.state.models().models = models
            .into_iter()
            .map(|(id, name)| (id.into(), name.map(Into::into)))
            .collect();
    }

    /// With `Some(status)`, model-list requests get that status and a JSON error body
    /// instead of the list; `None` restores the list.
    pub fn set_models_status(&self, status: Option<u16>) {
        self.state.models().status = status;
    }

    /// With `Some(body)`, model-list requests get 200 and exactly that body instead of
    /// the list; `None` restores the list.
    pub fn set_models_body(&self, body: Option<String>) {
        self.state.models().body = body;
    }

    /// Caps Anthropic pages at `size` models, whatever the request's `limit`, so a
    /// short list still needs several pages; `None` leaves only `limit`.
    pub fn set_models_page_size(&self, size: Option<usize>) {
        self.state.models().page_size = size;
    }

    /// With `true`, model-list requests are recorded but never answered: no status
    /// line, no headers, until the client gives up or the server is dropped.
    pub fn set_models_hang(&self, hang: bool) {
        self.state.models().hang = hang;
    }

    /// Lets every stream held by [`Reply::held`] end, now and later.
    pub fn release(&self) {
        self.state.released.send_replace(true);
    }

    /// The requests received so far, in arrival order (control routes excluded).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.log().requests.clone()
    }

    /// For each request after the first, the time from the end of the previous
    /// response body to the arrival of this request: the client's own gap.
    pub fn gaps(&self) -> Vec<Duration> {
        self.state.log().gaps.clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        // The accept task owns the connections' JoinSet, so aborting it closes them too.
        self.task.abort();
    }
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .finish()
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    /// One HTTP/1.0 GET over a fresh connection, read to the close: (status, body).
    async fn get(server: &MockServer, target: &str, extra: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        let request = format!("GET {target} HTTP/1.0\r\nhost: mock\r\n{extra}\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        let raw = String::from_utf8(raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        (status, body.to_owned())
    }

    #[tokio::test]
    async fn model_lists_are_served_in_both_shapes_and_recorded() {
        let server = MockServer::start().await;
        server.set_models([("m-1", Some("One")), ("m-2", None)]);
        let (status, body) = get(&server, "/v1/models", "").await;
        assert_eq!(status, 200);
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["data"][1]["id"], "m-2");
        let (status, body) = get(
            &server,
            "/v1/models?limit=1&after_id=m-1",
            "anthropic-version: 2023-06-01\r\n",
        )
        .await;
        assert_eq!(status, 200);
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["data"][0]["id"], "m-2");
        assert_eq!(body["has_more"], false);
        // A model-list request never takes a queued reply.
        server.enqueue(Reply::stream().text(["kept"]));
        server.set_models_status(Some(503));
        assert_eq!(get(&server, "/models", "").await.0, 503);
        server.set_models_status(None);
        server.set_models_body(Some("[]".to_owned()));
        assert_eq!(get(&server, "/v1/models", "").await, (200, "[]".to_owned()));
        let requests = server.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(requests[0].method, "GET");
        assert_eq!(requests[0].path, "/v1/models");
        assert_eq!(requests[0].query, None);
        assert_eq!(requests[1].query.as_deref(), Some("limit=1&after_id=m-1"));
        assert_eq!(requests[1].header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(requests[2].path, "/models");
        let queue_len = match &server.state.source {
            Source::Queue(queue) => queue.lock().unwrap().len(),
            Source::Scenario(_) | Source::Responder(_) => 0,
        };
        assert_eq!(queue_len, 1);
    }

    #[tokio::test]
    async fn a_hanging_model_list_is_recorded_but_never_answered() {
        let server = MockServer::start().await;
        server.set_models_hang(true);
        let waited =
            tokio::time::timeout(Duration::from_millis(200), get(&server, "/v1/models", "")).await;
        assert!(waited.is_err());
        assert_eq!(server.requests().len(), 1);
    }

    #[tokio::test]
    async fn other_gets_are_still_not_found() {
        let server = MockServer::start().await;
        server.set_models([("m", None)]);
        assert_eq!(get(&server, "/v1/models/m", "").await.0, 404);
    }
}
