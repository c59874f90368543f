//! The spawn server's `main`: `magi-code __launch --serve FD [policy]`, started by the
//! backend with its end of the socket as standard input.
//!
//! It is one thread from start to end, for two reasons: Landlock and seccomp confine
//! the thread that applies them (and what it starts), so confining it before anything
//! else confines every command it will start; and with one thread the order of what it
//! does is the order it reads and reaps, which is what makes kills safe. A command's
//! group is signalled only while its leader is unreaped (a zombie still holds its
//! process ID, so the group cannot be someone else's); when the leader ends, what it
//! left in its group is killed (what the backend does itself after every command it
//! started directly) before the leader is reaped and its status reported, so the
//! backend sends no kill for a command whose end was reported.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use magi_protocol::limits::{PROCESS_TERM_GRACE_MS, SPAWN_REQUEST_BYTES};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;

use super::codec::{self, Event, Request, STREAMS, SpawnRequest};
use crate::process::confine::{self, Policy};

/// The server's option, in place of a policy, that makes it wait, unconfined and
/// serving nothing, for the policy the backend sends (`Request::Confine`).
pub(crate) const AWAIT_POLICY_OPTION: &str = "--await-policy";

/// The commands started and not yet reaped: process ID (the group's too) to request ID.
type Live = HashMap<i32, u64>;

/// Runs the server; `options` are those after `--serve`: the lifeline's descriptor
/// (closed here, so no command inherits it; the socket says when the backend is gone),
/// then the sandbox policy, if any.
pub(crate) fn main(options: &[OsString]) -> ExitCode {
    let Some((lifeline, policy)) = options.split_first() else {
        return ExitCode::FAILURE;
    };
    if let Some(descriptor) = lifeline.to_str().and_then(|text| text.parse::<i32>().ok()) {
        let _ = nix::unistd::close(descriptor);
    }
    // A copy closed on exec; standard input itself is replaced in every command.
    let Ok(socket) = io::stdin().as_fd().try_clone_to_owned() else {
        return ExitCode::FAILURE;
    };
    match serve(&socket, policy) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            let _ = codec::send(socket.as_fd(), &Event::Refused(why).encode(), &[]);
            ExitCode::FAILURE
        }
    }
}

