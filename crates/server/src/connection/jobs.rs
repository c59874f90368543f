//! `job.output` and `job.stop` (`jobs.control`): a client reads a background command's
//! newest output and stops it. Answered at once on the protocol loop: the registry is
//! only tried (`busy` while a job is ending), and a stop runs on a thread of its own.

use magi_core::agent_for;
use magi_protocol::ErrorCode;
use magi_protocol::limits::{JOB_OUTPUT_BYTES, JOB_OUTPUT_LINES};
use magi_protocol::messages::{JobOutputResult, JobParams, JobStopResult, ResultBody};
use magi_protocol::names::{ExtensionMethod, is_valid_name};
use magi_protocol::text::{redact_values, sanitize};
use magi_tools::JobLookup;
use serde_json::value::RawValue;

use super::*;

impl Connection {
    /// Answers `job.output` and `job.stop`; `None` for any other method.
    pub(super) fn job_control(
        &self,
        method: &str,
        params: &RawValue,
    ) -> Option<Result<ResultBody, ErrorCode>> {
        if method == ExtensionMethod::JobOutput.as_str() {
            Some(self.job_output(params))
        } else if method == ExtensionMethod::JobStop.as_str() {
            Some(self.job_stop(params))
        } else {
            None
        }
    }

    fn job_output(&self, params: &RawValue) -> Result<ResultBody, ErrorCode> {
        let job_id = self.job_params(params)?;
        let tail = found(magi_tools::job_tail(
            &job_id,
            JOB_OUTPUT_LINES,
            JOB_OUTPUT_BYTES,
        ))?;
        // Made safe as a card's output is: controls stripped, secret-like text and the
        // backend's own credentials redacted. Redaction only shortens or keeps the text
        // the same length bar the marker, so the bound is checked again.
        let safe = redact_values(&sanitize(&tail.text), &self.credentials());
        let output = if safe.len() > JOB_OUTPUT_BYTES {
            let mut start = safe.len() - JOB_OUTPUT_BYTES;
            while !safe.is_char_boundary(start) {
                start += 1;
            }
            safe[start..].to_owned()
        } else {
            safe
        };
        Ok(ResultBody::JobOutput(JobOutputResult {
            job_id,
            state: tail.state,
            output,
            first_line: tail.first_line,
            total_lines: tail.total_lines,
        }))
    }

    fn job_stop(&self, params: &RawValue) -> Result<ResultBody, ErrorCode> {
        let job_id = self.job_params(params)?;
        let state = found(magi_tools::stop_job(&job_id))?;
        Ok(ResultBody::JobStop(JobStopResult { job_id, state }))
    }

    /// The job a request names, after the protocol's checks in order: initialization,
    /// negotiation, then params (a job ID of the name grammar).
    fn job_params(&self, params: &RawValue) -> Result<String, ErrorCode> {
        self.ready_for(self.has(Extension::JobsControl))?;
        let params: JobParams = parse_params(params)?;
        if !is_valid_name(&params.job_id) {
            return Err(ErrorCode::InvalidParams);
        }
        Ok(params.job_id)
    }

    /// The values of every credential this backend holds: the selected agent's, else
    /// those it holds whatever the selection.
    fn credentials(&self) -> Vec<String> {
        let Init::Ready(runtime) = &self.init else {
            return Vec::new();
        };
        self.selection
            .as_ref()
            .and_then(|selection| agent_for(runtime, selection).ok())
            .map_or_else(|| magi_core::credential_values(runtime), |a| a.secrets)
    }
}

/// A look-up's answer: an unknown job is `invalid_params` (no job of this backend has
/// that ID), a registry held by an ending job `busy`.
fn found<T>(lookup: JobLookup<T>) -> Result<T, ErrorCode> {
    match lookup {
        JobLookup::Found(found) => Ok(found),
        JobLookup::Unknown => Err(ErrorCode::InvalidParams),
        JobLookup::Busy => Err(ErrorCode::Busy),
    }
}
