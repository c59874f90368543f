//! What the front ends tell a person when something fails: what happened, where, and
//! what to do. The backend answers bare codes; the explanation comes from the same
//! configuration loaded in process (`magi_core::explain_*`), the shared prompt rule,
//! and the run's `diagnostic` events.

use anyhow::anyhow;
use magi_core::StartupRequest;
use magi_protocol::text::PromptProblem;
use magi_protocol::{ErrorCode, StartupError};

/// The startup request a backend started from here makes: this directory, this
/// environment.
fn here() -> StartupRequest {
    StartupRequest {
        cwd: std::path::PathBuf::from("."),
        env: magi_config::Env::from_process(),
    }
}

/// The startup error `code` stands for, when it is one.
fn startup_error(code: ErrorCode) -> Option<StartupError> {
    [
        StartupError::ConfigurationInvalid,
        StartupError::ProviderUnavailable,
        StartupError::ProfileInvalid,
        StartupError::McpUnavailable,
        StartupError::StartupCancelled,
        StartupError::StartupFailed,
    ]
    .into_iter()
    .find(|startup| startup.code() == code)
}

/// An `initialize` refusal, said in full: the configuration's own account of the code
/// when it is a startup code.
pub fn initialize_failed(code: ErrorCode, client_tools: &[String]) -> anyhow::Error {
    match startup_error(code) {
        Some(startup) => anyhow!(
            "{} [{}]",
            magi_core::explain_startup(&here(), client_tools, startup),
            code.as_str()
        ),
        None => anyhow!("the backend refused to initialize [{}]", code.as_str()),
    }
}

/// An `initialize` refusal of a backend `magi-code acp` started in `cwd` with the
/// variables `env` beyond its own (the client's MCP servers): the configuration's
/// account of a startup code, as exec gives it.
pub fn acp_initialize_failed(
    code: ErrorCode,
    cwd: &std::path::Path,
    env: &[(String, String)],
) -> String {
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    vars.extend(env.iter().map(|(k, v)| (k.into(), v.into())));
    let request = StartupRequest {
        cwd: cwd.to_owned(),
        env: magi_config::Env::from_pairs(vars),
    };
    match startup_error(code) {
        Some(startup) => magi_core::explain_startup(&request, &[], startup),
        None => format!("the backend refused to initialize ({})", code.as_str()),
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

/// What a run's end means, for the codes whose cause no diagnostic of the run says.
pub fn run_failure(code: ErrorCode) -> Option<&'static str> {
    let said = match code {
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
        // The run's diagnostics say why (the provider's failure, for one).
        _ => return None,
    };
    Some(said)
}
