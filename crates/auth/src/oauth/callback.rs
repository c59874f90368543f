//! The loopback page a browser sign-in comes back to: a small HTTP/1 server on
//! `127.0.0.1` that waits, within a deadline, for the one request carrying the
//! authorization code (or the server's refusal) with the state it was sent with.
//!
//! Requests for other paths get 404 and requests with another state 400, and the wait
//! goes on: a stale browser tab cannot end or hijack a sign-in.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use magi_protocol::limits::SIGN_IN_CALLBACK_REQUEST_BYTES;
use magi_protocol::text::sanitize;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::{OAuthError, OAuthErrorKind};

/// How long a connection may take to send its request's head.
const HEADER_WAIT: Duration = Duration::from_secs(5);
/// How long the page of the last request may take to be written after the code came.
const LAST_PAGE_WAIT: Duration = Duration::from_secs(2);
/// Longest piece of a refusal's description shown.
const DESCRIPTION_CHARS: usize = 200;

/// Which ports the callback may listen on.
#[derive(Debug, Clone, Copy)]
pub enum Ports<'a> {
    /// These, in order of preference: the first free one (an authorization server that
    /// knows only registered redirect URIs).
    Fixed(&'a [u16]),
    /// Any free port (RFC 8252 loopback redirects may use any).
    Any,
}

/// A listening callback.
#[derive(Debug)]
pub struct Callback {
    listener: TcpListener,
    /// The port it listens on.
    pub port: u16,
}

