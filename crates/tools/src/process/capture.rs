//! A command's captures: its stdout, stderr and both interleaved, each written to its own
//! bounded file by one thread that reads both pipes, read back no further than the
//! bound, and what each kept said in the call's facts and notes.
//!
//! The thread starts once the command did. Each file, and the directory they share, is
//! made at the first byte that goes into it: a stream that stays empty leaves no file,
//! and a silent command no directory, without making and removing them. (Made ahead
//! and removed when empty, a silent command's directory and two files cost three
//! inodes allocated and freed, and a directory block freed, which a file system
//! mounted with `discard` trims before the removal returns.) The command does not wait
//! for them: it writes into its pipes while they are made.
//!
//! Each file's lines and SHA-256 are taken as its bytes pass, so nothing is read back
//! to count or digest them.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use sha2::Digest;

use crate::facts::{FACT_STRING_BYTES, cut};

/// Size of one read from an output pipe.
const READ_CHUNK: usize = 64 * 1024;

/// One captured file: bytes past `limit` are counted, not written.
pub(super) struct Capture {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    dropped: u64,
    limit: u64,
    /// The file could not be created or written; later bytes are counted as dropped.
    failed: bool,
    /// Line ends in what was written, and whether it ended with one: its lines are
    /// counted as they pass, not read back.
    newlines: u64,
    ends_with_newline: bool,
    /// The SHA-256 of what was written, taken as it passed.
    digest: sha2::Sha256,
}

impl Capture {
    fn new(path: PathBuf, limit: u64) -> Capture {
        Capture {
            path,
            file: None,
            written: 0,
            dropped: 0,
            limit,
            failed: false,
            newlines: 0,
            ends_with_newline: true,
            digest: sha2::Sha256::new(),
        }
    }

    /// Creates the file, at its first byte, unless done or failed already (and its
    /// directory when missing).
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
                let kept = &bytes[..kept];
                self.digest.update(kept);
                self.written += kept.len() as u64;
                self.newlines += kept.iter().filter(|b| **b == b'\n').count() as u64;
                self.ends_with_newline = kept.last() == Some(&b'\n');
            } else {
                self.failed = true;
                self.dropped += kept as u64;
            }
        }
        self.dropped += (bytes.len() - kept) as u64;
    }
}

/// What a capture kept, once its stream ended.
#[derive(Clone, Copy)]
pub(crate) struct Kept {
    pub(crate) written: u64,
    pub(crate) dropped: u64,
    failed: bool,
    /// The lines its file holds (as `str::lines` counts them); none when the file
    /// could not be created.
    lines: Option<u64>,
    /// The SHA-256 of its file, when the file holds exactly what was written: none
    /// when it is empty (and removed), could not be made, or a write to it failed.
    sha256: Option<[u8; 32]>,
}

impl Default for Kept {
    fn default() -> Kept {
        Kept {
            written: 0,
            dropped: 0,
            failed: false,
            lines: Some(0),
            sha256: None,
        }
    }
}

impl Kept {
    pub(super) fn of(capture: &Capture) -> Kept {
        let never_created = capture.failed && capture.file.is_none();
        Kept {
            written: capture.written,
            dropped: capture.dropped,
            failed: capture.failed,
            lines: (!never_created)
                .then(|| capture.newlines + u64::from(!capture.ends_with_newline)),
            sha256: (capture.file.is_some() && !capture.failed && capture.written > 0)
                .then(|| capture.digest.clone().finalize().into()),
        }
    }

