//! The spawn server: one long-lived launcher per sandbox policy (one unconfined, one per
//! distinct confinement), started the first time a command needs it (or ahead of it,
//! [`warm`], for the workspace's own policy as the first turn starts), which starts each
//! command on request. The first turn's server is started even before its policy is
//! known ([`start_early`]): it waits, unconfined and serving nothing, while the kernel
//! is probed, and is then sent the policy of the first command that needs a server,
//! which it applies before anything else, as a server started with its policy does.
//! Re-executing `magi-code` as a launcher for every command costs about a millisecond
//! and a half (loading the program, then its own spawn and watch thread); a request
//! over a socket costs a few tens of microseconds.
//!
//! The server keeps what the per-command `launcher` promises. It confines itself
//! before it starts anything, so every command it starts inherits the confinement and
//! cannot lift it. It watches its socket: at end of file (the backend is gone, however
//! it ended) it sends every command's group `SIGTERM`, then `SIGKILL` after the grace
//! period. It is the parent of the commands, so kills go through it: it signals a group
//! only while its leader is unreaped (see `server`).
//!
//! Requests and answers are messages on a `SOCK_SEQPACKET` socket pair (`codec`); the
//! command's stdin, stdout and stderr travel beside its request. One thread per server
//! in the backend reads the answers; a server that ends is noticed there: the commands
//! it still ran are killed by their groups (nothing else can reach them now, and their
//! group IDs stay theirs while they live) and reported ended by `SIGKILL`, and the next
//! command starts a new server. Every wait on a server is bounded by
//! [`SPAWN_SERVER_WAIT_MS`]; a command whose start was answered past that wait is killed
//! as soon as the answer comes, and nothing of it is kept. One case stays blind: a server killed after it started a
//! command and before it sent the command's process ID (a window of a few system
//! calls, which a command that kills its own server can hit) leaves that command
//! unknown: its call fails as not started, and it runs on in its own group.
//!
//! A command still goes through a launcher of its own when no server can serve it:
//! without `launcher::enable` (a library user), when a server refuses its policy (a
//! required sandbox the kernel cannot enforce: the launcher then refuses the command as
//! it always did) or when its request is larger than [`SPAWN_REQUEST_BYTES`]. MCP stdio
//! servers, which live as long as the backend, keep their own launcher too.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use magi_protocol::limits::{SPAWN_REQUEST_BYTES, SPAWN_SERVER_WAIT_MS, SPAWN_SERVERS};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};

use super::confine::Policy;
use codec::{Event, Request, SpawnRequest};

pub(crate) mod codec;
mod early;
mod handle;
pub(crate) mod server;

pub(crate) use early::{discard_early, start_early};
pub(crate) use handle::{Proc, Served};

/// The command's ends of its standard streams, seen from this process.
pub(crate) struct Streams {
    /// Where its input is written, when it was asked for.
    pub(crate) stdin: Option<File>,
    pub(crate) stdout: File,
    pub(crate) stderr: File,
}

/// What one spawn server asks of a command.
pub(crate) struct Spawn<'a> {
    pub(crate) program: &'a OsStr,
    pub(crate) args: &'a [&'a OsStr],
    pub(crate) cwd: &'a Path,
    /// Variables of this process's environment the command must not see.
    pub(crate) hidden_env: &'a [String],
    /// Whether its stdin is a pipe to write to (else `/dev/null`).
    pub(crate) stdin: bool,
    /// Its confinement; none runs it unconfined.
    pub(crate) policy: Option<&'a Policy>,
    /// The command that starts a server for a policy; none when there can be none
    /// (`launcher::server_command`).
    pub(crate) server_command: fn(Option<&Policy>) -> Option<Command>,
    /// Waited for once the request and its pipes are ready, just before it is sent:
    /// false and it is not sent ([`crate::ToolContext::durable`]).
    pub(crate) durable: &'a (dyn Fn() -> bool + Sync),
}

