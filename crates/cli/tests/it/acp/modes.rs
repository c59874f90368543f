//! The approval mode as a session config option of category `mode`: offered with the
//! model, switched with `session/set_config_option`, and deciding the next calls: in
//! `auto` an edit runs without a permission request, in `plan` it is refused without
//! one; and each mode deciding a read, an edit, a command in and out of the sandbox and
//! a read outside the workspace as it does through `serve` (`approval_modes`' script
//! and table), with and without a kernel sandbox.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use agent_client_protocol_schema::v1::{
    PermissionOptionKind, RequestPermissionRequest, SessionConfigKind, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigSelectOptions, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, StopReason, ToolCallStatus,
};
use magi_testkit::{MockServer, Reply};
use serde_json::json;

use super::{choose, initialize, new_session, prompt, stop};
use crate::approval_modes::{ASKED, AUTO, expected, script};
use crate::common::acp::Acp;
use crate::common::approval::{env_for, only_session, protections};
use crate::common::{TestEnv, outside_dir};

/// The `mode` option's current value and values; it is of category `mode`.
fn mode_option(options: &[SessionConfigOption]) -> (String, Vec<String>) {
    let mode = options.iter().find(|o| &*o.id.0 == "mode").unwrap();
    assert_eq!(mode.category, Some(SessionConfigOptionCategory::Mode));
    let SessionConfigKind::Select(select) = &mode.kind else {
        panic!("the mode option is a select: {mode:?}");
    };
    let SessionConfigSelectOptions::Ungrouped(values) = &select.options else {
        panic!("ungrouped options: {select:?}");
    };
    let values = values.iter().map(|o| o.value.0.to_string()).collect();
    (select.current_value.0.to_string(), values)
}

fn write(id: &str, path: &str) -> Reply {
    Reply::stream().tool_call(
        id,
        "write",
        [json!({ "path": path, "content": "x\n" })
            .to_string()
            .as_str()],
    )
}

#[tokio::test]
async fn acp_the_mode_option_switches_the_approval_mode_and_the_next_calls_follow_it() {
    let mock = MockServer::start().await;
    mock.enqueue(write("w1", "a.txt"));
    mock.enqueue(Reply::stream().text(["Wrote a."]));
    mock.enqueue(write("w2", "b.txt"));
    mock.enqueue(Reply::stream().text(["Could not write b."]));
    let env = env_for(&mock);
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let (current, values) = mode_option(session.config_options.as_deref().unwrap());
    assert_eq!(current, "ask");
    assert_eq!(values, ["plan", "ask", "auto", "allow-all"]);
    let switch = |value: &'static str| {
        SetSessionConfigOptionRequest::new(session.session_id.clone(), "mode", value)
    };
    let switched = acp
        .call("session/set_config_option", switch("auto"))
        .await
        .unwrap();
    let switched: SetSessionConfigOptionResponse = serde_json::from_value(switched).unwrap();
    assert_eq!(mode_option(&switched.config_options).0, "auto");
    // No permission is requested: any request of the agent fails the test.
    let no_question = |method: &str, _: &serde_json::Value| -> Option<serde_json::Value> {
        panic!("the agent asked {method}")
    };
    let result = acp
        .call_with("session/prompt", prompt(&session, "Write a"), no_question)
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert!(env.cwd().join("a.txt").exists());
    acp.call("session/set_config_option", switch("plan"))
        .await
        .unwrap();
    let result = acp
        .call_with("session/prompt", prompt(&session, "Write b"), no_question)
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert!(!env.cwd().join("b.txt").exists());
    let id = only_session(&env);
    assert_eq!(
        protections(&env, &id),
        ["allowed automatically", "denied by user"]
    );
    let refused = acp
        .call("session/set_config_option", switch("read-only"))
        .await
        .unwrap_err();
    assert_eq!(refused["code"], -32602, "{refused}");
    assert!(acp.finish().await.success());
}

/// The final ACP status of each tool call, in the order the calls were announced.
fn statuses(acp: &Acp) -> Vec<(String, Option<ToolCallStatus>)> {
    let mut calls: Vec<(String, Option<ToolCallStatus>)> = Vec::new();
    for notification in &acp.updates {
        let (id, status) = match &notification.update {
            SessionUpdate::ToolCall(call) => (call.tool_call_id.0.to_string(), Some(call.status)),
            SessionUpdate::ToolCallUpdate(update) => {
                (update.tool_call_id.0.to_string(), update.fields.status)
            }
            _ => continue,
        };
        match calls.iter_mut().find(|(known, _)| *known == id) {
            Some((_, last)) => *last = status.or(*last),
            None => calls.push((id, status)),
        }
    }
    calls
}

