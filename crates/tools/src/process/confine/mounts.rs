//! Paths kept read-only inside a writable root (the workspace's `.git`): Landlock only
//! grants rights, so it cannot carve a read-only path out of a writable tree. A mount can:
//! the launcher enters a user namespace of its own (its uid and gid mapped to themselves,
//! so the command sees the same ids) with a mount namespace, and there bind-mounts each
//! path onto itself read-only. Writes beneath it then fail with `EROFS` whatever Landlock
//! allows. Landlock, applied next, forbids every later change of the mounts, so the
//! command can neither unmount nor remount them; the namespaces are inherited by all it
//! starts.
//!
//! It must run while the process has one thread (the kernel refuses a new user
//! namespace to a threaded process) and before Landlock.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};
use nix::unistd::{getegid, geteuid};

/// Makes each of `paths` read-only for this process and everything it starts. Paths
/// that no longer exist are skipped (nothing is there to protect). The error says which
/// step failed; after it, nothing may be read-only.
pub(super) fn protect(paths: &[PathBuf]) -> Result<(), String> {
    enter_namespaces()?;
    for path in paths {
        if !path.exists() {
            continue;
        }
        read_only_bind(path).map_err(|why| format!("{}: {why}", path.display()))?;
    }
    Ok(())
}

/// A user namespace mapping this process's ids to themselves, and a mount namespace
/// whose mounts no longer propagate to or from the one it left.
fn enter_namespaces() -> Result<(), String> {
    let (uid, gid) = (geteuid(), getegid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("user namespaces are unavailable (unshare: {e})"))?;
    // An unprivileged process may map its own gid only after giving up setgroups.
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))
}

/// Bind-mounts `path` onto itself, then makes that mount read-only. The remount keeps
/// the flags of the mount beneath (`nosuid`, `nodev`, `noexec`, the atime ones): a
/// namespace that did not create them may not clear them.
fn read_only_bind(path: &Path) -> Result<(), String> {
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND,
        None::<&str>,
    )
    .map_err(|e| format!("bind mount: {e}"))?;
    let kept = statvfs(path)
        .map(|stat| kept_flags(stat.flags()))
        .map_err(|e| format!("statvfs: {e}"))?;
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
        None::<&str>,
    )
    .map_err(|e| format!("read-only remount: {e}"))
}

/// The mount flags a remount must repeat, from the file system's.
fn kept_flags(flags: FsFlags) -> MsFlags {
    [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(flag, _)| flags.contains(*flag))
    .fold(MsFlags::empty(), |kept, (_, mount)| kept | mount)
}