/// Starts a command in its own process group through the spawn server for its policy.
/// None when no server serves it (see the module's documentation): the caller then
/// starts it through a launcher of its own.
pub(crate) fn spawn(spawn: &Spawn) -> Option<io::Result<(Proc, Streams)>> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let request = SpawnRequest {
        id: NEXT.fetch_add(1, Ordering::Relaxed),
        program: spawn.program.to_owned(),
        args: spawn.args.iter().map(|arg| (*arg).to_owned()).collect(),
        // The server works in `/`: a relative folder means this process's.
        cwd: std::path::absolute(spawn.cwd).unwrap_or_else(|_| spawn.cwd.to_owned()),
        env: std::env::vars_os()
            .filter(|(name, _)| {
                !spawn
                    .hidden_env
                    .iter()
                    .any(|hidden| name == hidden.as_str())
            })
            .collect(),
        own_group: true,
    };
    let id = request.id;
    let message = Request::Spawn(request).encode();
    if message.len() > SPAWN_REQUEST_BYTES {
        return None;
    }
    // A server found gone only when the request is sent is replaced once.
    for _ in 0..2 {
        let server = server_for(spawn.policy, spawn.server_command)?;
        match send_spawn(&server, id, &message, spawn.stdin, spawn.durable) {
            Err(Unsent) => continue,
            Ok(result) => return Some(result),
        }
    }
    Some(Err(io::Error::other(
        "the spawn server ended twice in a row",
    )))
}

/// Starts the server for `policy` unless one serves it already (see [`server_for`]).
pub(crate) fn warm(
    policy: Option<&Policy>,
    server_command: fn(Option<&Policy>) -> Option<Command>,
) {
    let _ = server_for(policy, server_command);
}

/// A request that never reached its server, because the server is gone.
struct Unsent;

/// Why a command did not start: its call's claim could not be made durable.
pub(crate) fn not_durable() -> io::Error {
    io::Error::other("not started: the call's claim could not be recorded")
}

