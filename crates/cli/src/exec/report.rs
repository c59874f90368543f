//! What `exec` says on stderr about a run that went wrong: every failure is worded in
//! [`failure`], every `diagnostic` event in [`diagnostic`], so their wording can grow in
//! this one file. The sentences for a bare error code come from `crate::explain`, which
//! Mission Control and `doctor` share.

use magi_protocol::ErrorCode;
use magi_protocol::messages::Diagnostic;

/// Why `exec` could not give a complete reply.
pub(super) enum Failure<'a> {
    /// Before or around the run: starting the backend, initializing it, attaching the
    /// session, starting the turn, or the backend going away.
    Setup(&'a anyhow::Error),
    /// The run ended `failed`, with the backend's error code when it gave one.
    Run(Option<ErrorCode>),
    /// The run completed, but the model stopped its reply at its output limit.
    Cut,
    /// The run completed, but the provider refused the request.
    Refused,
}

/// Says on stderr why `exec` failed.
pub(super) fn failure(failure: &Failure<'_>) {
    match failure {
        Failure::Setup(error) => eprintln!("magi-code exec: {error:#}"),
        Failure::Run(Some(code)) => match crate::explain::run_failure(*code) {
            Some(why) => eprintln!("magi-code exec: the run failed: {why} [{}]", code.as_str()),
            None => eprintln!("magi-code exec: the run failed [{}]", code.as_str()),
        },
        Failure::Run(None) => eprintln!("magi-code exec: the run failed"),
        Failure::Cut => eprintln!(
            "magi-code exec: the reply is incomplete: the model stopped at its output token \
             limit"
        ),
        Failure::Refused => eprintln!(
            "magi-code exec: the provider refused the request: the reply is its refusal, \
             not an answer"
        ),
    }
}

/// Shows a run's `diagnostic` event on stderr as it arrives.
pub(super) fn diagnostic(diagnostic: &Diagnostic) {
    eprintln!("magi-code: {}: {}", diagnostic.code, diagnostic.summary);
}
