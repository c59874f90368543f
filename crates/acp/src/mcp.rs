//! The MCP servers an editor passes with `session/new` or `session/load`, handed to the
//! session's backend as its client's servers (`magi_config::client_mcp_servers`): the
//! editor passing them is their approval, for that session's backend alone.

use agent_client_protocol_schema::v1::{Error, McpServer};
use magi_config::{CLIENT_MCP_SERVERS_ENV, ClientMcpServer, is_valid_server_name};
use magi_protocol::limits::MCP_SERVER_NAME_BYTES;
use serde_json::json;

/// The prefix of the variables holding HTTP servers' bearer tokens.
const TOKEN_ENV: &str = "MAGI_CLIENT_MCP_TOKEN_";

/// The environment variables that give `servers` to a backend; none for no server.
pub(crate) fn backend_env(servers: &[McpServer]) -> Result<Vec<(String, String)>, Error> {
    if servers.is_empty() {
        return Ok(Vec::new());
    }
    let mut env = Vec::new();
    let mut given: Vec<ClientMcpServer> = Vec::new();
    for (index, server) in servers.iter().enumerate() {
        let (name, mut ours) = match server {
            McpServer::Stdio(stdio) => (
                &stdio.name,
                ClientMcpServer {
                    name: String::new(),
                    command: Some(stdio.command.to_string_lossy().into_owned()),
                    args: stdio.args.clone(),
                    env: stdio
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    url: None,
                    bearer_token_env: None,
                },
            ),
            McpServer::Http(http) => {
                let mut token = None;
                for header in &http.headers {
                    let bearer = header
                        .value
                        .strip_prefix("Bearer ")
                        .filter(|_| header.name.eq_ignore_ascii_case("authorization"));
                    match bearer {
                        Some(value) if token.is_none() => token = Some(value.to_owned()),
                        _ => {
                            return Err(Error::invalid_params().data(json!(format!(
                                "the header `{}` of the MCP server `{}` cannot be sent: only \
                                 `Authorization: Bearer …` is supported",
                                header.name, http.name
                            ))));
                        }
                    }
                }
                let bearer_token_env = token.map(|token| {
                    let key = format!("{TOKEN_ENV}{index}");
                    env.push((key.clone(), token));
                    key
                });
                (
                    &http.name,
                    ClientMcpServer {
                        name: String::new(),
                        command: None,
                        args: Vec::new(),
                        env: Default::default(),
                        url: Some(http.url.clone()),
                        bearer_token_env,
                    },
                )
            }
            _ => {
                return Err(Error::invalid_params().data(json!(
                    "only stdio and HTTP MCP servers can be passed (mcpCapabilities.sse is false)"
                )));
            }
        };
        ours.name = unique(server_name(name), &given);
        given.push(ours);
    }
    let text = serde_json::to_string(&given)
        .map_err(|e| Error::internal_error().data(json!(e.to_string())))?;
    env.push((CLIENT_MCP_SERVERS_ENV.to_owned(), text));
    Ok(env)
}

/// A server name our tools' names can carry: other characters become `-`, no `__`,
/// at most the name bound.
fn server_name(given: &str) -> String {
    let mut name: String = given
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("__") {
        name = name.replace("__", "_");
    }
    name.truncate(MCP_SERVER_NAME_BYTES);
    if is_valid_server_name(&name) {
        name
    } else {
        "client".to_owned()
    }
}

/// `name`, or `name-2`, `name-3`… when a server before it has it.
fn unique(name: String, given: &[ClientMcpServer]) -> String {
    let taken = |n: &str| given.iter().any(|g| g.name == n);
    if !taken(&name) {
        return name;
    }
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            let mut base = name.clone();
            base.truncate(MCP_SERVER_NAME_BYTES - suffix.len());
            base + &suffix
        })
        .find(|candidate| !taken(candidate))
        .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use agent_client_protocol_schema::v1::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };

    use super::*;

    #[test]
    fn acp_servers_become_the_backends_client_servers() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("My Files", "/bin/mcp-files")
                    .args(vec!["--root".into()])
                    .env(vec![EnvVariable::new("A", "1")]),
            ),
            McpServer::Stdio(McpServerStdio::new("My Files", "/bin/other")),
            McpServer::Http(
                McpServerHttp::new("web", "https://mcp.example.com/mcp")
                    .headers(vec![HttpHeader::new("Authorization", "Bearer s3cret")]),
            ),
        ];
        let env = backend_env(&servers).unwrap();
        assert_eq!(
            env[0],
            ("MAGI_CLIENT_MCP_TOKEN_2".to_owned(), "s3cret".to_owned())
        );
        let (key, text) = &env[1];
        assert_eq!(key, CLIENT_MCP_SERVERS_ENV);
        let given: Vec<ClientMcpServer> = serde_json::from_str(text).unwrap();
        let names: Vec<&str> = given.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["My-Files", "My-Files-2", "web"]);
        assert_eq!(given[0].env["A"], "1");
        assert_eq!(
            given[2].bearer_token_env.as_deref(),
            Some("MAGI_CLIENT_MCP_TOKEN_2")
        );
        let config = magi_config::Env::from_pairs(env.clone());
        assert_eq!(magi_config::client_mcp_servers(&config).unwrap().len(), 3);

        let other_header = McpServer::Http(
            McpServerHttp::new("web", "https://h/mcp").headers(vec![HttpHeader::new("X-Key", "k")]),
        );
        let error = backend_env(&[other_header]).unwrap_err();
        assert!(error.data.unwrap().to_string().contains("X-Key"));
        let sse = McpServer::Sse(McpServerSse::new("old", "https://h/sse"));
        assert!(backend_env(&[sse]).is_err());
        assert!(backend_env(&[]).unwrap().is_empty());
    }
}
