//! The server's connections and routes: the control routes, the model-list route and
//! the model requests, answered from the queue or a scenario.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::body::EventBody;
use super::{
    Log, RESET_PATH, RecordedRequest, SCENARIO_TITLE, STATS_PATH, Source, State, TITLE_PROMPT_START,
};
use crate::render::{Format, render};
use crate::reply::{Kind, Reply};

pub(super) async fn serve(listener: TcpListener, state: Arc<State>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                // A failed accept concerns only that connection attempt.
                let Ok((stream, _)) = accepted else { continue };
                // Small SSE frames must leave at once, as a real server's do.
                let _ = stream.set_nodelay(true);
                let state = Arc::clone(&state);
                connections.spawn(async move {
                    let service = service_fn(move |request| handle(Arc::clone(&state), request));
                    // A connection error (a client that went away) ends only that
                    // connection.
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<EventBody>, Infallible> {
    let arrived = Instant::now();
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let anthropic = request.headers().contains_key("anthropic-version");
    let mut headers = BTreeMap::<String, String>::new();
    for (name, value) in request.headers() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_owned())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    // An unreadable body is recorded as `Null`, like one that is not JSON.
    let bytes = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);

    match (method.as_str(), path.as_str()) {
        ("GET", STATS_PATH) => {
            let stats = {
                let log = state.log();
                let gaps: Vec<u128> = log.gaps.iter().map(Duration::as_micros).collect();
                json!({ "requests": log.count, "gaps_us": gaps })
            };
            return Ok(plain(200, stats.to_string(), None));
        }
        ("POST", RESET_PATH) => {
            *state.log() = Log::default();
            return Ok(plain(200, "{}".to_owned(), None));
        }
        _ => {}
    }

    let format = if method == "POST" {
        Format::from_path(&path)
    } else {
        None
    };
    if let Some(format) = format
        && is_title_request(&body)
    {
        let recorded = RecordedRequest {
            method,
            path,
            query,
            headers,
            body,
        };
        return Ok(answer_title(&state, format, recorded));
    }
    {
        let mut log = state.log();
        log.count += 1;
        if let Some(end) = log.last_end {
            let gap = arrived.saturating_duration_since(end);
            log.gaps.push(gap);
        }
        if state.record {
            log.requests.push(RecordedRequest {
                method: method.clone(),
                path: path.clone(),
                query: query.clone(),
                headers,
                body: body.clone(),
            });
        }
    }
    if method == "GET" && path.ends_with("/models") {
        // Read the route once: a knob changed mid-request applies to the next one.
        let route = state.models().clone();
        if route.hang {
            // Dropping the server aborts this connection's task, ending the wait.
            std::future::pending::<()>().await;
        }
        let answer = route.answer(query.as_deref(), anthropic);
        return Ok(plain(answer.status, answer.body, Some(&state)));
    }
    let Some(format) = format else {
        return Ok(plain(404, error_body("mock: no such route"), Some(&state)));
    };
    // Reasoning sent back missing or altered is refused as the provider refuses it,
    // before any reply is taken.
    if let Some((status, error)) = crate::checks::rejection(format, &body) {
        return Ok(plain(status, error, Some(&state)));
    }

    if let Source::Scenario(player) = &state.source
        && !player.answer_delay.is_zero()
    {
        tokio::time::sleep(player.answer_delay).await;
    }
    let (events, break_at_end, delay, held, reply_headers) = match &state.source {
        Source::Scenario(player) => (
            player.events(format, &body),
            false,
            Duration::ZERO,
            false,
            Vec::new(),
        ),
        Source::Queue(_) | Source::Responder(_) => {
            let next = match &state.source {
                Source::Queue(queue) => queue
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front(),
                Source::Responder(respond) => Some(respond(&body)),
                Source::Scenario(_) => None,
            };
            let Some(reply) = next else {
                return Ok(plain(
                    500,
                    error_body("mock: no reply queued"),
                    Some(&state),
                ));
            };
            match reply.kind {
                Kind::Error { status, body } => {
                    let mut response = plain(status, body, Some(&state));
                    add_headers(&mut response, &reply.headers);
                    return Ok(response);
                }
                Kind::Stream(script) => {
                    let (events, break_at_end) = render(format, &script, &body);
                    let held = script.held;
                    (
                        events,
                        break_at_end,
                        script.chunk_delay,
                        held,
                        reply.headers,
                    )
                }
            }
        }
    };
    let mut body = EventBody::new(events, delay, break_at_end, Some(Arc::clone(&state)));
    if held {
        let mut released = state.released.subscribe();
        body.hold = Some(Box::pin(async move {
            // A dropped server ends the wait too; its connections are closing anyway.
            let _ = released.wait_for(|released| *released).await;
        }));
    }
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    add_headers(&mut response, &reply_headers);
    Ok(response)
}

/// Whether a model request asks for a session title: one of its messages' text starts
/// with [`TITLE_PROMPT_START`], in any wire format.
fn is_title_request(body: &Value) -> bool {
    let messages = body
        .get("messages")
        .or_else(|| body.get("input"))
        .and_then(Value::as_array);
    messages.is_some_and(|messages| {
        messages.iter().any(|m| {
            let content = &m["content"];
            let starts = |v: &Value| {
                v.as_str()
                    .is_some_and(|t| t.starts_with(TITLE_PROMPT_START))
            };
            starts(content)
                || content
                    .as_array()
                    .is_some_and(|parts| parts.iter().any(|p| starts(&p["text"])))
        })
    })
}

/// A title request, logged apart and answered from the title queue (a short title under
/// a scenario; HTTP 400 when nothing is queued).
fn answer_title(
    state: &Arc<State>,
    format: Format,
    recorded: RecordedRequest,
) -> Response<EventBody> {
    let answered = match &state.source {
        Source::Responder(respond) => Some(respond(&recorded.body)),
        _ => None,
    };
    let body = recorded.body.clone();
    if state.record {
        state.log().title_requests.push(recorded);
    }
    let next = match &state.source {
        Source::Scenario(_) => Some(Reply::stream().text([SCENARIO_TITLE])),
        Source::Responder(_) => answered,
        Source::Queue(_) => state
            .titles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front(),
    };
    let Some(reply) = next else {
        return plain(400, error_body("mock: no title queued"), None);
    };
    match reply.kind {
        Kind::Error { status, body } => {
            let mut response = plain(status, body, None);
            add_headers(&mut response, &reply.headers);
            response
        }
        Kind::Stream(script) => {
            let (events, break_at_end) = render(format, &script, &body);
            let mut body = EventBody::new(events, script.chunk_delay, break_at_end, None);
            if script.held {
                let mut released = state.released.subscribe();
                body.hold = Some(Box::pin(async move {
                    let _ = released.wait_for(|released| *released).await;
                }));
            }
            let mut response = Response::new(body);
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            add_headers(&mut response, &reply.headers);
            response
        }
    }
}

fn error_body(message: &str) -> String {
    json!({ "error": { "type": "mock_error", "message": message } }).to_string()
}

/// A complete JSON response; with `state`, its end counts as a response end.
fn plain(status: u16, body: String, state: Option<&Arc<State>>) -> Response<EventBody> {
    let body = EventBody::new(
        vec![Bytes::from(body)],
        Duration::ZERO,
        false,
        state.cloned(),
    );
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Adds scripted headers; one that is not a valid header is skipped (it is test data).
fn add_headers(response: &mut Response<EventBody>, extra: &[(String, String)]) {
    for (name, value) in extra {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
}
