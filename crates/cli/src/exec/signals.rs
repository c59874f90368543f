//! The signals `exec` answers — SIGINT (Ctrl-C at the terminal), SIGTERM and SIGHUP —
//! and the last resort of killing the backend's process group.
//!
//! The backend runs in a process group of its own, so a terminal's Ctrl-C reaches
//! `exec` alone; `exec` then stops the run through the protocol (`turn.cancel`, then
//! `shutdown`), which keeps the partial reply and lets the backend stop what it started.

use magi_client::Backend;
use nix::sys::signal::{SigSet, SigmaskHow, Signal as NixSignal, killpg, pthread_sigmask};
use nix::unistd::Pid;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The three signals `exec` answers.
const ANSWERED: [NixSignal; 3] = [NixSignal::SIGINT, NixSignal::SIGTERM, NixSignal::SIGHUP];

/// The three signals held back (blocked) from the moment `exec` knows its prompt until
/// its handlers are installed: one that arrives in between waits and is then answered
/// like any other, rather than killing `exec` by default. The Tokio runtime the
/// handlers need is built in that gap.
pub(super) struct Held(SigSet);

impl Held {
    /// Blocks the three signals on this thread (and on any thread it starts).
    pub(super) fn now() -> std::io::Result<Held> {
        let mut set = SigSet::empty();
        for signal in ANSWERED {
            set.add(signal);
        }
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None).map_err(std::io::Error::from)?;
        Ok(Held(set))
    }
}

impl Drop for Held {
    /// Lets the signals through again: a pending one is delivered now, to the handlers
    /// if they were installed, else with its default effect.
    fn drop(&mut self) {
        let _ = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&self.0), None);
    }
}

/// The handlers `exec` installs for its whole life, replacing the default of dying at
/// once.
pub(super) struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    /// Installs the handlers, then lets the held signals through (a pending one is
    /// answered by [`Signals::next`]); needs a Tokio runtime with I/O enabled. The
    /// backend must be started only afterwards: a child inherits the blocked set.
    pub(super) fn install(held: Held) -> std::io::Result<Signals> {
        let signals = Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        };
        drop(held);
        Ok(signals)
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
