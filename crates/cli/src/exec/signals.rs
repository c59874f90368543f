//! The signals `exec` answers — SIGINT (Ctrl-C at the terminal), SIGTERM and SIGHUP —
//! and the last resort of killing the backend's process group.
//!
//! The backend runs in a process group of its own, so a terminal's Ctrl-C reaches
//! `exec` alone; `exec` then stops the run through the protocol (`turn.cancel`, then
//! `shutdown`), which keeps the partial reply and lets the backend stop what it started.

use magi_client::Backend;
use nix::sys::signal::{Signal as NixSignal, killpg};
use nix::unistd::Pid;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The handlers `exec` installs for its whole life, replacing the default of dying at
/// once.
pub(super) struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Installs the handlers; needs a Tokio runtime with I/O enabled.
    pub(super) fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next of the three signals.
    pub(super) async fn next(&mut self) {
        // A stream that ended (it never does while the runtime lives) is left out
        // rather than read as a signal.
        tokio::select! {
            Some(()) = self.interrupt.recv() => {}
            Some(()) = self.terminate.recv() => {}
            Some(()) = self.hangup.recv() => {}
            else => std::future::pending().await,
        }
    }
}

/// Kills the backend's whole process group with SIGKILL and reaps the child: what a
/// second Ctrl-C, or a backend that does not stop in time, gets.
pub(super) async fn kill_group(backend: &mut Backend) {
    // The backend leads its own group (`own_process_group`), so its process ID is the
    // group's. The child is reaped only afterwards, so the ID cannot have been reused.
    if let Some(pid) = backend.pid().and_then(|pid| i32::try_from(pid).ok()) {
        let _ = killpg(Pid::from_raw(pid), NixSignal::SIGKILL);
    }
    backend.kill().await;
}
