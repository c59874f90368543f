//! A provider's reasoning summary over ACP: streamed live as `agent_thought_chunk`
//! before the reply's message chunks, and never twice (a later `session/load` replays
//! it once, from the history).

use agent_client_protocol_schema::v1::{LoadSessionRequest, SessionUpdate, StopReason};
use magi_testkit::{MockServer, Reply};

use super::{initialize, new_session, prompt, stop};
use crate::common::acp::{Acp, text_of};
use crate::common::*;

fn thoughts(acp: &Acp) -> Vec<String> {
    acp.updates
        .iter()
        .filter_map(|n| match &n.update {
            SessionUpdate::AgentThoughtChunk(chunk) => Some(text_of(&chunk.content)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn acp_a_reasoning_summary_streams_as_thought_chunks_before_the_reply_once() {
    let mock = MockServer::start().await;
    mock.enqueue(
        Reply::stream()
            .reasoning_summary(["Checking ", "the question."])
            .text(["Ans", "wer."]),
    );
    let env = env_for_wire(Wire::Responses, &mock);
    env.write_settings("[providers.openai]\nreasoning_summaries = true\n");
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    let session = new_session(&mut acp, &env.cwd()).await;
    let result = acp.call("session/prompt", prompt(&session, "Think")).await;
    assert_eq!(stop(result), StopReason::EndTurn);
    assert_eq!(thoughts(&acp).concat(), "Checking the question.");
    assert_eq!(acp.agent_text(), "Answer.");
    let first_thought = acp
        .updates
        .iter()
        .position(|n| matches!(n.update, SessionUpdate::AgentThoughtChunk(_)))
        .unwrap();
    let first_message = acp
        .updates
        .iter()
        .position(|n| matches!(n.update, SessionUpdate::AgentMessageChunk(_)))
        .unwrap();
    assert!(first_thought < first_message);

    // Loaded in a fresh connection, the history replays the summary once.
    let session_id = session.session_id.clone();
    assert!(acp.finish().await.success());
    let mut acp = Acp::spawn(&env);
    initialize(&mut acp).await;
    acp.call(
        "session/load",
        LoadSessionRequest::new(session_id, env.cwd()),
    )
    .await
    .unwrap();
    assert_eq!(thoughts(&acp), ["Checking the question."]);
    assert!(acp.finish().await.success());
}
