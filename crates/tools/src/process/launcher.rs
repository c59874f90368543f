//! The launcher: how a command the backend starts dies with the backend, even when the
//! backend is killed with `SIGKILL`.
//!
//! A parent-death signal would need `unsafe` code between fork and exec (the workspace
//! forbids it) and is tied to the spawning thread, which on a blocking pool may exit
//! first. Instead the backend makes one pipe, the *lifeline*, when it starts: it keeps the
//! write end (closed on exec, so no child holds it) and lets children inherit the read
//! end. Each command then runs under `magi-code` itself, re-executed with
//! [`LAUNCH_ARGUMENT`]: the launcher is the leader of the command's process group, runs
//! the command in that group, and when the lifeline reaches end of file (every copy of the
//! write end closed: the backend is gone, however it ended) it sends the group `SIGTERM`,
//! then `SIGKILL` after [`PROCESS_TERM_GRACE_MS`]. Otherwise it ends as the command ends,
//! with the same exit status or signal.
//!
//! Without [`enable`] (a library user, this crate's own tests) commands start directly in
//! their own process group: a cancel, a timeout or a shutdown still kill them, the death
//! of the process does not.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use magi_protocol::limits::PROCESS_TERM_GRACE_MS;
use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::getpgrp;

use super::confine::{self, Policy};
use super::spawner;

/// The first argument that makes `magi-code` run as a launcher rather than parse its
/// command line. Internal: the backend passes it, people never type it.
pub const LAUNCH_ARGUMENT: &str = "__launch";

/// Status of a launcher that could not run its command (as a shell reports a command it
/// cannot execute).
const CANNOT_RUN: u8 = 126;

/// The launcher every command of this process runs under, once enabled.
struct Launcher {
    /// The executable to re-execute: this program.
    program: PathBuf,
    /// The lifeline's read end, inherited by children.
    read_end: OwnedFd,
    /// The lifeline's write end: never written, closed only when this process ends.
    _write_end: OwnedFd,
}

static LAUNCHER: OnceLock<Launcher> = OnceLock::new();

/// Makes every command this process starts from now on run under `program` re-executed
/// as a launcher, so that it dies with this process. Call once, before any command
/// starts; later calls change nothing.
pub fn enable(program: PathBuf) -> io::Result<()> {
    if LAUNCHER.get().is_some() {
        return Ok(());
    }
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // Children inherit the read end; the write end stays closed on exec, so this
    // process holds its only copy.
    fcntl(&read_end, FcntlArg::F_SETFD(FdFlag::empty()))?;
    let _ = LAUNCHER.set(Launcher {
        program,
        read_end,
        _write_end: write_end,
    });
    Ok(())
}

/// The program and leading arguments that start `program`: the launcher followed by
/// `program` once [`enable`]d, else `program` alone. The caller adds the command's own
/// arguments and starts it as the leader of a new process group.
pub fn command_line(program: &OsStr) -> (OsString, Vec<OsString>) {
    match LAUNCHER.get() {
        Some(launcher) => (
            launcher.program.clone().into_os_string(),
            vec![
                LAUNCH_ARGUMENT.into(),
                launcher.read_end.as_raw_fd().to_string().into(),
                "--".into(),
                program.to_owned(),
            ],
        ),
        None => (program.to_owned(), Vec::new()),
    }
}

/// The program and leading arguments that start `program` confined to `policy`: as
/// [`command_line`], with the policy among the launcher's own arguments. None when the
/// launcher is not enabled (nothing could apply the policy).
pub(crate) fn confined_command_line(
    program: &OsStr,
    policy: &Policy,
) -> Option<(OsString, Vec<OsString>)> {
    let launcher = LAUNCHER.get()?;
    let mut leading = vec![
        LAUNCH_ARGUMENT.into(),
        launcher.read_end.as_raw_fd().to_string().into(),
    ];
    leading.extend(policy.arguments());
    leading.push("--".into());
    leading.push(program.to_owned());
    Some((launcher.program.clone().into_os_string(), leading))
}

/// The program this process re-executes as its launcher, once [`enable`]d.
pub(crate) fn program() -> Option<&'static Path> {
    LAUNCHER.get().map(|launcher| launcher.program.as_path())
}

/// The launcher option that makes `magi-code __launch` a spawn server.
const SERVE_OPTION: &str = "--serve";

/// The command that starts a spawn server for `policy` (none: unconfined), once
/// [`enable`]d: this program with [`SERVE_OPTION`], the lifeline's descriptor (which
/// the server closes: it watches its socket instead) and the policy's arguments. The
/// caller gives it its socket as standard input. It works in `/`, since each request
/// names its command's folder: a server holds no workspace busy.
pub(crate) fn server_command(policy: Option<&Policy>) -> Option<Command> {
    let launcher = LAUNCHER.get()?;
    let mut command = Command::new(&launcher.program);
    command
        .current_dir("/")
        .arg0("magi-code")
        .args([LAUNCH_ARGUMENT, SERVE_OPTION])
        .arg(launcher.read_end.as_raw_fd().to_string())
        .args(policy.map(Policy::arguments).unwrap_or_default());
    Some(command)
}

/// The command that starts a spawn server before its policy is known, once
/// [`enable`]d: it starts while the kernel is probed and is sent its policy after.
pub(crate) fn early_server_command() -> Option<Command> {
    let mut command = server_command(None)?;
    command.arg(spawner::server::AWAIT_POLICY_OPTION);
    Some(command)
}