/// Sends one spawn request with fresh pipes for the command's streams and waits for
/// its answer.
fn send_spawn(
    server: &Arc<Server>,
    id: u64,
    message: &[u8],
    piped_stdin: bool,
    durable: &(dyn Fn() -> bool + Sync),
) -> Result<io::Result<(Proc, Streams)>, Unsent> {
    let pipes = (|| -> io::Result<_> {
        let (stdin_read, stdin_write) = if piped_stdin {
            let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            (read, Some(File::from(write)))
        } else {
            (OwnedFd::from(File::open("/dev/null")?), None)
        };
        let (stdout_read, stdout_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let (stderr_read, stderr_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let theirs = [stdin_read, stdout_write, stderr_write];
        let ours = Streams {
            stdin: stdin_write,
            stdout: File::from(stdout_read),
            stderr: File::from(stderr_read),
        };
        Ok((theirs, ours))
    })();
    let (theirs, streams) = match pipes {
        Ok(pipes) => pipes,
        Err(e) => return Ok(Err(e)),
    };
    if !durable() {
        return Ok(Err(not_durable()));
    }
    let fds = theirs.each_ref().map(AsFd::as_fd);
    if let Err(e) = codec::send(server.socket.as_fd(), message, &fds) {
        if matches!(
            e.kind(),
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
        ) {
            server.lost();
            return Err(Unsent);
        }
        return Ok(Err(e));
    }
    // Only the command holds the write ends now, so its output ends when it does.
    drop(theirs);
    Ok(server.answer(id).map(|_pid| {
        let served = Served {
            server: Arc::clone(server),
            id,
        };
        (Proc::Served(served), streams)
    }))
}

/// One spawn server, seen from the backend.
struct Server {
    /// The backend's end: closed on exec, so no command holds it, and the server sees
    /// end of file when this process ends.
    socket: OwnedFd,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The server ended.
    gone: bool,
    /// Answers to spawn requests not yet taken: the process ID, or why not.
    answers: HashMap<u64, io::Result<i32>>,
    /// Commands started and not yet ended: request ID to process ID.
    live: HashMap<u64, i32>,
    /// How each command ended, kept until its handle is dropped.
    exits: HashMap<u64, ExitStatus>,
    /// Spawn requests whose answer came too late for their caller: a command they
    /// still start is killed at once, and nothing of them is kept once they end.
    abandoned: HashSet<u64>,
    /// The thread waiting for news of a request (its answer, then its command's end),
    /// by request ID: each is woken by news of its own request alone (or by the
    /// server's end), not by every other command's, as many run side by side.
    waiting: HashMap<u64, Arc<Condvar>>,
}

impl Server {
    /// Starts a server with `command` (its socket is added here) and waits (bounded)
    /// until it is ready.
    fn start(command: Command) -> Result<Arc<Server>, String> {
        let (ours, child) = Server::launch(command)?;
        Server::greeted(ours, child)
    }

    /// Starts the server's process with `command`, its end of a new socket pair as its
    /// standard input; returns this process's end and the child.
    fn launch(mut command: Command) -> Result<(OwnedFd, Child), String> {
        let (ours, theirs) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| format!("cannot make a socket pair: {e}"))?;
        command
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Out of the backend's group: a terminal's Ctrl-C is for the backend, which
            // then ends what it started.
            .process_group(0);
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start the spawn server: {e}"))?;
        // The server's end lives in the server alone, so its end is seen here.
        drop(command);
        Ok((ours, child))
    }

    /// Waits (bounded) for a launched server's greeting; once it says it is ready,
    /// watches it from a thread of its own.
    fn greeted(ours: OwnedFd, mut child: Child) -> Result<Arc<Server>, String> {
        let mut buffer = [0u8; 4096];
        let greeting = readable(&ours, Duration::from_millis(SPAWN_SERVER_WAIT_MS))
            .and_then(|()| codec::receive(&ours, &mut buffer).map_err(|e| e.to_string()))
            .and_then(|received| {
                let (len, _) = received.ok_or("the spawn server ended as it started")?;
                Event::decode(&buffer[..len])
            });
        match greeting {
            Ok(Event::Ready) => {}
            other => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(match other {
                    Ok(Event::Refused(why)) => why,
                    Ok(event) => format!("the spawn server began with {event:?}"),
                    Err(why) => why,
                });
            }
        }
        let server = Arc::new(Server {
            socket: ours,
            state: Mutex::default(),
        });
        let reader = Arc::clone(&server);
        std::thread::Builder::new()
            .name("magi-spawn".into())
            .spawn(move || {
                let mut child = child;
                // A reader that panics is a server lost: what it ran is killed and every
                // waiter is told, as when the server itself ends.
                if magi_crash::contain(|| reader.read(&mut child)).is_err() {
                    reader.lost();
                }
                let _ = child.kill();
                let _ = child.wait();
            })
            .map_err(|e| format!("cannot watch the spawn server: {e}"))?;
        Ok(server)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn gone(&self) -> bool {
        self.lock().gone
    }

    /// Reads the server's events until it ends; the caller then reaps it.
    fn read(&self, child: &mut Child) {
        let mut buffer = [0u8; 4096];
        while let Ok(Some((len, _))) = codec::receive(&self.socket, &mut buffer) {
            let Ok(event) = Event::decode(&buffer[..len]) else {
                // Not this program's server any more: stop trusting it.
                break;
            };
            let mut state = self.lock();
            let news = match &event {
                Event::Spawned { id, .. }
                | Event::NotSpawned { id, .. }
                | Event::Exited { id, .. } => Some(*id),
                Event::Ready | Event::Refused(_) => None,
            };
            match event {
                Event::Spawned { id, pid } => {
                    state.live.insert(id, pid);
                    if state.abandoned.contains(&id) {
                        // Nobody waits for it: it must not run unseen.
                        let request = Request::Kill {
                            id,
                            signal: Signal::SIGKILL as i32,
                        };
                        let _ = codec::send(self.socket.as_fd(), &request.encode(), &[]);
                    } else {
                        state.answers.insert(id, Ok(pid));
                    }
                }
                Event::NotSpawned { id, errno, why } => {
                    let error = if errno == 0 {
                        io::Error::other(why)
                    } else {
                        io::Error::from_raw_os_error(errno)
                    };
                    if !state.abandoned.remove(&id) {
                        state.answers.insert(id, Err(error));
                    }
                }
                Event::Exited { id, status } => {
                    state.live.remove(&id);
                    if !state.abandoned.remove(&id) {
                        state.exits.insert(id, ExitStatus::from_raw(status));
                    }
                }
                Event::Ready | Event::Refused(_) => {}
            }
            if let Some(waiting) = news.and_then(|id| state.waiting.get(&id)) {
                waiting.notify_one();
            }
        }
        self.lost();
        let _ = child;
    }

    /// The server ended: what it still ran is killed by group and reported ended by
    /// `SIGKILL`, so no wait on it hangs and nothing it ran outlives it unseen.
    fn lost(&self) {
        let mut state = self.lock();
        state.gone = true;
        for (id, pid) in std::mem::take(&mut state.live) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            if !state.abandoned.remove(&id) {
                state
                    .exits
                    .insert(id, ExitStatus::from_raw(Signal::SIGKILL as i32));
            }
        }
        for waiting in state.waiting.values() {
            waiting.notify_one();
        }
    }

    /// The answer to spawn request `id`, waited for a bounded time.
    fn answer(&self, id: u64) -> io::Result<i32> {
        let deadline = Instant::now() + Duration::from_millis(SPAWN_SERVER_WAIT_MS);
        let (answer, mut state) = self.wait_for(id, deadline, |state| {
            state.answers.remove(&id).or_else(|| {
                state.gone.then(|| {
                    Err(io::Error::other(
                        "the spawn server ended before it answered",
                    ))
                })
            })
        });
        answer.unwrap_or_else(|| {
            state.abandoned.insert(id);
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the spawn server did not answer",
            ))
        })
    }

    /// Waits until `look` finds what it looks for in the state, woken by news of
    /// request `id` (or of the server's end), no later than `deadline`: what it found
    /// (none at the deadline), with the state still locked.
    fn wait_for<T>(
        &self,
        id: u64,
        deadline: Instant,
        mut look: impl FnMut(&mut State) -> Option<T>,
    ) -> (Option<T>, MutexGuard<'_, State>) {
        let mut state = self.lock();
        let woken = Arc::clone(state.waiting.entry(id).or_default());
        let found = loop {
            if let Some(found) = look(&mut state) {
                break Some(found);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break None;
            }
            state = woken
                .wait_timeout(state, left)
                .map_or_else(|poisoned| poisoned.into_inner().0, |(state, _)| state);
        };
        state.waiting.remove(&id);
        (found, state)
    }
}

