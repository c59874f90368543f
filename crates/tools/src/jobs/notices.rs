//! The ends of jobs told to the conversation that started them.

use std::path::Path;

use magi_protocol::limits::PROCESS_CAPTURE_BYTES;

use super::jobs;
use crate::diagnostics::process_diagnostics;
use crate::facts::Facts;
use crate::process::{capture_notes, read_bounded};

/// A job's end, told to the conversation that started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobNotice {
    /// The job.
    pub job_id: String,
    /// How it ended (`exit 0`, `killed`, `timed out after 60 s`, …).
    pub state: String,
    /// What the model is told: the state and the `process_diagnostics` projection of
    /// its whole output, with the capture's path when the projection is a summary.
    pub text: String,
    /// The facts of the command, completed with its end.
    pub facts: Facts,
}

/// Takes the notices of jobs that ended and whose captures live under
/// `conversation_dir`; each is given once.
pub fn take_notices(conversation_dir: &Path) -> Vec<JobNotice> {
    let mut jobs = jobs();
    let mut notices = Vec::new();
    for (id, job) in jobs.all.iter_mut() {
        let owned = job
            .assets_dir
            .as_deref()
            .is_some_and(|dir| dir.starts_with(conversation_dir));
        let Some(ended) = job.ended.as_ref().filter(|_| owned && !job.noticed) else {
            continue;
        };
        job.noticed = true;
        let output = read_bounded(&job.started.paths[2], PROCESS_CAPTURE_BYTES as u64);
        let projection = process_diagnostics(&output);
        let mut text = format!("[background job {id} ended: {}]", ended.state);
        if !output.is_empty() {
            text.push('\n');
            text.push_str(projection.text.trim_end_matches('\n'));
        }
        for note in capture_notes(&ended.kept, ended.drained) {
            text.push('\n');
            text.push_str(&note);
        }
        if ended.state != "exit 0"
            && let Some(applied) = &ended.facts.sandbox
            && let Some(hint) = crate::sandbox::denial_hint(
                applied,
                &read_bounded(&job.started.paths[1], PROCESS_CAPTURE_BYTES as u64),
            )
        {
            text.push('\n');
            text.push_str(&hint);
        }
        if !projection.inline {
            text.push_str(&format!(
                "\n[full output: {}; use read or grep]",
                job.started.paths[2].display()
            ));
        }
        notices.push(JobNotice {
            job_id: id.clone(),
            state: ended.state.clone(),
            text,
            facts: Facts::Command(Box::new(ended.facts.clone())),
        });
    }
    notices
}
