//! magi-code's own sign-ins, in `$MC_HOME/auth/` (a folder only its owner may enter):
//! one file per sign-in, owner-only, written atomically. `chatgpt.json` is the ChatGPT
//! sign-in `magi-code login codex` made; `mcp-<server>-<digest>.json` an MCP server's,
//! bound to the server's URL so that a definition pointing elsewhere never gets it.
//!
//! Every file is one JSON object with `"format": 1` and a `kind`; a file of another
//! format was written by another version of magi-code and is not read.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::file::{ensure_private_dir, write_atomic};
use crate::tokens::Tokens;

/// The format of every file this version writes.
pub const FORMAT: u32 = 1;
/// The store's folder in `MC_HOME`.
pub const AUTH_DIR: &str = "auth";
/// The ChatGPT sign-in's file in the store.
const CHATGPT_FILE: &str = "chatgpt.json";

/// The store of one `MC_HOME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store of the `MC_HOME` at `mc_home` (nothing is created until a write).
    pub fn new(mc_home: &Path) -> Store {
        Store {
            dir: mc_home.join(AUTH_DIR),
        }
    }

    /// The ChatGPT sign-in's file.
    pub fn chatgpt_path(&self) -> PathBuf {
        self.dir.join(CHATGPT_FILE)
    }

    /// The file of MCP server `server`'s sign-in at `url`.
    pub fn mcp_path(&self, server: &str, url: &str) -> PathBuf {
        let digest = Sha256::digest(url.as_bytes());
        let short: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("mcp-{server}-{short}.json"))
    }

    /// Writes `entry` to `path` in the store, creating the folder owner-only.
    pub fn save(&self, path: &Path, entry: &Entry) -> io::Result<()> {
        ensure_private_dir(&self.dir)?;
        write_atomic(path, &entry.to_bytes())
    }
}

/// Tokens as the store writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredTokens {
    access_token: String,
    refresh_token: Option<String>,
    id_token: Option<String>,
    /// RFC 3339, when the issuer said how long the access token lives.
    expires_at: Option<String>,
}

impl StoredTokens {
    fn of(tokens: &Tokens) -> StoredTokens {
        StoredTokens {
            access_token: tokens.access_token.clone(),
            refresh_token: tokens.refresh_token.clone(),
            id_token: tokens.id_token.clone(),
            expires_at: tokens
                .expires_at
                .map(|at| humantime::format_rfc3339_seconds(at).to_string()),
        }
    }

    fn tokens(&self) -> Result<Tokens, EntryError> {
        let expires_at = match &self.expires_at {
            None => None,
            Some(text) => Some(
                humantime::parse_rfc3339_weak(text)
                    .map_err(|_| EntryError::Malformed("tokens.expires_at".into()))?,
            ),
        };
        Ok(Tokens {
            access_token: self.access_token.clone(),
            refresh_token: self.refresh_token.clone(),
            id_token: self.id_token.clone(),
            expires_at,
        })
    }
}

/// A ChatGPT sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatGptEntry {
    /// Its tokens.
    pub tokens: Tokens,
    /// The ChatGPT account (workspace) the tokens act for.
    pub account_id: Option<String>,
}

/// An MCP server's sign-in, with what its refresh needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpEntry {
    /// The server's name.
    pub server: String,
    /// The server's URL the sign-in was made for.
    pub url: String,
    /// The resource the tokens are for (RFC 8707), sent with every token request.
    pub resource: String,
    /// The authorization server.
    pub issuer: String,
    /// Where tokens are refreshed.
    pub token_endpoint: String,
    /// Where tokens are revoked, when the server offers it.
    pub revocation_endpoint: Option<String>,
    /// The client the tokens were issued to.
    pub client_id: String,
    /// The client's secret, when registration gave one.
    pub client_secret: Option<String>,
    /// The tokens.
    pub tokens: Tokens,
}

/// One sign-in file of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// `chatgpt.json`.
    ChatGpt(ChatGptEntry),
    /// `mcp-….json`.
    Mcp(McpEntry),
}

/// The file as written, besides its `format`: a kind and the kind's fields.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
enum RawBody {
    #[serde(rename = "chatgpt")]
    ChatGpt {
        tokens: StoredTokens,
        account_id: Option<String>,
        last_refresh: String,
    },
    Mcp {
        server: String,
        url: String,
        resource: String,
        issuer: String,
        token_endpoint: String,
        revocation_endpoint: Option<String>,
        client_id: String,
        client_secret: Option<String>,
        tokens: StoredTokens,
        last_refresh: String,
    },
}

/// Why a store file cannot be read as a sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryError {
    /// It is not a JSON object.
    NotJson,
    /// It is of another format: written by another version of magi-code.
    OtherFormat(u64),
    /// It is well-formed JSON but not a sign-in of this format (the reason).
    Malformed(String),
}

impl std::fmt::Display for EntryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryError::NotJson => f.write_str("it is not JSON"),
            EntryError::OtherFormat(format) => write!(
                f,
                "it is of format {format}, written by another version of magi-code (this one \
                 reads format {FORMAT})"
            ),
            EntryError::Malformed(why) => write!(f, "it is not a sign-in magi-code reads ({why})"),
        }
    }
}

