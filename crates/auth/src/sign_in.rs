//! One sign-in in use: its current access token, refreshed first when it is due, once
//! for everyone who shares it.
//!
//! Refresh tokens rotate, so two refreshes of one sign-in would leave one of them with
//! a dead token. In this process one refresh runs at a time (the gate); across
//! processes the credential file's lock is held from the moment the file is read again
//! until the new tokens are written back, so a backend that waited finds the tokens its
//! neighbour just wrote and uses them. Codex takes no lock of ours and rewrites its file
//! in place: a refresh refused as already used reads the file again before it gives
//! up, since Codex may have refreshed first.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use magi_protocol::limits::SIGN_IN_LOCK_WAIT_MS;

use crate::codex::CodexFile;
use crate::file::{self, LockError, ReadError};
use crate::oauth::OAuthErrorKind;
use crate::oauth::chatgpt::Endpoints;
use crate::oauth::refresh::{Grant, RefreshFailure, refresh};
use crate::store::{ChatGptEntry, Entry};
use crate::tokens::{Freshness, Tokens};

/// Where a sign-in's tokens are kept, and so in which format they are read and written
/// back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A file of magi-code's own store.
    Store(PathBuf),
    /// Codex's credential file.
    Codex(PathBuf),
}

impl Origin {
    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            Origin::Store(path) | Origin::Codex(path) => path,
        }
    }
}

/// What a sign-in is for: how it is refreshed and what a person is told.
#[derive(Debug, Clone)]
pub enum Purpose {
    /// The ChatGPT sign-in of provider `codex`, refreshed at these endpoints.
    ChatGpt(Endpoints),
    /// MCP server `server`'s sign-in (its file says where it is refreshed).
    Mcp {
        /// The server's name.
        server: String,
    },
}

impl Purpose {
    /// Who the sign-in is for, for the sentences.
    pub fn label(&self) -> String {
        match self {
            Purpose::ChatGpt(_) => "provider \"codex\"".to_owned(),
            Purpose::Mcp { server } => format!("MCP server {server:?}"),
        }
    }

    /// The command that signs in again.
    pub fn command(&self) -> String {
        match self {
            Purpose::ChatGpt(_) => "magi-code login codex".to_owned(),
            Purpose::Mcp { server } => format!("magi-code mcp login {server}"),
        }
    }
}

/// Why no usable token could be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInErrorKind {
    /// There is no sign-in, or it ended (expired without a refresh token, its file
    /// unreadable or of another format).
    Missing,
    /// The server refused the refresh (revoked, expired, already used): sign in again.
    Refused,
    /// The refresh could not be made now (the network, the server failing, the lock).
    Unavailable,
}

/// A sign-in that cannot be used, said for a person: what happened and what to do.
/// Never a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInError {
    /// The kind of failure.
    pub kind: SignInErrorKind,
    /// What happened, naming the sign-in and the place.
    pub what: String,
    /// What to do about it.
    pub fix: String,
}

impl std::fmt::Display for SignInError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.fix)
    }
}

/// The token to send now, and the account it acts for.
#[derive(Clone, PartialEq, Eq)]
pub struct Current {
    /// The access token.
    pub access_token: String,
    /// The ChatGPT account, for ChatGPT's backend.
    pub account_id: Option<String>,
}

impl std::fmt::Debug for Current {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Current")
            .field("access_token", &"[hidden]")
            .field("account_id", &self.account_id)
            .finish()
    }
}

/// A credential file as read: which format it is in, for the write-back.
enum Held {
    Store(Entry),
    Codex(CodexFile),
}

impl Held {
    fn tokens(&self) -> &Tokens {
        match self {
            Held::Store(entry) => entry.tokens(),
            Held::Codex(file) => &file.tokens,
        }
    }

    fn account_id(&self) -> Option<String> {
        match self {
            Held::Store(Entry::ChatGpt(entry)) => entry.account_id.clone(),
            Held::Store(Entry::Mcp(_)) => None,
            Held::Codex(file) => file.account_id.clone(),
        }
        .or_else(|| {
            let tokens = self.tokens();
            tokens
                .id_token
                .as_deref()
                .and_then(crate::jwt::claims)
                .or_else(|| crate::jwt::claims(&tokens.access_token))
                .and_then(|c| c.account_id)
        })
    }

    /// The file's bytes with `tokens` in place of its own.
    fn with(&self, tokens: &Tokens, now: SystemTime) -> Vec<u8> {
        match self {
            Held::Codex(file) => file.with_tokens(tokens, None, now),
            Held::Store(Entry::ChatGpt(entry)) => Entry::ChatGpt(ChatGptEntry {
                tokens: tokens.clone(),
                ..entry.clone()
            })
            .to_bytes(),
            Held::Store(Entry::Mcp(entry)) => {
                let mut entry = entry.clone();
                entry.tokens = tokens.clone();
                Entry::Mcp(entry).to_bytes()
            }
        }
    }
}

