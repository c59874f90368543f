//! A command's captures: its stdout, stderr and both interleaved, each written to its own
//! bounded file by the thread reading its pipe (created at the stream's first bytes),
//! read back no further than the bound, and what each kept said in the call's facts and
//! notes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use crate::facts::{FACT_STRING_BYTES, cut};

/// Size of one read from an output pipe.
const READ_CHUNK: usize = 64 * 1024;

/// One captured file: bytes past `limit` are counted, not written.
///
/// The file (and the directory it goes in) is created by the thread that fills it, at
/// the stream's first bytes: creating files is slow on some disks (a few hundred
/// microseconds each), so a stream that stays empty leaves no file, and none is made
/// before the command starts.
pub(super) struct Capture {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    dropped: u64,
    limit: u64,
    /// The file could not be created or written; later bytes are counted as dropped.
    failed: bool,
}

impl Capture {
    pub(super) fn deferred(path: PathBuf, limit: u64) -> Capture {
        Capture {
            path,
            file: None,
            written: 0,
            dropped: 0,
            limit,
            failed: false,
        }
    }

    /// Creates the file unless done or failed already, and its directory only when it
    /// is missing: the first capture of a call makes it, the others find it.
    fn open(&mut self) {
        if self.file.is_some() || self.failed {
            return;
        }
        let created = match File::create(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => self
                .path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| File::create(&self.path)),
            created => created,
        };
        match created {
            Ok(file) => self.file = Some(file),
            Err(_) => self.failed = true,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        self.open();
        let room = usize::try_from(self.limit.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let kept = if self.failed {
            0
        } else {
            bytes.len().min(room)
        };
        if kept > 0 {
            let written = self
                .file
                .as_mut()
                .is_some_and(|file| file.write_all(&bytes[..kept]).is_ok());
            if written {
                self.written += kept as u64;
            } else {
                self.failed = true;
                self.dropped += kept as u64;
            }
        }
        self.dropped += (bytes.len() - kept) as u64;
    }
}

/// What a capture kept, once its stream ended.
#[derive(Clone, Copy, Default)]
pub(crate) struct Kept {
    pub(crate) written: u64,
    pub(crate) dropped: u64,
    failed: bool,
}

impl Kept {
    pub(super) fn of(capture: &Capture) -> Kept {
        Kept {
            written: capture.written,
            dropped: capture.dropped,
            failed: capture.failed,
        }
    }
}

/// Where the captures go: the assets directory, or a temporary one removed on drop.
pub(crate) struct Files {
    pub(crate) dir: PathBuf,
    /// Held only to remove the temporary directory when the call is over.
    _temporary: Option<tempfile::TempDir>,
}

impl Files {
    pub(super) fn new(assets_dir: Option<&Path>) -> io::Result<Files> {
        match assets_dir {
            // Created with the capture files, by the threads that fill them.
            Some(dir) => Ok(Files {
                dir: dir.to_owned(),
                _temporary: None,
            }),
            None => {
                let temporary = tempfile::Builder::new().prefix("magi-bash-").tempdir()?;
                Ok(Files {
                    dir: temporary.path().to_owned(),
                    _temporary: Some(temporary),
                })
            }
        }
    }
}

/// The digests of the captures that could be read.
pub(crate) fn capture_digests(paths: &[PathBuf; 3]) -> Vec<crate::facts::CaptureDigest> {
    paths
        .iter()
        .filter_map(|p| crate::facts::CaptureDigest::of(p))
        .collect()
}

/// Lines a stream's capture holds: none written is none, with no file to read.
pub(super) fn captured_lines(kept: &Kept, path: &Path, limit: u64) -> Option<u64> {
    if kept.written == 0 && !kept.failed {
        return Some(0);
    }
    count_lines(path, limit)
}

/// Lines in a captured file (as `str::lines` counts them), read in chunks so a 16 MiB
/// capture is never held whole; none when it cannot be read.
pub(super) fn count_lines(path: &Path, limit: u64) -> Option<u64> {
    let mut file = File::open(path).ok()?.take(limit);
    let mut buffer = vec![0; READ_CHUNK];
    let mut lines = 0u64;
    let mut last = b'\n';
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                lines += buffer[..n].iter().filter(|b| **b == b'\n').count() as u64;
                last = buffer[n - 1];
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(lines + u64::from(last != b'\n'))
}

/// The first non-empty line of a captured file, cut to a fact's bound.
pub(super) fn first_line(path: &Path) -> Option<String> {
    let head = read_bounded(path, READ_CHUNK as u64);
    head.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| cut(line, FACT_STRING_BYTES))
}

/// Copies one pipe into its own capture and the interleaved one until it ends, then
/// sends what its capture kept.
pub(super) fn spawn_reader(
    pipe: Option<impl Read + Send + 'static>,
    mut capture: Capture,
    output: &Arc<Mutex<Capture>>,
    done: &mpsc::Sender<(usize, Kept)>,
    stream: usize,
) {
    let output = Arc::clone(output);
    let done = done.clone();
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut buffer = vec![0; READ_CHUNK];
            loop {
                match pipe.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n) => {
                        capture.write(&buffer[..n]);
                        // One lock per chunk keeps each chunk whole in the interleaved file.
                        match output.lock() {
                            Ok(mut output) => output.write(&buffer[..n]),
                            Err(poisoned) => poisoned.into_inner().write(&buffer[..n]),
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        if let Some(file) = capture.file.as_mut() {
            let _ = file.flush();
        }
        // The receiver may have stopped waiting; then nobody needs the answer.
        let _ = done.send((stream, Kept::of(&capture)));
    });
}

/// The interleaved capture, read back no further than the bound it was written to.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(file) = File::open(path) {
        let _ = file.take(limit).read_to_end(&mut bytes);
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// open. Shared by every report of process output.
pub(crate) fn capture_notes(kept: &[Kept; 3], drained: bool) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, kept) in ["stdout", "stderr", "output"].iter().zip(kept) {
        if kept.dropped > 0 {
            let why = if kept.failed {
                "could not be written"
            } else {
                "were past the capture bound and not kept"
            };
            notes.push(format!(
                "[{name} capture cut: {} bytes kept, {} more {why}]",
                kept.written, kept.dropped
            ));
        } else if kept.failed {
            // Nothing was lost, but the file the capture promised does not exist.
            notes.push(format!("[{name} capture file could not be created]"));
        }
    }
    if !drained {
        notes.push(
            "[output may be incomplete: a process outside the group kept the output open]"
                .to_owned(),
        );
    }
    notes
}
