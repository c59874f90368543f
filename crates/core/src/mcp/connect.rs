//! Connecting the approved, enabled MCP servers at startup: strictly (one failure
//! fails them all), concurrently, each within its startup timeout, and cancellably.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use magi_config::{Env, McpApprovals, McpServer, McpTransport};
use magi_protocol::limits::{
    MCP_MESSAGE_BYTES, MCP_SHUTDOWN_GRACE_MS, MCP_TOOL_DESCRIPTION_BYTES, MCP_TOOL_SCHEMA_BYTES,
    MCP_TOOLS_PER_SERVER,
};
use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::task::JoinSet;

use super::signed::SignedHttp;
use super::{Connected, McpHub, McpTool, ProcessGroups};
use crate::workspace::CancelFlag;

/// Why the servers could not all be connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpStartError {
    /// A server failed to start, to initialize, or to list its tools in time. The
    /// message names the server and the step; a client only ever sees the code
    /// `mcp_unavailable`.
    Unavailable(String),
    /// Startup was cancelled while connecting.
    Cancelled,
}

/// Variables every stdio server gets from the backend's environment; everything else
/// (provider credentials included) is withheld unless a definition names it.
const PASSED_THROUGH: [&str; 8] = [
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "SHELL",
];

/// The servers that are enabled and approved, in name order.
pub fn approved_servers<'a>(
    servers: &'a [McpServer],
    approvals: &McpApprovals,
    cwd: &Path,
) -> Vec<&'a McpServer> {
    servers
        .iter()
        .filter(|s| s.enabled && approvals.approves(&s.digest(cwd)))
        .collect()
}

/// Why a stdio server's program cannot be started, when it is no executable file: a
/// name with a slash where it points (from the server's directory), another name on
/// the `PATH` it is given. Checked before it starts because under the launcher a
/// missing program would only look like a server that closed at once.
pub fn missing_program(server: &McpServer, cwd: &Path, env: &Env) -> Option<String> {
    let McpTransport::Stdio {
        command, cwd: dir, ..
    } = &server.transport
    else {
        return None;
    };
    let dir = dir.as_ref().map_or_else(|| cwd.to_owned(), |d| cwd.join(d));
    let path = env.get("PATH").map(std::ffi::OsStr::new);
    crate::launcher::find_program(command.as_ref(), path, &dir)
        .is_none()
        .then(|| {
            if command.contains('/') {
                format!(
                    "{command}: no executable file there (from {})",
                    dir.display()
                )
            } else {
                format!("{command}: no executable file of that name on PATH")
            }
        })
}

