//! Opening files the store did not just create: only a regular file, and only the one
//! that was checked.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Why a file could not be opened for reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// Nothing is at the path.
    Missing,
    /// The path or the opened file could not be inspected or opened.
    Unreadable,
    /// The path is a symlink or not a regular file, or changed while being opened.
    Unsafe,
}

/// Opens `path` for reading if it is a regular file, and makes sure the opened file is
/// the one that was checked, so a swap between the check and the open is refused.
pub(crate) fn open_regular(path: &Path) -> Result<File, OpenError> {
    let before = std::fs::symlink_metadata(path).map_err(not_found_or_unreadable)?;
    if !before.file_type().is_file() {
        return Err(OpenError::Unsafe);
    }
    let file = File::open(path).map_err(not_found_or_unreadable)?;
    let opened = file.metadata().map_err(|_| OpenError::Unreadable)?;
    if !opened.file_type().is_file() || !same_inode(&before, &opened) {
        return Err(OpenError::Unsafe);
    }
    Ok(file)
}

fn not_found_or_unreadable(error: io::Error) -> OpenError {
    match error.kind() {
        io::ErrorKind::NotFound => OpenError::Missing,
        _ => OpenError::Unreadable,
    }
}

/// Whether two metadata describe the same file.
pub(crate) fn same_inode(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]
mod tests {
    use super::*;

    #[test]
    fn only_a_present_regular_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_regular(&file).is_ok());
        assert_eq!(open_regular(&link).err(), Some(OpenError::Unsafe));
        assert_eq!(open_regular(dir.path()).err(), Some(OpenError::Unsafe));
        assert_eq!(
            open_regular(&dir.path().join("absent")).err(),
            Some(OpenError::Missing)
        );
    }
}
