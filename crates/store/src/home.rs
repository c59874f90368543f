//! The `MC_HOME` layout: resolving it without side effects, creating the runtime
//! directories, and the context identity derived from it.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The folder of crash reports, relative to `MC_HOME`: made by the first report, not
/// at startup.
pub const CRASH_REPORTS_DIR: &str = "logs";

/// Subdirectories created at startup, relative to `MC_HOME`.
const RUNTIME_DIRS: [&str; 3] = ["sessions", "data", "locks"];

/// Why `MC_HOME` could not be resolved or prepared.
#[derive(Debug)]
pub enum HomeError {
    /// Neither `MC_HOME` nor `HOME` gives an absolute path.
    Unresolvable,
    /// A directory could not be created or canonicalized.
    Io(std::io::Error),
}

impl std::fmt::Display for HomeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HomeError::Unresolvable => f.write_str("MC_HOME is not set and HOME is not absolute"),
            HomeError::Io(e) => write!(f, "cannot prepare MC_HOME: {e}"),
        }
    }
}

impl std::error::Error for HomeError {}

/// Where `MC_HOME` is: `$MC_HOME` when set and absolute, else `$HOME/.magi-code`.
/// Touches nothing on disk.
pub fn resolve_home_path(
    mc_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Result<PathBuf, HomeError> {
    let non_empty = |v: Option<&OsStr>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    let path = match (non_empty(mc_home), non_empty(home)) {
        (Some(mc_home), _) => mc_home,
        (None, Some(home)) => home.join(".magi-code"),
        (None, None) => return Err(HomeError::Unresolvable),
    };
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(HomeError::Unresolvable)
    }
}

/// A prepared `MC_HOME`: its runtime directories exist and its path is canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// Creates `MC_HOME` and its runtime directories (owner-only) if missing, and
    /// canonicalizes the root.
    pub fn prepare(path: &Path) -> Result<Home, HomeError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true).mode(0o700);
        builder.create(path).map_err(HomeError::Io)?;
        let root = path.canonicalize().map_err(HomeError::Io)?;
        for dir in RUNTIME_DIRS {
            builder.create(root.join(dir)).map_err(HomeError::Io)?;
        }
        Ok(Home { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The global settings file.
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.toml")
    }
}

/// The opaque context identity: SHA-256 over the canonical working directory and the
/// canonical storage root, as lowercase hex. It discloses neither path.
pub fn context_id(canonical_cwd: &Path, home: &Home) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"magi-code.context.v1\0");
    hasher.update(canonical_cwd.as_os_str().as_bytes());
    hasher.update(b"\0");
    hasher.update(home.root.as_os_str().as_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_prefers_mc_home_and_needs_absolute_paths() {
        fn p(s: &str) -> Option<&OsStr> {
            Some(OsStr::new(s))
        }
        assert_eq!(
            resolve_home_path(p("/a"), p("/h")).unwrap(),
            PathBuf::from("/a")
        );
        assert_eq!(
            resolve_home_path(None, p("/h")).unwrap(),
            PathBuf::from("/h/.magi-code")
        );
        assert_eq!(
            resolve_home_path(p(""), p("/h")).unwrap(),
            PathBuf::from("/h/.magi-code")
        );
        assert!(resolve_home_path(p("rel"), p("/h")).is_err());
        assert!(resolve_home_path(None, None).is_err());
    }

    #[test]
    fn prepare_creates_owner_only_runtime_dirs() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = Home::prepare(&dir.path().join("mc")).unwrap();
        for sub in RUNTIME_DIRS {
            let meta = std::fs::metadata(home.root().join(sub)).unwrap();
            assert!(meta.is_dir());
            assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        }
    }

    #[test]
    fn aliases_share_a_context_and_distinct_roots_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let alias = dir.path().join("alias");
        let a = Home::prepare(&real).unwrap();
        std::os::unix::fs::symlink(&real, &alias).unwrap();
        let b = Home::prepare(&alias).unwrap();
        let c = Home::prepare(&dir.path().join("other")).unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        assert_eq!(context_id(&cwd, &a), context_id(&cwd, &b));
        assert_ne!(context_id(&cwd, &a), context_id(&cwd, &c));
        assert_ne!(context_id(&cwd, &a), context_id(&cwd.join("real"), &a));
        assert_eq!(context_id(&cwd, &a).len(), 64);
    }
}
