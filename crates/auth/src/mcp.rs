//! An MCP server's sign-in: kept in magi-code's store under the server's name and URL,
//! ready when its token has not expired or can be refreshed, refreshed at startup and
//! before a call when due, never prompted for by a backend.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::file::{self, ReadError};
use crate::oauth::OAuthError;
use crate::oauth::mcp::{Client, McpSignedIn, revoke};
use crate::permission_warning;
use crate::sign_in::{Origin, Purpose, SignIn};
use crate::store::{Entry, McpEntry, Store};

/// The command that signs in to `server`.
pub fn login_command(server: &str) -> String {
    format!("magi-code mcp login {server}")
}

/// What looking for a server's sign-in found.
#[derive(Debug, Clone)]
pub enum Lookup {
    /// A sign-in, with what to fix about its file.
    Found(Box<McpEntry>, Vec<String>),
    /// None.
    Absent,
    /// A file that cannot be used, and why.
    Broken(String),
}

/// Looks for the sign-in of `server` at `url`.
pub fn lookup(store: &Store, server: &str, url: &str) -> Lookup {
    let path = store.mcp_path(server, url);
    match file::read(&path) {
        Ok(content) => {
            let warnings = permission_warning(&path, content.readable_by_others);
            match Entry::parse(&content.bytes) {
                Ok(Entry::Mcp(entry)) if entry.server == server && entry.url == url => {
                    Lookup::Found(Box::new(entry), warnings)
                }
                Ok(_) => Lookup::Broken(format!(
                    "{} holds another sign-in than MCP server {server:?}'s at {url}",
                    path.display()
                )),
                Err(e) => Lookup::Broken(format!("{} cannot be used: {e}", path.display())),
            }
        }
        Err(ReadError::Missing) => Lookup::Absent,
        Err(e) => Lookup::Broken(format!("{} cannot be used: {e}", path.display())),
    }
}

/// Whether `server` can use its sign-in at `now` without a new one, decided locally.
/// The error says why not, with the command that signs in.
pub fn ready(store: &Store, server: &str, url: &str, now: SystemTime) -> Result<McpEntry, String> {
    let command = login_command(server);
    match lookup(store, server, url) {
        Lookup::Found(entry, _) if entry.tokens.usable(now) => Ok(*entry),
        Lookup::Found(..) => Err(format!(
            "the MCP server `{server}` needs a sign-in: its sign-in has expired and cannot be \
             refreshed; sign in again: {command}"
        )),
        Lookup::Absent => Err(format!(
            "the MCP server `{server}` needs a sign-in and has none: sign in: {command}"
        )),
        Lookup::Broken(why) => Err(format!(
            "the MCP server `{server}` needs a sign-in and its sign-in is unusable ({why}): sign \
             in again: {command}"
        )),
    }
}

/// The sign-in of `server` at `url` in use (nothing is read yet).
pub fn sign_in(store: &Store, server: &str, url: &str) -> SignIn {
    SignIn::new(
        Origin::Store(store.mcp_path(server, url)),
        Purpose::Mcp {
            server: server.to_owned(),
        },
    )
}

/// Keeps a new sign-in of `server` at `url`; returns its file.
pub fn save(
    store: &Store,
    server: &str,
    url: &str,
    signed: &McpSignedIn,
) -> std::io::Result<PathBuf> {
    let path = store.mcp_path(server, url);
    let entry = McpEntry {
        server: server.to_owned(),
        url: url.to_owned(),
        resource: signed.discovery.resource.clone(),
        issuer: signed.discovery.issuer.clone(),
        token_endpoint: signed.discovery.token_endpoint.clone(),
        revocation_endpoint: signed.discovery.revocation_endpoint.clone(),
        client_id: signed.client.client_id.clone(),
        client_secret: signed.client.client_secret.clone(),
        tokens: signed.tokens.clone(),
    };
    store.save(&path, &Entry::Mcp(entry))?;
    Ok(path)
}

/// What `magi-code mcp logout` did.
#[derive(Debug)]
pub struct LoggedOut {
    /// The file removed, if there was a sign-in.
    pub removed: Option<PathBuf>,
    /// Whether the server revoked the tokens, or why not; none when it offers no
    /// revocation or there was nothing to revoke.
    pub revoked: Option<Result<(), OAuthError>>,
}

/// Revokes the sign-in of `server` at `url` where its server offers revocation, and
/// deletes it.
pub async fn logout(store: &Store, server: &str, url: &str) -> std::io::Result<LoggedOut> {
    let path: &Path = &store.mcp_path(server, url);
    let revoked = match lookup(store, server, url) {
        Lookup::Found(entry, _) => match &entry.revocation_endpoint {
            Some(endpoint) => {
                let client = Client {
                    client_id: entry.client_id.clone(),
                    client_secret: entry.client_secret.clone(),
                };
                let (token, hint) = match &entry.tokens.refresh_token {
                    Some(refresh) => (refresh.as_str(), "refresh_token"),
                    None => (entry.tokens.access_token.as_str(), "access_token"),
                };
                Some(revoke(endpoint, &client, token, hint).await)
            }
            None => None,
        },
        Lookup::Absent | Lookup::Broken(_) => None,
    };
    let removed = match std::fs::remove_file(path) {
        Ok(()) => Some(path.to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok(LoggedOut { removed, revoked })
}

#[cfg(test)]
mod tests;
