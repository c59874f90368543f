//! A loopback mock OAuth server for sign-in tests: ChatGPT's sign-in as OpenAI serves
//! it (`/oauth/authorize`, `/oauth/token` taking JSON refreshes and form code
//! exchanges, `/oauth/revoke`, the device-code endpoints under `/api/accounts/`) and a
//! generic authorization server for MCP (RFC 8414 metadata, dynamic registration,
//! `/authorize`, `/token`, the device grant, `/revoke`).
//!
//! It issues JWT access tokens (`iss` its URL, `exp` its access lifetime, `aud` the
//! resource asked for) and an ID token with an email and a ChatGPT account, rotates
//! refresh tokens on every refresh (a used one answers `refresh_token_reused`), checks
//! PKCE, and records every request. Its knobs script what tests need: refusals,
//! delays, an authorize page that denies or never comes back, device codes that are
//! not enabled or not yet approved.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

mod routes;

/// The ChatGPT account every token of the mock names.
pub const MOCK_ACCOUNT_ID: &str = "acct-mock-1";
/// The email of the mock's ID tokens.
pub const MOCK_EMAIL: &str = "person@example.com";
/// The user code of the mock's device-code sign-ins.
pub const MOCK_USER_CODE: &str = "MOCK-1234";

/// What the authorize page does with a browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorize {
    /// Redirects back with a code (the person signed in).
    Approve,
    /// Redirects back with `error=access_denied`.
    Deny,
    /// Redirects to this URL instead of the client's.
    RedirectTo(String),
    /// Answers a page and never redirects (the person never finished).
    Never,
}

/// One request the mock received.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthRequest {
    /// `GET` or `POST`.
    pub method: String,
    /// The path.
    pub path: String,
    /// The query's pairs, or the form's, or the JSON body's string fields.
    pub params: BTreeMap<String, String>,
    /// Whether the body was JSON.
    pub json: bool,
}

/// An authorization code waiting to be exchanged.
struct Grant {
    challenge: String,
    redirect_uri: String,
    resource: Option<String>,
}

/// The mock's knobs and memory.
struct State {
    url: String,
    authorize: Authorize,
    access_lifetime_secs: i64,
    refresh_delay: Duration,
    refusal: Option<String>,
    device_enabled: bool,
    device_approved: bool,
    registration: bool,
    counter: u64,
    codes: HashMap<String, Grant>,
    live_refresh: HashSet<String>,
    used_refresh: HashSet<String>,
    /// Device codes handed out (OpenAI's device ID, or RFC 8628's device code), with
    /// the resource they are for.
    devices: HashMap<String, Option<String>>,
    requests: Vec<OAuthRequest>,
}

