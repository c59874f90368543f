//! `magi-mock-mcp [--http [--oauth-issuer URL [--rejected-tokens FILE]]] [--filler-tools N]
//! [--exit-at-startup CODE | --silent | --noise]`: an MCP server for tests and benchmarks
//! (its tools: `magi_testkit::McpMock`).
//!
//! Over stdio (the default) it serves until its stdin closes. With `--http` it serves
//! streamable HTTP on a loopback port, prints its URL (`http://127.0.0.1:PORT/mcp`) as
//! the only line on stdout, and serves until killed. With `--oauth-issuer` it serves
//! only requests bearing a valid token of that authorization server, as
//! `magi_testkit::mcp_oauth_gate` says; tokens listed in the `--rejected-tokens` file
//! (read at each request) are refused too.
//!
//! The startup misbehaviours, over stdio: `--exit-at-startup CODE` exits at once with
//! that status, reading nothing; `--silent` reads its stdin and never answers;
//! `--noise` writes two lines that are not MCP, then reads and never answers.
//!
//! Exit status 2 means a bad command line, 1 that serving failed.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use magi_testkit::{McpMock, mcp_oauth_gate};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

/// What the server does once started.
enum Mode {
    /// Serve MCP over stdin and stdout.
    Stdio,
    /// Serve streamable HTTP on a loopback port.
    Http,
    /// Exit at once with this status.
    ExitAtStartup(u8),
    /// Read stdin, answer nothing.
    Silent,
    /// Write lines that are not MCP, then read stdin and answer nothing.
    Noise,
}

/// The sign-in an HTTP server asks for.
#[derive(Clone, Default)]
struct Gate {
    /// The authorization server whose tokens are admitted; none admits every request.
    issuer: Option<String>,
    /// A file of tokens refused even so.
    rejected: Option<std::path::PathBuf>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Option<(Mode, McpMock, Gate)> {
    let mut mode = Mode::Stdio;
    let mut mock = McpMock::default();
    let mut gate = Gate::default();
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--http" => mode = Mode::Http,
            "--oauth-issuer" => gate.issuer = Some(args.next()?),
            "--rejected-tokens" => gate.rejected = Some(args.next()?.into()),
            "--silent" => mode = Mode::Silent,
            "--noise" => mode = Mode::Noise,
            "--exit-at-startup" => mode = Mode::ExitAtStartup(args.next()?.parse().ok()?),
            "--filler-tools" => mock.filler_tools = args.next()?.parse().ok()?,
            _ => return None,
        }
    }
    Some((mode, mock, gate))
}

/// Reads stdin to its end, answering nothing.
fn ignore_stdin() -> ExitCode {
    match std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

fn main() -> ExitCode {
    let Some((mode, mock, gate)) = parse(std::env::args().skip(1)) else {
        return ExitCode::from(2);
    };
    match mode {
        Mode::ExitAtStartup(code) => return ExitCode::from(code),
        Mode::Silent => return ignore_stdin(),
        Mode::Noise => {
            let mut stdout = std::io::stdout().lock();
            if writeln!(stdout, "hello\n{{}}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                return ExitCode::FAILURE;
            }
            return ignore_stdin();
        }
        Mode::Stdio | Mode::Http => {}
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    let served = runtime.block_on(async {
        match mode {
            Mode::Http => serve_http(mock, gate).await,
            _ => serve_stdio(mock).await,
        }
    });
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(()) => ExitCode::FAILURE,
    }
}

async fn serve_stdio(mock: McpMock) -> Result<(), ()> {
    let running = mock.serve(rmcp::transport::stdio()).await.map_err(drop)?;
    running.waiting().await.map_err(drop)?;
    Ok(())
}

async fn serve_http(mock: McpMock, gate: Gate) -> Result<(), ()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(drop)?;
    let port = listener.local_addr().map_err(drop)?.port();
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(mock.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    ));
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "http://127.0.0.1:{port}/mcp")
            .and_then(|()| stdout.flush())
            .map_err(drop)?;
    }
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = Arc::clone(&service);
        let gate = gate.clone();
        tokio::spawn(async move {
            let handle = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let service = Arc::clone(&service);
                let gate = gate.clone();
                async move {
                    let origin = format!("http://127.0.0.1:{port}");
                    let Some(issuer) = &gate.issuer else {
                        return Ok::<_, std::convert::Infallible>(service.handle(request).await);
                    };
                    if request
                        .uri()
                        .path()
                        .starts_with("/.well-known/oauth-protected-resource")
                    {
                        let body = mcp_oauth_gate::resource_metadata(&origin, issuer).to_string();
                        return Ok(plain(200, body, None));
                    }
                    let authorization = request
                        .headers()
                        .get(hyper::header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok());
                    if mcp_oauth_gate::admits(issuer, authorization, gate.rejected.as_deref()) {
                        Ok(service.handle(request).await)
                    } else {
                        let challenge = mcp_oauth_gate::challenge(&origin);
                        Ok(plain(
                            401,
                            "{\"error\":\"invalid_token\"}".into(),
                            Some(challenge),
                        ))
                    }
                }
            });
            // A connection that fails ends alone; the server goes on.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handle)
                .await;
        });
    }
}

/// A whole response of the gate, in the body type the MCP service answers with.
fn plain(
    status: u16,
    body: String,
    challenge: Option<String>,
) -> hyper::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>> {
    use http_body_util::BodyExt;
    let body = http_body_util::Full::new(bytes::Bytes::from(body)).boxed();
    let mut response = hyper::Response::new(body);
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    if let Some(challenge) = challenge.and_then(|c| hyper::header::HeaderValue::from_str(&c).ok()) {
        response
            .headers_mut()
            .insert(hyper::header::WWW_AUTHENTICATE, challenge);
    }
    response
}
