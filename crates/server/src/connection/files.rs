//! `client.file.result` (`client.files`): the client's parts of a file's text, or the
//! end of a write, routed to the run's file gate.

use magi_core::client_files::Refusal;
use magi_protocol::ErrorCode;
use magi_protocol::messages::{ClientFileResultParams, ClientFileResultResult, ResultBody};
use magi_protocol::names::is_valid_name;
use serde_json::value::RawValue;

use super::*;

/// The method a client answers reads and writes with.
pub(super) const CLIENT_FILE_RESULT_METHOD: &str = "client.file.result";

impl Connection {
    /// Takes one part for a read or write of the active run. Refused without effect
    /// when `client.files` was not negotiated; a part that breaks the contract is
    /// `invalid_params` (and fails the read or write it answered); an answer no
    /// waiting read or write of the active run takes is `stale_run`.
    pub(super) fn client_file_result(&self, params: &RawValue) -> Result<ResultBody, ErrorCode> {
        self.ready_for(self.has(Extension::ClientFiles))?;
        let params: ClientFileResultParams = parse_params(params)?;
        if !is_valid_name(&params.file_id) {
            return Err(ErrorCode::InvalidParams);
        }
        let run = self
            .active_run(&params.session_id, &params.run_id)?
            .ok_or(ErrorCode::StaleRun)?;
        match run.files.answer(params) {
            Ok(()) => Ok(ResultBody::ClientFileResult(ClientFileResultResult {
                recorded: true,
            })),
            Err(Refusal::Invalid) => Err(ErrorCode::InvalidParams),
            Err(Refusal::Stale) => Err(ErrorCode::StaleRun),
        }
    }
}