/// One sign-in in use.
#[derive(Debug)]
pub struct SignIn {
    origin: Origin,
    purpose: Purpose,
    /// One refresh at a time in this process.
    gate: tokio::sync::Mutex<()>,
    /// The tokens last read or written, for [`SignIn::secrets`].
    last: Mutex<Option<Tokens>>,
    /// A refresh the server refused, by the refresh token it refused: asked again, the
    /// answer is the same, without asking the server.
    refused: Mutex<Option<(String, SignInError)>>,
    /// The access token this process's last refresh obtained. It is used until it
    /// expires even when it lives shorter than the refresh margin, so that an issuer of
    /// short-lived tokens does not get a refresh before every request.
    refreshed: Mutex<Option<String>>,
}

impl SignIn {
    /// The sign-in kept at `origin`, for `purpose`. Nothing is read yet.
    pub fn new(origin: Origin, purpose: Purpose) -> SignIn {
        SignIn {
            origin,
            purpose,
            gate: tokio::sync::Mutex::new(()),
            last: Mutex::new(None),
            refused: Mutex::new(None),
            refreshed: Mutex::new(None),
        }
    }

    /// Where the tokens are kept.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Every token value seen so far: what the backend redacts.
    pub fn secrets(&self) -> Vec<String> {
        self.last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(Tokens::secrets)
            .unwrap_or_default()
    }

    fn error(&self, kind: SignInErrorKind, what: String) -> SignInError {
        let command = self.purpose.command();
        let fix = match kind {
            SignInErrorKind::Missing => format!("sign in: {command}"),
            SignInErrorKind::Refused => format!("sign in again: {command}"),
            SignInErrorKind::Unavailable => {
                "check the network and the sign-in's URL in the settings, then try again".to_owned()
            }
        };
        SignInError { kind, what, fix }
    }

    fn unreadable(&self, why: &str) -> SignInError {
        self.error(
            SignInErrorKind::Missing,
            format!(
                "the sign-in of {} in {} cannot be used: {why}",
                self.purpose.label(),
                self.origin.path().display()
            ),
        )
    }

    /// Reads the file as its origin's format.
    fn parse(&self, bytes: &[u8]) -> Result<Held, SignInError> {
        match &self.origin {
            Origin::Codex(_) => CodexFile::parse(bytes)
                .map(Held::Codex)
                .map_err(|e| self.unreadable(&e.to_string())),
            Origin::Store(_) => Entry::parse(bytes)
                .map(Held::Store)
                .map_err(|e| self.unreadable(&e.to_string())),
        }
    }

    fn read(&self) -> Result<Held, SignInError> {
        match file::read(self.origin.path()) {
            Ok(content) => self.parse(&content.bytes),
            Err(ReadError::Missing) => Err(self.error(
                SignInErrorKind::Missing,
                format!(
                    "{} is not signed in ({} is gone)",
                    self.purpose.label(),
                    self.origin.path().display()
                ),
            )),
            Err(e) => Err(self.unreadable(&e.to_string())),
        }
    }

