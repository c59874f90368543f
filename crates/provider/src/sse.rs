//! An incremental parser for `text/event-stream` (the WHATWG server-sent events
//! format): bytes in, whole events out, with a bound on what it buffers.
//!
//! Written here rather than taken from a crate because the model clients need exactly
//! this much — line splitting on CRLF, LF or CR, `event:` and `data:` fields, comments —
//! plus a hard bound on one event's size, so a broken or hostile stream cannot grow
//! memory without limit.

use crate::ProviderError;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, empty when the event named none.
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// The parser's state between chunks.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Received bytes; those before `pos` are consumed.
    buf: Vec<u8>,
    pos: usize,
    /// The event being assembled.
    event: String,
    /// Data lines so far, each followed by `\n` (the spec's data buffer).
    data: String,
    /// The stream's first bytes are still to be checked for a byte order mark.
    at_start: bool,
    /// The last line ended with a CR at the end of the buffer: a LF starting the next
    /// chunk belongs to that line break.
    skip_lf: bool,
    /// How many bytes after `pos` are known to hold no line break, so a long line
    /// arriving in many chunks is scanned once, not once per chunk.
    scanned: usize,
    /// The most bytes one event (its pending line plus its data) may hold.
    max: usize,
}

impl SseParser {
    /// A parser that refuses events larger than `max` bytes.
    pub(crate) fn new(max: usize) -> SseParser {
        SseParser {
            buf: Vec::new(),
            pos: 0,
            event: String::new(),
            data: String::new(),
            at_start: true,
            skip_lf: false,
            scanned: 0,
            max,
        }
    }

