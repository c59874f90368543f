//! What the front ends tell a person when something fails: what happened, where, and
//! what to do. The backend answers bare codes; the explanation comes from the same
//! configuration loaded in process (`magi_core::explain_*`), the shared prompt rule,
//! and the run's `diagnostic` events.

use std::process::ExitCode;

use anyhow::anyhow;
use magi_core::StartupRequest;
use magi_protocol::messages::{DIAGNOSTIC_REPLY_TRUNCATED, Event, RunOutcome};
use magi_protocol::text::PromptProblem;
use magi_protocol::{ErrorCode, StartupError};

/// Exit status of a run that completed with a reply cut at the model's output limit.
pub const EXIT_REPLY_CUT: u8 = 3;
/// Exit status of a cancelled run.
pub const EXIT_CANCELLED: u8 = 130;

/// The startup request a backend started from here makes: this directory, this
/// environment.
fn here() -> StartupRequest {
    StartupRequest {
        cwd: std::path::PathBuf::from("."),
        env: magi_config::Env::from_process(),
    }
}

/// An `initialize` refusal, said in full: the configuration's own account of the code
/// when it is a startup code.
pub fn initialize_failed(code: ErrorCode, client_tools: &[String]) -> anyhow::Error {
    let startup = [
        StartupError::ConfigurationInvalid,
        StartupError::ProviderUnavailable,
        StartupError::ProfileInvalid,
        StartupError::McpUnavailable,
        StartupError::StartupCancelled,
        StartupError::StartupFailed,
    ]
    .into_iter()
    .find(|startup| startup.code() == code);
    match startup {
        Some(startup) => anyhow!(
            "{} [{}]",
            magi_core::explain_startup(&here(), client_tools, startup),
            code.as_str()
        ),
        None => anyhow!("the backend refused to initialize [{}]", code.as_str()),
    }
}

/// A `turn.start` refusal, said in full.
pub fn turn_refused(code: ErrorCode, prompt: &str) -> String {
    let said = match code {
        ErrorCode::InvalidParams => PromptProblem::of(prompt).map_or_else(
            || "the backend refused the turn's parameters".to_owned(),
            |problem| problem.to_string(),
        ),
        // The credential was there at startup; the configuration says what is missing
        // now, or the credential went and came back.
        ErrorCode::ProviderUnavailable => magi_core::explain_configuration(&here(), &[])
            .unwrap_or_else(|| {
                "the provider's credential was missing when the turn started; check it and \
                 try again"
                    .to_owned()
            }),
        ErrorCode::Busy => "another run or session operation is in progress".to_owned(),
        _ => "the backend refused the turn".to_owned(),
    };
    format!("{said} [{}]", code.as_str())
}

/// What a run's end means when no diagnostic said it.
fn run_failure(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::ContentLimit => {
            "the reply passed the run's bounds (8 MiB of text, 512 segments or 4,096 activities)"
        }
        ErrorCode::OutputUnavailable => "the backend could not deliver the run's events in time",
        ErrorCode::PersistenceFailed => {
            "the session log could not be written: check the free space and permissions of \
             MC_HOME"
        }
        ErrorCode::StaleSelection => {
            "the session's saved model selection is no longer available: choose another"
        }
        _ => "the run failed",
    }
}

/// Follows a run's events for what goes on stderr whatever the output mode: every
/// diagnostic, why a failed run failed when no diagnostic said it, and whether the
/// reply was cut.
#[derive(Debug, Default)]
pub struct RunReport {
    /// A diagnostic said the reply was cut at the model's output limit.
    pub cut: bool,
    /// Some diagnostic was shown.
    told: bool,
}

impl RunReport {
    /// Takes one event of the run, writing to stderr what a person must know of it.
    pub fn observe(&mut self, event: &Event) {
        match event {
            Event::Diagnostic(diagnostic) => {
                self.told = true;
                self.cut |= diagnostic.code == DIAGNOSTIC_REPLY_TRUNCATED;
                eprintln!("magi-code: {}: {}", diagnostic.code, diagnostic.summary);
            }
            Event::RunFinished(finished) => match (finished.outcome, finished.error_code) {
                (RunOutcome::Failed, Some(code)) if self.told => {
                    eprintln!("magi-code: the run failed [{}]", code.as_str());
                }
                (RunOutcome::Failed, Some(code)) => {
                    eprintln!("magi-code: {} [{}]", run_failure(code), code.as_str());
                }
                (RunOutcome::Failed, None) => eprintln!("magi-code: the run failed"),
                (RunOutcome::Completed, _) if self.cut => eprintln!(
                    "magi-code: the reply is incomplete: the model stopped at its output \
                     token limit"
                ),
                _ => {}
            },
            _ => {}
        }
    }

    /// The exit status of a run that ended with `outcome`: 0 completed, 3 completed
    /// with a cut reply, 1 failed, 130 cancelled.
    pub fn exit_code(&self, outcome: RunOutcome) -> ExitCode {
        match outcome {
            RunOutcome::Completed if self.cut => ExitCode::from(EXIT_REPLY_CUT),
            RunOutcome::Completed => ExitCode::SUCCESS,
            RunOutcome::Failed => ExitCode::FAILURE,
            RunOutcome::Cancelled => ExitCode::from(EXIT_CANCELLED),
        }
    }
}
