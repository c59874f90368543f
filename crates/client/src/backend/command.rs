//! How to start a backend child, and starting it with its output read.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use tokio::process::Command;
use tokio::sync::mpsc;

use super::ending::{StderrTail, read_stderr};
use super::reader::read_output;
use super::{Backend, Shared};
use crate::ClientError;

/// Frames the reader holds for the application before it stops reading.
const INCOMING_CAPACITY: usize = 1024;

/// How to start a backend: `PROGRAM serve --stdio` with the given environment and
/// working directory.
#[derive(Debug, Clone)]
pub struct BackendCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env_clear: bool,
    envs: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    own_process_group: bool,
}

impl BackendCommand {
    /// `program serve --stdio`, inheriting the environment and working directory.
    pub fn new(program: impl Into<PathBuf>) -> BackendCommand {
        BackendCommand {
            program: program.into(),
            args: vec!["serve".into(), "--stdio".into()],
            env_clear: false,
            envs: Vec::new(),
            cwd: None,
            own_process_group: false,
        }
    }

    /// Starts the child with an empty environment (plus what [`Self::env`] adds).
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// Sets one environment variable.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Starts the child as the leader of a process group of its own, so the signals a
    /// terminal sends its foreground group (Ctrl-C's SIGINT) reach the front end only,
    /// which then stops the child through the protocol; the group's ID is the child's
    /// process ID.
    pub fn own_process_group(mut self) -> Self {
        self.own_process_group = true;
        self
    }

    /// Spawns the backend and starts reading its output, and its stderr into a bounded
    /// tail (see [`Backend::end_within`]).
    pub fn spawn(&self) -> Result<Backend, ClientError> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if self.env_clear {
            command.env_clear();
        }
        command.envs(self.envs.iter().map(|(k, v)| (k, v)));
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        if self.own_process_group {
            command.process_group(0);
        }
        let mut child = command.spawn().map_err(ClientError::Spawn)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ClientError::Spawn(std::io::Error::other("stdio not piped")));
        };
        let tail = Arc::new(StderrTail::default());
        let (ended, stderr_ended) = tokio::sync::watch::channel(false);
        tokio::spawn(read_stderr(stderr, Arc::clone(&tail), ended));
        let shared = Arc::new(Shared::default());
        let (incoming_tx, incoming) = mpsc::channel(INCOMING_CAPACITY);
        tokio::spawn(read_output(stdout, Arc::clone(&shared), incoming_tx));
        Ok(Backend {
            child,
            stdin: Some(stdin),
            shared,
            incoming,
            next_id: 0,
            stderr: tail,
            stderr_ended,
        })
    }
}
