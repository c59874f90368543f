//! The launch check: the backend serves only on inherited Unix pipes.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;

/// Why the backend refuses to serve on its standard streams.
#[derive(Debug)]
pub enum LaunchError {
    /// Standard input or output is a terminal, a regular file, a socket or anything else
    /// that is not a pipe.
    NotAPipe(&'static str),
    /// The stream could not be inspected.
    Io(&'static str, io::Error),
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaunchError::NotAPipe(stream) => write!(f, "{stream} must be a pipe"),
            LaunchError::Io(stream, e) => write!(f, "cannot inspect {stream}: {e}"),
        }
    }
}

impl std::error::Error for LaunchError {}

/// Checks that standard input and output are both pipes (FIFOs), with no side effect.
pub fn check_stdio_pipes() -> Result<(), LaunchError> {
    check_pipe("standard input", io::stdin().as_fd())?;
    check_pipe("standard output", io::stdout().as_fd())
}

fn check_pipe(stream: &'static str, fd: std::os::fd::BorrowedFd<'_>) -> Result<(), LaunchError> {
    let owned = fd
        .try_clone_to_owned()
        .map_err(|e| LaunchError::Io(stream, e))?;
    let metadata = File::from(owned)
        .metadata()
        .map_err(|e| LaunchError::Io(stream, e))?;
    if metadata.file_type().is_fifo() {
        Ok(())
    } else {
        Err(LaunchError::NotAPipe(stream))
    }
}
