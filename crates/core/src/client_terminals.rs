//! Client terminals (`client.terminals`): with the extension negotiated and
//! `[acp] client_terminals = true`, a `bash` call that the policy lets run is announced
//! with `client.terminal.run` and the client runs it in a terminal of its own (an
//! editor's); the run waits for the one `client.terminal.result` of that call, its
//! cancellation or the command's timeout and a grace, whichever comes first. A
//! withdrawn call is announced with `client.terminal.cancel`.

use magi_protocol::messages::{ClientTerminalOutcome, ClientTerminalResultParams};

/// What the client answered for a command it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalAnswer {
    /// How it ended.
    pub outcome: ClientTerminalOutcome,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<String>,
    /// The last bytes of its output the terminal kept; for `failed`, why.
    pub output: String,
    /// Whether the terminal dropped earlier output.
    pub truncated: bool,
}

impl TerminalAnswer {
    /// The answer checked params carry.
    pub fn from_params(params: &ClientTerminalResultParams) -> TerminalAnswer {
        TerminalAnswer {
            outcome: params.outcome,
            exit_code: params.exit_code,
            signal: params.signal.clone(),
            output: params.output.clone(),
            truncated: params.truncated,
        }
    }
}

/// The terminal calls of one run waiting for the client.
pub type TerminalGate = crate::answer_gate::AnswerGate<TerminalAnswer>;

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32) -> TerminalAnswer {
        TerminalAnswer {
            outcome: ClientTerminalOutcome::Exited,
            exit_code: Some(code),
            signal: None,
            output: String::new(),
            truncated: false,
        }
    }

    #[test]
    fn one_answer_per_open_call() {
        let gate = TerminalGate::default();
        let mut waiting = gate.open("c1");
        assert!(!gate.answer("c2", exited(0)));
        assert!(gate.answer("c1", exited(3)));
        assert!(!gate.answer("c1", exited(0)));
        assert_eq!(waiting.try_recv().unwrap(), exited(3));
        let _closed = gate.open("c3");
        gate.close("c3");
        assert!(!gate.answer("c3", exited(0)));
    }
}
