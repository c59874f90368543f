//! The pure frame codec: bytes in, LF-terminated frames out.
//!
//! The decoder never does I/O. It is fed whatever a read returned and yields complete
//! frames, so any split of the same input into reads yields the same frames. It holds at
//! most one partial frame of [`INPUT_FRAME_BYTES`] bytes: the byte after that, if it is
//! not the LF, is reported as [`Decoded::TooLarge`] and the decoder takes nothing more.

use crate::limits::{INPUT_FRAME_BYTES, JSON_DEPTH, OUTPUT_FRAME_BYTES};

/// One unit the decoder produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A complete line, without its LF (a CR before the LF is kept: it is JSON whitespace).
    Frame(Vec<u8>),
    /// The current line reached byte 65,537 without an LF. Nothing after it is decoded.
    TooLarge,
}

/// Incremental LF framing with the input frame bound.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    partial: Vec<u8>,
    overflowed: bool,
}

impl FrameDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Feeds the bytes of one read and appends every unit they complete to `out`.
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Decoded>) {
        while !self.overflowed && !bytes.is_empty() {
            let room = INPUT_FRAME_BYTES - self.partial.len();
            // Only the first `room + 1` bytes can hold this frame's LF; anything further
            // would be byte 65,537 or later of the frame.
            let window = &bytes[..bytes.len().min(room + 1)];
            match window.iter().position(|&b| b == b'\n') {
                Some(lf) => {
                    self.partial.extend_from_slice(&window[..lf]);
                    out.push(Decoded::Frame(std::mem::take(&mut self.partial)));
                    bytes = &bytes[lf + 1..];
                }
                None if window.len() > room => {
                    self.overflowed = true;
                    self.partial = Vec::new();
                    out.push(Decoded::TooLarge);
                }
                None => {
                    self.partial.extend_from_slice(window);
                    bytes = &bytes[window.len()..];
                }
            }
        }
    }

    /// Whether bytes of an unterminated frame are buffered.
    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty()
    }

    /// Whether the decoder stopped at an oversize frame.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }
}

/// Whether a frame holds nothing but JSON whitespace (an empty line or a lone CR included).
pub fn is_blank(frame: &[u8]) -> bool {
    frame
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Whether the JSON text nests deeper than [`JSON_DEPTH`] containers.
///
/// This is a byte scan that only tracks strings and brackets, so it runs before (and
/// whatever the outcome of) full parsing, with no recursion.
pub fn exceeds_depth(frame: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in frame {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > JSON_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// An output frame that would exceed [`OUTPUT_FRAME_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputTooLarge;

/// Serializes `value` as one output frame, LF included, within the output bound.
pub fn encode_frame<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, OutputTooLarge> {
    let mut bytes = serde_json::to_vec(value).map_err(|_| OutputTooLarge)?;
    bytes.push(b'\n');
    if bytes.len() > OUTPUT_FRAME_BYTES {
        return Err(OutputTooLarge);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(chunks: &[&[u8]]) -> (Vec<Decoded>, bool) {
        let mut decoder = FrameDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.feed(chunk, &mut out);
        }
        (out, decoder.has_partial())
    }

    #[test]
    fn splits_on_lf_and_keeps_cr() {
        let (frames, partial) = decode_all(&[b"{}\r\n{\"a\"", b":1}\n\n"]);
        assert_eq!(
            frames,
            vec![
                Decoded::Frame(b"{}\r".to_vec()),
                Decoded::Frame(b"{\"a\":1}".to_vec()),
                Decoded::Frame(Vec::new()),
            ]
        );
        assert!(!partial);
    }

    #[test]
    fn frame_of_exactly_the_bound_is_accepted() {
        let mut input = vec![b' '; INPUT_FRAME_BYTES];
        input.push(b'\n');
        let (frames, _) = decode_all(&[&input]);
        assert_eq!(frames, vec![Decoded::Frame(vec![b' '; INPUT_FRAME_BYTES])]);
    }

    #[test]
    fn cr_counts_toward_the_bound() {
        let mut input = vec![b' '; INPUT_FRAME_BYTES];
        input.extend_from_slice(b"\r\n");
        let (frames, _) = decode_all(&[&input]);
        assert_eq!(frames, vec![Decoded::TooLarge]);
    }

    #[test]
    fn byte_65537_is_too_large_even_without_lf_and_stops_decoding() {
        let input = vec![b'x'; INPUT_FRAME_BYTES + 1];
        let mut decoder = FrameDecoder::new();
        let mut out = Vec::new();
        decoder.feed(&input, &mut out);
        decoder.feed(b"\n{}\n", &mut out);
        assert_eq!(out, vec![Decoded::TooLarge]);
        assert!(decoder.overflowed());
        assert!(!decoder.has_partial());
    }

    #[test]
    fn unterminated_input_stays_partial() {
        let (frames, partial) = decode_all(&[b"{\"id\":"]);
        assert!(frames.is_empty());
        assert!(partial);
    }

    #[test]
    fn depth_counts_the_outer_object() {
        let nest = |n: usize| format!("{{\"a\":{}1{}}}", "[".repeat(n - 1), "]".repeat(n - 1));
        assert!(!exceeds_depth(nest(32).as_bytes()));
        assert!(exceeds_depth(nest(33).as_bytes()));
        assert!(!exceeds_depth(
            b"{\"a\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}"
        ));
        assert!(!exceeds_depth(
            br#"{"a":"\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}"#
        ));
    }

    #[test]
    fn blank_lines() {
        assert!(is_blank(b""));
        assert!(is_blank(b"\r"));
        assert!(is_blank(b" \t "));
        assert!(!is_blank(b" {} "));
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_frames(
            lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..20),
            cuts in proptest::collection::vec(any::<usize>(), 0..30),
        ) {
            let mut input = Vec::new();
            for line in &lines {
                input.extend(line.iter().copied().filter(|&b| b != b'\n'));
                input.push(b'\n');
            }
            let (whole, _) = decode_all(&[&input]);
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for p in points {
                chunks.push(&input[start..p]);
                start = p;
            }
            chunks.push(&input[start..]);
            let (split, _) = decode_all(&chunks);
            prop_assert_eq!(whole, split);
        }

        #[test]
        fn any_split_of_an_oversize_frame_reports_it_once(
            len in (INPUT_FRAME_BYTES + 1)..(INPUT_FRAME_BYTES + 4000),
            cut in any::<usize>(),
        ) {
            let input = vec![b'a'; len];
            let cut = cut % (len + 1);
            let (frames, _) = decode_all(&[&input[..cut], &input[cut..], b"\n{}\n"]);
            prop_assert_eq!(frames, vec![Decoded::TooLarge]);
        }
    }
}
