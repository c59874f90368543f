//! The approval mode as a session config option of category `mode`: offered with the
//! model, switched with `session/set_config_option`, and deciding the next calls: in
//! `auto` an edit runs without a permission request, in `plan` it is refused without
//! one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use agent_client_protocol_schema::v1::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOptions, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    StopReason,
};
use magi_testkit::{MockServer, Reply};
use serde_json::json;

use super::{initialize, new_session, prompt, stop};
use crate::common::acp::Acp;
use crate::common::approval::{env_for, only_session, protections};

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
