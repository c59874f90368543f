//! MCP servers: connected at startup (see [`connect`]), alive for the child's lifetime,
//! their tools offered to the model as `mcp__<server>__<tool>` and called through the
//! same supervision as built-in tools, and shut down within the cleanup bounds.
//!
//! The servers' protocol work runs on the hub's own runtime (one worker thread), so a
//! call can be awaited from any turn's thread and outlives none of them.

mod connect;
mod groups;
mod review;
mod signed;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use magi_protocol::limits::{MCP_ARGUMENTS_BYTES, MCP_RESULT_BYTES, MCP_SHUTDOWN_GRACE_MS};
use magi_tools::facts::Facts;
use magi_tools::{ToolOutput, ToolReport};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use rmcp::service::{Peer, RoleClient, RunningService};
use tokio_util::sync::CancellationToken;

pub use connect::{McpStartError, approved_servers, connect, missing_program};
pub use review::{McpReview, ServerReview};

use groups::ProcessGroups;

/// An MCP tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// `mcp__<server>__<tool>`.
    pub name: String,
    /// The server's name.
    pub server: String,
    /// The tool's name at its server.
    pub tool: String,
    /// What the model is told it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: serde_json::Value,
}

/// The prefix of every MCP tool's name; no other tool may use it.
pub const MCP_TOOL_PREFIX: &str = "mcp__";

/// One connected server.
struct Connected {
    name: String,
    /// The server's sign-in, when it needs one.
    sign_in: Option<Arc<magi_auth::SignIn>>,
    peer: Peer<RoleClient>,
    /// Taken when the server is shut down.
    service: Option<RunningService<RoleClient, ()>>,
    call_timeout: Duration,
    tools: Vec<McpTool>,
}

/// The connected servers of one child and their tools.
pub struct McpHub {
    /// The tools in a stable order: by server, then as the server listed them.
    ordered: Vec<Arc<McpTool>>,
    /// The same tools by name.
    tools: HashMap<String, Arc<McpTool>>,
    /// Emptied by [`McpHub::shutdown`]: later calls find no server.
    servers: Mutex<Vec<Connected>>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: Option<tokio::runtime::Handle>,
    groups: ProcessGroups,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.server_names())
            .field("tools", &self.ordered.len())
            .finish()
    }
}

impl McpHub {
    /// A hub without servers.
    pub fn empty() -> McpHub {
        McpHub {
            tools: HashMap::new(),
            ordered: Vec::new(),
            servers: Mutex::new(Vec::new()),
            runtime: Mutex::new(None),
            handle: None,
            groups: ProcessGroups::default(),
        }
    }

    fn new(
        runtime: tokio::runtime::Runtime,
        mut servers: Vec<Connected>,
        groups: ProcessGroups,
    ) -> McpHub {
        let mut ordered = Vec::new();
        let mut tools = HashMap::new();
        for tool in servers
            .iter_mut()
            .flat_map(|s| std::mem::take(&mut s.tools))
        {
            // A name a server lists twice is offered once.
            if !tools.contains_key(&tool.name) {
                let tool = Arc::new(tool);
                tools.insert(tool.name.clone(), Arc::clone(&tool));
                ordered.push(tool);
            }
        }
        McpHub {
            tools,
            ordered,
            servers: Mutex::new(servers),
            handle: Some(runtime.handle().clone()),
            runtime: Mutex::new(Some(runtime)),
            groups,
        }
    }

    /// The token values of the connected servers' sign-ins, as last read or refreshed:
    /// redacted from what the backend sends, records and gives the model.
    pub fn secrets(&self) -> Vec<String> {
        lock(&self.servers)
            .iter()
            .filter_map(|s| s.sign_in.as_ref())
            .flat_map(|sign_in| sign_in.secrets())
            .collect()
    }

    /// The names of the connected servers.
    pub fn server_names(&self) -> Vec<String> {
        lock(&self.servers).iter().map(|s| s.name.clone()).collect()
    }

    /// Every tool offered, in a stable order.
    pub fn tools(&self) -> impl Iterator<Item = &McpTool> {
        self.ordered.iter().map(|t| t.as_ref())
    }

    /// The tool the model calls `name`, if it is one of the hub's.
    pub fn tool(&self, name: &str) -> Option<Arc<McpTool>> {
        self.tools.get(name).cloned()
    }

