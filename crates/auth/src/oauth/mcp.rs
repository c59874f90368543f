//! An MCP server's sign-in by the MCP authorization rules: the server's protected
//! resource metadata (RFC 9728) names its authorization server, whose metadata (RFC
//! 8414, or OpenID Connect discovery) names the endpoints; the client is the one the
//! server's settings name, else one registered dynamically (RFC 7591) where the server
//! offers it; then PKCE with the resource indicator (RFC 8707) by the browser, or the
//! device authorization grant (RFC 8628) where the server offers it.

use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};

use super::callback::{self, Ports};
use super::http::{Body, OAuthHttp, refusal, shown_url};
use super::pkce::{Pkce, random};
use super::refresh::tokens_of;
use super::{OAuthError, OAuthErrorKind, field, optional};
use crate::tokens::Tokens;

/// The callback's path.
const CALLBACK_PATH: &str = "/callback";
/// The grant type of RFC 8628.
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
/// The name this client registers under.
const CLIENT_NAME: &str = "magi-code";

/// What discovery found: the resource and its authorization server's endpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The resource the tokens are for (the protected resource metadata's `resource`).
    pub resource: String,
    /// The authorization server's issuer.
    pub issuer: String,
    /// Where the browser signs in.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are exchanged.
    pub token_endpoint: String,
    /// Where a client may register itself, when offered.
    pub registration_endpoint: Option<String>,
    /// Where a device code is asked for, when offered.
    pub device_authorization_endpoint: Option<String>,
    /// Where tokens are revoked, when offered.
    pub revocation_endpoint: Option<String>,
    /// The scopes asked for.
    pub scopes: Vec<String>,
}

/// The client a sign-in is made as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Its ID.
    pub client_id: String,
    /// Its secret, when registration gave one.
    pub client_secret: Option<String>,
}

/// A completed sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpSignedIn {
    /// Where it was made.
    pub discovery: Discovery,
    /// As which client.
    pub client: Client,
    /// The tokens.
    pub tokens: Tokens,
}

/// What a `WWW-Authenticate: Bearer …` challenge carries for discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata="…"`.
    pub resource_metadata: Option<String>,
    /// `scope="…"`.
    pub scope: Option<String>,
}

/// Reads the parameters of a Bearer challenge (RFC 6750 §3, RFC 9728 §5.1).
pub fn challenge(header: &str) -> Challenge {
    let mut found = Challenge::default();
    let Some(params) = header
        .trim_start()
        .strip_prefix("Bearer")
        .or_else(|| header.trim_start().strip_prefix("bearer"))
    else {
        return found;
    };
    let mut rest = params.trim_start();
    while !rest.is_empty() {
        let Some((name, after)) = rest.split_once('=') else {
            break;
        };
        let name = name.trim().trim_start_matches(',').trim();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim(), &after[end..])
        };
        match name {
            "resource_metadata" => found.resource_metadata = Some(value.to_owned()),
            "scope" => found.scope = Some(value.to_owned()),
            _ => {}
        }
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    found
}

/// The well-known URLs of `path_name` metadata for `url`: with the URL's path inserted
/// after the well-known part first, then at the origin (RFC 8414 §3.1, RFC 9728 §3.1).
fn well_known(url: &reqwest::Url, path_name: &str, oidc_suffix: bool) -> Vec<String> {
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!("{origin}/.well-known/{path_name}{path}"));
        if oidc_suffix {
            urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
            urls.push(format!("{origin}{path}/.well-known/openid-configuration"));
        }
    }
    urls.push(format!("{origin}/.well-known/{path_name}"));
    if oidc_suffix && path.is_empty() {
        urls.push(format!("{origin}/.well-known/openid-configuration"));
    }
    urls
}

/// The first metadata document of `candidates`: a 404 (or 405) tries the next one.
async fn first_document(
    http: &OAuthHttp,
    what: &str,
    candidates: &[String],
) -> Result<Option<(String, Map<String, Value>)>, OAuthError> {
    for url in candidates {
        let answer = http.send(what, url, Body::None).await?;
        if matches!(answer.status, 400 | 401 | 404 | 405) {
            continue;
        }
        if !answer.ok() {
            return Err(refusal(what, &shown_url(url), &answer));
        }
        let object = answer.object().ok_or_else(|| {
            OAuthError::protocol(format!("{what} at {} is not a JSON object", shown_url(url)))
        })?;
        return Ok(Some((url.clone(), object)));
    }
    Ok(None)
}

