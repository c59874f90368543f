//! The namespaces of its own a confined launcher enters before Landlock: always a user
//! namespace (its uid and gid mapped to themselves, so the command sees the same ids),
//! which gives it the rights the others need; a mount namespace when paths are to be
//! made read-only (`mounts`); a network namespace when the command is to have a network
//! of its own, whose only interface is its loopback (`network`). All are inherited by
//! everything the command starts.
//!
//! It must run while the process has one thread: the kernel refuses a new user
//! namespace to a threaded process.

use nix::sched::{CloneFlags, unshare};
use nix::unistd::{getegid, geteuid};

/// Enters a user namespace mapping this process's ids to themselves, with a mount
/// namespace when `mounts` and a network namespace when `network`. The error says which
/// step failed.
pub(super) fn enter(mounts: bool, network: bool) -> Result<(), String> {
    let (uid, gid) = (geteuid(), getegid());
    let mut flags = CloneFlags::CLONE_NEWUSER;
    if mounts {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    if network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|e| format!("user namespaces are unavailable (unshare: {e})"))?;
    // An unprivileged process may map its own gid only after giving up setgroups.
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))
}