/// Each mode, switched with `session/set_config_option`, decides the five calls of
/// `approval_modes`' script as it does through `serve`: what asks sends
/// `session/request_permission` (rejected here), what runs completes without one, and
/// `plan` refuses the edit without one; with and without a kernel sandbox.
#[tokio::test]
async fn acp_each_mode_decides_as_through_serve_with_and_without_a_kernel_sandbox() {
    let mut cases = vec![false];
    if crate::sandbox::available() {
        cases.push(true);
    }
    for sandbox in cases {
        for mode in ["plan", "ask", "auto", "allow-all"] {
            let mock = MockServer::start().await;
            let outside = outside_dir();
            script(&mock, outside.path());
            // Outside the temporary directories, which a confined command may always
            // write.
            let mut env = TestEnv::outside_temp()
                .var("MAGI_MODEL", "mock-model")
                .var("OPENAI_BASE_URL", &mock.base_url());
            if !sandbox {
                env = env.var("MAGI_SANDBOX_UNAVAILABLE", "1");
            }
            std::fs::write(env.cwd().join("a.txt"), "a\n").unwrap();
            let mut acp = Acp::spawn(&env);
            initialize(&mut acp).await;
            let session = new_session(&mut acp, &env.cwd()).await;
            let switch =
                SetSessionConfigOptionRequest::new(session.session_id.clone(), "mode", mode);
            let switched = acp.call("session/set_config_option", switch).await.unwrap();
            let switched: SetSessionConfigOptionResponse =
                serde_json::from_value(switched).unwrap();
            assert_eq!(mode_option(&switched.config_options).0, mode);
            let mut asked: Vec<(String, String)> = Vec::new();
            let mut reject = choose(PermissionOptionKind::RejectOnce);
            let result = acp
                .call_with(
                    "session/prompt",
                    prompt(&session, "Go"),
                    |method, params| {
                        let request: RequestPermissionRequest =
                            serde_json::from_value(params.clone()).unwrap();
                        let title = request.tool_call.fields.title.clone().unwrap_or_default();
                        asked.push((request.tool_call.tool_call_id.0.to_string(), title));
                        reject(method, params)
                    },
                )
                .await;
            assert_eq!(stop(result), StopReason::EndTurn);
            let calls = statuses(&acp);
            assert!(acp.finish().await.success());
            let context = format!("{mode}, sandbox {sandbox}: asked {asked:?}, calls {calls:?}");
            let expected = expected(mode, ASKED, sandbox);
            assert_eq!(
                protections(&env, &only_session(&env)),
                expected,
                "{context}"
            );
            assert_eq!(calls.len(), 5, "{context}");
            for (index, ((id, status), label)) in calls.iter().zip(expected).enumerate() {
                // `plan` refuses the edit without asking.
                let asks = label == ASKED && !(mode == "plan" && index == 1);
                let was_asked = asked.iter().any(|(asked, _)| asked == id);
                assert_eq!(was_asked, asks, "call {index}: {context}");
                // What ran completed, except `plan`'s command, confined read-only.
                let completed = label != ASKED && !(mode == "plan" && index == 2);
                assert_eq!(
                    *status == Some(ToolCallStatus::Completed),
                    completed,
                    "call {index}: {context}"
                );
            }
            let made = env.cwd().join("made.txt").exists();
            assert_eq!(made, expected[2] == AUTO && mode != "plan", "{context}");
            let wrote = env.cwd().join("new.txt").exists();
            assert_eq!(wrote, expected[1] == AUTO, "{context}");
            assert!(!env.cwd().join("off.txt").exists(), "{context}");
            // Without a kernel sandbox the modes that run confined commands say why
            // they ask.
            if !sandbox && (mode == "auto" || mode == "plan") {
                assert!(
                    asked[0]
                        .1
                        .contains("touch made.txt (asked: the sandbox is off (unavailable)"),
                    "{context}"
                );
            }
        }
    }
}