impl Entry {
    /// Reads a store file.
    pub fn parse(bytes: &[u8]) -> Result<Entry, EntryError> {
        let Ok(serde_json::Value::Object(mut object)) = serde_json::from_slice(bytes) else {
            return Err(EntryError::NotJson);
        };
        match object
            .remove("format")
            .as_ref()
            .and_then(serde_json::Value::as_u64)
        {
            Some(format) if format == u64::from(FORMAT) => {}
            Some(format) => return Err(EntryError::OtherFormat(format)),
            None => return Err(EntryError::Malformed("no format".into())),
        }
        let body: RawBody = serde_json::from_value(serde_json::Value::Object(object))
            .map_err(|e| EntryError::Malformed(e.to_string()))?;
        Ok(match body {
            RawBody::ChatGpt {
                tokens, account_id, ..
            } => Entry::ChatGpt(ChatGptEntry {
                tokens: tokens.tokens()?,
                account_id,
            }),
            RawBody::Mcp {
                server,
                url,
                resource,
                issuer,
                token_endpoint,
                revocation_endpoint,
                client_id,
                client_secret,
                tokens,
                ..
            } => Entry::Mcp(McpEntry {
                server,
                url,
                resource,
                issuer,
                token_endpoint,
                revocation_endpoint,
                client_id,
                client_secret,
                tokens: tokens.tokens()?,
            }),
        })
    }

    /// The file's bytes, with `last_refresh` now.
    pub fn to_bytes(&self) -> Vec<u8> {
        let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let body = match self.clone() {
            Entry::ChatGpt(entry) => RawBody::ChatGpt {
                tokens: StoredTokens::of(&entry.tokens),
                account_id: entry.account_id,
                last_refresh: now,
            },
            Entry::Mcp(entry) => RawBody::Mcp {
                server: entry.server,
                url: entry.url,
                resource: entry.resource,
                issuer: entry.issuer,
                token_endpoint: entry.token_endpoint,
                revocation_endpoint: entry.revocation_endpoint,
                client_id: entry.client_id,
                client_secret: entry.client_secret,
                tokens: StoredTokens::of(&entry.tokens),
                last_refresh: now,
            },
        };
        // Strings and options only: serialization cannot fail.
        let mut value = serde_json::to_value(body).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("format".into(), FORMAT.into());
        }
        serde_json::to_vec_pretty(&value).unwrap_or_default()
    }

    /// The tokens, of either kind.
    pub fn tokens(&self) -> &Tokens {
        match self {
            Entry::ChatGpt(entry) => &entry.tokens,
            Entry::Mcp(entry) => &entry.tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens {
            access_token: "at".into(),
            refresh_token: Some("rt".into()),
            id_token: None,
            expires_at: Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(86_400)),
        }
    }

    #[test]
    fn entries_round_trip_and_land_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let store = Store::new(home.path());
        let entry = Entry::Mcp(McpEntry {
            server: "tracker".into(),
            url: "https://mcp.example/mcp".into(),
            resource: "https://mcp.example/mcp".into(),
            issuer: "https://auth.example".into(),
            token_endpoint: "https://auth.example/token".into(),
            revocation_endpoint: None,
            client_id: "client".into(),
            client_secret: None,
            tokens: tokens(),
        });
        let path = store.mcp_path("tracker", "https://mcp.example/mcp");
        assert_ne!(
            path,
            store.mcp_path("tracker", "https://elsewhere.example/mcp")
        );
        store.save(&path, &entry).unwrap();
        let dir_mode = std::fs::metadata(home.path().join(AUTH_DIR))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert_eq!(Entry::parse(&std::fs::read(&path).unwrap()).unwrap(), entry);
        let chatgpt = Entry::ChatGpt(ChatGptEntry {
            tokens: tokens(),
            account_id: Some("acct".into()),
        });
        assert_eq!(Entry::parse(&chatgpt.to_bytes()).unwrap(), chatgpt);
    }

    #[test]
    fn files_of_another_shape_or_version_are_refused_with_their_reason() {
        assert_eq!(Entry::parse(b"{").unwrap_err(), EntryError::NotJson);
        assert_eq!(Entry::parse(b"[]").unwrap_err(), EntryError::NotJson);
        assert_eq!(
            Entry::parse(br#"{"format":2,"kind":"chatgpt"}"#).unwrap_err(),
            EntryError::OtherFormat(2)
        );
        assert!(matches!(
            Entry::parse(br#"{"format":1,"kind":"chatgpt","tokens":{}}"#),
            Err(EntryError::Malformed(_))
        ));
        let mut extra: serde_json::Value = serde_json::from_slice(
            &Entry::ChatGpt(ChatGptEntry {
                tokens: tokens(),
                account_id: None,
            })
            .to_bytes(),
        )
        .unwrap();
        extra["unknown"] = serde_json::json!(1);
        assert!(matches!(
            Entry::parse(extra.to_string().as_bytes()),
            Err(EntryError::Malformed(_))
        ));
    }
}