/// Connects every server of `servers`. Blocks: it runs on the startup worker. On any
/// failure or cancellation the servers already connected are shut down before it
/// returns. A server that needs a sign-in uses the one kept in `MC_HOME` at `home`,
/// refreshed first when it is due; without a usable one it does not start.
pub fn connect(
    servers: &[&McpServer],
    home: &Path,
    cwd: &Path,
    env: &Env,
    cancel: &CancelFlag,
) -> Result<McpHub, McpStartError> {
    if servers.is_empty() {
        return Ok(McpHub::empty());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("mcp")
        .enable_all()
        .build()
        .map_err(|e| McpStartError::Unavailable(format!("no MCP runtime: {e}")))?;
    let groups = ProcessGroups::default();
    let outcome = runtime.block_on(async {
        let mut pending = JoinSet::new();
        for server in servers {
            let server = (*server).clone();
            let (home, cwd, env, groups) =
                (home.to_owned(), cwd.to_owned(), env.clone(), groups.clone());
            pending.spawn(async move {
                let timeout = Duration::from_millis(server.startup_timeout_ms);
                let name = server.name.clone();
                let connecting = connect_one(server, &home, &cwd, &env, &groups);
                match tokio::time::timeout(timeout, connecting).await {
                    Ok(connected) => connected,
                    Err(_) => Err(format!(
                        "{name}: not ready within {} ms",
                        timeout.as_millis()
                    )),
                }
            });
        }
        let mut connected = Vec::new();
        let failure = loop {
            tokio::select! {
                () = cancel.cancelled() => break Some(McpStartError::Cancelled),
                next = pending.join_next() => match next {
                    None => break None,
                    Some(Ok(Ok(server))) => connected.push(server),
                    Some(Ok(Err(why))) => break Some(McpStartError::Unavailable(why)),
                    Some(Err(e)) => break Some(McpStartError::Unavailable(e.to_string())),
                },
            }
        };
        // Servers still connecting are dropped, which kills their processes.
        pending.shutdown().await;
        match failure {
            None => Ok(connected),
            Some(failure) => {
                // Within the grace; what is left is killed below.
                let grace = Duration::from_millis(MCP_SHUTDOWN_GRACE_MS);
                let _ = tokio::time::timeout(grace, super::close_all(connected)).await;
                Err(failure)
            }
        }
    });
    match outcome {
        Ok(mut connected) => {
            connected.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(McpHub::new(runtime, connected, groups))
        }
        Err(failure) => {
            groups.kill_all();
            runtime.shutdown_background();
            Err(failure)
        }
    }
}

/// Starts or reaches one server, initializes it and lists its tools.
async fn connect_one(
    server: McpServer,
    home: &Path,
    cwd: &Path,
    env: &Env,
    groups: &ProcessGroups,
) -> Result<Connected, String> {
    let name = server.name.clone();
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{name}: {what}: {e}");
    let mut signed_in = None;
    let service: RunningService<RoleClient, ()> = match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env: set,
            env_vars,
            cwd: dir,
        } => {
            if let Some(missing) = missing_program(&server, cwd, env) {
                return Err(fail("could not start", &missing));
            }
            let dir = dir.as_ref().map_or_else(|| cwd.to_owned(), |d| cwd.join(d));
            // Under the launcher, so the server and whatever it starts die with the
            // backend however it ends; confined like a command when it asks to be.
            let (program, leading) = if server.sandbox {
                magi_tools::sandbox::confined_command_line(command.as_ref(), cwd)
                    .map_err(|why| fail("could not start", &why))?
            } else {
                crate::launcher::command_line(command.as_ref())
            };
            let mut process = tokio::process::Command::new(program);
            process.args(leading).args(args).env_clear();
            for key in PASSED_THROUGH
                .iter()
                .copied()
                .chain(env_vars.iter().map(String::as_str))
            {
                if let Some(value) = env.get(key) {
                    process.env(key, value);
                }
            }
            process.envs(set);
            process.current_dir(&dir);
            let mut wrapped = CommandWrap::from(process);
            // Its own process group, so shutdown reaches whatever it started too.
            wrapped.wrap(ProcessGroup::leader());
            let (transport, _) = TokioChildProcess::builder(wrapped)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| fail("could not start", &e))?;
            if let Some(pid) = transport.id() {
                groups.add(pid);
            }
            ().serve(transport)
                .await
                .map_err(|e| fail("did not initialize", &e))?
        }
        McpTransport::Http {
            url,
            bearer_token_env,
            oauth,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.max_json_response_size = MCP_MESSAGE_BYTES;
            config.max_sse_event_size = MCP_MESSAGE_BYTES;
            if let Some(var) = bearer_token_env {
                let token = env
                    .get(var)
                    .ok_or_else(|| format!("{name}: {var} is not set"))?;
                config = config.auth_header(token.to_owned());
            }
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|e| fail("no HTTP client", &e))?;
            if oauth.is_some() {
                // No prompt: the sign-in `magi-code mcp login` made, or no start.
                let store = magi_auth::store::Store::new(home);
                magi_auth::mcp::ready(&store, &name, url, SystemTime::now())?;
                let sign_in = Arc::new(magi_auth::mcp::sign_in(&store, &name, url));
                sign_in
                    .token(None)
                    .await
                    .map_err(|e| fail("needs a sign-in", &e))?;
                signed_in = Some(Arc::clone(&sign_in));
                let signed = SignedHttp {
                    inner: client,
                    sign_in,
                };
                let transport = StreamableHttpClientTransport::with_client(signed, config);
                ().serve(transport)
                    .await
                    .map_err(|e| fail("did not initialize", &e))?
            } else {
                let transport = StreamableHttpClientTransport::with_client(client, config);
                ().serve(transport)
                    .await
                    .map_err(|e| fail("did not initialize", &e))?
            }
        }
    };
    let listed = match service.peer().list_all_tools().await {
        Ok(listed) => listed,
        Err(e) => {
            let why = fail("could not list tools", &e);
            let _ = service.cancel().await;
            return Err(why);
        }
    };
    if listed.len() > MCP_TOOLS_PER_SERVER {
        let _ = service.cancel().await;
        return Err(format!(
            "{name}: lists {} tools, more than {MCP_TOOLS_PER_SERVER}",
            listed.len()
        ));
    }
    let tools = listed
        .iter()
        .filter_map(|tool| offered_tool(&name, tool))
        .collect();
    Ok(Connected {
        name,
        sign_in: signed_in,
        peer: service.peer().clone(),
        service: Some(service),
        call_timeout: Duration::from_millis(server.call_timeout_ms),
        tools,
    })
}

/// The tool as the model sees it, or `None` when it cannot be offered: its name would
/// not be a valid tool name, or its schema is over the bound.
fn offered_tool(server: &str, tool: &rmcp::model::Tool) -> Option<McpTool> {
    let qualified = format!("mcp__{server}__{}", tool.name);
    let valid = qualified.len() <= 64
        && qualified
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let parameters = serde_json::Value::Object((*tool.input_schema).clone());
    let schema_bytes = serde_json::to_vec(&parameters).map_or(usize::MAX, |b| b.len());
    if !valid || schema_bytes > MCP_TOOL_SCHEMA_BYTES {
        return None;
    }
    let mut description = tool
        .description
        .as_deref()
        .unwrap_or("A tool of an MCP server.")
        .to_owned();
    if description.len() > MCP_TOOL_DESCRIPTION_BYTES {
        let marker = " [description shortened]";
        let end = description.floor_char_boundary(MCP_TOOL_DESCRIPTION_BYTES - marker.len());
        description.truncate(end);
        description.push_str(marker);
    }
    Some(McpTool {
        name: qualified,
        server: server.to_owned(),
        tool: tool.name.to_string(),
        description: format!("{description} (MCP server {server})"),
        parameters,
    })
}
