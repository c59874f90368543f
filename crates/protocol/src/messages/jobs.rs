//! The `jobs.control` extension: a client reads a background command's newest output
//! (`job.output`) and stops it (`job.stop`), as the model does with `bash_log` and
//! `bash_kill` (docs/protocol/extensions.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `job.output` and `job.stop`: the job, by the ID its `async_bash` (or
/// moved `bash`) card and result gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobParams {
    /// `job-<n>`.
    pub job_id: String,
}

/// The result of `job.output`: the job's state and the newest lines of its output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobOutputResult {
    /// The job.
    pub job_id: String,
    /// `running`, `stopping`, `exit <code>`, `ended by a signal`, `timed out`, `killed`
    /// or `ended; status unknown`.
    pub state: String,
    /// Its newest output lines (stdout and stderr as they interleaved), joined by `\n`:
    /// at most [`crate::limits::JOB_OUTPUT_LINES`] lines and
    /// [`crate::limits::JOB_OUTPUT_BYTES`] bytes, control characters stripped, secrets
    /// redacted.
    pub output: String,
    /// The 0-based number of the first line of `output` among all its lines.
    pub first_line: u64,
    /// How many lines the job has written so far (those its capture kept).
    pub total_lines: u64,
}

/// The result of `job.stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobStopResult {
    /// The job.
    pub job_id: String,
    /// `stopping` when this request stops it (its group gets `SIGTERM`, then `SIGKILL`
    /// after the grace period; `job.output` then says `killed`), else the state it had
    /// already ended in.
    pub state: String,
}

/// The `extensions["jobs.control"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobsControlDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// Most lines a `job.output` result carries.
    pub output_lines: u64,
    /// Most bytes of a `job.output` result's `output`.
    pub output_bytes: u64,
}

impl JobsControlDescriptor {
    /// The descriptor of schema 1.
    pub fn schema_1() -> JobsControlDescriptor {
        JobsControlDescriptor {
            schema_version: 1,
            output_lines: crate::limits::JOB_OUTPUT_LINES as u64,
            output_bytes: crate::limits::JOB_OUTPUT_BYTES as u64,
        }
    }
}
