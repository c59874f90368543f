//! The handle on a running command: a child of this process, or a command a spawn
//! server started, whose end its server reports and whose group only its server
//! signals.

use std::io;
use std::os::fd::AsFd;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

use magi_protocol::limits::SPAWN_SERVER_WAIT_MS;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::Server;
use super::codec::{self, Request};

/// A running command: a child of this process (started directly or through a launcher
/// of its own), or of a spawn server.
pub(crate) enum Proc {
    Direct(Child),
    Served(Served),
}

impl Proc {
    /// Its status if it ended (and was reaped), without waiting.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            Proc::Direct(child) => child.try_wait(),
            Proc::Served(served) => Ok(served.server.lock().exits.get(&served.id).copied()),
        }
    }

    /// Waits for it to end. Called after it was sent `SIGKILL`; a served command's wait
    /// is bounded all the same.
    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Proc::Direct(child) = self {
            return child.wait();
        }
        self.wait_timeout(Duration::from_millis(SPAWN_SERVER_WAIT_MS))?
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the spawn server did not report the command's end",
                )
            })
    }

    /// Its status if it ends (and is reaped) within `within`. A served command's end is
    /// seen the moment its server reports it, a direct child's the moment its pidfd
    /// says it ended.
    pub(crate) fn wait_timeout(&mut self, within: Duration) -> io::Result<Option<ExitStatus>> {
        let served = match self {
            Proc::Direct(child) => return crate::process::Reap::wait_timeout(child, within),
            Proc::Served(served) => served,
        };
        let id = served.id;
        let (status, state) = served
            .server
            .wait_for(id, Instant::now() + within, |state| {
                state.exits.get(&id).copied()
            });
        drop(state);
        Ok(status)
    }

    /// Sends `signal` to its whole process group. A served command's goes through its
    /// server, which knows whether the group is still the command's; once the server
    /// reported its end there is nothing to send: the server killed what the leader
    /// left in its group before reaping it, and the group is gone.
    pub(crate) fn signal_group(&self, signal: Signal) {
        match self {
            Proc::Direct(child) => {
                let group = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
                let _ = killpg(group, signal);
            }
            Proc::Served(served) if served.server.lock().exits.contains_key(&served.id) => {}
            Proc::Served(served) => {
                let request = Request::Kill {
                    id: served.id,
                    signal: signal as i32,
                };
                // A server that is gone killed nothing: its loss killed every group.
                let _ = codec::send(served.server.socket.as_fd(), &request.encode(), &[]);
            }
        }
    }
}

/// A command a spawn server started.
pub(crate) struct Served {
    pub(super) server: Arc<Server>,
    pub(super) id: u64,
}

impl Drop for Served {
    fn drop(&mut self) {
        let mut state = self.server.lock();
        state.exits.remove(&self.id);
    }
}
