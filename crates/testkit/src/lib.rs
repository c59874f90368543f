//! Test and benchmark support for magi-code: a loopback mock model server that speaks
//! the real streaming wire formats of the OpenAI Responses API, OpenAI-compatible Chat
//! Completions and the Anthropic Messages API.
//!
//! A test starts a [`MockServer`], queues [`Reply`] scripts (text, reasoning, tool
//! calls, usage, stop reasons, HTTP errors, slow streams, cut connections, garbage
//! events), points a client at [`MockServer::base_url`] and checks what the client did
//! through [`MockServer::requests`]. Model-list requests (`GET …/models`, OpenAI's
//! shape or Anthropic's pages) are answered from [`MockServer::set_models`] and its
//! knobs instead of the queue. Nothing here reaches beyond `127.0.0.1`.
//!
//! For MCP, the `magi-mock-mcp` binary is a server with tools of known behaviour
//! ([`McpMock`]) that a test runs as a configured server through
//! [`mock_mcp_server`]; [`everything_server`] installs the reference server from npm
//! for the one test and the benchmark option that use a server the project did not
//! write.
//!
//! For sign-ins, [`MockOAuth`] plays ChatGPT's sign-in and a generic authorization
//! server for MCP, and [`follow_authorize_url`] is the browser that follows a sign-in's
//! authorize URL back to its loopback callback.
//!
//! ```no_run
//! # async fn demo() {
//! use magi_testkit::{MockServer, Reply};
//! let server = MockServer::start().await;
//! server.enqueue(Reply::stream().text(["Hel", "lo"]).usage(3, 2));
//! // ... point a client at server.base_url() ...
//! assert_eq!(server.requests().len(), 0);
//! # }
//! ```

mod checks;
mod mcp_mock;
mod mcp_mock_binary;
pub mod mcp_oauth_gate;
mod mcp_server;
mod models;
mod oauth_mock;
pub mod prefix;
mod render;
mod reply;
mod scenario;
mod seal;
mod server;

pub use mcp_mock::{MOCK_MCP_EXIT_STATUS, McpMock};
pub use mcp_mock_binary::{MOCK_MCP_BIN, mock_mcp_server};
pub use mcp_server::{EVERYTHING_PACKAGE, EVERYTHING_VERSION, everything_server, npm_package};
pub use oauth_mock::{
    Authorize, MOCK_ACCOUNT_ID, MOCK_EMAIL, MOCK_USER_CODE, MockOAuth, OAuthRequest,
    follow_authorize_url,
};
pub use render::Format;
pub use reply::{Reply, Stop, ToolCall};
pub use scenario::{DELTAS, Scenario, TOOL_CALLS};
pub use server::{
    MockServer, RESET_PATH, RecordedRequest, Responder, STATS_PATH, TITLE_PROMPT_START,
};
