//! The model option: `session/set_config_option` switching to another model of the
//! catalog, and the next turn asking that model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use agent_client_protocol_schema::v1::{
    SessionConfigKind, SessionConfigOption, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, StopReason,
};
use magi_protocol::messages::ModelRefreshParams;
use magi_protocol::methods;
use magi_testkit::{MockServer, Reply};

use super::{initialize, new_session, prompt, stop};
use crate::common::acp::Acp;
use crate::common::approval::env_for;
use crate::common::*;

/// The current value and the values of the `model` option.
fn model_option(options: &[SessionConfigOption]) -> (String, Vec<String>) {
    let model = options.iter().find(|o| &*o.id.0 == "model").unwrap();
    let SessionConfigKind::Select(select) = &model.kind else {
        panic!("the model option is a select: {model:?}");
    };
    let values = match &select.options {
        agent_client_protocol_schema::v1::SessionConfigSelectOptions::Ungrouped(options) => {
            options.iter().map(|o| o.value.0.to_string()).collect()
        }
        other => panic!("ungrouped options: {other:?}"),
    };
    (select.current_value.0.to_string(), values)
}

#[tokio::test]
async fn acp_the_model_option_switches_to_another_model_of_the_catalog() {
    let mock = MockServer::start().await;
    mock.set_models([("mock-model", None), ("other-model", Some("Other"))]);
    mock.enqueue(Reply::stream().text(["From the other model."]));
    let env = env_for(&mock);
    env.write_settings(
        "[providers.catalog]\nenabled = [\"openai-chat/mock-model\", \"openai-chat/other-model\"]\n",
    );
    // The catalog's cache is filled the way a person refreshes it.
    let mut backend = env.spawn();
    backend
        .initialize(&["model.refresh", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    let refresh = ModelRefreshParams {
        provider: "openai-chat".into(),
    };
    backend
        .call::<methods::ModelRefresh>(&refresh)
        .await
        .unwrap()
        .unwrap();
    shutdown_clean(&mut backend).await;

    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let (current, values) = model_option(session.config_options.as_deref().unwrap());
    assert_eq!(current, "openai-chat/mock-model");
    assert!(
        values.contains(&"openai-chat/other-model".to_owned()),
        "{values:?}"
    );
    let switch = SetSessionConfigOptionRequest::new(
        session.session_id.clone(),
        "model",
        "openai-chat/other-model",
    );
    let switched = acp.call("session/set_config_option", switch).await.unwrap();
    let switched: SetSessionConfigOptionResponse = serde_json::from_value(switched).unwrap();
    assert_eq!(
        model_option(&switched.config_options).0,
        "openai-chat/other-model"
    );
    let result = acp
        .call("session/prompt", prompt(&session, "Who are you?"))
        .await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(acp.agent_text(), "From the other model.");
    let asked = mock.requests();
    assert_eq!(asked.last().unwrap().body["model"], "other-model");
    assert!(acp.finish().await.success());
}
