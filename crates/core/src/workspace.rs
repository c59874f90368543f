//! What every reader of a child's configuration starts from: the startup request (the
//! working directory and environment the client chose), `MC_HOME` and the project
//! settings file it points to, and the flag that stops startup. Startup, the MCP
//! review and the explanations of a failure all begin here, so it sits below them.

use std::path::{Path, PathBuf};

use magi_config::Env;
use magi_store::{Home, resolve_home_path};
use tokio_util::sync::CancellationToken;

/// What startup needs from the process: its working directory and environment.
#[derive(Debug, Clone)]
pub struct StartupRequest {
    /// The working directory the client chose.
    pub cwd: PathBuf,
    /// The environment snapshot.
    pub env: Env,
}

/// A shared flag that asks startup to stop at its next step (or at once, while it
/// waits for MCP servers).
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(CancellationToken);

impl CancelFlag {
    /// Asks the worker to stop.
    pub fn cancel(&self) {
        self.0.cancel();
    }

    /// Whether cancellation was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves when cancellation is asked for.
    pub async fn cancelled(&self) {
        self.0.cancelled().await
    }
}

/// Resolves and prepares `MC_HOME` and canonicalizes the working directory, as every
/// reader of the configuration does first. The error says which step failed.
pub(crate) fn locate(request: &StartupRequest) -> Result<(Home, PathBuf), String> {
    let home_path = home_path(&request.env)?;
    let home = Home::prepare(&home_path).map_err(|e| format!("cannot prepare MC_HOME: {e:?}"))?;
    let cwd = request
        .cwd
        .canonicalize()
        .map_err(|e| format!("cannot resolve the working directory: {e}"))?;
    Ok((home, cwd))
}

/// Where `MC_HOME` is in `env` (`MC_HOME`, else the default under `HOME`), resolved
/// exactly as the backend resolves it, without touching the disk: for front ends that
/// keep their own files there, such as Mission Control's prompt history.
pub fn home_path(env: &Env) -> Result<PathBuf, String> {
    resolve_home_path(env.get_os("MC_HOME"), env.get_os("HOME"))
        .map_err(|e| format!("cannot find MC_HOME: {e:?}"))
}

/// The project settings file of a canonical working directory.
pub(crate) fn project_settings_path(cwd: &Path) -> PathBuf {
    cwd.join(".magi").join("settings.toml")
}

/// A request for `dir` with `MC_HOME` in `dir/home` and the variables `pairs`, for tests.
#[cfg(test)]
pub(crate) fn test_request(dir: &Path, pairs: &[(&str, &str)]) -> StartupRequest {
    let mut vars: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    vars.push(("MC_HOME".into(), dir.join("home").display().to_string()));
    StartupRequest {
        cwd: dir.to_path_buf(),
        env: Env::from_pairs(vars),
    }
}
