//! MCP server definitions (`[mcp.servers.<name>]`) and their global approval.
//!
//! A definition comes whole from one settings file: a project definition of a name
//! replaces the global one, except that a project table holding only `enabled` turns
//! the global definition on or off without changing it. A definition runs only when
//! the digest of its canonical form is listed in the global approvals file
//! (`$MC_HOME/mcp-approvals.json`), which only `magi-code mcp approve` writes. The
//! canonical form names the file the definition came from (global, or the project of
//! one exact working directory), so a project file can never approve itself and an
//! approval never follows a definition to another project.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use magi_protocol::limits::{
    MCP_APPROVALS_BYTES, MCP_CALL_TIMEOUT_MS, MCP_SERVER_NAME_BYTES, MCP_SERVERS,
    MCP_STARTUP_TIMEOUT_MS,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ConfigError;
use crate::text_file::read_text_file;

/// The settings file a definition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpSource {
    /// `$MC_HOME/settings.toml`.
    Global,
    /// `<cwd>/.magi/settings.toml`.
    Project,
    /// The client that started this backend (`magi-code acp`'s editor), for this
    /// backend alone; see `client_mcp`.
    Client,
}

/// How the backend reaches a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "transport")]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, beyond the few passed through (see `docs/mcp.md`).
        env: BTreeMap<String, String>,
        /// Variables of the backend's own environment passed through by name.
        env_vars: Vec<String>,
        /// Its working directory; the workspace when absent.
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The endpoint, `http://` or `https://`.
        url: String,
        /// The variable holding a bearer token sent as `Authorization`.
        bearer_token_env: Option<String>,
        /// The server needs an OAuth sign-in (`magi-code mcp login`), made as this
        /// says. Part of the approved definition; left out of it when absent, so that
        /// definitions without it keep the digest they always had.
        #[serde(skip_serializing_if = "Option::is_none")]
        oauth: Option<McpOAuth>,
    },
}

/// How an MCP server's OAuth sign-in is made: `oauth = true` for the defaults, or a
/// table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuth {
    /// A client registered beforehand at the server's authorization server; without
    /// it the client registers itself where the server offers that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The scopes asked for; without them, those the server says it needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// Its name: 1–32 bytes of `[A-Za-z0-9_-]`, the middle of its tools' names.
    pub name: String,
    /// The file the definition came from.
    pub source: McpSource,
    /// How it is reached.
    pub transport: McpTransport,
    /// Whether it should be connected (when approved).
    pub enabled: bool,
    /// How long connecting and listing its tools may take, in milliseconds.
    pub startup_timeout_ms: u64,
    /// How long one tool call may take, in milliseconds.
    pub call_timeout_ms: u64,
    /// Whether a stdio server runs in the commands' sandbox (`[sandbox]`).
    pub sandbox: bool,
}

/// What is hashed for approval: the definition and where it came from. Timeouts,
/// `enabled` and `sandbox` are left out: they do not change what runs.
#[derive(Serialize)]
struct CanonicalDefinition<'a> {
    format: u32,
    name: &'a str,
    source: McpSource,
    /// The canonical working directory of a project definition (its bytes in hex, so
    /// that any path, UTF-8 or not, has one exact form); null for a global one.
    project: Option<String>,
    #[serde(flatten)]
    transport: &'a McpTransport,
}

impl McpServer {
    /// The SHA-256 digest (lowercase hex) of the canonical definition, as approvals
    /// list it. `cwd` is the canonical working directory a project definition belongs
    /// to.
    pub fn digest(&self, cwd: &Path) -> String {
        use std::os::unix::ffi::OsStrExt;
        let canonical = CanonicalDefinition {
            format: 1,
            name: &self.name,
            source: self.source,
            project: (self.source == McpSource::Project).then(|| hex(cwd.as_os_str().as_bytes())),
            transport: &self.transport,
        };
        // Struct fields serialize in declaration order and maps are sorted, so equal
        // definitions give equal bytes. Every field is a string read from TOML, so this
        // cannot fail; if it did, the digest would match no approval (approvals are 64
        // hex digits), rather than one shared by every failing definition.
        match serde_json::to_vec(&canonical) {
            Ok(bytes) => hex(&Sha256::digest(&bytes)),
            Err(_) => "unapprovable".to_owned(),
        }
    }