/// Waits until `socket` has something to read (or its peer is gone), at most `within`.
fn readable(socket: &impl AsFd, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let mut fds = [PollFd::new(socket.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, timeout) {
            Ok(0) => return Err("the spawn server did not start in time".to_owned()),
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(format!("cannot watch the spawn server: {e}")),
        }
    }
}

/// A server per policy: serving, or refused for good (its commands use launchers of
/// their own, which refuse them the same way).
enum Slot {
    Serving(Arc<Server>),
    Refused,
}

/// The server for `policy`, started when there is none or the last one ended. None
/// when the launcher is not enabled or the policy was refused.
fn server_for(
    policy: Option<&Policy>,
    server_command: fn(Option<&Policy>) -> Option<Command>,
) -> Option<Arc<Server>> {
    static SERVERS: Mutex<Vec<(Option<Policy>, Slot)>> = Mutex::new(Vec::new());
    let command = server_command(policy)?;
    let mut servers = SERVERS.lock().unwrap_or_else(PoisonError::into_inner);
    let index = servers.iter().position(|(key, _)| key.as_ref() == policy);
    if let Some(index) = index {
        match &servers[index].1 {
            Slot::Refused => return None,
            Slot::Serving(server) if !server.gone() => return Some(Arc::clone(server)),
            Slot::Serving(_) => {
                servers.swap_remove(index);
            }
        }
    }
    servers.retain(|(_, slot)| !matches!(slot, Slot::Serving(server) if server.gone()));
    if servers.len() >= SPAWN_SERVERS {
        // Bounded: a further policy (a command in yet another folder, say) goes to a
        // launcher of its own, as before servers, rather than one more process.
        return None;
    }
    // The early server, when one waits, is told this policy: it started beside the
    // probe. Should it fail (killed while it waited), a new one is started as usual.
    let started = match early::take() {
        Some(early) => early.confine(policy).or_else(|_| Server::start(command)),
        None => Server::start(command),
    };
    let slot = match started {
        Ok(server) => Slot::Serving(server),
        // Not only a refused policy: a server that cannot start at all leaves every
        // command to its own launcher, which works as it did before servers.
        Err(_) => Slot::Refused,
    };
    let server = match &slot {
        Slot::Serving(server) => Some(Arc::clone(server)),
        Slot::Refused => None,
    };
    servers.push((policy.cloned(), slot));
    server
}
