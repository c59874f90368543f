//! MCP servers the client passed for this backend alone: an editor speaking ACP gives
//! them with `session/new`, and `magi-code acp` hands them to the session's backend in
//! [`CLIENT_MCP_SERVERS_ENV`]. The client passing them is their approval, for that
//! backend only (an exception to the global approvals, recorded in docs/mcp.md): they
//! are never written to a settings or approvals file and never run elsewhere.

use std::collections::BTreeMap;

use magi_protocol::limits::{MCP_CALL_TIMEOUT_MS, MCP_SERVERS, MCP_STARTUP_TIMEOUT_MS};
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::{ConfigError, McpServer, McpSource, McpTransport, is_valid_server_name};

/// The variable holding the client's servers: a JSON array of [`ClientMcpServer`].
pub const CLIENT_MCP_SERVERS_ENV: &str = "MAGI_CLIENT_MCP_SERVERS";

/// One server as the client gives it: a command, or a URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientMcpServer {
    /// Its name, as a settings table would name it.
    pub name: String,
    /// The program of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The endpoint of a streamable-HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The variable of the backend's environment holding its bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
}

/// The client's servers in `env`, checked; none when the variable is not set.
pub fn client_mcp_servers(env: &Env) -> Result<Vec<McpServer>, ConfigError> {
    let Some(text) = env.get(CLIENT_MCP_SERVERS_ENV) else {
        return Ok(Vec::new());
    };
    let invalid = |why: String| ConfigError::Invalid(format!("{CLIENT_MCP_SERVERS_ENV}: {why}"));
    let given: Vec<ClientMcpServer> =
        serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    if given.len() > MCP_SERVERS {
        return Err(invalid(format!("more than {MCP_SERVERS} servers")));
    }
    let mut servers: Vec<McpServer> = Vec::new();
    for server in given {
        if !is_valid_server_name(&server.name) {
            return Err(invalid(format!("`{}` is not a server name", server.name)));
        }
        if servers.iter().any(|s| s.name == server.name) {
            return Err(invalid(format!("`{}` is given twice", server.name)));
        }
        let transport = match (server.command, server.url) {
            (Some(command), None) if server.bearer_token_env.is_none() => McpTransport::Stdio {
                command,
                args: server.args,
                env: server.env,
                env_vars: Vec::new(),
                cwd: None,
            },
            (None, Some(url))
                if server.args.is_empty()
                    && server.env.is_empty()
                    && (url.starts_with("http://") || url.starts_with("https://")) =>
            {
                McpTransport::Http {
                    url,
                    bearer_token_env: server.bearer_token_env,
                    oauth: None,
                }
            }
            _ => {
                return Err(invalid(format!(
                    "`{}` needs `command` (with `args` and `env`) or an http(s) `url` (with \
                     `bearer_token_env`), not both",
                    server.name
                )));
            }
        };
        servers.push(McpServer {
            name: server.name,
            source: McpSource::Client,
            transport,
            enabled: true,
            startup_timeout_ms: MCP_STARTUP_TIMEOUT_MS,
            call_timeout_ms: MCP_CALL_TIMEOUT_MS,
            // As a configured server's default: ACP has no way to ask for confinement.
            sandbox: false,
        });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    fn servers(json: &str) -> Result<Vec<McpServer>, ConfigError> {
        client_mcp_servers(&Env::from_pairs([(CLIENT_MCP_SERVERS_ENV, json)]))
    }

    #[test]
    fn the_clients_servers_are_read_and_bad_ones_refused() {
        assert!(client_mcp_servers(&Env::default()).unwrap().is_empty());
        let read = servers(
            r#"[{"name":"files","command":"mcp-files","args":["--root","."],"env":{"A":"1"}},
                {"name":"web","url":"https://mcp.example.com/mcp","bearer_token_env":"T"}]"#,
        )
        .unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].source, McpSource::Client);
        assert!(
            matches!(&read[1].transport, McpTransport::Http { url, .. } if url.ends_with("/mcp"))
        );
        for bad in [
            "not json",
            r#"[{"name":"a b","command":"x"}]"#,
            r#"[{"name":"a","command":"x","url":"http://h"}]"#,
            r#"[{"name":"a","url":"ftp://h"}]"#,
            r#"[{"name":"a","command":"x"},{"name":"a","command":"y"}]"#,
        ] {
            let error = servers(bad).unwrap_err().to_string();
            assert!(error.contains(CLIENT_MCP_SERVERS_ENV), "{bad}: {error}");
        }
    }
}