/// A [`Command`] for `program`, through the launcher when enabled, confined to `policy`
/// when one is given (the caller gives one only when the launcher is enabled).
pub(crate) fn command(program: &OsStr, policy: Option<&Policy>) -> Command {
    let (program, leading) = policy
        .and_then(|policy| confined_command_line(program, policy))
        .unwrap_or_else(|| command_line(program));
    let mut command = Command::new(program);
    command.args(leading);
    if LAUNCHER.get().is_some() {
        // Named for what it is in a process list, not by `/proc/self/exe`.
        command.arg0("magi-code");
    }
    command
}

/// Where `program` would be found when started from `dir` with `path` as its `PATH`: a
/// name with a slash as it stands (relative to `dir`), another name in the first `PATH`
/// entry that holds an executable file of that name. None when there is none: through
/// the launcher, a missing program is otherwise only seen as a command that ended.
pub fn find_program(program: &OsStr, path: Option<&OsStr>, dir: &Path) -> Option<PathBuf> {
    let named = Path::new(program);
    if program.as_encoded_bytes().contains(&b'/') {
        let full = dir.join(named);
        return is_executable(&full).then_some(full);
    }
    path.into_iter()
        .flat_map(std::env::split_paths)
        .map(|entry| dir.join(entry).join(named))
        .find(|candidate| is_executable(candidate))
}

/// Whether `path` is a regular file someone may execute.
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// The launcher's `main`: `arguments` are those after [`LAUNCH_ARGUMENT`], the lifeline's
/// descriptor, the sandbox policy if any (`confine`), `--`, then the command and its
/// arguments. It must already lead its own process group (its parent started it so).
/// With `--probe` alone it only reports what the kernel can enforce (see
/// [`crate::sandbox::probe`]); with `--serve` it is a spawn server (see `spawner`).
pub fn main(arguments: impl IntoIterator<Item = OsString>) -> ExitCode {
    let arguments: Vec<OsString> = arguments.into_iter().collect();
    if let Some((first, options)) = arguments.split_first()
        && first == SERVE_OPTION
    {
        return spawner::server::main(options);
    }
    if let Some((first, rest)) = arguments.split_first()
        && first == confine::PROBE_OPTION
        && (rest.is_empty() || rest == [confine::OWN_NETWORK_OPTION])
    {
        let mut out = io::stdout().lock();
        return match writeln!(out, "{}", confine::probe(!rest.is_empty())) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    match launch(arguments) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("magi-code: the command could not be started: {why}");
            ExitCode::from(CANNOT_RUN)
        }
    }
}

fn launch(arguments: Vec<OsString>) -> Result<ExitCode, String> {
    let separator = arguments
        .iter()
        .position(|argument| argument == "--")
        .ok_or("the launcher needs a descriptor, `--` and a command")?;
    let ([descriptor, options @ ..], [_, program, rest @ ..]) = arguments.split_at(separator)
    else {
        return Err("the launcher needs a descriptor, `--` and a command".to_owned());
    };
    let descriptor: i32 = descriptor
        .to_str()
        .and_then(|text| text.parse().ok())
        .ok_or("the launcher's arguments are not a descriptor and `--`")?;
    let policy = Policy::parse(options)?;
    let mut lifeline = open_lifeline(descriptor)?;
    // The inherited copy would reach the command; the reopened one closes on exec.
    let _ = nix::unistd::close(descriptor);
    if backend_gone(&mut lifeline) {
        return Err("the backend that asked for it has ended".to_owned());
    }
    if let Some(policy) = &policy {
        confine::enforce(policy)?;
    }
    // SIGTERM to the group must not end the launcher before the command: it waits for
    // the command and reports how it ended. The handler does not survive exec.
    let terminated = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGTERM, terminated)
        .map_err(|e| format!("cannot handle SIGTERM: {e}"))?;
    let mut child = Command::new(program)
        .args(rest)
        .spawn()
        .map_err(|e| format!("{}: {e}", program.to_string_lossy()))?;
    std::thread::spawn(move || watch(lifeline));
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for the command: {e}"))?;
    if let Some(signal) = status.signal() {
        // End the way the command ended, so the backend sees the same signal.
        let _ = signal_hook::low_level::emulate_default_handler(signal);
        return Ok(ExitCode::from(128u8.wrapping_add(signal as u8)));
    }
    Ok(ExitCode::from(status.code().unwrap_or(1) as u8))
}

/// A new descriptor for the inherited lifeline, opened without blocking (a pipe whose
/// writer is gone would block a plain open for ever) and closed on exec.
fn open_lifeline(descriptor: i32) -> Result<File, String> {
    let path = format!("/proc/self/fd/{descriptor}");
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| format!("cannot open the backend's lifeline {path}: {e}"))
}

/// Whether the lifeline is at end of file; it is never written, so any read that does
/// not block is the end.
fn backend_gone(lifeline: &mut File) -> bool {
    let mut byte = [0u8; 1];
    !matches!(lifeline.read(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// Waits for the lifeline to end, then ends the launcher's whole group: `SIGTERM`, and
/// `SIGKILL` (which ends the launcher too) after the grace period.
fn watch(mut lifeline: File) {
    loop {
        let mut fds = [PollFd::new(lifeline.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) if backend_gone(&mut lifeline) => break,
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            // The lifeline cannot be watched: end the command rather than let it outlive
            // the backend unseen.
            Err(_) => break,
        }
    }
    let group = getpgrp();
    let _ = killpg(group, Signal::SIGTERM);
    // The grace period is the point of the wait: nothing else says when it is over.
    std::thread::sleep(Duration::from_millis(PROCESS_TERM_GRACE_MS));
    let _ = killpg(group, Signal::SIGKILL);
}
