//! The spawn server started before its policy is known: it starts beside the kernel
//! probe the policy depends on, waits unconfined and serving nothing, and is sent the
//! policy of the first command that needs a new server (see [`super::server`]).

use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::codec::{self, Request};
use super::{Policy, Server};

/// A server started before its policy was known ([`start_early`]), waiting unconfined,
/// serving nothing, for the policy of the first command that needs a new server.
pub(super) struct Early {
    socket: OwnedFd,
    child: Child,
}

impl Early {
    /// Sends the server its policy (none: unconfined) and waits for it to be ready.
    pub(super) fn confine(self, policy: Option<&Policy>) -> Result<Arc<Server>, String> {
        let Early { socket, mut child } = self;
        let arguments = policy.map(Policy::arguments).unwrap_or_default();
        if let Err(e) = codec::send(socket.as_fd(), &Request::Confine(arguments).encode(), &[]) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("cannot send the spawn server its policy: {e}"));
        }
        Server::greeted(socket, child)
    }

    /// Ends a server nobody will use.
    fn discard(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The early server, while no command has taken it.
static EARLY: Mutex<Option<Early>> = Mutex::new(None);

fn early() -> MutexGuard<'static, Option<Early>> {
    EARLY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The early server, for the first command that needs a new server; none when none
/// waits (another command took it, or none was started).
pub(super) fn take() -> Option<Early> {
    early().take()
}

/// Starts a spawn server whose policy is sent later, with `command`
/// (`launcher::early_server_command`), so that its start-up overlaps the kernel probe
/// the policy depends on instead of following it. The first command that needs a new
/// server takes it ([`super::server_for`]); none is started when one waits already or `command`
/// is none.
pub(crate) fn start_early(command: Option<Command>) {
    let Some(command) = command else {
        return;
    };
    let mut early = early();
    if early.is_none()
        && let Ok((socket, child)) = Server::launch(command)
    {
        *early = Some(Early { socket, child });
    }
}

/// Ends the early server, if no command took it, once the first turn's server is
/// settled: it served its policy already, or none can serve it.
pub(crate) fn discard_early() {
    let taken = early().take();
    if let Some(early) = taken {
        early.discard();
    }
}
