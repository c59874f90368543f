//! Where session logs and leases live under `MC_HOME`: one folder of logs per working
//! directory under `sessions/`, and lease files apart in `locks/`, so scanning the
//! session folders only ever meets logs.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use magi_protocol::limits::DISCOVERY_DIRECTORY_ENTRIES;
use magi_protocol::names::is_valid_session_id;
use sha2::{Digest, Sha256};

use crate::Home;
use crate::lease::LeaseKind;

/// Hex characters of a workspace folder name: 128 bits of the digest keep distinct
/// working directories apart while keeping paths short.
const WORKSPACE_DIGEST_HEX: usize = 32;

impl Home {
    /// The folder of the session logs of one working directory:
    /// `<root>/sessions/<first 32 hex characters of SHA-256(canonical cwd)>`.
    pub fn workspace_dir(&self, canonical_cwd: &Path) -> PathBuf {
        self.sessions_dir().join(workspace_digest(canonical_cwd))
    }

    /// The log of `session_id` in the working directory: `<workspace_dir>/<id>.jsonl`.
    /// The caller checks `session_id` against the session ID grammar first.
    pub fn session_path(&self, canonical_cwd: &Path, session_id: &str) -> PathBuf {
        self.workspace_dir(canonical_cwd)
            .join(format!("{session_id}.jsonl"))
    }

    /// Looks for `<root>/sessions/*/<session_id>.jsonl` in every workspace folder, for
    /// telling "belongs to another working directory" from "does not exist".
    ///
    /// Nothing is followed: a symlinked workspace folder is skipped, and an entry found
    /// under the log's name is reported whatever its type (reading it refuses anything
    /// but a regular file). An ID outside the session ID grammar names no log. Visiting
    /// more than `DISCOVERY_DIRECTORY_ENTRIES` folder entries is an error.
    pub fn find_session_elsewhere(&self, session_id: &str) -> Result<Option<PathBuf>, io::Error> {
        if !is_valid_session_id(session_id) {
            return Ok(None);
        }
        let file_name = format!("{session_id}.jsonl");
        let mut visited = 0_usize;
        for entry in std::fs::read_dir(self.sessions_dir())? {
            visited += 1;
            if visited > DISCOVERY_DIRECTORY_ENTRIES {
                return Err(io::Error::other("too many entries in the sessions folder"));
            }
            let dir = entry?.path();
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => continue,
                // Removed since it was listed.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            }
            let candidate = dir.join(&file_name);
            match std::fs::symlink_metadata(&candidate) {
                Ok(_) => return Ok(Some(candidate)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The checkpoint store of one working directory:
    /// `<root>/checkpoints/<the workspace folder's name>`.
    pub fn checkpoints_dir(&self, canonical_cwd: &Path) -> PathBuf {
        self.root()
            .join("checkpoints")
            .join(workspace_digest(canonical_cwd))
    }

    /// The lease file of `kind` on `session_id`: `<root>/locks/<id>.<kind>.lock`.
    pub fn lease_path(&self, session_id: &str, kind: LeaseKind) -> PathBuf {
        self.root()
            .join("locks")
            .join(format!("{session_id}.{}.lock", kind.suffix()))
    }

    fn sessions_dir(&self) -> PathBuf {
        self.root().join("sessions")
    }
}

/// The workspace folder name of a canonical working directory. It discloses no path.
fn workspace_digest(canonical_cwd: &Path) -> String {
    let digest = Sha256::digest(canonical_cwd.as_os_str().as_bytes());
    let mut hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(WORKSPACE_DIGEST_HEX);
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::prepare(&dir.path().join("mc")).unwrap();
        (dir, home)
    }

    #[test]
    fn paths_follow_the_layout() {
        let (_dir, home) = home();
        let cwd = Path::new("/work/project");
        let ws = home.workspace_dir(cwd);
        assert_eq!(ws.parent(), Some(home.root().join("sessions").as_path()));
        let name = ws.file_name().unwrap().to_str().unwrap();
        // SHA-256("/work/project"), first 128 bits.
        let full: String = Sha256::digest(b"/work/project")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(name, &full[..32]);
        assert_eq!(name.len(), 32);
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );

        assert_eq!(home.session_path(cwd, "abc"), ws.join("abc.jsonl"));
        assert_eq!(
            home.lease_path("abc", LeaseKind::Writer),
            home.root().join("locks/abc.writer.lock")
        );
        assert_eq!(
            home.lease_path("abc", LeaseKind::Active),
            home.root().join("locks/abc.active.lock")
        );
        assert_eq!(
            home.lease_path("abc", LeaseKind::Append),
            home.root().join("locks/abc.append.lock")
        );
    }

    #[test]
    fn different_working_directories_get_different_folders() {
        let (_dir, home) = home();
        let a = home.workspace_dir(Path::new("/work/a"));
        let b = home.workspace_dir(Path::new("/work/b"));
        let a_sub = home.workspace_dir(Path::new("/work/a/sub"));
        assert_ne!(a, b);
        assert_ne!(a, a_sub);
        assert_eq!(a, home.workspace_dir(Path::new("/work/a")));
    }

    #[test]
    fn sessions_are_found_in_any_workspace_folder() {
        let (_dir, home) = home();
        assert_eq!(home.find_session_elsewhere("s1").unwrap(), None);
        let other = home.session_path(Path::new("/elsewhere"), "s1");
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        std::fs::write(&other, "").unwrap();
        // A stray file in sessions/ is not a workspace folder.
        std::fs::write(home.root().join("sessions/stray"), "").unwrap();
        assert_eq!(home.find_session_elsewhere("s1").unwrap(), Some(other));
        assert_eq!(home.find_session_elsewhere("s2").unwrap(), None);
        // IDs outside the grammar cannot reach outside the folders.
        assert_eq!(home.find_session_elsewhere("../s1").unwrap(), None);
        assert_eq!(home.find_session_elsewhere("").unwrap(), None);
    }

    #[test]
    fn symlinked_workspace_folders_are_not_followed() {
        let (dir, home) = home();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("s1.jsonl"), "").unwrap();
        std::os::unix::fs::symlink(&outside, home.root().join("sessions/linked")).unwrap();
        assert_eq!(home.find_session_elsewhere("s1").unwrap(), None);
    }

    #[test]
    fn the_search_is_bounded() {
        let (_dir, home) = home();
        let sessions = home.root().join("sessions");
        for i in 0..DISCOVERY_DIRECTORY_ENTRIES {
            std::fs::write(sessions.join(format!("f{i}")), "").unwrap();
        }
        assert_eq!(home.find_session_elsewhere("s1").unwrap(), None);
        std::fs::write(sessions.join("one-more"), "").unwrap();
        assert!(home.find_session_elsewhere("s1").is_err());
    }
}
