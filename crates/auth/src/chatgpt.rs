//! The ChatGPT sign-in of provider `codex`: where it is found (magi-code's own store
//! first, then Codex's credential file), whether it is ready, which is decided locally
//! (a token is there, and it has not expired or can be refreshed), and what `magi-code
//! login status` and `doctor` show of it. Never a token.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::codex::{self, CodexFile, FormatError};
use crate::file::{self, ReadError};
use crate::oauth::OAuthError;
use crate::oauth::chatgpt::{Endpoints, SignedIn, revoke};
use crate::sign_in::{Origin, Purpose, SignIn};
use crate::store::{ChatGptEntry, Entry, Store};
use crate::tokens::Tokens;
use crate::{jwt, permission_warning};

/// The command that signs in.
pub const LOGIN_COMMAND: &str = "magi-code login codex";

/// Where the ChatGPT sign-in may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// magi-code's own store.
    pub store: Store,
    /// Codex's home, when there is one to look in.
    pub codex_home: Option<PathBuf>,
}

impl Places {
    /// The places of `MC_HOME` at `mc_home`, and of Codex's home.
    pub fn new(mc_home: &Path, codex_home: Option<PathBuf>) -> Places {
        Places {
            store: Store::new(mc_home),
            codex_home,
        }
    }

    fn codex_file(&self) -> Option<PathBuf> {
        self.codex_home
            .as_ref()
            .map(|home| home.join(codex::AUTH_FILE))
    }
}

/// A ChatGPT sign-in found on disk.
#[derive(Debug, Clone)]
pub struct Found {
    /// Where.
    pub origin: Origin,
    /// Its tokens.
    pub tokens: Tokens,
    /// The account they act for.
    pub account_id: Option<String>,
    /// What a person should fix about the file (others may read it).
    pub warnings: Vec<String>,
}

/// What looking for the sign-in found.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// A sign-in.
    Found(Found),
    /// None: where it was looked for, and what Codex keeps elsewhere.
    Absent(String),
    /// A file that should hold one and cannot be used: which, and why.
    Broken(String),
}

/// Looks for the sign-in: magi-code's own first, then Codex's.
pub fn lookup(places: &Places) -> Lookup {
    let ours = places.store.chatgpt_path();
    match file::read(&ours) {
        Ok(content) => {
            let warnings = permission_warning(&ours, content.readable_by_others);
            return match Entry::parse(&content.bytes) {
                Ok(Entry::ChatGpt(entry)) => Lookup::Found(Found {
                    origin: Origin::Store(ours),
                    tokens: entry.tokens,
                    account_id: entry.account_id,
                    warnings,
                }),
                Ok(Entry::Mcp(_)) => Lookup::Broken(format!(
                    "{} holds an MCP server's sign-in, not ChatGPT's",
                    ours.display()
                )),
                Err(e) => Lookup::Broken(format!("{} cannot be used: {e}", ours.display())),
            };
        }
        Err(ReadError::Missing) => {}
        Err(e) => return Lookup::Broken(format!("{} cannot be used: {e}", ours.display())),
    }
    let Some(theirs) = places.codex_file() else {
        return Lookup::Absent(format!(
            "there is no sign-in in {} (and no Codex home: neither CODEX_HOME nor HOME is set)",
            ours.display()
        ));
    };
    match file::read(&theirs) {
        Ok(content) => {
            let warnings = permission_warning(&theirs, content.readable_by_others);
            match CodexFile::parse(&content.bytes) {
                Ok(parsed) => Lookup::Found(Found {
                    origin: Origin::Codex(theirs),
                    account_id: parsed.account_id.clone(),
                    tokens: parsed.tokens,
                    warnings,
                }),
                Err(why @ (FormatError::ApiKeyOnly | FormatError::NoTokens)) => {
                    Lookup::Absent(format!(
                        "there is no sign-in in {}, and Codex's {} {why}",
                        ours.display(),
                        theirs.display()
                    ))
                }
                Err(why) => Lookup::Broken(format!(
                    "Codex's {} cannot be used: {why}",
                    theirs.display()
                )),
            }
        }
        Err(ReadError::Missing) => {
            let home = places.codex_home.as_deref().unwrap_or(Path::new(""));
            let keyring = codex::keyring_store(home).map(|store| {
                format!(
                    "; Codex keeps its sign-in in the OS keyring ({} = \"{store}\" in {}), \
                     which magi-code does not read",
                    codex::STORE_SETTING,
                    home.join("config.toml").display()
                )
            });
            Lookup::Absent(format!(
                "there is no sign-in in {} nor in Codex's {}{}",
                ours.display(),
                theirs.display(),
                keyring.unwrap_or_default()
            ))
        }
        Err(e) => Lookup::Broken(format!("Codex's {} cannot be used: {e}", theirs.display())),
    }
}