/// Discovers where and how `server_url` is signed in to. `scopes` are the settings'
/// own; without them the server's challenge, then its metadata, say which to ask for.
pub async fn discover(server_url: &str, scopes: &[String]) -> Result<Discovery, OAuthError> {
    let url = reqwest::Url::parse(server_url).map_err(|_| {
        OAuthError::protocol(format!("the MCP server's URL {server_url:?} is not valid"))
    })?;
    let http = OAuthHttp::for_url(server_url)?;
    // An unauthenticated request: a server that wants a sign-in answers 401 with a
    // challenge pointing at its metadata.
    let probe = http
        .send(
            "the MCP server",
            server_url,
            Body::Json(json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": { "name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION") }
                }
            })),
        )
        .await?;
    let challenge = probe
        .www_authenticate
        .as_deref()
        .map(challenge)
        .unwrap_or_default();
    let mut candidates = Vec::new();
    candidates.extend(challenge.resource_metadata.clone());
    candidates.extend(well_known(&url, "oauth-protected-resource", false));
    let resource_metadata =
        first_document(&http, "the protected resource metadata", &candidates).await?;
    let (resource, issuer, supported) = match &resource_metadata {
        Some((at, metadata)) => {
            let resource = optional(metadata, "resource").unwrap_or_else(|| server_url.to_owned());
            // The metadata must be the server's own (RFC 9728 §3.3): its resource is
            // the server's URL or a part of it.
            if !server_url.starts_with(resource.trim_end_matches('/')) {
                return Err(OAuthError::protocol(format!(
                    "the protected resource metadata at {} names the resource {}, not the MCP \
                     server at {}: it is not the server's own",
                    shown_url(at),
                    shown_url(&resource),
                    shown_url(server_url)
                )));
            }
            let issuer = metadata
                .get("authorization_servers")
                .and_then(Value::as_array)
                .and_then(|servers| servers.first())
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    OAuthError::protocol(format!(
                        "the protected resource metadata at {} names no authorization server",
                        shown_url(at)
                    ))
                })?;
            (resource, issuer, strings(metadata.get("scopes_supported")))
        }
        // Servers of the earlier MCP revision have no such metadata: their own origin
        // is their authorization server.
        None => (
            server_url.to_owned(),
            url.origin().ascii_serialization(),
            Vec::new(),
        ),
    };
    let issuer_url = reqwest::Url::parse(&issuer).map_err(|_| {
        OAuthError::protocol(format!(
            "the authorization server {issuer:?} is not a valid URL"
        ))
    })?;
    let candidates = well_known(&issuer_url, "oauth-authorization-server", true);
    let Some((at, metadata)) =
        first_document(&http, "the authorization server metadata", &candidates).await?
    else {
        return Err(OAuthError::protocol(format!(
            "neither the MCP server at {} nor its authorization server {} publishes OAuth \
             metadata (RFC 9728, RFC 8414): if the server needs no sign-in, remove `oauth` from \
             its definition",
            shown_url(server_url),
            shown_url(&issuer)
        )));
    };
    let what = format!("the authorization server metadata at {}", shown_url(&at));
    let stated_issuer = field(&metadata, "issuer", &what)?;
    if stated_issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
        return Err(OAuthError::protocol(format!(
            "{what} names the issuer {}, not {}: it is not that server's",
            shown_url(&stated_issuer),
            shown_url(&issuer)
        )));
    }
    // PKCE is required; a server that does not say it supports S256 is not used.
    if !strings(metadata.get("code_challenge_methods_supported"))
        .iter()
        .any(|m| m == "S256")
    {
        return Err(OAuthError::protocol(format!(
            "{what} does not offer PKCE with S256, which the MCP authorization rules require"
        )));
    }
    let scopes = if !scopes.is_empty() {
        scopes.to_vec()
    } else if let Some(scope) = challenge.scope {
        scope.split_whitespace().map(str::to_owned).collect()
    } else {
        supported
    };
    Ok(Discovery {
        resource,
        issuer: stated_issuer,
        authorization_endpoint: field(&metadata, "authorization_endpoint", &what)?,
        token_endpoint: field(&metadata, "token_endpoint", &what)?,
        registration_endpoint: optional(&metadata, "registration_endpoint"),
        device_authorization_endpoint: optional(&metadata, "device_authorization_endpoint"),
        revocation_endpoint: optional(&metadata, "revocation_endpoint"),
        scopes,
    })
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The client to sign in as, in the MCP rules' order: the one the settings name, else
/// one registered now where the server offers registration, else an error naming the
/// setting.
pub async fn client(
    discovery: &Discovery,
    configured: Option<&str>,
    redirect_uri: &str,
    server: &str,
    device: bool,
) -> Result<Client, OAuthError> {
    if let Some(id) = configured {
        return Ok(Client {
            client_id: id.to_owned(),
            client_secret: None,
        });
    }
    let Some(endpoint) = &discovery.registration_endpoint else {
        return Err(OAuthError::local(format!(
            "the authorization server {} of MCP server {server:?} offers no client registration: \
             register a client there, give its ID as `client_id` under \
             [mcp.servers.{server}.oauth] in the settings, approve the server again \
             (magi-code mcp approve {server}) and sign in again",
            shown_url(&discovery.issuer)
        )));
    };
    let mut grants = vec!["authorization_code", "refresh_token"];
    if device {
        grants.push(DEVICE_GRANT);
    }
    let mut request = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": grants,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if !discovery.scopes.is_empty() {
        request["scope"] = json!(discovery.scopes.join(" "));
    }
    let http = OAuthHttp::for_url(endpoint)?;
    let registered = http
        .object("the registration endpoint", endpoint, Body::Json(request))
        .await?;
    Ok(Client {
        client_id: field(&registered, "client_id", "the registration endpoint")?,
        client_secret: optional(&registered, "client_secret"),
    })
}