    /// Appends received bytes; take the events out with [`SseParser::next_event`].
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            // Consumed bytes go before new ones come, so the buffer holds at most one
            // partial line plus one chunk.
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event, `None` when more bytes are needed. An event over the
    /// bound or a line that is not UTF-8 is a malformed stream.
    pub(crate) fn next_event(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        if self.at_start {
            let rest = &self.buf[self.pos..];
            if rest.len() < 3 && b"\xEF\xBB\xBF".starts_with(rest) {
                // Too few bytes yet to tell whether they are a byte order mark.
                return Ok(None);
            }
            if rest.starts_with(b"\xEF\xBB\xBF") {
                self.pos += 3;
            }
            self.at_start = false;
        }
        loop {
            if self.skip_lf && self.pos < self.buf.len() {
                if self.buf[self.pos] == b'\n' {
                    self.pos += 1;
                }
                self.skip_lf = false;
            }
            let rest = &self.buf[self.pos..];
            let found = rest[self.scanned..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r');
            let Some(end) = found.map(|at| self.scanned + at) else {
                if rest.len() + self.data.len() > self.max {
                    return Err(ProviderError::MalformedStream);
                }
                self.scanned = rest.len();
                return Ok(None);
            };
            self.scanned = 0;
            let line =
                std::str::from_utf8(&rest[..end]).map_err(|_| ProviderError::MalformedStream)?;
            let mut consumed = end + 1;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => consumed += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if line.is_empty() {
                self.pos += consumed;
                if self.data.is_empty() {
                    // No data: nothing is dispatched, and the event name is dropped.
                    self.event.clear();
                    continue;
                }
                self.data.pop();
                let event = SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                };
                return Ok(Some(event));
            }
            if line.len() + self.data.len() > self.max {
                return Err(ProviderError::MalformedStream);
            }
            if !line.starts_with(':') {
                let (field, value) = match line.split_once(':') {
                    Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                    None => (line, ""),
                };
                match field {
                    "event" => {
                        self.event.clear();
                        self.event.push_str(value);
                    }
                    "data" => {
                        self.data.push_str(value);
                        self.data.push('\n');
                    }
                    // `id`, `retry` and unknown fields do not matter for one response.
                    _ => {}
                }
            }
            self.pos += consumed;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    /// Feeds `input` in pieces of `step` bytes and collects every event.
    fn parse_in_steps(input: &[u8], step: usize) -> Result<Vec<SseEvent>, ProviderError> {
        let mut parser = SseParser::new(1024);
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            parser.push(piece);
            while let Some(event) = parser.next_event()? {
                out.push(event);
            }
        }
        Ok(out)
    }

    fn parse(input: &[u8]) -> Vec<SseEvent> {
        parse_in_steps(input, input.len().max(1)).unwrap()
    }

    #[test]
    fn events_with_and_without_names() {
        let input = b"event: a\ndata: {\"x\":1}\n\ndata: plain\n\n";
        assert_eq!(parse(input), [ev("a", "{\"x\":1}"), ev("", "plain")]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let input =
            "event: one\r\ndata: é\r\n\r\n: comment\ndata: two\rdata: lines\r\rdata:three\n\n"
                .as_bytes();
        let whole = parse(input);
        assert_eq!(
            whole,
            [ev("one", "é"), ev("", "two\nlines"), ev("", "three")]
        );
        for step in 1..input.len() {
            assert_eq!(parse_in_steps(input, step).unwrap(), whole, "step {step}");
        }
    }

    #[test]
    fn a_cr_at_a_chunk_end_and_a_lf_in_the_next_are_one_break() {
        let mut parser = SseParser::new(1024);
        parser.push(b"data: a\r");
        assert_eq!(parser.next_event().unwrap(), None);
        parser.push(b"\n\r\n");
        assert_eq!(parser.next_event().unwrap(), Some(ev("", "a")));
        assert_eq!(parser.next_event().unwrap(), None);
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        let input = b": keep-alive\n\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n";
        assert_eq!(parse(input), [ev("", "x")]);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched_and_loses_its_name() {
        let input = b"event: lonely\n\ndata: x\n\n";
        assert_eq!(parse(input), [ev("", "x")]);
    }

    #[test]
    fn an_empty_data_line_dispatches_empty_data() {
        assert_eq!(parse(b"data:\n\n"), [ev("", "")]);
        assert_eq!(parse(b"data\n\n"), [ev("", "")]);
    }

    #[test]
    fn only_one_leading_space_is_stripped() {
        assert_eq!(parse(b"data:  two\n\n"), [ev("", " two")]);
        assert_eq!(parse(b"data:none\n\n"), [ev("", "none")]);
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped_even_when_split() {
        let input = b"\xEF\xBB\xBFdata: x\n\n";
        for step in 1..input.len() {
            assert_eq!(parse_in_steps(input, step).unwrap(), [ev("", "x")]);
        }
    }

    #[test]
    fn an_unfinished_event_is_not_dispatched() {
        assert_eq!(parse(b"data: x\n"), []);
        assert_eq!(parse(b"data: x"), []);
    }

    #[test]
    fn an_event_over_the_bound_is_malformed() {
        let long = format!("data: {}\n\n", "x".repeat(2000));
        assert_eq!(
            parse_in_steps(long.as_bytes(), 100),
            Err(ProviderError::MalformedStream)
        );
        let many = "data: xxxxxxxxxx\n".repeat(200);
        assert_eq!(
            parse_in_steps(many.as_bytes(), 7),
            Err(ProviderError::MalformedStream)
        );
        let no_break = "x".repeat(2000);
        assert_eq!(
            parse_in_steps(no_break.as_bytes(), 64),
            Err(ProviderError::MalformedStream)
        );
    }

    #[test]
    fn invalid_utf8_is_malformed_but_a_split_character_is_not() {
        assert_eq!(
            parse_in_steps(b"data: \xFF\n\n", 100),
            Err(ProviderError::MalformedStream)
        );
        let input = "data: ünïcode ✓\n\n".as_bytes();
        assert_eq!(parse_in_steps(input, 1).unwrap(), [ev("", "ünïcode ✓")]);
    }
}