    /// A one-line description for people: the command line or the URL.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

/// One `[mcp.servers.<name>]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_vars: Vec<String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    bearer_token_env: Option<String>,
    oauth: Option<toml::Value>,
    enabled: Option<bool>,
    startup_timeout_ms: Option<u64>,
    call_timeout_ms: Option<u64>,
    sandbox: Option<bool>,
}

/// The `[mcp]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    #[serde(default)]
    servers: BTreeMap<String, toml::Table>,
}

/// Reads the `[mcp]` tables of both files (already removed from them) into the
/// effective definitions, by name.
pub(crate) fn merge_mcp(
    global: Option<toml::Value>,
    project: Option<toml::Value>,
) -> Result<Vec<McpServer>, ConfigError> {
    let mut servers: BTreeMap<String, McpServer> = BTreeMap::new();
    for (name, table) in raw_servers(global, "global")? {
        servers.insert(name.clone(), server(name, McpSource::Global, table)?);
    }
    for (name, table) in raw_servers(project, "project")? {
        let only_enabled = table.len() == 1 && table.contains_key("enabled");
        match servers.get_mut(&name) {
            Some(inherited) if only_enabled => {
                inherited.enabled = table
                    .get("enabled")
                    .and_then(toml::Value::as_bool)
                    .ok_or_else(|| invalid(&name, "enabled must be true or false"))?;
            }
            _ => {
                let server = server(name.clone(), McpSource::Project, table)?;
                servers.insert(name, server);
            }
        }
    }
    if servers.len() > MCP_SERVERS {
        return Err(ConfigError::Invalid(format!(
            "more than {MCP_SERVERS} MCP servers are defined"
        )));
    }
    Ok(servers.into_values().collect())
}

fn raw_servers(
    table: Option<toml::Value>,
    file: &str,
) -> Result<BTreeMap<String, toml::Table>, ConfigError> {
    let Some(table) = table else {
        return Ok(BTreeMap::new());
    };
    let raw: RawMcp = table
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::Invalid(format!("{file} [mcp]: {e}")))?;
    Ok(raw.servers)
}

fn invalid(name: &str, why: &str) -> ConfigError {
    ConfigError::Invalid(format!("mcp.servers.{name}: {why}"))
}

/// Whether `name` may name an MCP server.
pub fn is_valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MCP_SERVER_NAME_BYTES
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        // `__` separates the server from the tool in the names the model sees.
        && !name.contains("__")
}

