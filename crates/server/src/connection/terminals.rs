//! `client.terminal.result`: the client's answer for a `bash` call it ran in its
//! terminal (`client.terminals`, docs/protocol/client-terminals.md), routed to the
//! active run.

use magi_core::client_terminals::TerminalAnswer;
use magi_protocol::cards::SIGNAL_BYTES;
use magi_protocol::limits::CLIENT_TERMINAL_OUTPUT_BYTES;
use magi_protocol::messages::{ClientTerminalResultParams, ClientToolResultResult, ResultBody};
use magi_protocol::names::is_valid_name;
use magi_protocol::{ErrorCode, Extension};
use serde_json::value::RawValue;

use super::{Connection, parse_params};

/// The method a client answers a terminal call with.
pub(super) const CLIENT_TERMINAL_RESULT_METHOD: &str = "client.terminal.result";

impl Connection {
    /// `client.terminal.result`: the one answer of a waiting terminal call. Refused
    /// without effect when `client.terminals` was not negotiated.
    pub(super) fn client_terminal_result(
        &self,
        params: &RawValue,
    ) -> Result<ResultBody, ErrorCode> {
        self.ready_for(self.has(Extension::ClientTerminals))?;
        let params: ClientTerminalResultParams = parse_params(params)?;
        let signal_ok = params
            .signal
            .as_deref()
            .is_none_or(|s| !s.is_empty() && s.len() <= SIGNAL_BYTES && is_valid_name(s));
        if !is_valid_name(&params.call_id)
            || params.output.len() > CLIENT_TERMINAL_OUTPUT_BYTES
            || !signal_ok
        {
            return Err(ErrorCode::InvalidParams);
        }
        let recorded = self
            .active_run(&params.session_id, &params.run_id)?
            .is_some_and(|run| {
                run.terminals
                    .answer(&params.call_id, TerminalAnswer::from_params(&params))
            });
        if recorded {
            Ok(ResultBody::ClientToolResult(ClientToolResultResult {
                recorded: true,
            }))
        } else {
            // Not a terminal call of the active run that waits for an answer.
            Err(ErrorCode::StaleRun)
        }
    }
}
