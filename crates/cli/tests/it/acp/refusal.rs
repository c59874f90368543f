//! A provider's refusal over ACP: the prompt answers the stop reason `refusal`, and the
//! refusal's words reach the editor as the agent's message, once.

use agent_client_protocol_schema::v1::StopReason;
use magi_testkit::{MockServer, Reply};

use super::{initialize, new_session, prompt, stop};
use crate::common::acp::Acp;
use crate::common::*;

#[tokio::test]
async fn acp_a_refusal_answers_the_prompt_with_stop_reason_refusal_in_every_format() {
    for wire in WIRES {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().refusal(["I can't help", " with that."]));
        let env = env_for_wire(wire, &mock);
        let mut acp = Acp::spawn(&env);
        initialize(&mut acp).await;
        let session = new_session(&mut acp, &env.cwd()).await;
        let result = acp
            .call("session/prompt", prompt(&session, "Do the forbidden thing"))
            .await;
        assert_eq!(stop(result), StopReason::Refusal, "{wire:?}");
        assert_eq!(acp.agent_text(), "I can't help with that.", "{wire:?}");
        assert!(acp.finish().await.success());
    }
}