fn server(name: String, source: McpSource, table: toml::Table) -> Result<McpServer, ConfigError> {
    if !is_valid_server_name(&name) {
        return Err(invalid(
            &name,
            "a server name is 1-32 bytes of letters, digits, '-' and single '_'",
        ));
    }
    let raw: RawServer = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| invalid(&name, &e.to_string()))?;
    let transport = match (raw.command, raw.url) {
        (Some(command), None) => {
            if command.is_empty() {
                return Err(invalid(&name, "command is empty"));
            }
            if raw.env.keys().chain(&raw.env_vars).any(|k| !is_env_name(k)) {
                return Err(invalid(&name, "an environment variable name is invalid"));
            }
            if raw.oauth.is_some() {
                return Err(invalid(
                    &name,
                    "oauth needs url: only an HTTP server signs in",
                ));
            }
            McpTransport::Stdio {
                command,
                args: raw.args,
                env: raw.env,
                env_vars: raw.env_vars,
                cwd: raw.cwd,
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(invalid(&name, "url must start with http:// or https://"));
            }
            let stdio_only = !raw.args.is_empty()
                || !raw.env.is_empty()
                || !raw.env_vars.is_empty()
                || raw.cwd.is_some();
            if stdio_only {
                return Err(invalid(&name, "args, env, env_vars and cwd need command"));
            }
            if raw
                .bearer_token_env
                .as_deref()
                .is_some_and(|k| !is_env_name(k))
            {
                return Err(invalid(&name, "bearer_token_env is not a variable name"));
            }
            let oauth = match raw.oauth {
                None | Some(toml::Value::Boolean(false)) => None,
                Some(toml::Value::Boolean(true)) => Some(McpOAuth::default()),
                Some(table @ toml::Value::Table(_)) => Some(
                    table
                        .try_into::<McpOAuth>()
                        .map_err(|e| invalid(&name, &format!("oauth: {e}")))?,
                ),
                Some(_) => {
                    return Err(invalid(&name, "oauth must be true, false or a table"));
                }
            };
            if oauth.is_some() && raw.bearer_token_env.is_some() {
                return Err(invalid(
                    &name,
                    "bearer_token_env and oauth exclude each other: a server takes one \
                     kind of credential",
                ));
            }
            if oauth
                .as_ref()
                .is_some_and(|o| o.client_id.as_deref() == Some(""))
            {
                return Err(invalid(&name, "oauth.client_id is empty"));
            }
            McpTransport::Http {
                url,
                bearer_token_env: raw.bearer_token_env,
                oauth,
            }
        }
        (Some(_), Some(_)) => return Err(invalid(&name, "give command or url, not both")),
        (None, None) => return Err(invalid(&name, "give command or url")),
    };
    let timeout = |value: Option<u64>, default: u64, key: &str| match value {
        None => Ok(default),
        Some(0) => Err(invalid(&name, &format!("{key} must be positive"))),
        Some(ms) => Ok(ms),
    };
    Ok(McpServer {
        startup_timeout_ms: timeout(
            raw.startup_timeout_ms,
            MCP_STARTUP_TIMEOUT_MS,
            "startup_timeout_ms",
        )?,
        call_timeout_ms: timeout(raw.call_timeout_ms, MCP_CALL_TIMEOUT_MS, "call_timeout_ms")?,
        name,
        source,
        transport,
        enabled: raw.enabled.unwrap_or(true),
        sandbox: raw.sandbox.unwrap_or(false),
    })
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The global approvals file: the digests of the definitions the user approved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpApprovals {
    /// The file's format, 1.
    pub format: u32,
    /// Approved canonical definition digests, sorted.
    pub approved: Vec<String>,
}

impl McpApprovals {
    /// The approvals file of a `MC_HOME`.
    pub fn path(home: &Path) -> PathBuf {
        home.join("mcp-approvals.json")
    }

    /// Reads the approvals file; a missing one approves nothing. A file that is not
    /// exactly this format is [`ConfigError::Invalid`].
    pub fn load(home: &Path) -> Result<McpApprovals, ConfigError> {
        McpApprovals::load_file(&McpApprovals::path(home))
    }