/// Whether provider `codex` is ready at `now`, decided locally: a sign-in is there and
/// its access token has not expired or can be refreshed (or its expiry is unknown: it
/// is tried). The error says why not and how to sign in.
pub fn ready(places: &Places, now: SystemTime) -> Result<Found, String> {
    match lookup(places) {
        Lookup::Found(found) if found.tokens.usable(now) => Ok(found),
        Lookup::Found(found) => Err(format!(
            "the ChatGPT sign-in of provider \"codex\" ({}) has expired and cannot be refreshed \
             (it has no refresh token): sign in again: {LOGIN_COMMAND}",
            found.origin.path().display()
        )),
        Lookup::Absent(why) => Err(format!(
            "provider \"codex\" is not signed in to ChatGPT ({why}): sign in: {LOGIN_COMMAND}"
        )),
        Lookup::Broken(why) => Err(format!(
            "the ChatGPT sign-in of provider \"codex\" is unusable: {why}: sign in again: \
             {LOGIN_COMMAND}"
        )),
    }
}

/// The sign-in in use for turns and model lists, refreshed at `endpoints`.
pub fn sign_in(found: &Found, endpoints: &Endpoints) -> SignIn {
    SignIn::new(found.origin.clone(), Purpose::ChatGpt(endpoints.clone()))
}

/// What `login status` and `doctor` show of a sign-in: never a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Where it is kept.
    pub origin: Origin,
    /// The person's email, from the ID token.
    pub email: Option<String>,
    /// The ChatGPT plan.
    pub plan: Option<String>,
    /// When the access token expires, when known.
    pub expires_at: Option<SystemTime>,
    /// Whether a refresh token is there.
    pub refreshable: bool,
    /// Whether a turn could use it now.
    pub usable: bool,
    /// What to fix about the file.
    pub warnings: Vec<String>,
}

impl Status {
    /// The status of a found sign-in at `now`.
    pub fn of(found: &Found, now: SystemTime) -> Status {
        let claims = found
            .tokens
            .id_token
            .as_deref()
            .and_then(jwt::claims)
            .unwrap_or_default();
        let access = jwt::claims(&found.tokens.access_token).unwrap_or_default();
        Status {
            origin: found.origin.clone(),
            email: claims.email.or(access.email),
            plan: claims.plan.or(access.plan),
            expires_at: found.tokens.expiry(),
            refreshable: found.tokens.refresh_token.is_some(),
            usable: found.tokens.usable(now),
            warnings: found.warnings.clone(),
        }
    }
}

/// Keeps a new sign-in in magi-code's store; returns the file.
pub fn save(places: &Places, signed: &SignedIn) -> std::io::Result<PathBuf> {
    let path = places.store.chatgpt_path();
    places.store.save(
        &path,
        &Entry::ChatGpt(ChatGptEntry {
            tokens: signed.tokens.clone(),
            account_id: signed.account_id.clone(),
        }),
    )?;
    Ok(path)
}

/// What `magi-code logout codex` did.
#[derive(Debug)]
pub struct LoggedOut {
    /// The file removed, if magi-code had a sign-in of its own.
    pub removed: Option<PathBuf>,
    /// Whether the server revoked its tokens, or why not (none when there were none).
    pub revoked: Option<Result<(), OAuthError>>,
    /// Codex's own sign-in, which stays: it is Codex's to end.
    pub codex_file: Option<PathBuf>,
}

/// Revokes magi-code's own sign-in at `endpoints` and deletes it. Codex's sign-in is
/// Codex's: it is named, not touched.
pub async fn logout(places: &Places, endpoints: &Endpoints) -> std::io::Result<LoggedOut> {
    let ours = places.store.chatgpt_path();
    let entry = match file::read(&ours) {
        Ok(content) => Entry::parse(&content.bytes).ok(),
        Err(ReadError::Missing) => None,
        Err(_) => None,
    };
    let revoked = match &entry {
        Some(Entry::ChatGpt(entry)) => Some(revoke(endpoints, &entry.tokens).await),
        _ => None,
    };
    let removed = match std::fs::remove_file(&ours) {
        Ok(()) => Some(ours),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let codex_file = places
        .codex_file()
        .filter(|path| matches!(file::read(path), Ok(c) if CodexFile::parse(&c.bytes).is_ok()));
    Ok(LoggedOut {
        removed,
        revoked,
        codex_file,
    })
}
