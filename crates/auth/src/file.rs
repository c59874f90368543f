//! Credential files on disk: read whole within a bound, written atomically and
//! owner-only, locked while a refresh rewrites them.
//!
//! A refresh holds an exclusive `flock` on the credential file itself, so that two
//! processes sharing a sign-in (two backends, or magi-code and a Mission Control
//! window) refresh it once between them, whichever home directory they use. Writing
//! replaces the file (a new inode), so whoever waited on the old one sees, once it has
//! the lock, that the path names another file, and locks that one instead.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use magi_protocol::limits::CREDENTIAL_FILE_BYTES;

/// How long a waiting lock sleeps between attempts at first, and at most.
const LOCK_POLL_FIRST: Duration = Duration::from_millis(5);
const LOCK_POLL_MOST: Duration = Duration::from_millis(100);

/// Why a credential file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// There is no file.
    Missing,
    /// It is there but could not be opened or read (the system's reason).
    Unreadable(String),
    /// It is a directory or another thing that is not a file.
    NotAFile,
    /// It is larger than `CREDENTIAL_FILE_BYTES`.
    TooLarge,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Missing => f.write_str("there is no such file"),
            ReadError::Unreadable(why) => write!(f, "it cannot be read ({why})"),
            ReadError::NotAFile => f.write_str("it is not a regular file"),
            ReadError::TooLarge => write!(
                f,
                "it is larger than {} bytes, which no credential file is",
                CREDENTIAL_FILE_BYTES
            ),
        }
    }
}

/// A credential file's content, and whether others than its owner may read it.
#[derive(Debug)]
pub struct Content {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Whether the group or everyone may read it (a credential file should be 0600).
    pub readable_by_others: bool,
}

/// Reads the file at `path` whole, within `CREDENTIAL_FILE_BYTES`.
pub fn read(path: &Path) -> Result<Content, ReadError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Unreadable(e.kind().to_string())),
    };
    read_open(&file)
}

fn read_open(file: &File) -> Result<Content, ReadError> {
    let meta = file
        .metadata()
        .map_err(|e| ReadError::Unreadable(e.kind().to_string()))?;
    if !meta.is_file() {
        return Err(ReadError::NotAFile);
    }
    let mut bytes = Vec::new();
    file.take(CREDENTIAL_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Unreadable(e.kind().to_string()))?;
    if bytes.len() > CREDENTIAL_FILE_BYTES {
        return Err(ReadError::TooLarge);
    }
    Ok(Content {
        bytes,
        readable_by_others: meta.permissions().mode() & 0o044 != 0,
    })
}

/// Creates `dir` owner-only (0700) when it is missing; refuses something there that is
/// not a directory.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if std::fs::metadata(dir)?.is_dir() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a directory", dir.display()),
        ))
    }
}

/// Replaces the file at `path` with `content` atomically, owner-only (0600): a new
/// temporary file in the same folder, synced, renamed over `path`, then the folder
/// synced. A reader sees the old content or the new, never a mix; on failure the old
/// file stays as it was.
pub fn write_atomic(path: &Path, content: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(content)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        // Only our own temporary file is removed; the credential file is untouched.
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    File::open(&dir)?.sync_all()
}

/// An exclusive lock on a credential file, released when dropped.
#[derive(Debug)]
pub struct Locked {
    file: File,
}

impl Locked {
    /// The locked file's content, read again now that no one else is rewriting it.
    pub fn content(&self) -> Result<Content, ReadError> {
        let mut file = &self.file;
        io::Seek::rewind(&mut file).map_err(|e| ReadError::Unreadable(e.kind().to_string()))?;
        read_open(&self.file)
    }
}

/// Why a credential file could not be locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// The file could not be opened or locked.
    Read(ReadError),
    /// Another process held the lock for the whole wait.
    Busy,
}

/// Locks the credential file at `path`, waiting at most `wait` for another holder. The
/// lock is taken on the file the path names once it is held (see the module's note on
/// replaced files).
pub async fn lock(path: &Path, wait: Duration) -> Result<Locked, LockError> {
    let deadline = Instant::now() + wait;
    let mut pause = LOCK_POLL_FIRST;
    loop {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(LockError::Read(ReadError::Missing));
            }
            Err(e) => return Err(LockError::Read(ReadError::Unreadable(e.kind().to_string()))),
        };
        match file.try_lock() {
            Ok(()) => {
                // Still the file the path names? A writer may have replaced it while we
                // waited: then lock the new one.
                let held = file
                    .metadata()
                    .map_err(|e| LockError::Read(ReadError::Unreadable(e.kind().to_string())))?;
                match std::fs::metadata(path) {
                    Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => {
                        return Ok(Locked { file });
                    }
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(LockError::Read(ReadError::Missing));
                    }
                    Err(e) => {
                        return Err(LockError::Read(ReadError::Unreadable(e.kind().to_string())));
                    }
                }
            }
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                return Err(LockError::Read(ReadError::Unreadable(e.kind().to_string())));
            }
        }
        if Instant::now() >= deadline {
            return Err(LockError::Busy);
        }
        // flock has no waiting with a deadline: poll, backing off, within the bound.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LOCK_POLL_MOST);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_is_owner_only_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        write_atomic(&path, b"{}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let content = read(&path).unwrap();
        assert_eq!(content.bytes, b"{}");
        assert!(!content.readable_by_others);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read(&path).unwrap().readable_by_others);
        // Nothing but the file is left in the folder.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn bad_files_have_their_own_reason() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read(&dir.path().join("none")).unwrap_err(),
            ReadError::Missing
        );
        assert_eq!(read(dir.path()).unwrap_err(), ReadError::NotAFile);
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b' '; CREDENTIAL_FILE_BYTES + 1]).unwrap();
        assert_eq!(read(&big).unwrap_err(), ReadError::TooLarge);
        let closed = dir.path().join("closed");
        std::fs::write(&closed, b"{}").unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
        // Root reads anything; the reason is tested where it can be.
        if File::open(&closed).is_err() {
            assert!(matches!(read(&closed), Err(ReadError::Unreadable(_))));
        }
    }

    #[tokio::test]
    async fn a_lock_waits_for_its_holder_and_follows_a_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        write_atomic(&path, b"old").unwrap();
        let held = lock(&path, Duration::from_secs(1)).await.unwrap();
        // Held: another attempt gives up at its deadline.
        assert_eq!(
            lock(&path, Duration::from_millis(30)).await.unwrap_err(),
            LockError::Busy
        );
        // The holder replaces the file, then lets go: the next lock holds the new one.
        write_atomic(&path, b"new").unwrap();
        let waiter = tokio::spawn({
            let path = path.clone();
            async move { lock(&path, Duration::from_secs(5)).await }
        });
        drop(held);
        let locked = waiter.await.unwrap().unwrap();
        assert_eq!(locked.content().unwrap().bytes, b"new");
        assert_eq!(
            lock(&dir.path().join("none"), Duration::ZERO)
                .await
                .unwrap_err(),
            LockError::Read(ReadError::Missing)
        );
    }
}