/// Listens on `127.0.0.1` at one of `ports`. When every fixed port is in use the
/// error names them.
pub async fn bind(ports: Ports<'_>) -> Result<Callback, OAuthError> {
    let candidates: Vec<u16> = match ports {
        Ports::Fixed(ports) => ports.to_vec(),
        Ports::Any => vec![0],
    };
    let mut in_use = Vec::new();
    for port in &candidates {
        match TcpListener::bind(("127.0.0.1", *port)).await {
            Ok(listener) => {
                let port = listener
                    .local_addr()
                    .map_err(|e| OAuthError::local(format!("the callback has no address ({e})")))?
                    .port();
                return Ok(Callback { listener, port });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => in_use.push(*port),
            Err(e) => {
                return Err(OAuthError::local(format!(
                    "the sign-in's callback could not listen on 127.0.0.1:{port} ({e})"
                )));
            }
        }
    }
    let listed: Vec<String> = in_use.iter().map(u16::to_string).collect();
    Err(OAuthError::local(format!(
        "the sign-in's callback needs port {} on 127.0.0.1, the only ones the authorization \
         server accepts, and {} in use (another sign-in still waiting?): end what uses \
         {}, or sign in with --device",
        listed.join(" or "),
        if listed.len() > 1 { "all are" } else { "it is" },
        if listed.len() > 1 { "them" } else { "it" },
    )))
}

/// What one request to the callback brought.
enum Arrival {
    /// The authorization code.
    Code(String),
    /// The authorization server's refusal, said.
    Refused(String),
}

impl Callback {
    /// Waits at most `wait` for a request to `path` with `state`, and returns its
    /// `code`. A refusal (`error=`) with the right state ends the wait with it.
    pub async fn code(self, path: &str, state: &str, wait: Duration) -> Result<String, OAuthError> {
        let (tx, mut rx) = mpsc::channel::<Arrival>(1);
        let mut connections = JoinSet::new();
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        let arrival = loop {
            tokio::select! {
                () = &mut deadline => {
                    return Err(OAuthError {
                        kind: OAuthErrorKind::Local,
                        message: format!(
                            "the browser did not come back within {} s (the sign-in was not \
                             completed or was abandoned): run the command again, or sign in \
                             with --device",
                            wait.as_secs()
                        ),
                    });
                }
                Some(arrival) = rx.recv() => break arrival,
                accepted = self.listener.accept() => {
                    // A failed accept concerns only that connection.
                    let Ok((stream, _)) = accepted else { continue };
                    let (tx, path, state) = (tx.clone(), path.to_owned(), state.to_owned());
                    connections.spawn(async move {
                        let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                            let answer = answer(&request, &path, &state);
                            let tx = tx.clone();
                            async move {
                                let (status, page, arrival) = answer;
                                if let Some(arrival) = arrival {
                                    let _ = tx.try_send(arrival);
                                }
                                Ok::<_, Infallible>(page_response(status, page))
                            }
                        });
                        let _ = http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(HEADER_WAIT)
                            .max_buf_size(SIGN_IN_CALLBACK_REQUEST_BYTES)
                            .keep_alive(false)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        };
        // Let the browser have its page before the server goes.
        let _ = tokio::time::timeout(LAST_PAGE_WAIT, connections.join_all()).await;
        match arrival {
            Arrival::Code(code) => Ok(code),
            Arrival::Refused(said) => Err(OAuthError {
                kind: OAuthErrorKind::Refused,
                message: format!("the authorization server refused the sign-in ({said})"),
            }),
        }
    }
}

/// The status, page and arrival (if any) of one request.
fn answer(
    request: &Request<hyper::body::Incoming>,
    path: &str,
    state: &str,
) -> (StatusCode, &'static str, Option<Arrival>) {
    if request.uri().path() != path {
        return (StatusCode::NOT_FOUND, PAGE_NOT_FOUND, None);
    }
    let query = request.uri().query().unwrap_or_default();
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    };
    if get("state") != Some(state) {
        return (StatusCode::BAD_REQUEST, PAGE_STATE, None);
    }
    if let Some(error) = get("error") {
        let said: String = match get("error_description") {
            Some(description) => sanitize(&format!("{error}: {description}")),
            None => sanitize(error),
        };
        let said = said.chars().take(DESCRIPTION_CHARS).collect();
        return (StatusCode::OK, PAGE_REFUSED, Some(Arrival::Refused(said)));
    }
    match get("code") {
        Some(code) => (
            StatusCode::OK,
            PAGE_DONE,
            Some(Arrival::Code(code.to_owned())),
        ),
        None => (
            StatusCode::OK,
            PAGE_REFUSED,
            Some(Arrival::Refused("no authorization code came back".into())),
        ),
    }
}

fn page_response(status: StatusCode, page: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(page.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

const PAGE_DONE: &str = "<!doctype html><title>magi-code</title><p>Signed in. You can close \
                         this tab and go back to magi-code.</p>";
const PAGE_REFUSED: &str = "<!doctype html><title>magi-code</title><p>The sign-in was not \
                            completed. magi-code says why.</p>";
const PAGE_STATE: &str = "<!doctype html><title>magi-code</title><p>This page belongs to \
                          another sign-in.</p>";
const PAGE_NOT_FOUND: &str = "<!doctype html><title>magi-code</title><p>Not found.</p>";

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> u16 {
        let client = reqwest::Client::builder()
            .tls_certs_only(Vec::<reqwest::Certificate>::new())
            .build()
            .unwrap();
        client
            .get(format!("http://127.0.0.1:{port}{target}"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    #[tokio::test]
    async fn only_the_right_path_and_state_end_the_wait() {
        let callback = bind(Ports::Any).await.unwrap();
        let port = callback.port;
        let waiting = tokio::spawn(callback.code("/cb", "s1", Duration::from_secs(10)));
        assert_eq!(get(port, "/other?state=s1&code=c").await, 404);
        assert_eq!(get(port, "/cb?state=stale&code=c").await, 400);
        assert_eq!(get(port, "/cb?state=s1&code=the-code").await, 200);
        assert_eq!(waiting.await.unwrap().unwrap(), "the-code");
    }

    #[tokio::test]
    async fn a_refusal_ends_the_wait_with_its_reason() {
        let callback = bind(Ports::Any).await.unwrap();
        let port = callback.port;
        let waiting = tokio::spawn(callback.code("/cb", "s", Duration::from_secs(10)));
        get(
            port,
            "/cb?state=s&error=access_denied&error_description=not%20today",
        )
        .await;
        let error = waiting.await.unwrap().unwrap_err();
        assert_eq!(error.kind, OAuthErrorKind::Refused);
        assert!(
            error.message.contains("access_denied: not today"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn no_callback_in_time_says_what_to_do() {
        let callback = bind(Ports::Any).await.unwrap();
        let error = callback
            .code("/cb", "s", Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(error.message.contains("did not come back"), "{error}");
    }

    #[tokio::test]
    async fn fixed_ports_fall_back_in_order_and_name_themselves_when_taken() {
        let first = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let taken = first.local_addr().unwrap().port();
        let spare = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let free = spare.local_addr().unwrap().port();
        drop(spare);
        let callback = bind(Ports::Fixed(&[taken, free])).await.unwrap();
        assert_eq!(callback.port, free);
        let error = bind(Ports::Fixed(&[taken])).await.unwrap_err();
        assert!(error.message.contains(&format!("port {taken} ")), "{error}");
    }
}