/// The shared state.
struct Shared(Mutex<State>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is whole; a panicking handler leaves a consistent state.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The mock OAuth server. Dropping it stops it.
pub struct MockOAuth {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl MockOAuth {
    /// Starts the server on an ephemeral loopback port, approving every sign-in, with
    /// an access lifetime of an hour.
    ///
    /// # Panics
    ///
    /// If no loopback port can be bound.
    pub async fn start() -> MockOAuth {
        let listener = match TcpListener::bind(("127.0.0.1", 0)).await {
            Ok(listener) => listener,
            Err(e) => panic!("the mock OAuth server could not bind a loopback port: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(addr) => addr,
            Err(e) => panic!("the mock OAuth server has no address: {e}"),
        };
        let shared = Arc::new(Shared(Mutex::new(State {
            url: format!("http://{addr}"),
            authorize: Authorize::Approve,
            access_lifetime_secs: 3_600,
            refresh_delay: Duration::ZERO,
            refusal: None,
            device_enabled: true,
            device_approved: true,
            registration: true,
            counter: 0,
            codes: HashMap::new(),
            live_refresh: HashSet::new(),
            used_refresh: HashSet::new(),
            devices: HashMap::new(),
            requests: Vec::new(),
        })));
        let task = tokio::spawn(routes::serve(listener, Arc::clone(&shared)));
        MockOAuth { addr, shared, task }
    }

    /// Its URL, `http://127.0.0.1:PORT`: the issuer, and ChatGPT's `auth_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What the authorize page does from now on.
    pub fn set_authorize(&self, authorize: Authorize) {
        self.shared.lock().authorize = authorize;
    }

    /// How long issued access tokens live, in seconds from now (negative: already
    /// expired).
    pub fn set_access_lifetime(&self, secs: i64) {
        self.shared.lock().access_lifetime_secs = secs;
    }

    /// A wait before every refresh is answered.
    pub fn set_refresh_delay(&self, delay: Duration) {
        self.shared.lock().refresh_delay = delay;
    }

    /// With `Some(code)`, every refresh is refused with that OAuth error code
    /// (`refresh_token_invalidated`, `invalid_grant`, …).
    pub fn refuse_refreshes(&self, code: Option<&str>) {
        self.shared.lock().refusal = code.map(str::to_owned);
    }

    /// Whether device-code sign-in is enabled (ChatGPT asks each account to enable it).
    pub fn set_device_enabled(&self, enabled: bool) {
        self.shared.lock().device_enabled = enabled;
    }

    /// Whether the person has entered the device code yet.
    pub fn set_device_approved(&self, approved: bool) {
        self.shared.lock().device_approved = approved;
    }

    /// Whether the authorization server offers dynamic client registration.
    pub fn set_registration(&self, offered: bool) {
        self.shared.lock().registration = offered;
    }

    /// New tokens as a sign-in would have them, their refresh token live: (access,
    /// refresh, id). The access token lives `lifetime_secs` from now.
    pub fn tokens(&self, lifetime_secs: i64) -> (String, String, String) {
        let mut state = self.shared.lock();
        let access = routes::access_token(&mut state, lifetime_secs, None);
        let refresh = routes::refresh_token(&mut state);
        let id = routes::id_token(&state);
        (access, refresh, id)
    }

    /// Uses `refresh` as another client refreshing with it would (Codex, say): it is
    /// spent, and the new access and refresh tokens are returned; none when it was not
    /// live.
    pub fn rotate(&self, refresh: &str) -> Option<(String, String)> {
        let mut state = self.shared.lock();
        if !state.live_refresh.remove(refresh) {
            return None;
        }
        state.used_refresh.insert(refresh.to_owned());
        let lifetime = state.access_lifetime_secs;
        let access = routes::access_token(&mut state, lifetime, None);
        Some((access, routes::refresh_token(&mut state)))
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<OAuthRequest> {
        self.shared.lock().requests.clone()
    }

    /// How many refresh grants were asked for.
    pub fn refreshes(&self) -> usize {
        self.shared
            .lock()
            .requests
            .iter()
            .filter(|r| r.params.get("grant_type").map(String::as_str) == Some("refresh_token"))
            .count()
    }

    /// Codex's credential file as Codex writes it, for `tokens`, with a field Codex
    /// may add that magi-code does not know.
    pub fn codex_auth_json(tokens: &(String, String, String)) -> Value {
        json!({
            "OPENAI_API_KEY": null,
            "tokens": {
                "id_token": tokens.2,
                "access_token": tokens.0,
                "refresh_token": tokens.1,
                "account_id": MOCK_ACCOUNT_ID,
            },
            "last_refresh": "2025-01-01T00:00:00.000000Z",
            "agent_identity": null,
        })
    }
}

impl Drop for MockOAuth {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl std::fmt::Debug for MockOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockOAuth")
            .field("addr", &self.addr)
            .finish()
    }
}

/// Follows a sign-in's authorize URL as a browser would: asks the authorization server,
/// then the loopback callback it redirects to, and returns the callback's status (or
/// the authorize page's, when it does not redirect). This is the test client of the
/// browser flow.
///
/// # Errors
///
/// When a request fails.
pub async fn follow_authorize_url(url: &str) -> Result<u16, String> {
    routes::follow(url).await
}