    /// Lines its file holds; none when it could not be created.
    pub(super) fn lines(&self) -> Option<u64> {
        self.lines
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
            // Created with the capture files, by the thread that fills them.
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

/// The digests of the captures that could be read: taken as their bytes passed, or, for
/// a capture whose digest was not taken (its stream not drained, a failed write), read
/// from its file.
pub(crate) fn capture_digests(
    paths: &[PathBuf; 3],
    kept: &[Kept; 3],
) -> Vec<crate::facts::CaptureDigest> {
    paths
        .iter()
        .zip(kept)
        .filter_map(|(path, kept)| match kept.sha256 {
            Some(sha256) => crate::facts::CaptureDigest::taken(path, kept.written, sha256),
            None => crate::facts::CaptureDigest::of(path),
        })
        .collect()
}

/// The first non-empty line of a captured file, cut to a fact's bound.
pub(super) fn first_line(path: &Path) -> Option<String> {
    let head = read_bounded(path, READ_CHUNK as u64);
    head.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| cut(line, FACT_STRING_BYTES))
}

/// The two output pipes of a started command.
pub(super) struct Pipes {
    pub(super) stdout: File,
    pub(super) stderr: File,
}

/// The thread filling a started command's captures.
pub(super) struct Capturing {
    /// The interleaved capture, shared so what it kept can be read before it ends.
    pub(super) output: Arc<Mutex<Capture>>,
    /// Each stream's index (0 stdout, 1 stderr) and what it kept, as it ends.
    pub(super) finished: mpsc::Receiver<(usize, Kept)>,
}

impl Capturing {
    /// Starts the thread, which reads `pipes` into the files of `paths`, each made (with
    /// their directory, when missing) at its first byte.
    /// What it reads also goes to `live`, when given.
    pub(super) fn start(
        paths: &[PathBuf; 3],
        limit: u64,
        pipes: Pipes,
        live: Option<Arc<super::live::LiveOutput>>,
    ) -> Capturing {
        let [stdout, stderr, output] = paths.clone().map(|path| Capture::new(path, limit));
        let output = Arc::new(Mutex::new(output));
        let (done, finished) = mpsc::channel();
        let shared = Arc::clone(&output);
        // A pump that panics drops its sender: the waits see the streams' ends as
        // unknown (not drained) rather than hang.
        std::thread::spawn(move || {
            let _ = magi_crash::contain(|| {
                pump(pipes, [stdout, stderr], &shared, &done, live.as_deref())
            });
        });
        Capturing { output, finished }
    }
}

/// Reads both pipes as they have bytes, each into its own capture and the interleaved
/// one (written unbuffered, so each file holds what was read), until both end; tells
/// each stream's end as it comes.
fn pump(
    pipes: Pipes,
    mut streams: [Capture; 2],
    output: &Mutex<Capture>,
    done: &mpsc::Sender<(usize, Kept)>,
    live: Option<&super::live::LiveOutput>,
) {
    let mut open = [Some(pipes.stdout), Some(pipes.stderr)];
    let mut buffer = vec![0; READ_CHUNK];
    while open.iter().any(Option::is_some) {
        for stream in readable(&open) {
            let Some(pipe) = open[stream].as_mut() else {
                continue;
            };
            match pipe.read(&mut buffer) {
                Ok(0) => {}
                Ok(n) => {
                    streams[stream].write(&buffer[..n]);
                    // One lock per chunk keeps each chunk whole in the interleaved file.
                    lock(output).write(&buffer[..n]);
                    if let Some(live) = live {
                        live.push(&buffer[..n]);
                    }
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {}
            }
            // The stream ended (or cannot be read any further).
            open[stream] = None;
            // The receiver may have stopped waiting; then nobody needs the answer.
            let _ = done.send((stream, Kept::of(&streams[stream])));
        }
    }
}

/// The streams among `open` that have bytes or ended, waited for without a bound (a
/// command's output ends when it does, or when its group is killed).
fn readable(open: &[Option<File>; 2]) -> Vec<usize> {
    let watched: Vec<(usize, &File)> = open
        .iter()
        .enumerate()
        .filter_map(|(stream, pipe)| pipe.as_ref().map(|pipe| (stream, pipe)))
        .collect();
    let mut fds: Vec<PollFd> = watched
        .iter()
        .map(|(_, pipe)| PollFd::new(pipe.as_fd(), PollFlags::POLLIN))
        .collect();
    loop {
        match poll(&mut fds, PollTimeout::NONE) {
            Err(nix::errno::Errno::EINTR) => continue,
            // Without kernel memory to wait on both, read each in turn: a read still
            // ends when the command does.
            Err(_) => return watched.iter().map(|(stream, _)| *stream).collect(),
            Ok(_) => {
                return watched
                    .iter()
                    .zip(&fds)
                    .filter(|(_, fd)| fd.any().unwrap_or(true))
                    .map(|((stream, _), _)| *stream)
                    .collect();
            }
        }
    }
}

/// The capture behind `mutex`, also when a thread panicked holding it.
fn lock(mutex: &Mutex<Capture>) -> std::sync::MutexGuard<'_, Capture> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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

/// The notes on what the captures kept: each cut (past the bound, or not written), a
/// capture file that could not be created, and output a process outside the group kept
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::CAPTURE_FILES;

    /// A capture of at most `limit` bytes in `dir`, fed `chunks`.
    fn captured(dir: &Path, limit: u64, chunks: &[&[u8]]) -> (Kept, String) {
        let path = dir.join("stdout.txt");
        let mut capture = Capture::new(path.clone(), limit);
        for chunk in chunks {
            capture.write(chunk);
        }
        (Kept::of(&capture), read_bounded(&path, limit))
    }

    #[test]
    fn lines_are_counted_as_the_file_holds_them() {
        let dir = tempfile::tempdir().unwrap();
        for (chunks, limit) in [
            (&[&b"a\nb"[..], b"c\n"][..], 100),
            (&[&b"one\n"[..], b"two"][..], 100),
            (&[&b"1\n2\n3\n4\n"[..]][..], 5),
            (&[&b"1\n2\n"[..], b"3\n"][..], 4),
            (&[&b"\n\n"[..]][..], 100),
        ] {
            let (kept, text) = captured(dir.path(), limit, chunks);
            assert_eq!(kept.lines(), Some(text.lines().count() as u64), "{text:?}");
        }
        let (silent, _) = captured(dir.path(), 100, &[]);
        assert_eq!(silent.lines(), Some(0));
    }

    #[test]
    fn a_capture_file_that_cannot_be_made_has_no_known_lines() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the directory should be: nothing can be created under it.
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, "").unwrap();
        let mut capture = Capture::new(blocked.join("stdout.txt"), 100);
        capture.write(b"lost\n");
        let kept = Kept::of(&capture);
        assert_eq!(kept.lines(), None);
        assert_eq!(kept.dropped, 5);
        assert_eq!(kept.sha256, None);
    }

    #[test]
    fn digests_taken_in_passing_are_those_of_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stdout.txt");
        for (chunks, limit) in [
            (&[&b"a\nb"[..], b"c\n"][..], 100),
            // Past the bound: the digest is of what the file kept.
            (&[&b"1\n2\n3\n4\n"[..]][..], 5),
        ] {
            let (kept, _) = captured(dir.path(), limit, chunks);
            let taken = capture_digests(&[path.clone(), path.clone(), path.clone()], &[kept; 3]);
            let read = crate::facts::CaptureDigest::of(&path).unwrap();
            assert_eq!(taken, vec![read.clone(), read.clone(), read]);
        }
        // An empty stream leaves no file and no digest.
        std::fs::remove_file(&path).unwrap();
        let (silent, _) = captured(dir.path(), 100, &[]);
        assert_eq!(silent.sha256, None);
        assert!(!path.exists());
    }

    #[test]
    fn nothing_is_made_until_a_stream_writes() {
        let dir = tempfile::tempdir().unwrap();
        let call = dir.path().join("call");
        let paths = CAPTURE_FILES.map(|name| call.join(name));
        let [_, mut stderr, mut output] = paths.clone().map(|path| Capture::new(path, 100));
        // A silent command: nothing written, no file and no directory.
        let silent = Kept::of(&stderr);
        assert_eq!((silent.written, silent.lines()), (0, Some(0)));
        assert!(!call.exists());
        // The first byte of stderr makes the directory, its file and the interleaved one.
        stderr.write(b"oops\n");
        output.write(b"oops\n");
        assert_eq!(std::fs::read_to_string(&paths[1]).unwrap(), "oops\n");
        assert_eq!(std::fs::read_to_string(&paths[2]).unwrap(), "oops\n");
        assert!(!paths[0].exists());
    }
}
