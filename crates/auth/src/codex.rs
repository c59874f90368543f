//! Codex's own credential file, `$CODEX_HOME/auth.json` (`~/.codex` by default): read
//! for a ChatGPT sign-in made with Codex, and written back in Codex's format when a
//! refresh rotates its tokens, every field this program does not know kept as it was.
//!
//! Codex keeps its sign-in in this file only with `cli_auth_credentials_store =
//! "file"` (its default) in its `config.toml`; with `"keyring"` (or `"auto"` where a
//! keyring exists) it is in the operating system's keyring, which is not read here.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use magi_protocol::limits::SETTINGS_FILE_BYTES;
use serde_json::{Map, Value};

use crate::tokens::Tokens;

/// The variable naming Codex's home.
pub const CODEX_HOME_ENV: &str = "CODEX_HOME";
/// Codex's credential file in its home.
pub const AUTH_FILE: &str = "auth.json";
/// Codex's settings file in its home.
const CONFIG_FILE: &str = "config.toml";
/// The setting saying where Codex keeps its sign-in.
pub const STORE_SETTING: &str = "cli_auth_credentials_store";

/// Codex's home: `$CODEX_HOME`, else `$HOME/.codex`; none without either.
pub fn codex_home(
    codex_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<PathBuf> {
    match codex_home.filter(|v| !v.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home
            .filter(|v| !v.is_empty())
            .map(|home| Path::new(home).join(".codex")),
    }
}

/// Where Codex's settings say it keeps its sign-in, when they say so and it is not the
/// file: `keyring` or `auto`. Unreadable or malformed settings say nothing.
pub fn keyring_store(home: &Path) -> Option<String> {
    let text = std::fs::File::open(home.join(CONFIG_FILE))
        .ok()
        .and_then(|file| {
            use std::io::Read;
            let mut text = String::new();
            file.take(SETTINGS_FILE_BYTES as u64)
                .read_to_string(&mut text)
                .ok()?;
            Some(text)
        })?;
    let table: toml::Table = text.parse().ok()?;
    let store = table.get(STORE_SETTING)?.as_str()?;
    matches!(store, "keyring" | "auto").then(|| store.to_owned())
}

/// Why Codex's credential file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// It is not a JSON object.
    NotJson,
    /// It holds an API key and no ChatGPT tokens.
    ApiKeyOnly,
    /// It holds no tokens.
    NoTokens,
    /// `tokens` is there but not in Codex's shape: the field named.
    Malformed(&'static str),
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::NotJson => f.write_str("it is not JSON (a JSON object is expected)"),
            FormatError::ApiKeyOnly => f.write_str("it holds an API key, not a ChatGPT sign-in"),
            FormatError::NoTokens => f.write_str("it holds no ChatGPT sign-in (no tokens)"),
            FormatError::Malformed(field) => {
                write!(f, "its {field} is not in the format magi-code reads")
            }
        }
    }
}

/// Codex's credential file as read: its tokens and the whole object, kept to be written
/// back with only the tokens changed.
#[derive(Debug, Clone)]
pub struct CodexFile {
    raw: Map<String, Value>,
    /// The ChatGPT tokens.
    pub tokens: Tokens,
    /// The ChatGPT account the file names (`tokens.account_id`).
    pub account_id: Option<String>,
}