/// The form of a token request, with the client's credentials and the resource.
fn token_form(
    discovery: &Discovery,
    client: &Client,
    mut pairs: Vec<(&'static str, String)>,
) -> Body {
    pairs.push(("client_id", client.client_id.clone()));
    pairs.push(("resource", discovery.resource.clone()));
    if let Some(secret) = &client.client_secret {
        pairs.push(("client_secret", secret.clone()));
    }
    Body::Form(pairs)
}

/// A browser sign-in under way.
#[derive(Debug)]
pub struct BrowserSignIn {
    /// The URL the person opens.
    pub url: String,
    /// The port the callback listens on.
    pub port: u16,
    discovery: Discovery,
    client: Client,
    callback: callback::Callback,
    pkce: Pkce,
    state: String,
    redirect_uri: String,
}

/// Starts a browser sign-in: a callback on any free loopback port, the client, and
/// the authorization URL with the resource and the scopes.
pub async fn start_browser(
    discovery: Discovery,
    configured_client: Option<&str>,
    server: &str,
) -> Result<BrowserSignIn, OAuthError> {
    let callback = callback::bind(Ports::Any).await?;
    let redirect_uri = format!("http://127.0.0.1:{}{CALLBACK_PATH}", callback.port);
    let client = client(&discovery, configured_client, &redirect_uri, server, false).await?;
    let pkce = Pkce::new()?;
    let state = random(32)?;
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", &client.client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &state)
        .append_pair("resource", &discovery.resource);
    if !discovery.scopes.is_empty() {
        query.append_pair("scope", &discovery.scopes.join(" "));
    }
    let separator = if discovery.authorization_endpoint.contains('?') {
        '&'
    } else {
        '?'
    };
    Ok(BrowserSignIn {
        url: format!(
            "{}{separator}{}",
            discovery.authorization_endpoint,
            query.finish()
        ),
        port: callback.port,
        discovery,
        client,
        callback,
        pkce,
        state,
        redirect_uri,
    })
}

impl BrowserSignIn {
    /// Waits at most `wait` for the browser, then exchanges the code.
    pub async fn finish(self, wait: Duration) -> Result<McpSignedIn, OAuthError> {
        let code = self.callback.code(CALLBACK_PATH, &self.state, wait).await?;
        let body = token_form(
            &self.discovery,
            &self.client,
            vec![
                ("grant_type", "authorization_code".to_owned()),
                ("code", code),
                ("redirect_uri", self.redirect_uri.clone()),
                ("code_verifier", self.pkce.verifier.clone()),
            ],
        );
        let tokens = token_request(&self.discovery, body).await?;
        Ok(McpSignedIn {
            discovery: self.discovery,
            client: self.client,
            tokens,
        })
    }
}

/// One request to the token endpoint whose success carries tokens.
async fn token_request(discovery: &Discovery, body: Body) -> Result<Tokens, OAuthError> {
    let url = &discovery.token_endpoint;
    let http = OAuthHttp::for_url(url)?;
    let answer = http.send("the token endpoint", url, body).await?;
    if !answer.ok() {
        return Err(refusal("the token endpoint", &shown_url(url), &answer));
    }
    tokens_of(&answer, "the token endpoint", SystemTime::now())
}

/// A device-code sign-in under way.
#[derive(Debug)]
pub struct DeviceSignIn {
    /// The page to open on any device.
    pub verification_uri: String,
    /// The same page with the code filled in, when the server gives one.
    pub verification_uri_complete: Option<String>,
    /// The code to enter there.
    pub user_code: String,
    discovery: Discovery,
    client: Client,
    device_code: String,
    interval: Duration,
}

/// Asks for a device code (RFC 8628 §3.1), where the authorization server offers it.
pub async fn start_device(
    discovery: Discovery,
    configured_client: Option<&str>,
    server: &str,
) -> Result<DeviceSignIn, OAuthError> {
    let Some(endpoint) = discovery.device_authorization_endpoint.clone() else {
        return Err(OAuthError::local(format!(
            "the authorization server {} of MCP server {server:?} offers no device-code \
             sign-in: sign in with the browser (magi-code mcp login {server})",
            shown_url(&discovery.issuer)
        )));
    };
    // A registered client needs a redirect URI even when the device grant uses none.
    let client = client(
        &discovery,
        configured_client,
        "http://127.0.0.1/callback",
        server,
        true,
    )
    .await?;
    let mut pairs = Vec::new();
    if !discovery.scopes.is_empty() {
        pairs.push(("scope", discovery.scopes.join(" ")));
    }
    let http = OAuthHttp::for_url(&endpoint)?;
    let what = "the device authorization endpoint";
    let object = http
        .object(what, &endpoint, token_form(&discovery, &client, pairs))
        .await?;
    Ok(DeviceSignIn {
        verification_uri: field(&object, "verification_uri", what)?,
        verification_uri_complete: optional(&object, "verification_uri_complete"),
        user_code: field(&object, "user_code", what)?,
        device_code: field(&object, "device_code", what)?,
        interval: super::chatgpt::poll_interval(object.get("interval")),
        discovery,
        client,
    })
}

impl DeviceSignIn {
    /// Polls the token endpoint (RFC 8628 §3.4) until the person approved, at most
    /// `wait`.
    pub async fn finish(mut self, wait: Duration) -> Result<McpSignedIn, OAuthError> {
        let url = self.discovery.token_endpoint.clone();
        let http = OAuthHttp::for_url(&url)?;
        let deadline = Instant::now() + wait;
        loop {
            let body = token_form(
                &self.discovery,
                &self.client,
                vec![
                    ("grant_type", DEVICE_GRANT.to_owned()),
                    ("device_code", self.device_code.clone()),
                ],
            );
            let answer = http.send("the token endpoint", &url, body).await?;
            if answer.ok() {
                let tokens = tokens_of(&answer, "the token endpoint", SystemTime::now())?;
                return Ok(McpSignedIn {
                    discovery: self.discovery,
                    client: self.client,
                    tokens,
                });
            }
            match answer.error_code().as_deref() {
                Some("authorization_pending") => {}
                Some("slow_down") => self.interval += Duration::from_secs(5),
                _ => return Err(refusal("the token endpoint", &shown_url(&url), &answer)),
            }
            if Instant::now() + self.interval > deadline {
                return Err(OAuthError {
                    kind: OAuthErrorKind::Local,
                    message: format!(
                        "the code was not entered within {} s: run the command again for a \
                         new code",
                        wait.as_secs()
                    ),
                });
            }
            tokio::time::sleep(self.interval).await;
        }
    }
}

/// Revokes a token (RFC 7009), where the server offers revocation.
pub async fn revoke(
    endpoint: &str,
    client: &Client,
    token: &str,
    hint: &'static str,
) -> Result<(), OAuthError> {
    let mut pairs = vec![
        ("token", token.to_owned()),
        ("token_type_hint", hint.to_owned()),
        ("client_id", client.client_id.clone()),
    ];
    if let Some(secret) = &client.client_secret {
        pairs.push(("client_secret", secret.clone()));
    }
    let http = OAuthHttp::for_url(endpoint)?;
    let answer = http
        .send("the revocation endpoint", endpoint, Body::Form(pairs))
        .await?;
    if answer.ok() {
        Ok(())
    } else {
        Err(refusal(
            "the revocation endpoint",
            &shown_url(endpoint),
            &answer,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read() {
        let found = challenge(
            r#"Bearer realm="mcp", resource_metadata="https://s.example/.well-known/oauth-protected-resource/mcp", scope="read write""#,
        );
        assert_eq!(
            found.resource_metadata.as_deref(),
            Some("https://s.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(found.scope.as_deref(), Some("read write"));
        assert_eq!(challenge("Basic realm=x"), Challenge::default());
        assert_eq!(
            challenge("Bearer error=invalid_token, scope=one")
                .scope
                .as_deref(),
            Some("one")
        );
    }

    #[test]
    fn well_known_urls_insert_the_path_first() {
        let url = reqwest::Url::parse("https://s.example/tenant/mcp").unwrap();
        assert_eq!(
            well_known(&url, "oauth-protected-resource", false),
            [
                "https://s.example/.well-known/oauth-protected-resource/tenant/mcp",
                "https://s.example/.well-known/oauth-protected-resource",
            ]
        );
        let issuer = reqwest::Url::parse("https://auth.example").unwrap();
        assert_eq!(
            well_known(&issuer, "oauth-authorization-server", true),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration",
            ]
        );
    }
}
