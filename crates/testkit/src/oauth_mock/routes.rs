//! The mock OAuth server's routes, its token minting, and the test client that follows
//! an authorize URL.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::{
    Authorize, Grant, MOCK_ACCOUNT_ID, MOCK_EMAIL, MOCK_USER_CODE, OAuthRequest, Shared, State,
};

pub(super) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = Arc::clone(&shared);
                connections.spawn(async move {
                    let service = service_fn(move |request| handle(Arc::clone(&shared), request));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn jwt(claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    format!(
        "{header}.{}.bW9jay1zaWduYXR1cmU",
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// A new access token: a JWT living `lifetime_secs`, for `resource` when one was asked.
pub(super) fn access_token(
    state: &mut State,
    lifetime_secs: i64,
    resource: Option<&str>,
) -> String {
    state.counter += 1;
    jwt(&json!({
        "iss": state.url,
        "aud": resource,
        "exp": now_secs() + lifetime_secs,
        "n": state.counter,
        "https://api.openai.com/auth": {
            "chatgpt_account_id": MOCK_ACCOUNT_ID,
            "chatgpt_plan_type": "plus",
        },
    }))
}

/// A new live refresh token, in the `rt_` shape of OpenAI's.
pub(super) fn refresh_token(state: &mut State) -> String {
    state.counter += 1;
    let token = format!("rt_mock{:08}abcdefghijklmnopqrstu", state.counter);
    state.live_refresh.insert(token.clone());
    token
}

/// The ID token: the email and the ChatGPT account.
pub(super) fn id_token(state: &State) -> String {
    jwt(&json!({
        "iss": state.url,
        "exp": now_secs() + 3_600,
        "email": MOCK_EMAIL,
        "https://api.openai.com/auth": {
            "chatgpt_account_id": MOCK_ACCOUNT_ID,
            "chatgpt_plan_type": "plus",
        },
    }))
}

fn respond(status: u16, body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn redirect(location: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::FOUND;
    if let Ok(value) = hyper::header::HeaderValue::from_str(location) {
        response
            .headers_mut()
            .insert(hyper::header::LOCATION, value);
    }
    response
}

/// The request's parameters: the query's, then the body's (a form, or a JSON object's
/// string fields).
fn params(query: Option<&str>, body: &[u8], json_body: bool) -> BTreeMap<String, String> {
    let mut params: BTreeMap<String, String> =
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    if json_body {
        if let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) {
            for (key, value) in object {
                if let Value::String(text) = value {
                    params.insert(key, text);
                }
            }
        }
    } else {
        params.extend(url::form_urlencoded::parse(body).into_owned());
    }
    params
}

async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = request.method().as_str().to_owned();
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let json_body = request
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let params = params(query.as_deref(), &body, json_body);
    shared.lock().requests.push(OAuthRequest {
        method: method.clone(),
        path: path.clone(),
        params: params.clone(),
        json: json_body,
    });
    let get = |key: &str| params.get(key).cloned().unwrap_or_default();
    let response = match (method.as_str(), path.as_str()) {
        ("GET", "/oauth/authorize" | "/authorize") => authorize(&shared, &params),
        ("POST", "/oauth/token" | "/token") => {
            let delay = shared.lock().refresh_delay;
            if get("grant_type") == "refresh_token" && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            token(&mut shared.lock(), &params, json_body)
        }
        ("POST", "/oauth/revoke" | "/revoke") => respond(200, json!({})),
        ("GET", "/.well-known/oauth-authorization-server") => metadata(&shared.lock()),
        ("POST", "/register") => {
            let mut state = shared.lock();
            if state.registration {
                state.counter += 1;
                respond(
                    201,
                    json!({ "client_id": format!("client-{}", state.counter), "client_name": get("client_name") }),
                )
            } else {
                respond(404, json!({ "error": "not_found" }))
            }
        }
        ("POST", "/api/accounts/deviceauth/usercode") => {
            let mut state = shared.lock();
            if state.device_enabled {
                state.counter += 1;
                let id = format!("dev-{}", state.counter);
                state.devices.insert(id.clone(), None);
                respond(
                    200,
                    json!({ "device_auth_id": id, "user_code": MOCK_USER_CODE, "interval": "1" }),
                )
            } else {
                respond(404, json!({ "error": { "code": "device_code_disabled" } }))
            }
        }
        ("POST", "/api/accounts/deviceauth/token") => {
            openai_device_token(&mut shared.lock(), &get("device_auth_id"))
        }
        ("POST", "/device") => {
            let mut state = shared.lock();
            state.counter += 1;
            let code = format!("device-{}", state.counter);
            state
                .devices
                .insert(code.clone(), params.get("resource").cloned());
            respond(
                200,
                json!({
                    "device_code": code,
                    "user_code": MOCK_USER_CODE,
                    "verification_uri": format!("{}/activate", state.url),
                    "expires_in": 900,
                    "interval": 1,
                }),
            )
        }
        _ => respond(404, json!({ "error": "not_found" })),
    };
    Ok(response)
}

fn authorize(shared: &Shared, params: &BTreeMap<String, String>) -> Response<Full<Bytes>> {
    let mut state = shared.lock();
    let get = |key: &str| params.get(key).cloned().unwrap_or_default();
    let redirect_uri = get("redirect_uri");
    let separator = if redirect_uri.contains('?') { '&' } else { '?' };
    let state_param: String =
        url::form_urlencoded::byte_serialize(get("state").as_bytes()).collect();
    match state.authorize.clone() {
        Authorize::Approve => {
            state.counter += 1;
            let code = format!("code-{}", state.counter);
            state.codes.insert(
                code.clone(),
                Grant {
                    challenge: get("code_challenge"),
                    redirect_uri: redirect_uri.clone(),
                    resource: params.get("resource").cloned(),
                },
            );
            redirect(&format!(
                "{redirect_uri}{separator}code={code}&state={state_param}"
            ))
        }
        Authorize::Deny => redirect(&format!(
            "{redirect_uri}{separator}error=access_denied&error_description=the+person+declined&state={state_param}"
        )),
        Authorize::RedirectTo(elsewhere) => redirect(&elsewhere),
        Authorize::Never => respond(200, json!({ "page": "sign in here" })),
    }
}

fn metadata(state: &State) -> Response<Full<Bytes>> {
    let url = &state.url;
    let mut metadata = json!({
        "issuer": url,
        "authorization_endpoint": format!("{url}/authorize"),
        "token_endpoint": format!("{url}/token"),
        "device_authorization_endpoint": format!("{url}/device"),
        "revocation_endpoint": format!("{url}/revoke"),
        "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code"],
    });
    if state.registration {
        metadata["registration_endpoint"] = json!(format!("{url}/register"));
    }
    respond(200, metadata)
}

/// A token answer with new tokens.
fn issue(state: &mut State, resource: Option<&str>, with_id: bool) -> Response<Full<Bytes>> {
    let lifetime = state.access_lifetime_secs;
    let access = access_token(state, lifetime, resource);
    let refresh = refresh_token(state);
    let mut answer = json!({
        "access_token": access,
        "refresh_token": refresh,
        "token_type": "Bearer",
        "expires_in": lifetime.max(0),
    });
    if with_id {
        answer["id_token"] = json!(id_token(state));
    }
    respond(200, answer)
}

/// An OAuth error in the body shape of the request: OpenAI's JSON endpoints nest it.
fn oauth_error(status: u16, code: &str, json_body: bool) -> Response<Full<Bytes>> {
    if json_body {
        respond(
            status,
            json!({ "error": { "code": code, "message": format!("mock: {code}") } }),
        )
    } else {
        respond(
            status,
            json!({ "error": code, "error_description": format!("mock: {code}") }),
        )
    }
}

fn token(
    state: &mut State,
    params: &BTreeMap<String, String>,
    json_body: bool,
) -> Response<Full<Bytes>> {
    let get = |key: &str| params.get(key).cloned().unwrap_or_default();
    let openai = json_body || params.get("resource").is_none();
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some(grant) = state.codes.remove(&get("code")) else {
                return oauth_error(400, "invalid_grant", false);
            };
            let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(get("code_verifier").as_bytes()));
            if challenge != grant.challenge || get("redirect_uri") != grant.redirect_uri {
                return oauth_error(400, "invalid_grant", false);
            }
            let resource = grant.resource.or_else(|| params.get("resource").cloned());
            issue(state, resource.as_deref(), openai)
        }
        "refresh_token" => {
            if let Some(code) = state.refusal.clone() {
                return oauth_error(401, &code, json_body);
            }
            let token = get("refresh_token");
            if state.used_refresh.contains(&token) {
                return oauth_error(401, "refresh_token_reused", json_body);
            }
            if !state.live_refresh.remove(&token) {
                return oauth_error(401, "invalid_grant", json_body);
            }
            state.used_refresh.insert(token);
            let resource = params.get("resource").cloned();
            issue(state, resource.as_deref(), json_body)
        }
        "urn:ietf:params:oauth:grant-type:device_code" => {
            let code = get("device_code");
            let Some(resource) = state.devices.get(&code).cloned() else {
                return oauth_error(400, "invalid_grant", false);
            };
            if !state.device_approved {
                return oauth_error(400, "authorization_pending", false);
            }
            state.devices.remove(&code);
            issue(state, resource.as_deref(), false)
        }
        _ => oauth_error(400, "unsupported_grant_type", false),
    }
}

