//! Leases: exclusive, crash-safe claims on a session (its writer, its active run, an
//! append from outside the run), held as `flock` locks on files under `locks/`.
//!
//! The lock, not the file, is the claim. A file whose owner died stays behind but is
//! unlocked, so the next owner takes it over; that is how a stale lease is recognised,
//! without reading pids or clocks.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::fs::same_inode;

/// How many times `acquire` retries when the file it locked was removed or replaced
/// under it. Each retry means another owner released in between, so a few are enough.
const ACQUIRE_ATTEMPTS: usize = 8;

/// What a lease claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseKind {
    /// The one process that appends to a session's log.
    Writer,
    /// A run is in progress on the session.
    Active,
    /// An append from outside a run (such as a selection change) is in progress.
    Append,
}

impl LeaseKind {
    /// The kind's part of the lease file name: `<session_id>.<suffix>.lock`.
    pub fn suffix(self) -> &'static str {
        match self {
            LeaseKind::Writer => "writer",
            LeaseKind::Active => "active",
            LeaseKind::Append => "append",
        }
    }
}

/// Why a lease could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseError {
    /// A live owner holds it.
    Busy,
    /// The lease file could not be created, opened, locked or written, or is not a
    /// regular file.
    Io,
}

impl std::fmt::Display for LeaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LeaseError::Busy => "the lease is held by another owner",
            LeaseError::Io => "the lease file cannot be used",
        })
    }
}

impl std::error::Error for LeaseError {}

/// A held lease. Dropping it releases the lease: the file is removed first, and the
/// lock goes with the file handle right after, so a waiting owner that locked the old
/// file sees it is gone and retries on a fresh one.
#[derive(Debug)]
pub struct Lease {
    file: File,
    path: PathBuf,
}

impl Lease {
    /// The lease file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Only our own file is removed: while we hold the lock nobody else can own the
        // path, but checking costs one stat and guards against a hand-edited folder.
        if let (Ok(ours), Ok(named)) = (self.file.metadata(), std::fs::symlink_metadata(&self.path))
            && same_inode(&ours, &named)
        {
            // A failed removal leaves an unlocked file, which the next owner takes over.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Takes the lease at `path`: creates the file (mode 0600) if missing, locks it
/// exclusively without waiting, and writes the owner's pid into it for humans.
///
/// A file left by a dead owner is unlocked and is taken over. Symlinks and anything
/// but a regular file are refused (`Io`).
pub fn acquire(path: &Path) -> Result<Lease, LeaseError> {
    for _ in 0..ACQUIRE_ATTEMPTS {
        let Some(file) = open_lock_file(path)? else {
            // Created or removed by someone else between our two steps: look again.
            continue;
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(LeaseError::Busy),
            Err(TryLockError::Error(_)) => return Err(LeaseError::Io),
        }
        // The previous owner removes the file before unlocking it, so we may have
        // locked an inode that no longer has this name; only the named one counts.
        let ours = file.metadata().map_err(|_| LeaseError::Io)?;
        match std::fs::symlink_metadata(path) {
            Ok(named) if same_inode(&ours, &named) => {}
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(_) => return Err(LeaseError::Io),
        }
        write_pid(&file).map_err(|_| LeaseError::Io)?;
        return Ok(Lease {
            file,
            path: path.to_owned(),
        });
    }
    // Every attempt lost a race with another owner that is actively taking the lease.
    Err(LeaseError::Busy)
}

/// Whether a lease file exists at `path`. It never locks, renews or removes anything,
/// so it cannot tell a live owner from a dead one: callers treat `true` as "maybe busy".
pub fn is_present(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// Opens the existing regular file at `path`, or creates it. `Ok(None)` means the path
/// changed between the check and the open, and the caller should look again.
fn open_lock_file(path: &Path) -> Result<Option<File>, LeaseError> {
    match std::fs::symlink_metadata(path) {
        Ok(before) => {
            if !before.file_type().is_file() {
                return Err(LeaseError::Io);
            }
            // No truncation: the file may still belong to a live owner.
            let file = match OpenOptions::new().read(true).write(true).open(path) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(_) => return Err(LeaseError::Io),
            };
            let opened = file.metadata().map_err(|_| LeaseError::Io)?;
            // A swap between the check and the open (a symlink, say) shows as another inode.
            if same_inode(&before, &opened) && opened.file_type().is_file() {
                Ok(Some(file))
            } else {
                Ok(None)
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // Exclusive creation never follows a symlink planted at the path.
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(file) => Ok(Some(file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
                Err(_) => Err(LeaseError::Io),
            }
        }
        Err(_) => Err(LeaseError::Io),
    }
}

/// Replaces the file's content with the owner's pid; only ever called under the lock.
fn write_pid(file: &File) -> io::Result<()> {
    file.set_len(0)?;
    let pid = format!("{}\n", std::process::id());
    // Written at offset 0 regardless of where the handle's cursor is.
    file.write_all_at(pid.as_bytes(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn lock_path(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join("s1.writer.lock")
    }

    #[test]
    fn suffixes_name_each_kind() {
        assert_eq!(LeaseKind::Writer.suffix(), "writer");
        assert_eq!(LeaseKind::Active.suffix(), "active");
        assert_eq!(LeaseKind::Append.suffix(), "append");
    }

    #[test]
    fn a_held_lease_is_busy_even_within_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(&dir);
        let lease = acquire(&path).unwrap();
        assert_eq!(lease.path(), path);
        // flock belongs to the open file description, so a second open of the same
        // file in this process does not inherit the lock.
        assert_eq!(acquire(&path).unwrap_err(), LeaseError::Busy);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let pid = std::fs::read_to_string(&path).unwrap();
        assert_eq!(pid, format!("{}\n", std::process::id()));
        drop(lease);
        assert!(acquire(&path).is_ok());
    }

    #[test]
    fn dropping_a_lease_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(&dir);
        let lease = acquire(&path).unwrap();
        assert!(is_present(&path));
        drop(lease);
        assert!(!is_present(&path));
        assert!(!path.exists());
    }

    #[test]
    fn a_leftover_unlocked_file_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(&dir);
        // What a dead owner leaves behind: the file, a pid, no lock.
        std::fs::write(&path, "999999999 and some longer leftover text\n").unwrap();
        assert!(is_present(&path));
        let lease = acquire(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        assert_eq!(acquire(&path).unwrap_err(), LeaseError::Busy);
        drop(lease);
        assert!(!is_present(&path));
    }

    #[test]
    fn a_lock_on_a_released_file_claims_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(&dir);
        let first = acquire(&path).unwrap();
        // A contender that opened the file before the owner released it ends up
        // locking an inode that no longer has the name; that lock claims nothing.
        let stale = OpenOptions::new().read(true).open(&path).unwrap();
        drop(first);
        stale.try_lock().unwrap();
        let second = acquire(&path).unwrap();
        assert!(is_present(&path));
        assert_eq!(acquire(&path).unwrap_err(), LeaseError::Busy);
        drop(second);
        drop(stale);
    }

    #[test]
    fn symlinks_and_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "").unwrap();
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(acquire(&link).unwrap_err(), LeaseError::Io);
        let sub = dir.path().join("sub.lock");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(acquire(&sub).unwrap_err(), LeaseError::Io);
        // The refused paths are left as they were.
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(sub.is_dir());
    }

    #[test]
    fn presence_is_existence_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(&dir);
        assert!(!is_present(&path));
        std::fs::write(&path, "").unwrap();
        assert!(is_present(&path));
        // Checking presence neither locks nor removes.
        let lease = acquire(&path).unwrap();
        assert!(is_present(&path));
        drop(lease);
    }
}