    /// Reads an approvals file of this format at `path` (hook approvals share it); a
    /// missing one approves nothing.
    pub fn load_file(path: &Path) -> Result<McpApprovals, ConfigError> {
        let invalid = |why: &str| ConfigError::Invalid(format!("{}: {why}", path.display()));
        let Some(text) = read_text_file(path, MCP_APPROVALS_BYTES).map_err(|w| invalid(&w))? else {
            return Ok(McpApprovals {
                format: 1,
                approved: Vec::new(),
            });
        };
        let approvals: McpApprovals =
            serde_json::from_str(&text).map_err(|e| invalid(&e.to_string()))?;
        let well_formed = approvals.format == 1
            && approvals.approved.iter().all(|d| {
                d.len() == 64
                    && d.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
        if !well_formed {
            return Err(invalid("not an approvals file of format 1"));
        }
        Ok(approvals)
    }

    /// Whether a digest is approved.
    pub fn approves(&self, digest: &str) -> bool {
        self.approved.iter().any(|d| d == digest)
    }

    /// Adds (`true`) or removes (`false`) a digest.
    pub fn set(&mut self, digest: &str, approved: bool) {
        self.approved.retain(|d| d != digest);
        if approved {
            self.approved.push(digest.to_owned());
            self.approved.sort();
        }
    }

    /// Replaces the file atomically: a synced temporary file renamed over it.
    pub fn save(&self, home: &Path) -> std::io::Result<()> {
        self.save_file(home, "mcp-approvals.json")
    }

    /// Replaces the approvals file `name` in `home` atomically (hook approvals share
    /// the format).
    pub fn save_file(&self, home: &Path, name: &str) -> std::io::Result<()> {
        let path = home.join(name);
        let temporary = home.join(format!(".{name}.{}.tmp", std::process::id()));
        let mut bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        std::fs::File::open(home)?.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Option<toml::Value> {
        let mut table: toml::Table = text.parse().unwrap();
        table.remove("mcp")
    }

    #[test]
    fn project_definitions_replace_global_ones_and_may_only_toggle_them() {
        let global = value(
            r#"
[mcp.servers.a]
command = "node"
args = ["a.js"]
[mcp.servers.b]
url = "http://127.0.0.1:1/mcp"
[mcp.servers.c]
command = "c"
"#,
        );
        let project = value(
            r#"
[mcp.servers.a]
enabled = false
[mcp.servers.b]
url = "http://127.0.0.1:2/mcp"
[mcp.servers.d]
command = "d"
call_timeout_ms = 5
"#,
        );
        let servers = merge_mcp(global, project).unwrap();
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(servers[0].source, McpSource::Global);
        assert!(!servers[0].enabled);
        assert_eq!(servers[0].describe(), "node a.js");
        assert_eq!(servers[1].source, McpSource::Project);
        assert_eq!(servers[1].describe(), "http://127.0.0.1:2/mcp");
        assert!(servers[2].enabled);
        assert_eq!(servers[2].startup_timeout_ms, MCP_STARTUP_TIMEOUT_MS);
        assert_eq!(servers[3].call_timeout_ms, 5);
    }

    #[test]
    fn digests_bind_the_definition_to_its_source_and_project() {
        let servers = merge_mcp(value("[mcp.servers.a]\ncommand = \"x\""), None).unwrap();
        let global = &servers[0];
        let mut project = global.clone();
        project.source = McpSource::Project;
        let here = Path::new("/work/one");
        let there = Path::new("/work/two");
        assert_eq!(global.digest(here), global.digest(there));
        assert_ne!(global.digest(here), project.digest(here));
        assert_ne!(project.digest(here), project.digest(there));
        let mut other = global.clone();
        other.transport = McpTransport::Stdio {
            command: "x".into(),
            args: vec!["--evil".into()],
            env: BTreeMap::new(),
            env_vars: Vec::new(),
            cwd: None,
        };
        assert_ne!(global.digest(here), other.digest(here));
        // Toggling and timeouts do not need a new approval.
        let mut toggled = global.clone();
        toggled.enabled = false;
        toggled.call_timeout_ms = 1;
        assert_eq!(global.digest(here), toggled.digest(here));
        assert_eq!(global.digest(here).len(), 64);
        // Project directories that are not UTF-8 still have digests of their own.
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/work/\xff"));
        let other = Path::new(std::ffi::OsStr::from_bytes(b"/work/\xfe"));
        assert_eq!(project.digest(odd).len(), 64);
        assert_ne!(project.digest(odd), project.digest(other));
    }

    #[test]
    fn oauth_settings_join_the_digest_and_leave_other_digests_as_they_were() {
        let here = Path::new("/work/one");
        let read = |text: &str| merge_mcp(value(text), None).unwrap().remove(0);
        let plain = read("[mcp.servers.b]\nurl = \"http://127.0.0.1:1/mcp\"");
        // The canonical form of a definition without `oauth` is the one approvals were
        // given for before sign-ins existed.
        let canonical = r#"{"format":1,"name":"b","source":"global","project":null,"transport":"http","url":"http://127.0.0.1:1/mcp","bearer_token_env":null}"#;
        assert_eq!(plain.digest(here), hex(&Sha256::digest(canonical)));
        let defaults = read("[mcp.servers.b]\nurl = \"http://127.0.0.1:1/mcp\"\noauth = true");
        let McpTransport::Http { oauth, .. } = &defaults.transport else {
            panic!("http");
        };
        assert_eq!(oauth.as_ref(), Some(&McpOAuth::default()));
        assert_ne!(defaults.digest(here), plain.digest(here));
        let client = read(
            "[mcp.servers.b]\nurl = \"http://127.0.0.1:1/mcp\"\n[mcp.servers.b.oauth]\nclient_id = \"c\"\nscopes = [\"read\"]",
        );
        assert_ne!(client.digest(here), defaults.digest(here));
        let off = read("[mcp.servers.b]\nurl = \"http://127.0.0.1:1/mcp\"\noauth = false");
        assert_eq!(off.digest(here), plain.digest(here));
        for text in [
            "[mcp.servers.b]\nurl = \"http://h\"\noauth = 1",
            "[mcp.servers.b]\nurl = \"http://h\"\noauth = { client = \"x\" }",
            "[mcp.servers.b]\nurl = \"http://h\"\noauth = { client_id = \"\" }",
            "[mcp.servers.b]\nurl = \"http://h\"\noauth = true\nbearer_token_env = \"T\"",
            "[mcp.servers.b]\ncommand = \"x\"\noauth = true",
        ] {
            assert!(merge_mcp(value(text), None).is_err(), "{text}");
        }
    }

    #[test]
    fn malformed_definitions_are_invalid() {
        for text in [
            "[mcp.servers.a]\n",
            "[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h\"",
            "[mcp.servers.a]\nurl = \"ftp://h\"",
            "[mcp.servers.a]\nurl = \"http://h\"\nargs = [\"x\"]",
            "[mcp.servers.a]\ncommand = \"\"",
            "[mcp.servers.a]\ncommand = \"x\"\ncolour = 1",
            "[mcp.servers.a]\ncommand = \"x\"\nenv = { \"A B\" = \"1\" }",
            "[mcp.servers.a]\ncommand = \"x\"\ncall_timeout_ms = 0",
            "[mcp.servers.\"a b\"]\ncommand = \"x\"",
            "[mcp.servers.a__b]\ncommand = \"x\"",
            "[mcp]\ncolour = 1",
        ] {
            let got = merge_mcp(value(text), None);
            assert!(matches!(got, Err(ConfigError::Invalid(_))), "{text}");
        }
        let too_many: String = (0..=MCP_SERVERS)
            .map(|i| format!("[mcp.servers.s{i}]\ncommand = \"x\"\n"))
            .collect();
        assert!(merge_mcp(value(&too_many), None).is_err());
    }

    #[test]
    fn approvals_round_trip_and_reject_malformed_files() {
        let home = tempfile::tempdir().unwrap();
        let mut approvals = McpApprovals::load(home.path()).unwrap();
        assert!(approvals.approved.is_empty());
        let digest = "a".repeat(64);
        approvals.set(&digest, true);
        approvals.save(home.path()).unwrap();
        let loaded = McpApprovals::load(home.path()).unwrap();
        assert!(loaded.approves(&digest));
        approvals.set(&digest, false);
        assert!(!approvals.approves(&digest));
        for text in [
            "nonsense",
            r#"{"format":2,"approved":[]}"#,
            r#"{"format":1,"approved":["zz"]}"#,
        ] {
            std::fs::write(McpApprovals::path(home.path()), text).unwrap();
            assert!(McpApprovals::load(home.path()).is_err(), "{text}");
        }
    }
}
