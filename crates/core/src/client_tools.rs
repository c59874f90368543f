//! Client-provided tools (`client.tools`): tools the client registered at
//! `initialize` and executes itself, called through the same supervision as built-ins.
//!
//! A call the policy lets run is claimed like any other, then announced with
//! `client.tool.call`; the run waits for the one `client.tool.result` of that call,
//! its cancellation or the tool's timeout, whichever comes first. A withdrawn call is
//! announced with `client.tool.cancel`; any later result for it is stale.

use magi_protocol::messages::{ClientToolDefinition, ClientToolOutcome};

/// A registered client tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientTool {
    /// Its name, unique among client and built-in tools.
    pub name: String,
    /// What the model is told it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub parameters: serde_json::Value,
    /// Milliseconds the client has to answer a call.
    pub timeout_ms: u64,
}

impl ClientTool {
    /// The tool a checked definition registers.
    pub fn from_definition(definition: &ClientToolDefinition) -> ClientTool {
        ClientTool {
            name: definition.name.clone(),
            description: definition.description.clone(),
            parameters: definition.parameters.clone(),
            timeout_ms: definition
                .timeout_ms
                .unwrap_or(magi_protocol::limits::CLIENT_TOOL_TIMEOUT_MS),
        }
    }
}

/// What the client answered for a call.
pub type ClientAnswer = (ClientToolOutcome, String);

/// The calls of one run waiting for the client.
pub type ClientToolGate = crate::answer_gate::AnswerGate<ClientAnswer>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_answer_per_open_call() {
        let gate = ClientToolGate::default();
        let mut waiting = gate.open("c1");
        assert!(!gate.answer("c2", (ClientToolOutcome::Completed, String::new())));
        assert!(gate.answer("c1", (ClientToolOutcome::Failed, "no".into())));
        assert!(!gate.answer("c1", (ClientToolOutcome::Completed, String::new())));
        assert_eq!(
            waiting.try_recv().unwrap(),
            (ClientToolOutcome::Failed, "no".into())
        );
        let _closed = gate.open("c3");
        gate.close("c3");
        assert!(!gate.answer("c3", (ClientToolOutcome::Completed, String::new())));
    }
}
