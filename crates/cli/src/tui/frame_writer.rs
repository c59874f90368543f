//! The writer Mission Control draws through: each frame reaches the terminal in one
//! write, inside a synchronized update.
//!
//! Standard output is line-buffered with a 1 KiB buffer, so a frame drawn through it
//! would leave in pieces of at most that size, and a terminal (or a multiplexer
//! reading the pseudo-terminal) could show part of a frame, new rows beside old ones,
//! until the rest arrived. Here a frame's bytes are gathered until ratatui flushes at
//! the frame's end and then written at once, between the marks of a synchronized
//! update (DEC private mode 2026), which a terminal that knows them uses to show the
//! frame only once it is whole; one that does not ignores them.

use std::io::{self, Write};
use std::os::fd::AsFd;

/// Begins a synchronized update: the terminal holds what follows until the end mark.
const SYNC_BEGIN: &[u8] = b"\x1b[?2026h";
/// Ends a synchronized update: the terminal shows what it held.
const SYNC_END: &[u8] = b"\x1b[?2026l";

/// The buffer's capacity kept after a frame larger than it (a whole screen redrawn with
/// colour is tens of KiB); a larger one is given back once written.
const KEPT_CAPACITY: usize = 256 * 1024;

/// Gathers a frame and writes it whole to standard output at `flush`.
pub(super) struct FrameWriter {
    /// Standard output, unbuffered: a copy of its descriptor.
    out: std::fs::File,
    /// The bytes of the frame being drawn. It holds one frame at most: each flush
    /// empties it, and a frame is bounded by the screen's size.
    frame: Vec<u8>,
}

impl FrameWriter {
    /// A writer to this process's standard output.
    pub(super) fn stdout() -> io::Result<FrameWriter> {
        let out = io::stdout().as_fd().try_clone_to_owned()?;
        Ok(FrameWriter {
            out: std::fs::File::from(out),
            frame: Vec::new(),
        })
    }
}

impl Write for FrameWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.frame.is_empty() && !bytes.is_empty() {
            self.frame.extend_from_slice(SYNC_BEGIN);
        }
        self.frame.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.frame.is_empty() {
            return Ok(());
        }
        self.frame.extend_from_slice(SYNC_END);
        let written = self.out.write_all(&self.frame);
        // A frame that could not be written is not tried again with the next one.
        self.frame.clear();
        if self.frame.capacity() > KEPT_CAPACITY {
            self.frame.shrink_to(KEPT_CAPACITY);
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn a_frame_is_written_whole_between_the_marks_only_at_flush() {
        let (mut read, write) = io::pipe().unwrap();
        let mut writer = FrameWriter {
            out: std::fs::File::from(std::os::fd::OwnedFd::from(write)),
            frame: Vec::new(),
        };
        writer.write_all(b"\x1b[1;1Hfirst").unwrap();
        writer.write_all(b" and second").unwrap();
        writer.flush().unwrap();
        // Nothing gathered, nothing written: an empty flush sends no empty update.
        writer.flush().unwrap();
        writer.write_all(b"next").unwrap();
        writer.flush().unwrap();
        drop(writer);
        let mut written = Vec::new();
        read.read_to_end(&mut written).unwrap();
        assert_eq!(
            written,
            b"\x1b[?2026h\x1b[1;1Hfirst and second\x1b[?2026l\x1b[?2026hnext\x1b[?2026l"
        );
    }
}
