//! `client.tools` through the real binary: registration at `initialize`, a call the
//! client answers, one cancelled with its run, one left unanswered, and every refusal.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use crate::common::*;
use magi_client::{Backend, Incoming};
use magi_protocol::ErrorCode;
use magi_protocol::messages::{
    ActivityState, ClientToolCall, ClientToolCancelReason, ClientToolDefinition, ClientToolOutcome,
    ClientToolResultParams, ClientToolResultResult, Event, RunOutcome, TurnCancelParams,
};
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};
use serde_json::{Value, json};

const REQUIRED: [&str; 6] = [
    "session.create",
    "turn.start",
    "turn.cancel",
    "approval.answer",
    "shutdown",
    "client.tools",
];

fn tool(name: &str, timeout_ms: Option<u64>) -> ClientToolDefinition {
    ClientToolDefinition {
        name: name.into(),
        description: "Shows a notification in the editor.".into(),
        parameters: json!({"type": "object", "properties": {"text": {"type": "string"}},
                           "required": ["text"], "additionalProperties": false}),
        timeout_ms,
    }
}

fn env_for(mock: &MockServer) -> TestEnv {
    let env = TestEnv::new()
        .var("MAGI_PROVIDER", "openai-chat")
        .var("MAGI_MODEL", "mock-model")
        .var("OPENAI_BASE_URL", &mock.base_url());
    env.write_settings("[permissions]\nallow = [\"notify\", \"slow_notify\"]\n");
    env
}

/// A backend with `notify` (default timeout) and `slow_notify` (300 ms) registered, and
/// a turn started.
async fn turn(env: &TestEnv) -> (Backend, String, String) {
    let mut backend = env.spawn();
    let tools = [tool("notify", None), tool("slow_notify", Some(300))];
    let result = backend
        .initialize_with_tools(&REQUIRED, Some(&tools))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.capabilities.len(), 17);
    assert_eq!(result.capabilities[16], "client.tools");
    let descriptor = result.extensions.unwrap().client_tools.unwrap();
    assert_eq!(descriptor.tools, vec!["notify", "slow_notify"]);
    let session_id = new_session(&mut backend).await;
    let run_id = start_turn(&mut backend, &session_id, "Tell me").await;
    (backend, session_id, run_id)
}

async fn until_call(backend: &mut Backend, seen: &mut Vec<Event>) -> ClientToolCall {
    loop {
        if let Incoming::Event { event, .. } = next(backend).await {
            seen.push(event.clone());
            match event {
                Event::ClientToolCall(call) => return *call,
                Event::RunFinished(f) => panic!("no client call: {f:?}"),
                _ => {}
            }
        }
    }
}

async fn answer(
    backend: &mut Backend,
    session: &str,
    run: &str,
    call: &str,
    content: &str,
) -> Result<ClientToolResultResult, ErrorCode> {
    let params = ClientToolResultParams {
        session_id: session.to_owned(),
        run_id: run.to_owned(),
        call_id: call.to_owned(),
        outcome: ClientToolOutcome::Completed,
        content: content.to_owned(),
    };
    backend
        .call::<methods::ClientToolResult>(&params)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_client_tool_is_offered_called_and_answered_once() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("n1", "notify", ["{\"text\":\"build done\"}"]));
    mock.enqueue(Reply::stream().text(["Notified."]));
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut seen = Vec::new();
    let call = until_call(&mut backend, &mut seen).await;
    assert_eq!(call.tool, "notify");
    assert_eq!(call.call_id, "n1");
    assert_eq!(call.arguments, json!({"text": "build done"}));
    assert_eq!(call.timeout_ms, 120_000);
    assert_eq!(
        answer(&mut backend, &session, &run, "n1", "shown to the user").await,
        Ok(ClientToolResultResult { recorded: true })
    );
    // One result per call.
    assert_eq!(
        answer(&mut backend, &session, &run, "n1", "again").await,
        Err(ErrorCode::StaleRun)
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(seen.iter().any(|e| matches!(e, Event::Activity(a)
        if a.state == ActivityState::Completed && a.name == "notify")));
    let requests = mock.requests();
    // The model was offered the tool, and given the client's answer.
    assert!(requests[0].body.to_string().contains("\"notify\""));
    assert!(requests[1].body.to_string().contains("shown to the user"));
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("\"outcome\":\"completed\""), "{log}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn cancelling_the_run_withdraws_the_call_and_an_unanswered_call_times_out() {
    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("n1", "notify", ["{\"text\":\"x\"}"]));
    let env = env_for(&mock);
    let (mut backend, session, run) = turn(&env).await;
    let mut seen = Vec::new();
    until_call(&mut backend, &mut seen).await;
    let cancel = TurnCancelParams {
        session_id: session.clone(),
        run_id: run.clone(),
    };
    backend
        .call::<methods::TurnCancel>(&cancel)
        .await
        .unwrap()
        .unwrap();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Cancelled);
    assert!(seen.iter().any(|e| matches!(e, Event::ClientToolCancel(c)
        if c.call_id == "n1" && c.reason == ClientToolCancelReason::Cancelled)));
    assert_eq!(
        answer(&mut backend, &session, &run, "n1", "late").await,
        Err(ErrorCode::StaleRun)
    );
    shutdown_clean(&mut backend).await;

    let mock = MockServer::start().await;
    mock.enqueue(Reply::stream().tool_call("s1", "slow_notify", ["{\"text\":\"x\"}"]));
    mock.enqueue(Reply::stream().text(["The editor did not answer."]));
    let env = env_for(&mock);
    let (mut backend, session, _) = turn(&env).await;
    let mut seen = Vec::new();
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed);
    assert!(seen.iter().any(|e| matches!(e, Event::ClientToolCancel(c)
        if c.call_id == "s1" && c.reason == ClientToolCancelReason::TimedOut)));
    assert!(
        mock.requests()[1]
            .body
            .to_string()
            .contains("did not answer within 300 ms")
    );
    let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
    assert!(log.contains("\"summary\":\"no answer in time\""), "{log}");
    shutdown_clean(&mut backend).await;
}