/// Confines itself, says so, then serves until the backend is gone.
fn serve(socket: &OwnedFd, policy: &[OsString]) -> Result<(), String> {
    let policy = if policy == [AWAIT_POLICY_OPTION] {
        awaited_policy(socket)?
    } else {
        Policy::parse(policy)?
    };
    if let Some(policy) = policy {
        confine::enforce(&policy)?;
    }
    // SIGCHLD wakes the loop through a socket of its own: no thread, no sleep.
    let (wake, woken) = UnixStream::pair().map_err(|e| format!("cannot make a pipe: {e}"))?;
    wake.set_nonblocking(true)
        .and_then(|()| woken.set_nonblocking(true))
        .map_err(|e| format!("cannot make a pipe: {e}"))?;
    signal_hook::low_level::pipe::register(signal_hook::consts::SIGCHLD, wake)
        .map_err(|e| format!("cannot watch for ended commands: {e}"))?;
    send(socket, &Event::Ready);
    let mut live = Live::new();
    let mut buffer = vec![0; SPAWN_REQUEST_BYTES];
    loop {
        let mut fds = [
            PollFd::new(socket.as_fd(), PollFlags::POLLIN),
            PollFd::new(woken.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => break,
        }
        let request_ready = fds[0].any().unwrap_or(true);
        if fds[1].any().unwrap_or(true) {
            drain(&woken);
            reap(socket, &mut live);
        }
        if request_ready {
            match codec::receive(socket, &mut buffer) {
                Ok(Some((len, fds))) => handle(socket, &buffer[..len], fds, &mut live),
                // The backend is gone (or its socket unusable): nobody can be told of
                // what runs, so nothing may go on running.
                Ok(None) | Err(_) => break,
            }
        }
    }
    end_all(socket, &woken, &mut live);
    Ok(())
}

/// The policy an early server is sent: its first message, which must be that. Nothing
/// is started before it, so every command is confined as the policy says.
fn awaited_policy(socket: &OwnedFd) -> Result<Option<Policy>, String> {
    let mut buffer = vec![0; SPAWN_REQUEST_BYTES];
    match codec::receive(socket, &mut buffer) {
        Ok(Some((len, _))) => match Request::decode(&buffer[..len])? {
            Request::Confine(arguments) => Policy::parse(&arguments),
            request => Err(format!("{request:?} came before the policy")),
        },
        Ok(None) => Err("the backend ended before it sent the policy".to_owned()),
        Err(e) => Err(format!("cannot read the policy: {e}")),
    }
}

/// Sends an event; a backend that cannot hear it is seen gone at the next read.
fn send(socket: &OwnedFd, event: &Event) {
    let _ = codec::send(socket.as_fd(), &event.encode(), &[]);
}

fn handle(socket: &OwnedFd, message: &[u8], fds: Vec<OwnedFd>, live: &mut Live) {
    match Request::decode(message) {
        Ok(Request::Spawn(request)) => {
            let id = request.id;
            let event = match spawn(request, fds) {
                Ok(pid) => {
                    live.insert(pid, id);
                    Event::Spawned { id, pid }
                }
                Err(e) => Event::NotSpawned {
                    id,
                    errno: e.raw_os_error().unwrap_or(0),
                    why: e.to_string(),
                },
            };
            send(socket, &event);
        }
        Ok(Request::Kill { id, signal }) => {
            let leader = live.iter().find(|(_, live_id)| **live_id == id);
            if let (Some((pid, _)), Ok(signal)) = (leader, Signal::try_from(signal)) {
                let _ = killpg(Pid::from_raw(*pid), signal);
            }
        }
        // Confinement is set once, before serving, and cannot be lifted or changed.
        Ok(Request::Confine(_)) => {}
        // The backend and this server are one program: a message neither can read is
        // a bug, and ignoring it beats guessing at it.
        Err(_) => {}
    }
}

/// Starts one command with the descriptors sent beside its request as its stdin,
/// stdout and stderr.
fn spawn(request: SpawnRequest, fds: Vec<OwnedFd>) -> io::Result<i32> {
    let [stdin, stdout, stderr] = <[OwnedFd; STREAMS]>::try_from(fds).map_err(|fds| {
        io::Error::other(format!(
            "the request carried {} descriptors, not {STREAMS}",
            fds.len()
        ))
    })?;
    let mut command = Command::new(&request.program);
    command
        .args(&request.args)
        .env_clear()
        .envs(request.env)
        .current_dir(&request.cwd)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    if request.own_group {
        command.process_group(0);
    }
    let child = command.spawn()?;
    // Dropping the handle neither waits nor kills: the server reaps with `waitid`.
    Ok(i32::try_from(child.id()).unwrap_or(i32::MAX))
}

/// Empties the wake-up socket (its bytes only say "look").
fn drain(mut woken: &UnixStream) {
    let mut bytes = [0u8; 64];
    while matches!(woken.read(&mut bytes), Ok(n) if n > 0) {}
}

/// Reaps every command that ended: its leftovers killed first (the leader, a zombie,
/// still holds the group's ID), then its status sent.
fn reap(socket: &OwnedFd, live: &mut Live) {
    let look = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    loop {
        let pid = match waitid(Id::All, look) {
            Ok(WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _)) => pid,
            Err(nix::errno::Errno::EINTR) => continue,
            // Nothing more has ended (or there is nothing to wait for).
            _ => return,
        };
        if live.contains_key(&pid.as_raw()) {
            let _ = killpg(pid, Signal::SIGKILL);
        }
        let status = match waitpid(pid, None) {
            Ok(WaitStatus::Exited(_, code)) => (code & 0xff) << 8,
            Ok(WaitStatus::Signaled(_, signal, core)) => {
                signal as i32 | if core { 0x80 } else { 0 }
            }
            // Reaped already after all: nothing is left to report.
            _ => continue,
        };
        if let Some(id) = live.remove(&pid.as_raw()) {
            send(socket, &Event::Exited { id, status });
        }
    }
}

/// The backend is gone: every command's group gets `SIGTERM`, then `SIGKILL` once the
/// grace period is over, as the per-command launcher does.
fn end_all(socket: &OwnedFd, woken: &UnixStream, live: &mut Live) {
    for pid in live.keys() {
        let _ = killpg(Pid::from_raw(*pid), Signal::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_millis(PROCESS_TERM_GRACE_MS);
    while !live.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let left = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(woken.as_fd(), PollFlags::POLLIN)];
        if matches!(poll(&mut fds, left), Ok(0)) {
            break;
        }
        drain(woken);
        // Nobody hears the statuses now; reaping tells which groups are still there.
        reap(socket, live);
    }
    kill_all(live);
}

fn kill_all(live: &Live) {
    for pid in live.keys() {
        let _ = killpg(Pid::from_raw(*pid), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};

    /// What an early server makes of `first` as its first message (none: the backend
    /// closed its end without one).
    fn awaited(first: Option<Request>) -> Result<Option<Policy>, String> {
        let (backend, server) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        if let Some(first) = first {
            codec::send(backend.as_fd(), &first.encode(), &[]).unwrap();
        }
        drop(backend);
        awaited_policy(&server)
    }

    #[test]
    fn an_early_server_takes_its_policy_first_and_nothing_else() {
        assert_eq!(awaited(Some(Request::Confine(Vec::new()))), Ok(None));
        let policy = Policy::parse(&["--sandbox".into(), "none".into()]).unwrap();
        assert!(policy.is_some());
        let arguments = policy.as_ref().map(Policy::arguments).unwrap();
        assert_eq!(awaited(Some(Request::Confine(arguments))), Ok(policy));
        // A request before the policy, a policy it cannot read, or none at all: it
        // refuses, and serves nothing.
        let kill = Request::Kill { id: 1, signal: 9 };
        assert!(
            awaited(Some(kill))
                .unwrap_err()
                .contains("before the policy")
        );
        assert!(awaited(Some(Request::Confine(vec!["--bogus".into()]))).is_err());
        assert!(awaited(None).unwrap_err().contains("ended before"));
    }
}