/// OpenAI's device-code poll: 403 until approved, then an authorization code with the
/// PKCE pair to exchange it with.
fn openai_device_token(state: &mut State, id: &str) -> Response<Full<Bytes>> {
    if !state.devices.contains_key(id) {
        return respond(404, json!({ "error": { "code": "unknown_device" } }));
    }
    if !state.device_approved {
        return respond(403, json!({ "error": { "code": "authorization_pending" } }));
    }
    state.devices.remove(id);
    state.counter += 1;
    let code = format!("code-{}", state.counter);
    let verifier = format!(
        "verifier-{}-abcdefghijklmnopqrstuvwxyz0123456789",
        state.counter
    );
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    state.codes.insert(
        code.clone(),
        Grant {
            challenge: challenge.clone(),
            redirect_uri: format!("{}/deviceauth/callback", state.url),
            resource: None,
        },
    );
    respond(
        200,
        json!({ "authorization_code": code, "code_challenge": challenge, "code_verifier": verifier }),
    )
}

/// One HTTP/1.0 GET of `url` (`http://host:port/…`) over a fresh connection: the
/// status and the `Location` header.
async fn get(url: &str) -> Result<(u16, Option<String>), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not an http:// URL: {url}"))?;
    let (authority, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let target = if target.is_empty() { "/" } else { target };
    let mut stream = TcpStream::connect(authority)
        .await
        .map_err(|e| format!("cannot connect to {authority}: {e}"))?;
    let request = format!("GET {target} HTTP/1.0\r\nHost: {authority}\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .await
        .map_err(|e| e.to_string())?;
    let raw = String::from_utf8_lossy(&raw);
    let head = raw.split("\r\n\r\n").next().unwrap_or_default();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status from {url}"))?;
    let location = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    Ok((status, location))
}

pub(super) async fn follow(url: &str) -> Result<u16, String> {
    let (status, location) = get(url).await?;
    match (status, location) {
        (300..=399, Some(location)) => Ok(get(&location).await?.0),
        (status, _) => Ok(status),
    }
}
