//! The MCP server behind `magi-mock-mcp`: a few tools whose behaviour a test can rely
//! on, served over stdio or streamable HTTP, and the ways a server can misbehave at
//! startup.
//!
//! Its tools:
//! - `echo {message}` answers `Echo: <message>`;
//! - `add {a, b}` answers `The sum of <a> and <b> is <a + b>.`;
//! - `wait {}` never answers: it ends only when the client cancels the call;
//! - `exit {}` ends the server's process while the call is in flight;
//! - `fail {}` answers a tool error (`isError`) saying `the mock failed on purpose`;
//! - `filler-<n> {}`, as many as [`McpMock::filler_tools`] asks, answer `filler`.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// Exit status of the server when the `exit` tool ends it.
pub const MOCK_MCP_EXIT_STATUS: i32 = 3;

/// How the mock server behaves. The default serves the tools and nothing else.
#[derive(Debug, Clone, Default)]
pub struct McpMock {
    /// How many `filler-<n>` tools to list after the others.
    pub filler_tools: usize,
}

impl McpMock {
    /// Every tool the server lists, in order.
    pub fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool(
                "echo",
                "Answers `Echo: ` and the message.",
                json!({"message": {"type": "string"}}),
                &["message"],
            ),
            tool(
                "add",
                "Adds two numbers.",
                json!({"a": {"type": "number"}, "b": {"type": "number"}}),
                &["a", "b"],
            ),
            tool(
                "wait",
                "Never answers; ends when the call is cancelled.",
                json!({}),
                &[],
            ),
            tool(
                "exit",
                "Ends the server while the call is in flight.",
                json!({}),
                &[],
            ),
            tool("fail", "Answers a tool error.", json!({}), &[]),
        ];
        tools.extend(
            (0..self.filler_tools).map(|n| tool(format!("filler-{n}"), "Filler.", json!({}), &[])),
        );
        tools
    }
}

/// A tool taking an object with `properties`, of which `required` are required.
fn tool(
    name: impl Into<Cow<'static, str>>,
    description: &'static str,
    properties: Value,
    required: &[&str],
) -> Tool {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    schema.insert("required".into(), json!(required));
    Tool::new(name, description, Arc::new(schema))
}

/// A required argument of a call, or the protocol error naming it.
fn argument<'a>(call: &'a CallToolRequestParams, name: &str) -> Result<&'a Value, ErrorData> {
    call.arguments
        .as_ref()
        .and_then(|arguments| arguments.get(name))
        .ok_or_else(|| ErrorData::invalid_params(format!("missing argument `{name}`"), None))
}

fn number(call: &CallToolRequestParams, name: &str) -> Result<f64, ErrorData> {
    argument(call, name)?
        .as_f64()
        .ok_or_else(|| ErrorData::invalid_params(format!("`{name}` is not a number"), None))
}

fn answer(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

impl ServerHandler for McpMock {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(crate::MOCK_MCP_BIN, env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        call: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match call.name.as_ref() {
            "echo" => {
                let message = argument(&call, "message")?;
                let message = message
                    .as_str()
                    .ok_or_else(|| ErrorData::invalid_params("`message` is not a string", None))?;
                Ok(answer(format!("Echo: {message}")))
            }
            "add" => {
                let (a, b) = (number(&call, "a")?, number(&call, "b")?);
                Ok(answer(format!("The sum of {a} and {b} is {}.", a + b)))
            }
            "wait" => {
                context.ct.cancelled().await;
                Err(ErrorData::internal_error("cancelled", None))
            }
            "exit" => std::process::exit(MOCK_MCP_EXIT_STATUS),
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "the mock failed on purpose",
            )])
            .into()),
            name if name.starts_with("filler-") => Ok(answer("filler")),
            name => Err(ErrorData::invalid_params(
                format!("no tool named `{name}`"),
                None,
            )),
        }
    }
}
