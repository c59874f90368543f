//! Cutting text to bounds: the pieces live events carry and the prefixes records keep.

/// Splits text into pieces of at most `max` bytes, never inside a UTF-8 character.
/// Empty text is one empty piece.
pub(super) fn chunks(text: &str, max: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let cut = rest.floor_char_boundary(max);
        pieces.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    pieces.push(rest);
    pieces
}

/// Text cut to at most `max` bytes on a character boundary.
pub(super) fn bounded(text: &str, max: usize) -> String {
    text[..text.floor_char_boundary(max)].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_bytes_and_characters() {
        assert_eq!(chunks("", 4), vec![""]);
        assert_eq!(chunks("abcdef", 4), vec!["abcd", "ef"]);
        assert_eq!(chunks("ééé", 3), vec!["é", "é", "é"]);
        assert_eq!(bounded("héllo", 2), "h");
    }
}