    /// Calls `tool` with the model's `arguments`, within the server's call timeout,
    /// until `cancel` fires. A failure of the server or of the call is a failed report
    /// that says what is known; a result over [`MCP_RESULT_BYTES`] fails the call
    /// rather than reaching the model cut.
    pub async fn call(
        &self,
        tool: &McpTool,
        arguments: &str,
        cancel: &CancellationToken,
    ) -> ToolReport {
        let failed = |content: String, summary: &str| {
            ToolReport::from(ToolOutput {
                content,
                summary: summary.to_owned(),
                is_error: true,
            })
        };
        if arguments.len() > MCP_ARGUMENTS_BYTES {
            return failed(
                format!(
                    "The arguments are over the {MCP_ARGUMENTS_BYTES}-byte bound; the call \
                     was not sent."
                ),
                "arguments too large",
            );
        }
        let arguments = match serde_json::from_str::<serde_json::Value>(arguments) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => {
                return failed(
                    "The arguments were not a JSON object.".into(),
                    "invalid arguments",
                );
            }
        };
        let server = lock(&self.servers)
            .iter()
            .find(|s| s.name == tool.server)
            .map(|s| (s.peer.clone(), s.call_timeout));
        let (Some(handle), Some((peer, timeout))) = (&self.handle, server) else {
            return failed(
                format!("The MCP server {} is not connected.", tool.server),
                "server not connected",
            );
        };
        if peer.is_transport_closed() {
            return failed(
                format!(
                    "The MCP server {} is no longer connected; the call was not sent.",
                    tool.server
                ),
                "server not connected",
            );
        }
        let mut params = CallToolRequestParams::new(tool.tool.clone());
        params.arguments = Some(arguments);
        let stop = cancel.clone();
        // Dropping the call on cancellation or timeout tells the server it was
        // cancelled.
        let call = handle.spawn(async move {
            tokio::select! {
                result = peer.call_tool(params) => Some(Ok(result)),
                () = stop.cancelled() => None,
                () = tokio::time::sleep(timeout) => Some(Err(())),
            }
        });
        let unanswered = |output: ToolReport| ToolReport {
            facts: Some(Facts::Mcp {
                server: tool.server.clone(),
                server_tool: tool.tool.clone(),
                answered: false,
                server_error: None,
                result_bytes: None,
                non_text_items: None,
            }),
            ..output
        };
        match call.await {
            Ok(Some(Ok(Ok(result)))) => report_of(tool, result),
            Ok(Some(Ok(Err(error)))) => unanswered(failed(
                format!(
                    "The MCP server {} did not complete the call ({error}); whether it had \
                     effects is unknown.",
                    tool.server
                ),
                "server failed",
            )),
            Ok(Some(Err(()))) => unanswered(failed(
                format!(
                    "The MCP server {} did not answer within {} ms; the call was cancelled, \
                     and whether it had effects is unknown.",
                    tool.server,
                    timeout.as_millis()
                ),
                "no answer in time",
            )),
            Ok(None) => ToolReport {
                cancelled: true,
                ..unanswered(failed(
                    "The call was cancelled before the MCP server answered.".into(),
                    "cancelled",
                ))
            },
            Err(_) => unanswered(failed(
                "The MCP call ended without an answer.".into(),
                "server failed",
            )),
        }
    }

    /// Kills the process groups of the stdio servers at once.
    pub fn kill_processes(&self) {
        self.groups.kill_all();
    }

    /// Asks every connected server to close (stdio servers see their input end; HTTP
    /// sessions are deleted), waits at most [`MCP_SHUTDOWN_GRACE_MS`], then kills what
    /// is left of the stdio servers' process groups. Later calls fail.
    pub async fn shutdown(&self) {
        let servers = std::mem::take(&mut *lock(&self.servers));
        if let Some(handle) = &self.handle {
            let closing = handle.spawn(close_all(servers));
            let grace = Duration::from_millis(MCP_SHUTDOWN_GRACE_MS);
            let _ = tokio::time::timeout(grace, closing).await;
        }
        self.groups.kill_all();
        if let Some(runtime) = lock(&self.runtime).take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        // Whatever path ended the hub, no server process outlives it. The services'
        // own cleanup needs their runtime's context.
        let servers = std::mem::take(&mut *lock(&self.servers));
        if let Some(handle) = &self.handle {
            let _context = handle.enter();
            drop(servers);
        }
        self.groups.kill_all();
        if let Some(runtime) = lock(&self.runtime).take() {
            runtime.shutdown_background();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Closes the servers side by side.
async fn close_all(servers: Vec<Connected>) {
    let mut closing = tokio::task::JoinSet::new();
    for mut server in servers {
        if let Some(service) = server.service.take() {
            closing.spawn(async move {
                let _ = service.cancel().await;
            });
        }
    }
    closing.join_all().await;
}

/// The model's view of a completed call: its text content, with other content named
/// but not included.
fn report_of(tool: &McpTool, result: CallToolResult) -> ToolReport {
    let server = &tool.server;
    let non_text_items = result
        .content
        .iter()
        .filter(|block| !matches!(block, ContentBlock::Text(_)))
        .count() as u64;
    let mut parts: Vec<String> = result.content.iter().map(content_text).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let content = parts.join("\n");
    let is_error = result.is_error == Some(true);
    let facts = Facts::Mcp {
        server: server.clone(),
        server_tool: tool.tool.clone(),
        answered: true,
        server_error: Some(is_error),
        result_bytes: Some(content.len() as u64),
        non_text_items: Some(non_text_items),
    };
    if content.len() > MCP_RESULT_BYTES {
        let output = ToolOutput {
            content: format!(
                "The MCP server {server} answered with {} bytes, over the {MCP_RESULT_BYTES}-byte \
                 bound; the result was not kept. The call itself {}.",
                content.len(),
                if is_error { "failed" } else { "completed" }
            ),
            summary: "result too large".into(),
            is_error: true,
        };
        return ToolReport::with_facts(output, facts);
    }
    let output = ToolOutput {
        summary: if is_error { "failed" } else { "completed" }.into(),
        content,
        is_error,
    };
    ToolReport::with_facts(output, facts)
}

fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!(
            "[image, {}, {} bytes of base64 not shown]",
            image.mime_type,
            image.data.len()
        ),
        ContentBlock::Audio(audio) => format!(
            "[audio, {}, {} bytes of base64 not shown]",
            audio.mime_type,
            audio.data.len()
        ),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[resource {uri}, {} bytes of base64 not shown]", blob.len())
            }
            _ => "[a resource of a kind not shown]".into(),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
        _ => "[content of a kind not shown]".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> McpTool {
        McpTool {
            name: "mcp__s__t".into(),
            server: "s".into(),
            tool: "t".into(),
            description: String::new(),
            parameters: serde_json::json!({}),
        }
    }

    fn facts_of(report: &ToolReport) -> (bool, Option<bool>, Option<u64>, Option<u64>) {
        match &report.facts {
            Some(Facts::Mcp {
                answered,
                server_error,
                result_bytes,
                non_text_items,
                ..
            }) => (*answered, *server_error, *result_bytes, *non_text_items),
            other => panic!("not MCP facts: {other:?}"),
        }
    }

    #[test]
    fn text_reaches_the_model_and_other_content_is_named() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::embedded_text("file:///a.txt", "inside"),
        ]);
        let report = report_of(&tool(), result);
        assert!(!report.output.is_error);
        assert_eq!(
            report.output.content,
            "first\n[image, image/png, 8 bytes of base64 not shown]\n[resource file:///a.txt]\ninside"
        );
        let bytes = report.output.content.len() as u64;
        assert_eq!(facts_of(&report), (true, Some(false), Some(bytes), Some(2)));
    }

    #[test]
    fn a_server_error_fails_and_an_oversized_answer_is_not_kept() {
        let report = report_of(
            &tool(),
            CallToolResult::error(vec![ContentBlock::text("no")]),
        );
        assert!(report.output.is_error);
        assert_eq!(report.output.content, "no");
        assert_eq!(facts_of(&report).1, Some(true));

        let big = "x".repeat(MCP_RESULT_BYTES + 1);
        let report = report_of(
            &tool(),
            CallToolResult::success(vec![ContentBlock::text(big)]),
        );
        assert!(report.output.is_error);
        assert!(report.output.content.contains("not kept"));
        assert!(report.output.content.len() < 1_000);
        assert_eq!(facts_of(&report).2, Some(MCP_RESULT_BYTES as u64 + 1));
    }

    #[test]
    fn structured_content_stands_in_for_missing_content() {
        let mut result = CallToolResult::success(Vec::new());
        result.structured_content = Some(serde_json::json!({"sum": 3}));
        assert_eq!(report_of(&tool(), result).output.content, "{\"sum\":3}");
    }

    #[tokio::test]
    async fn calls_to_an_empty_hub_fail_without_sending() {
        let hub = McpHub::empty();
        let cancel = CancellationToken::new();
        let report = hub.call(&tool(), "[]", &cancel).await;
        assert_eq!(report.output.summary, "invalid arguments");
        let report = hub.call(&tool(), "{}", &cancel).await;
        assert_eq!(report.output.summary, "server not connected");
        hub.shutdown().await;
    }
}
