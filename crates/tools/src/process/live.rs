//! A running command's newest output, kept for its live card: the capture thread adds
//! what it reads, and the call service takes the last lines now and then. Bounded: only
//! the last [`LIVE_OUTPUT_BYTES`] bytes are kept, whatever the command prints.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use magi_protocol::limits::{LIVE_OUTPUT_BYTES, LIVE_OUTPUT_LINES};

/// The newest output of one running command.
#[derive(Debug, Default)]
pub struct LiveOutput {
    state: Mutex<Tail>,
}

#[derive(Debug, Default)]
struct Tail {
    bytes: VecDeque<u8>,
    /// How many times output was added: a reader tells new output from old by it.
    generation: u64,
}

impl LiveOutput {
    /// Adds bytes the command printed (stdout and stderr as they were read).
    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut tail = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let keep = bytes.len().min(LIVE_OUTPUT_BYTES);
        tail.bytes.extend(&bytes[bytes.len() - keep..]);
        let over = tail.bytes.len().saturating_sub(LIVE_OUTPUT_BYTES);
        tail.bytes.drain(..over);
        tail.generation += 1;
    }

    /// How many times output was added so far.
    pub fn generation(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation
    }

    /// The last [`LIVE_OUTPUT_LINES`] lines as a terminal would show them (a carriage
    /// return starts its line over: a progress bar shows its latest state), with the
    /// generation they are of. Not made safe: the caller sanitizes and redacts them.
    pub fn tail(&self) -> (u64, Vec<String>) {
        let (generation, bytes) = {
            let tail = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            (
                tail.generation,
                tail.bytes.iter().copied().collect::<Vec<u8>>(),
            )
        };
        let text = String::from_utf8_lossy(&bytes);
        // The first line may have lost its beginning (and a character cut in two shows
        // as a replacement): it is kept only when the whole output is here.
        let whole = bytes.len() < LIVE_OUTPUT_BYTES;
        let mut lines: Vec<&str> = text.lines().collect();
        if !whole && lines.len() > 1 {
            lines.remove(0);
        }
        let first = lines.len().saturating_sub(LIVE_OUTPUT_LINES);
        let shown = lines[first..]
            .iter()
            .map(|line| line.rsplit('\r').next().unwrap_or_default().to_owned())
            .collect();
        (generation, shown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_the_newest_lines_as_a_terminal_shows_them() {
        let live = LiveOutput::default();
        assert_eq!(live.tail(), (0, Vec::new()));
        live.push(b"one\ntwo\n");
        live.push(b"progress 10%\rprogress 90%\nthree");
        let (generation, lines) = live.tail();
        assert_eq!(generation, 2);
        assert_eq!(lines, ["one", "two", "progress 90%", "three"]);
        for n in 0..100 {
            live.push(format!("line {n}\n").as_bytes());
        }
        let (_, lines) = live.tail();
        assert_eq!(lines.len(), LIVE_OUTPUT_LINES);
        assert_eq!(lines.last().map(String::as_str), Some("line 99"));
    }

    #[test]
    fn what_is_kept_stays_bounded() {
        let live = LiveOutput::default();
        for _ in 0..1_000 {
            live.push(&[b'x'; 1_000]);
        }
        live.push(b"\nend\n");
        let kept = live.state.lock().unwrap().bytes.len();
        assert_eq!(kept, LIVE_OUTPUT_BYTES);
        // The cut first line is left out; the last line is whole.
        let (_, lines) = live.tail();
        assert_eq!(lines, ["end"]);
    }
}
