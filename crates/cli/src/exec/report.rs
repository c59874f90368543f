//! What `exec` says on stderr about a run that went wrong: every failure is worded in
//! [`failure`], every `diagnostic` event in [`diagnostic`], so their wording can grow in
//! this one file.

use magi_protocol::ErrorCode;
use magi_protocol::messages::Diagnostic;

/// The `diagnostic` code of a reply the model cut at its output limit: shown like any
/// diagnostic, and a run ending `completed` after it exits 3, not 0. It is the code the
/// backend's detection of a cut reply gives (issue 16, part 1); this name is to become
/// the protocol crate's once that detection lands.
pub(super) const REPLY_TRUNCATED: &str = "reply_truncated";

/// Why `exec` could not give a complete reply.
pub(super) enum Failure<'a> {
    /// Before or around the run: starting the backend, initializing it, attaching the
    /// session, starting the turn, or the backend going away.
    Setup(&'a anyhow::Error),
    /// The run ended `failed`, with the backend's error code when it gave one.
    Run(Option<ErrorCode>),
}

/// Says on stderr why `exec` failed.
pub(super) fn failure(failure: &Failure<'_>) {
    match failure {
        Failure::Setup(error) => eprintln!("magi-code exec: {error:#}"),
        Failure::Run(Some(code)) => {
            eprintln!("magi-code exec: the run failed: {}", code.as_str());
        }
        Failure::Run(None) => eprintln!("magi-code exec: the run failed"),
    }
}

/// Shows a run's `diagnostic` event on stderr as it arrives.
pub(super) fn diagnostic(diagnostic: &Diagnostic) {
    eprintln!("magi-code: {}: {}", diagnostic.code, diagnostic.summary);
}
