//! MCP servers the editor passes with `session/new`: started for that session's backend
//! alone, approved by the editor passing them, their tools offered to the model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use agent_client_protocol_schema::v1::{
    McpServer, McpServerStdio, NewSessionRequest, NewSessionResponse, PermissionOptionKind,
    StopReason,
};
use magi_testkit::{MockServer, Reply};

use super::{choose, initialize, prompt, stop};
use crate::common::acp::Acp;
use crate::common::approval::env_for;
use crate::common::*;

#[tokio::test]
async fn acp_mcp_servers_the_client_passes_run_for_that_session_only() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call(
        "e1",
        "mcp__editor-tools__echo",
        ["{\"message\":\"hello from the model\"}"],
    ));
    mock.enqueue(Reply::stream().text(["Echoed."]));
    mock.enqueue(Reply::stream().text(["Nothing here."]));
    let env = env_for(&mock);
    let server = magi_testkit::mock_mcp_server().unwrap();
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let request = NewSessionRequest::new(env.cwd()).mcp_servers(vec![McpServer::Stdio(
        McpServerStdio::new("editor tools", server),
    )]);
    let session: NewSessionResponse =
        serde_json::from_value(acp.call("session/new", request).await.unwrap()).unwrap();
    let result = acp
        .call_with(
            "session/prompt",
            prompt(&session, "Echo something"),
            choose(PermissionOptionKind::AllowOnce),
        )
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    let requests = mock.requests();
    let offered = offered_tool_names(&requests[0].body);
    assert!(
        offered.iter().any(|t| t == "mcp__editor-tools__echo"),
        "{offered:?}"
    );
    let output = tool_outputs(&requests[1].body).join("\n");
    assert!(output.contains("hello from the model"), "{output}");

    // Another session, given no server, has none.
    let other: NewSessionResponse = serde_json::from_value(
        acp.call("session/new", NewSessionRequest::new(env.cwd()))
            .await
            .unwrap(),
    )
    .unwrap();
    let result = acp
        .call("session/prompt", prompt(&other, "Anything?"))
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    let offered = offered_tool_names(&mock.requests()[2].body);
    assert!(
        !offered.iter().any(|t| t.starts_with("mcp__")),
        "{offered:?}"
    );
    assert!(acp.finish().await.success());
}
