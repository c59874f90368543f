//! `magi-code acp`, the Agent Client Protocol agent, driven through the real binary with
//! the schema crate's own client types against the mock model: initialization,
//! sessions, streamed replies, tool calls and their permissions, cancellation, replay,
//! listing, the model option, two folders at once, and malformed input. `sdk` is the
//! same ground covered by the official TypeScript SDK's client (ignored: it needs npm).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::{
    CancelNotification, ContentBlock, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, NewSessionRequest, NewSessionResponse,
    PermissionOptionKind, PromptRequest, PromptResponse, RequestPermissionRequest,
    SessionConfigKind, SessionUpdate, SetSessionConfigOptionRequest, StopReason, ToolCallContent,
    ToolCallStatus, ToolKind,
};
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

mod crash;
mod files;
mod mcp;
mod models;
mod modes;
mod plan;
mod refusal;
mod sdk;
mod terminal;
mod thoughts;

use crate::common::acp::{Acp, text_of};
use crate::common::approval::{bash, calls, env_for};
use crate::common::*;

/// Initializes the agent; its answer.
async fn initialize(acp: &mut Acp) -> InitializeResponse {
    let result = acp
        .call("initialize", InitializeRequest::new(ProtocolVersion::V1))
        .await
        .unwrap();
    serde_json::from_value(result).unwrap()
}

/// A new session in `cwd`; its answer.
async fn new_session(acp: &mut Acp, cwd: &std::path::Path) -> NewSessionResponse {
    let result = acp
        .call("session/new", NewSessionRequest::new(cwd))
        .await
        .unwrap();
    serde_json::from_value(result).unwrap()
}

fn prompt(session: &NewSessionResponse, text: &str) -> PromptRequest {
    PromptRequest::new(session.session_id.clone(), vec![ContentBlock::from(text)])
}

/// The option of a permission request whose kind is `kind`.
fn choose(kind: PermissionOptionKind) -> impl FnMut(&str, &Value) -> Option<Value> {
    move |method, params| {
        assert_eq!(method, "session/request_permission");
        let request: RequestPermissionRequest = serde_json::from_value(params.clone()).unwrap();
        let option = request.options.iter().find(|o| o.kind == kind)?;
        Some(json!({"outcome": {"outcome": "selected", "optionId": option.option_id}}))
    }
}

fn stop(result: Result<Value, Value>) -> StopReason {
    let response: PromptResponse = serde_json::from_value(result.unwrap()).unwrap();
    response.stop_reason
}