impl CodexFile {
    /// Reads Codex's format: `{"tokens": {"id_token", "access_token", "refresh_token",
    /// "account_id"}, "last_refresh", …}`.
    pub fn parse(bytes: &[u8]) -> Result<CodexFile, FormatError> {
        let Ok(Value::Object(raw)) = serde_json::from_slice::<Value>(bytes) else {
            return Err(FormatError::NotJson);
        };
        let tokens = match raw.get("tokens") {
            Some(Value::Object(tokens)) => tokens,
            None | Some(Value::Null) => {
                let has_key = raw
                    .get("OPENAI_API_KEY")
                    .and_then(Value::as_str)
                    .is_some_and(|key| !key.is_empty());
                return Err(if has_key {
                    FormatError::ApiKeyOnly
                } else {
                    FormatError::NoTokens
                });
            }
            Some(_) => return Err(FormatError::Malformed("tokens")),
        };
        let text = |field: &'static str| -> Result<Option<String>, FormatError> {
            match tokens.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(FormatError::Malformed(field)),
            }
        };
        let access_token = text("access_token")?.ok_or(FormatError::NoTokens)?;
        let parsed = Tokens {
            access_token,
            refresh_token: text("refresh_token")?,
            id_token: text("id_token")?,
            expires_at: None,
        };
        let account_id = text("account_id")?;
        Ok(CodexFile {
            raw,
            tokens: parsed,
            account_id,
        })
    }

    /// The file with `tokens` in place of its own and `last_refresh` set to `now`, as
    /// Codex writes it (pretty JSON); every other field as it was read.
    pub fn with_tokens(
        &self,
        tokens: &Tokens,
        account_id: Option<&str>,
        now: SystemTime,
    ) -> Vec<u8> {
        let mut raw = self.raw.clone();
        let mut stored = match raw.remove("tokens") {
            Some(Value::Object(stored)) => stored,
            _ => Map::new(),
        };
        stored.insert(
            "access_token".into(),
            Value::String(tokens.access_token.clone()),
        );
        if let Some(refresh) = &tokens.refresh_token {
            stored.insert("refresh_token".into(), Value::String(refresh.clone()));
        }
        if let Some(id) = &tokens.id_token {
            stored.insert("id_token".into(), Value::String(id.clone()));
        }
        if let Some(account) = account_id {
            stored.insert("account_id".into(), Value::String(account.to_owned()));
        }
        raw.insert("tokens".into(), Value::Object(stored));
        raw.insert(
            "last_refresh".into(),
            Value::String(humantime::format_rfc3339_micros(now).to_string()),
        );
        // A map of strings always serializes; were it not to, the compact form would.
        serde_json::to_vec_pretty(&Value::Object(raw)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refresh_is_written_back_in_codexs_format_unknown_fields_kept() {
        let original = json!({
            "OPENAI_API_KEY": null,
            "auth_mode": "chatgpt",
            "tokens": {
                "id_token": "id-1", "access_token": "at-1", "refresh_token": "rt-1",
                "account_id": "acct", "future_field": 7
            },
            "last_refresh": "2025-01-01T00:00:00.000000Z",
            "something_new": {"kept": true}
        });
        let file = CodexFile::parse(original.to_string().as_bytes()).unwrap();
        assert_eq!(file.tokens.access_token, "at-1");
        assert_eq!(file.account_id.as_deref(), Some("acct"));
        let rotated = Tokens {
            access_token: "at-2".into(),
            refresh_token: Some("rt-2".into()),
            id_token: None,
            expires_at: None,
        };
        let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let written: Value =
            serde_json::from_slice(&file.with_tokens(&rotated, None, now)).unwrap();
        assert_eq!(
            written,
            json!({
                "OPENAI_API_KEY": null,
                "auth_mode": "chatgpt",
                "tokens": {
                    "id_token": "id-1", "access_token": "at-2", "refresh_token": "rt-2",
                    "account_id": "acct", "future_field": 7
                },
                "last_refresh": "2023-11-14T22:13:20.000000Z",
                "something_new": {"kept": true}
            })
        );
    }

    #[test]
    fn files_that_hold_no_sign_in_say_why() {
        let cases: [(&[u8], FormatError); 6] = [
            (b"not json", FormatError::NotJson),
            (b"[1]", FormatError::NotJson),
            (br#"{"OPENAI_API_KEY":"sk-x"}"#, FormatError::ApiKeyOnly),
            (br#"{"tokens":null}"#, FormatError::NoTokens),
            (br#"{"tokens":"x"}"#, FormatError::Malformed("tokens")),
            (
                br#"{"tokens":{"access_token":5}}"#,
                FormatError::Malformed("access_token"),
            ),
        ];
        for (bytes, error) in cases {
            assert_eq!(CodexFile::parse(bytes).unwrap_err(), error);
        }
    }

    #[test]
    fn codexs_home_and_keyring_setting() {
        use std::ffi::OsStr;
        assert_eq!(
            codex_home(Some(OsStr::new("/c")), Some(OsStr::new("/h"))),
            Some(PathBuf::from("/c"))
        );
        assert_eq!(
            codex_home(Some(OsStr::new("")), Some(OsStr::new("/h"))),
            Some(PathBuf::from("/h/.codex"))
        );
        assert_eq!(codex_home(None, None), None);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(keyring_store(dir.path()), None);
        for (text, found) in [
            (
                "cli_auth_credentials_store = \"keyring\"\n",
                Some("keyring"),
            ),
            ("cli_auth_credentials_store = \"auto\"\n", Some("auto")),
            ("cli_auth_credentials_store = \"file\"\n", None),
            ("not toml [", None),
        ] {
            std::fs::write(dir.path().join(CONFIG_FILE), text).unwrap();
            assert_eq!(keyring_store(dir.path()).as_deref(), found, "{text}");
        }
    }
}