#[tokio::test]
async fn registration_is_checked_before_anything_starts() {
    let env = TestEnv::new();
    let with = |tools: Value| json!({"required_capabilities": ["status", "client.tools"], "client_tools": tools});
    let good = json!({"name": "notify", "description": "d", "parameters": {"type": "object"}});
    let cases = [
        with(json!([])),
        with(json!([{"name": "read", "description": "d", "parameters": {"type": "object"}}])),
        with(json!([{"name": "ask_user", "description": "d", "parameters": {"type": "object"}}])),
        with(json!([{"name": "Bad-Name", "description": "d", "parameters": {"type": "object"}}])),
        with(json!([good, good])),
        with(json!([{"name": "n", "description": "", "parameters": {"type": "object"}}])),
        with(json!([{"name": "n", "description": "d", "parameters": {"type": "array"}}])),
        with(
            json!([{"name": "n", "description": "d", "parameters": {"type": "object"}, "timeout_ms": 0}]),
        ),
        with(
            json!([{"name": "n", "description": "d", "parameters": {"type": "object"}, "extra": 1}]),
        ),
        json!({"required_capabilities": ["status"], "client_tools": [good]}),
    ];
    let mut backend = env.spawn();
    for (n, params) in cases.iter().enumerate() {
        let response = backend
            .request_raw_initialize(&format!("i{n}"), params.clone())
            .await;
        assert_eq!(response, Err(ErrorCode::InvalidParams), "{params}");
    }
    assert!(!env.mc_home().exists(), "nothing started");
    // A base client's result to a tool call is refused without effect.
    backend
        .initialize(&["status", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let refused = backend
        .call::<methods::ClientToolResult>(&ClientToolResultParams {
            session_id: "s".into(),
            run_id: "r".into(),
            call_id: "c".into(),
            outcome: ClientToolOutcome::Completed,
            content: String::new(),
        })
        .await
        .unwrap();
    assert_eq!(refused, Err(ErrorCode::UnsupportedCapability));
    shutdown_clean(&mut backend).await;
}

/// `initialize` sent as raw params, for shapes the library would not build.
trait RawInitialize {
    async fn request_raw_initialize(&mut self, id: &str, params: Value)
    -> Result<Value, ErrorCode>;
}

impl RawInitialize for Backend {
    async fn request_raw_initialize(
        &mut self,
        id: &str,
        params: Value,
    ) -> Result<Value, ErrorCode> {
        self.send_raw(&frame(id, "initialize", params))
            .await
            .unwrap();
        next_response(self).await.outcome
    }
}

/// A Code Mode script calls a client tool: the client is asked as for a direct call,
/// under the nested call's own ID, and its answer resolves the script's promise, which
/// the model never sees apart from the script's result.
#[tokio::test]
async fn a_code_mode_script_calls_a_client_tool() {
    let mock = MockServer::start().await;
    let code = "const shown = await tools.notify({text: 'from a script'});\nreturn 'client said: ' + shown;";
    mock.enqueue(Reply::stream().tool_call(
        "s1",
        "code_mode",
        [json!({ "code": code }).to_string()],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let env = env_for(&mock);
    env.write_settings("[permissions.code_mode]\nallow = [\"notify\"]\n");
    let (mut backend, session, run) = turn(&env).await;
    let mut seen = Vec::new();
    let call = until_call(&mut backend, &mut seen).await;
    assert_eq!(call.tool, "notify");
    assert_eq!(call.call_id, "s1.code_mode.1");
    assert_eq!(call.arguments, json!({"text": "from a script"}));
    assert_eq!(
        answer(&mut backend, &session, &run, &call.call_id, "shown").await,
        Ok(ClientToolResultResult { recorded: true })
    );
    let finished = until_finished(&mut backend, &mut seen).await;
    assert_eq!(finished.outcome, RunOutcome::Completed, "{seen:?}");
    let told = tool_outputs(&mock.requests()[1].body);
    assert_eq!(told, ["client said: shown"]);
    shutdown_clean(&mut backend).await;
}