    fn remember(&self, tokens: &Tokens) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(tokens.clone());
    }

    fn current(&self, held: &Held) -> Current {
        self.remember(held.tokens());
        Current {
            access_token: held.tokens().access_token.clone(),
            account_id: held.account_id(),
        }
    }

    /// The token to send now: the stored one while it is fresh (or of unknown expiry),
    /// else refreshed first. `rejected` is a token the server just refused: unless the
    /// file already holds another, it is refreshed whatever its expiry says (a clock
    /// that runs behind, a token revoked early).
    pub async fn token(&self, rejected: Option<&str>) -> Result<Current, SignInError> {
        let _gate = self.gate.lock().await;
        let now = SystemTime::now();
        let held = self.read()?;
        let tokens = held.tokens();
        let forced = rejected.is_some_and(|r| r == tokens.access_token);
        let just_refreshed = self
            .refreshed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref()
            == Some(tokens.access_token.as_str());
        if !forced && just_refreshed && tokens.expiry().is_some_and(|expiry| expiry > now) {
            return Ok(self.current(&held));
        }
        if !forced {
            match tokens.freshness(now) {
                Freshness::Fresh | Freshness::Unknown => return Ok(self.current(&held)),
                Freshness::Expiring if tokens.usable(now) => return Ok(self.current(&held)),
                Freshness::Expiring => return Err(self.ended()),
                Freshness::Refreshable => {}
            }
        }
        self.refresh_held(rejected, false).await
    }

    /// Refreshes now, whatever the expiry says (`doctor --online`), writing the rotated
    /// tokens back as a turn would.
    pub async fn refresh_now(&self) -> Result<Current, SignInError> {
        let _gate = self.gate.lock().await;
        self.refresh_held(None, true).await
    }

    fn ended(&self) -> SignInError {
        self.error(
            SignInErrorKind::Refused,
            format!(
                "the sign-in of {} has expired and has no refresh token",
                self.purpose.label()
            ),
        )
    }

    /// The refresh itself, under the file's lock (the gate is held by the caller).
    async fn refresh_held(
        &self,
        rejected: Option<&str>,
        always: bool,
    ) -> Result<Current, SignInError> {
        let wait = Duration::from_millis(SIGN_IN_LOCK_WAIT_MS);
        let lock = match file::lock(self.origin.path(), wait).await {
            Ok(lock) => lock,
            Err(LockError::Busy) => {
                return Err(self.error(
                    SignInErrorKind::Unavailable,
                    format!(
                        "another process held the sign-in of {} ({}) for {} s without \
                         finishing its refresh",
                        self.purpose.label(),
                        self.origin.path().display(),
                        wait.as_secs()
                    ),
                ));
            }
            Err(LockError::Read(ReadError::Missing)) => {
                return Err(self.read().err().unwrap_or_else(|| self.ended()));
            }
            Err(LockError::Read(e)) => return Err(self.unreadable(&e.to_string())),
        };
        let content = lock
            .content()
            .map_err(|e| self.unreadable(&e.to_string()))?;
        let held = self.parse(&content.bytes)?;
        let tokens = held.tokens().clone();
        // Someone refreshed while this process waited for the lock: use their tokens.
        let replaced = rejected.is_some_and(|r| r != tokens.access_token);
        let fresh = rejected.is_none()
            && !always
            && tokens.freshness(SystemTime::now()) == Freshness::Fresh;
        if replaced || fresh {
            return Ok(self.current(&held));
        }
        let Some(refresh_token) = tokens.refresh_token.clone() else {
            return Err(match rejected {
                Some(_) => self.error(
                    SignInErrorKind::Refused,
                    format!(
                        "the server refused the access token of {} and the sign-in has no \
                         refresh token",
                        self.purpose.label()
                    ),
                ),
                None => self.ended(),
            });
        };
        if let Some((refused, error)) = self
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            && *refused == refresh_token
        {
            return Err(error.clone());
        }
        let grant = match (&self.purpose, &held) {
            (Purpose::ChatGpt(endpoints), _) => endpoints.grant(),
            (Purpose::Mcp { .. }, Held::Store(Entry::Mcp(entry))) => Grant::OAuth {
                token_url: entry.token_endpoint.clone(),
                client_id: entry.client_id.clone(),
                client_secret: entry.client_secret.clone(),
                resource: entry.resource.clone(),
            },
            (Purpose::Mcp { .. }, _) => {
                return Err(self.unreadable("it is not an MCP server's sign-in"));
            }
        };
        match refresh(&grant, &refresh_token).await {
            Ok(new) => {
                let now = SystemTime::now();
                file::write_atomic(self.origin.path(), &held.with(&new, now)).map_err(|e| {
                    self.error(
                        SignInErrorKind::Unavailable,
                        format!(
                            "the refreshed sign-in of {} could not be written to {} ({e})",
                            self.purpose.label(),
                            self.origin.path().display()
                        ),
                    )
                })?;
                drop(lock);
                *self
                    .refreshed
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(new.access_token.clone());
                let written = self.read()?;
                Ok(self.current(&written))
            }
            Err(failure) => {
                // magi-code's own file forgets a refresh token its server refused for
                // good, so that what is decided locally (readiness, the front ends'
                // explanations) knows the sign-in has ended once its token expires.
                if failure.error.kind == OAuthErrorKind::Refused
                    && !failure.reused()
                    && matches!(self.origin, Origin::Store(_))
                {
                    let ended = Tokens {
                        refresh_token: None,
                        ..tokens
                    };
                    let _ = file::write_atomic(
                        self.origin.path(),
                        &held.with(&ended, SystemTime::now()),
                    );
                }
                drop(lock);
                self.after_failed_refresh(&refresh_token, failure)
            }
        }
    }

    /// A refused refresh: Codex (or another writer that takes no lock) may have used the
    /// refresh token first and written its new tokens, so the file is read again.
    fn after_failed_refresh(
        &self,
        refresh_token: &str,
        failure: RefreshFailure,
    ) -> Result<Current, SignInError> {
        let label = self.purpose.label();
        if failure.error.kind != OAuthErrorKind::Refused {
            return Err(self.error(
                SignInErrorKind::Unavailable,
                format!(
                    "the sign-in of {label} could not be refreshed: {}",
                    failure.error
                ),
            ));
        }
        if let Ok(again) = self.read() {
            let tokens = again.tokens();
            // Another writer's tokens: a refresh token, and not the one refused.
            let rotated = tokens
                .refresh_token
                .as_deref()
                .is_some_and(|theirs| theirs != refresh_token);
            if rotated && tokens.usable(SystemTime::now()) {
                return Ok(self.current(&again));
            }
        }
        let error = self.error(
            SignInErrorKind::Refused,
            format!("the sign-in of {label} was refused: {}", failure.error),
        );
        *self.refused.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((refresh_token.to_owned(), error.clone()));
        Err(error)
    }
}

#[cfg(test)]
mod tests;
