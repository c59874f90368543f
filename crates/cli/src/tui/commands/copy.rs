//! `/copy`: the last reply to the clipboard through the terminal (OSC 52), which works
//! over SSH and inside tmux where the terminal allows it. Mission Control cannot learn
//! whether the terminal took it, and says so.

use std::io::Write;

use magi_client::fold::{Item, Role, Transcript};

/// Writes the last reply to the terminal's clipboard and says what was done.
pub(super) fn copy_last_reply(transcript: &Transcript) -> String {
    let Some(reply) = last_reply(transcript) else {
        return "no reply to copy yet".to_owned();
    };
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(osc52(reply).as_bytes())
        .and_then(|()| out.flush());
    match written {
        // Whether the terminal took it cannot be known: say what was done.
        Ok(()) => format!(
            "copied {} characters (sent to the terminal's clipboard)",
            reply.chars().count()
        ),
        Err(e) => format!("the reply could not be written to the terminal: {e}"),
    }
}

/// The text of the last assistant reply, live or saved.
fn last_reply(transcript: &Transcript) -> Option<&str> {
    transcript
        .items()
        .iter()
        .rev()
        .find(|item| item.role() == Role::Assistant && !item.text().is_empty())
        .map(Item::text)
}

/// The OSC 52 sequence that sets the clipboard to `text`.
fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

/// Standard base64 with padding (RFC 4648), all OSC 52 takes.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648() {
        for (input, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
            ("héllo ✓", "aMOpbGxvIOKckw=="),
        ] {
            assert_eq!(base64(input.as_bytes()), encoded, "{input}");
        }
        assert_eq!(osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