#[tokio::test]
async fn acp_initialize_advertises_what_the_agent_does_and_answers_version_1() {
    let env = TestEnv::new();
    let mut acp = Acp::spawn(&env);
    let init = initialize(&mut acp).await;
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    let capabilities = &init.agent_capabilities;
    assert!(capabilities.load_session);
    assert!(capabilities.prompt_capabilities.image);
    assert!(capabilities.prompt_capabilities.embedded_context);
    assert!(capabilities.session_capabilities.list.is_some());
    assert_eq!(init.auth_methods.len(), 1);
    assert_eq!(init.agent_info.unwrap().name, "magi-code");
    // A client asking for a version we do not speak gets ours.
    let later = acp
        .call("initialize", json!({"protocolVersion": 7}))
        .await
        .unwrap();
    assert_eq!(later["protocolVersion"], 1);
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_malformed_input_gets_json_rpc_errors_and_the_agent_goes_on() {
    let env = TestEnv::new();
    let mut acp = Acp::spawn(&env);
    // Before initialize, a method is refused.
    let early = acp.call("session/list", json!({})).await.unwrap_err();
    assert_eq!(early["code"], -32600, "{early}");
    initialize(&mut acp).await;
    let cases: [(&str, i64, &str); 5] = [
        ("{not json", -32700, "not JSON"),
        ("[1,2]", -32600, "batches"),
        (
            r#"{"jsonrpc":"1.0","id":5,"method":"x"}"#,
            -32600,
            "jsonrpc",
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
            -32600,
            "`id`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"x","params":"p"}"#,
            -32600,
            "`params`",
        ),
    ];
    for (line, code, why) in cases {
        acp.send_line(line).await;
        let answer = acp.next().await;
        assert_eq!(answer["error"]["code"], code, "{line}: {answer}");
        assert!(
            answer["error"]["data"].as_str().unwrap().contains(why),
            "{answer}"
        );
    }
    let unknown = acp.call("session/fly", json!({})).await.unwrap_err();
    assert_eq!(unknown["code"], -32601, "{unknown}");
    let missing = acp
        .call("session/new", json!({"mcpServers": []}))
        .await
        .unwrap_err();
    assert_eq!(missing["code"], -32602, "{missing}");
    assert!(
        missing["data"].as_str().unwrap().contains("cwd"),
        "{missing}"
    );
    let relative = acp
        .call("session/new", json!({"cwd": "work", "mcpServers": []}))
        .await
        .unwrap_err();
    assert_eq!(relative["code"], -32602, "{relative}");
    assert!(
        relative["data"].as_str().unwrap().contains("absolute"),
        "{relative}"
    );
    let nobody = acp
        .call(
            "session/prompt",
            PromptRequest::new("nope", vec![ContentBlock::from("hi")]),
        )
        .await
        .unwrap_err();
    assert_eq!(nobody["code"], -32602, "{nobody}");
    // Still answering.
    assert_eq!(
        initialize(&mut acp).await.protocol_version,
        ProtocolVersion::V1
    );
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_prompt_streams_the_reply_once_and_ends_the_turn() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Hel", "lo, ", "editor."]));
    let env = env_for(&mock);
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let options = session.config_options.clone().unwrap();
    let model = options.iter().find(|o| &*o.id.0 == "model").unwrap();
    let SessionConfigKind::Select(select) = &model.kind else {
        panic!("the model option is a select: {model:?}");
    };
    assert_eq!(&*select.current_value.0, "openai-chat/mock-model");
    let result = acp
        .call("session/prompt", prompt(&session, "Say hello"))
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(acp.agent_text(), "Hello, editor.");
    assert!(acp.updates.iter().any(|n| matches!(
        &n.update,
        SessionUpdate::AvailableCommandsUpdate(c) if c.available_commands[0].name == "compact"
    )));
    assert!(
        acp.updates
            .iter()
            .all(|n| n.session_id == session.session_id)
    );
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_tool_calls_ask_permission_and_show_command_output() {
    let mock = MockServer::start().await;
    mock.enqueue(calls(
        "bash",
        &[bash("b1", "echo made > made.txt && echo done")],
    ));
    mock.enqueue(Reply::stream().text(["Made it."]));
    mock.enqueue(calls("bash", &[bash("b2", "touch refused.txt")]));
    mock.enqueue(Reply::stream().text(["Refused."]));
    let env = env_for(&mock);
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let allowed = acp
        .call_with(
            "session/prompt",
            prompt(&session, "Make it"),
            choose(PermissionOptionKind::AllowOnce),
        )
        .await;
    assert_eq!(stop(allowed), StopReason::EndTurn);
    assert!(env.cwd().join("made.txt").exists());
    let first = acp
        .updates
        .iter()
        .find_map(|n| match &n.update {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .expect("a tool_call");
    assert_eq!(first.kind, ToolKind::Execute);
    let last = acp
        .updates
        .iter()
        .rev()
        .find_map(|n| match &n.update {
            SessionUpdate::ToolCallUpdate(update) => Some(update.clone()),
            _ => None,
        })
        .expect("a tool_call_update");
    assert_eq!(last.tool_call_id, first.tool_call_id);
    assert_eq!(last.fields.status, Some(ToolCallStatus::Completed));
    let texts: Vec<String> = last
        .fields
        .content
        .unwrap()
        .iter()
        .filter_map(|c| match c {
            ToolCallContent::Content(c) => Some(text_of(&c.content)),
            _ => None,
        })
        .collect();
    let joined = texts.join("\n");
    assert!(
        joined.contains("$ echo made > made.txt && echo done"),
        "{joined}"
    );
    assert!(joined.contains("done"), "{joined}");
    let refused = acp
        .call_with(
            "session/prompt",
            prompt(&session, "Try this"),
            choose(PermissionOptionKind::RejectOnce),
        )
        .await;
    assert_eq!(stop(refused), StopReason::EndTurn);
    assert!(!env.cwd().join("refused.txt").exists());
    let failed = acp.updates.iter().rev().find_map(|n| match &n.update {
        SessionUpdate::ToolCallUpdate(update) => update.fields.status,
        _ => None,
    });
    assert_eq!(failed, Some(ToolCallStatus::Failed));
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_allow_always_adds_the_session_rule_and_writes_show_a_diff() {
    let mock = MockServer::start().await;
    mock.enqueue(calls(
        "bash",
        &[bash("b1", "touch one.txt"), bash("b2", "touch two.txt")],
    ));
    mock.enqueue(Reply::stream().text(["Both."]));
    let write = json!({"path": "notes.txt", "content": "remember\n"}).to_string();
    mock.enqueue(Reply::stream().tool_call("w1", "write", [write.as_str()]));
    mock.enqueue(Reply::stream().text(["Written."]));
    let env = env_for(&mock);
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let mut asked = 0;
    let mut always = choose(PermissionOptionKind::AllowAlways);
    let result = acp
        .call_with("session/prompt", prompt(&session, "Touch both"), |m, p| {
            asked += 1;
            always(m, p)
        })
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(asked, 1, "the session rule covers the second call");
    assert!(env.cwd().join("one.txt").exists() && env.cwd().join("two.txt").exists());
    let result = acp
        .call_with(
            "session/prompt",
            prompt(&session, "Write notes"),
            choose(PermissionOptionKind::AllowOnce),
        )
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("notes.txt")).unwrap(),
        "remember\n"
    );
    let diff = acp
        .updates
        .iter()
        .rev()
        .find_map(|n| match &n.update {
            SessionUpdate::ToolCallUpdate(u) => u.fields.content.as_ref().and_then(|c| {
                c.iter().find_map(|c| match c {
                    ToolCallContent::Diff(d) => Some(d.clone()),
                    _ => None,
                })
            }),
            _ => None,
        })
        .expect("a diff in the write's tool call");
    assert_eq!(diff.path, env.cwd().join("notes.txt"));
    assert_eq!(diff.new_text, "remember\n");
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_cancel_mid_turn_ends_the_prompt_cancelled() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Thinking", " long"]).held());
    mock.enqueue(Reply::stream().text(["Back."]));
    let env = env_for(&mock);
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let id = acp.send("session/prompt", prompt(&session, "Go")).await;
    acp.until_update(|u| {
        u.iter()
            .any(|n| matches!(n.update, SessionUpdate::AgentMessageChunk(_)))
    })
    .await;
    acp.notify(
        "session/cancel",
        CancelNotification::new(session.session_id.clone()),
    )
    .await;
    let cancelled = acp.until_response(id, |_, _| None).await;
    assert_eq!(stop(cancelled), StopReason::Cancelled);
    mock.release();
    // The session takes the next prompt: nothing of the cancelled turn is left running.
    let again = acp.call("session/prompt", prompt(&session, "Again")).await;
    assert_eq!(stop(again), StopReason::EndTurn);
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_load_replays_the_conversation_and_list_finds_it() {
    let mock = MockServer::start().await;
    mock.enqueue(calls("bash", &[bash("b1", "echo hi")]));
    mock.enqueue(Reply::stream().text(["Said hi."]));
    let env = env_for(&mock).var("MAGI_ALLOW_ALL", "1");
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let result = acp.call("session/prompt", prompt(&session, "Say hi")).await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert!(acp.finish().await.success());

    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let listed = acp
        .call("session/list", ListSessionsRequest::new().cwd(env.cwd()))
        .await
        .unwrap();
    let listed: ListSessionsResponse = serde_json::from_value(listed).unwrap();
    assert!(
        listed
            .sessions
            .iter()
            .any(|s| s.session_id == session.session_id)
    );
    let load = LoadSessionRequest::new(session.session_id.clone(), env.cwd());
    acp.call("session/load", load).await.unwrap();
    let kinds: Vec<&str> = acp
        .updates
        .iter()
        .map(|n| match &n.update {
            SessionUpdate::UserMessageChunk(_) => "user",
            SessionUpdate::AgentMessageChunk(_) => "agent",
            SessionUpdate::ToolCall(_) => "tool",
            _ => "other",
        })
        .filter(|k| *k != "other")
        .collect();
    assert_eq!(kinds, ["user", "tool", "agent"], "{:?}", acp.updates);
    let call = acp.updates.iter().find_map(|n| match &n.update {
        SessionUpdate::ToolCall(call) => Some(call.clone()),
        _ => None,
    });
    assert_eq!(call.unwrap().status, ToolCallStatus::Completed);
    assert_eq!(acp.agent_text(), "Said hi.");
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_two_sessions_in_two_folders_run_side_by_side() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().text(["Same."]));
    mock.enqueue(Reply::stream().text(["Same."]));
    let env = env_for(&mock);
    let other = env.root().join("other");
    std::fs::create_dir(&other).unwrap();
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let first = new_session(&mut acp, &env.cwd()).await;
    let second = new_session(&mut acp, &other).await;
    assert_ne!(first.session_id, second.session_id);
    let a = acp.send("session/prompt", prompt(&first, "One")).await;
    let b = acp.send("session/prompt", prompt(&second, "Two")).await;
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let message = acp.next().await;
        if message.get("method").is_none() && (message["id"] == a || message["id"] == b) {
            answers.push(message["result"]["stopReason"].clone());
        }
    }
    assert_eq!(answers, [json!("end_turn"), json!("end_turn")]);
    // Each session belongs to its own folder.
    let listed = acp
        .call(
            "session/list",
            ListSessionsRequest::new().cwd(other.clone()),
        )
        .await
        .unwrap();
    let listed: ListSessionsResponse = serde_json::from_value(listed).unwrap();
    let ids: Vec<_> = listed
        .sessions
        .iter()
        .map(|s| s.session_id.clone())
        .collect();
    assert_eq!(ids.len(), 1);
    assert_eq!(ids[0], second.session_id);
    assert!(acp.finish().await.success());
}

#[tokio::test]
async fn acp_set_config_option_switches_the_model_or_says_why_not() {
    let mock = MockServer::start().await;
    let env = env_for(&mock);
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let bad =
        SetSessionConfigOptionRequest::new(session.session_id.clone(), "model", "nowhere/none");
    let refused = acp
        .call("session/set_config_option", bad)
        .await
        .unwrap_err();
    assert_eq!(refused["code"], -32602, "{refused}");
    assert!(
        refused["data"].as_str().unwrap().contains("nowhere/none"),
        "{refused}"
    );
    let unknown = SetSessionConfigOptionRequest::new(session.session_id.clone(), "colour", "red");
    let refused = acp
        .call("session/set_config_option", unknown)
        .await
        .unwrap_err();
    assert_eq!(refused["code"], -32602, "{refused}");
    assert!(acp.finish().await.success());
}
