//! Paths kept read-only inside a writable root (the workspace's `.git`): Landlock only
//! grants rights, so it cannot carve a read-only path out of a writable tree. A mount can:
//! in the user and mount namespace of its own that `namespaces` entered, the launcher
//! bind-mounts each path onto itself read-only. Writes beneath it then fail with `EROFS`
//! whatever Landlock allows. Landlock, applied next, forbids every later change of the
//! mounts (and seccomp the calls Landlock does not govern), so the command can neither
//! unmount nor remount them; the namespace is inherited by all it starts.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sys::statvfs::{FsFlags, statvfs};

/// Makes each of `paths` read-only for this process and everything it starts, in the
/// mount namespace of its own it has entered. Paths that no longer exist are skipped
/// (nothing is there to protect). The error says which step failed; after it, nothing
/// may be read-only.
pub(super) fn protect(paths: &[PathBuf]) -> Result<(), String> {
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    for path in paths {
        if !path.exists() {
            continue;
        }
        read_only_bind(path).map_err(|why| format!("{}: {why}", path.display()))?;
    }
    Ok(())
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
