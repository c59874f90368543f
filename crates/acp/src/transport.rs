//! The stdio transport of `magi-code acp`: newline-delimited JSON-RPC messages, each at
//! most [`ACP_MESSAGE_BYTES`], read from stdin; one writer task owns stdout.
//!
//! The reader never holds more than one message's bound: a line past it is dropped as it
//! streams in and reported once as [`Line::Oversized`], so the connection answers with an
//! error and goes on with the next line.

use magi_protocol::limits::ACP_MESSAGE_BYTES;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Bytes asked of stdin per read.
const READ_CHUNK: usize = 64 * 1024;
/// Messages waiting for the writer; a sender past it waits (backpressure), never drops.
const WRITER_QUEUE: usize = 256;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line's bytes, without the newline (or a trailing CR).
    Message(Vec<u8>),
    /// A line longer than the bound; its bytes were dropped.
    Oversized,
}

/// Splits a byte stream into bounded lines.
pub(crate) struct LineReader<R> {
    inner: R,
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no newline.
    scanned: usize,
    /// Set while the rest of an oversized line is being dropped.
    dropping: bool,
    limit: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader with the ACP bound.
    pub(crate) fn new(inner: R) -> LineReader<R> {
        LineReader::with_limit(inner, ACP_MESSAGE_BYTES)
    }

    /// A reader with another bound, for tests.
    pub(crate) fn with_limit(inner: R, limit: usize) -> LineReader<R> {
        LineReader {
            inner,
            buffer: Vec::new(),
            scanned: 0,
            dropping: false,
            limit,
        }
    }

    /// The next non-blank line, or `None` at the end of input.
    pub(crate) async fn next(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            if let Some(offset) = self.buffer[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + offset;
                let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
                self.scanned = 0;
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if std::mem::take(&mut self.dropping) || line.len() > self.limit {
                    return Ok(Some(Line::Oversized));
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Some(Line::Message(line)));
            }
            self.scanned = self.buffer.len();
            if self.buffer.len() > self.limit {
                self.buffer.clear();
                self.scanned = 0;
                self.dropping = true;
            }
            let mut chunk = vec![0; READ_CHUNK];
            let read = self.inner.read(&mut chunk).await?;
            if read == 0 {
                // The last line may lack its newline.
                if std::mem::take(&mut self.dropping) {
                    return Ok(Some(Line::Oversized));
                }
                if self.buffer.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                self.buffer.push(b'\n');
                continue;
            }
            self.buffer.extend_from_slice(&chunk[..read]);
        }
    }
}

/// The sending side of the one writer: whole messages, written in the order sent.
#[derive(Clone)]
pub(crate) struct Writer {
    queue: mpsc::Sender<serde_json::Value>,
}

impl Writer {
    /// Starts the writer task on `output`; it ends when every [`Writer`] is dropped or a
    /// write fails.
    pub(crate) fn start<W: AsyncWrite + Unpin + Send + 'static>(
        mut output: W,
    ) -> (Writer, tokio::task::JoinHandle<()>) {
        let (queue, mut messages) = mpsc::channel::<serde_json::Value>(WRITER_QUEUE);
        let task = tokio::spawn(async move {
            while let Some(message) = messages.recv().await {
                let mut line = message.to_string().into_bytes();
                if line.len() > ACP_MESSAGE_BYTES {
                    eprintln!(
                        "magi-code acp: an outgoing message of {} bytes is past the {} byte \
                         bound and was not sent",
                        line.len(),
                        ACP_MESSAGE_BYTES
                    );
                    continue;
                }
                line.push(b'\n');
                if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                    return;
                }
            }
        });
        (Writer { queue }, task)
    }

    /// Queues one message; false once the writer has stopped.
    pub(crate) async fn send(&self, message: serde_json::Value) -> bool {
        self.queue.send(message).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<Line> {
        let mut reader = LineReader::with_limit(input, limit);
        let mut out = Vec::new();
        while let Some(line) = reader.next().await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_trimmed_and_blank_ones_skipped() {
        let got = lines(b"{\"a\":1}\r\n\n  \n{\"b\":2}", 100).await;
        assert_eq!(
            got,
            [
                Line::Message(b"{\"a\":1}".to_vec()),
                Line::Message(b"{\"b\":2}".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn a_line_past_the_bound_is_reported_once_and_the_next_one_is_read() {
        let mut input = vec![b'x'; 300_000];
        input.extend_from_slice(b"\n{}\n");
        let got = lines(&input, 1_000).await;
        assert_eq!(got, [Line::Oversized, Line::Message(b"{}".to_vec())]);
        let got = lines(&[b'y'; 2_000], 1_000).await;
        assert_eq!(got, [Line::Oversized]);
    }
}
