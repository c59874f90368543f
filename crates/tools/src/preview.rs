//! The display-only preview of a change a tool applied: a unified diff of the file
//! before and after, made safe and bounded before it is recorded.
//!
//! Schema 1 bounds a preview to [`PREVIEW_LINES`] lines of at most
//! [`PREVIEW_LINE_BYTES`] bytes each, and its recorded payload
//! (`{"schema_version":1,"diff":…,"truncated":…}`) to
//! [`PREVIEW_PAYLOAD_BYTES`] bytes of JSON. Control characters are stripped and
//! secret-like tokens redacted before any line is chosen, so a bound never keeps half a
//! secret that redaction would have caught whole.

use std::time::Duration;

use magi_protocol::text::sanitize;
use serde::Serialize;
use similar::TextDiff;

use crate::facts::{AppliedPreview, FACT_STRING_BYTES, cut};

/// The preview payload schema these bounds belong to.
pub(crate) const PREVIEW_SCHEMA_VERSION: u32 = 1;
/// Most diff lines a preview keeps (the first ones).
pub(crate) const PREVIEW_LINES: usize = 128;
/// Longest diff line a preview keeps, in UTF-8 bytes; longer ones are cut on a
/// character boundary.
pub(crate) const PREVIEW_LINE_BYTES: usize = 1_024;
/// Largest serialized payload, in bytes, escaping included.
pub(crate) const PREVIEW_PAYLOAD_BYTES: usize = 8_192;
/// Lines of unchanged context around each change.
const CONTEXT_LINES: usize = 3;
/// How long the diff may search for a minimal edit script. Past it `similar` settles
/// for a coarser but still correct diff, so replacing a large file with unrelated
/// content cannot stall the call for the sake of a display.
const DIFF_TIMEOUT: Duration = Duration::from_millis(200);

/// The recorded form of a preview: what a client reads back.
#[derive(Serialize)]
struct Payload<'a> {
    schema_version: u32,
    diff: &'a str,
    truncated: bool,
}

/// The preview of `path` changing from `old` to `new`: their unified diff (three lines
/// of context, `path` as both headers), sanitized and bounded as Schema 1 says, with
/// `truncated` set when any line was cut or left out.
pub(crate) fn applied(path: &str, old: &str, new: &str) -> AppliedPreview {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(path, path)
        .to_string();

    // The whole change's size, before anything is left out.
    let (mut added, mut removed) = (0u64, 0u64);
    for line in diff.split_terminator('\n') {
        if line.starts_with('+') && !line.starts_with("+++ ") {
            added += 1;
        } else if line.starts_with('-') && !line.starts_with("--- ") {
            removed += 1;
        }
    }
    let mut truncated = false;
    let mut lines: Vec<String> = Vec::new();
    // `similar` ends every line it writes with `\n`, so splitting on it gives the
    // diff's lines; each is made safe on its own, which keeps the separators intact.
    for line in diff.split_terminator('\n') {
        if lines.len() == PREVIEW_LINES {
            truncated = true;
            break;
        }
        let safe = sanitize(line);
        let kept = cut(&safe, PREVIEW_LINE_BYTES);
        truncated |= kept.len() < safe.len();
        lines.push(kept);
    }

    // What each line adds to the payload: its escaped text and its escaped `\n`.
    let costs: Vec<usize> = lines
        .iter()
        .map(|line| escaped_len(line) + escaped_len("\n"))
        .collect();
    // How many leading lines fit after a payload's fixed part of `overhead` bytes.
    let fitting = |overhead: usize| {
        let mut used = overhead;
        costs
            .iter()
            .take_while(|&&cost| {
                used = used.saturating_add(cost);
                used <= PREVIEW_PAYLOAD_BYTES
            })
            .count()
    };
    if fitting(overhead(truncated)) < lines.len() {
        // Dropping lines sets the flag, which is part of the payload too.
        truncated = true;
        lines.truncate(fitting(overhead(true)));
    }
    let mut diff = join(&lines);
    // The sums above mirror serde_json's escaping; measuring the real payload keeps
    // the bound even if they ever disagree.
    while payload_len(&diff, truncated) > PREVIEW_PAYLOAD_BYTES && lines.pop().is_some() {
        truncated = true;
        diff = join(&lines);
    }

    AppliedPreview {
        path: cut(path, FACT_STRING_BYTES),
        diff,
        truncated,
        added,
        removed,
    }
}

/// Bytes of the serialized payload for `diff`.
fn payload_len(diff: &str, truncated: bool) -> usize {
    serde_json::to_string(&Payload {
        schema_version: PREVIEW_SCHEMA_VERSION,
        diff,
        truncated,
    })
    // Serializing a struct of a string and two scalars does not fail; were it to, the
    // preview is treated as too large so that nothing unmeasured is kept.
    .map_or(usize::MAX, |json| json.len())
}

/// Bytes of the payload around an empty diff.
fn overhead(truncated: bool) -> usize {
    payload_len("", truncated)
}

/// Bytes `text` takes inside a JSON string.
fn escaped_len(text: &str) -> usize {
    // The quotes around the serialized string are not part of the text.
    serde_json::to_string(text).map_or(usize::MAX / 2, |json| json.len().saturating_sub(2))
}

/// The lines, each ended with `\n` as `similar` writes them.
fn join(lines: &[String]) -> String {
    lines
        .iter()
        .flat_map(|line| [line.as_str(), "\n"])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded payload, built independently of the bounding code.
    fn payload(preview: &AppliedPreview) -> serde_json::Value {
        serde_json::json!({
            "schema_version": PREVIEW_SCHEMA_VERSION,
            "diff": preview.diff,
            "truncated": preview.truncated,
        })
    }

    fn payload_bytes(preview: &AppliedPreview) -> usize {
        serde_json::to_string(&payload(preview)).unwrap().len()
    }

    #[test]
    fn a_small_change_is_a_whole_unified_diff() {
        let preview = applied("a.txt", "one\ntwo\nthree\n", "one\n2\nthree\n");
        assert_eq!(
            preview.diff,
            "--- a.txt\n+++ a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        );
        assert!(!preview.truncated);
        assert_eq!(preview.path, "a.txt");
        let no_change = applied("a.txt", "same\n", "same\n");
        assert_eq!(no_change.diff, "");
        assert!(!no_change.truncated);
    }

    #[test]
    fn long_diffs_keep_their_first_lines() {
        let new: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let preview = applied("a.txt", "", &new);
        assert_eq!(preview.diff.lines().count(), PREVIEW_LINES);
        assert!(preview.truncated);
        assert!(
            preview
                .diff
                .starts_with("--- a.txt\n+++ a.txt\n@@ -0,0 +1,200 @@\n+line 0\n")
        );
        assert!(payload_bytes(&preview) <= PREVIEW_PAYLOAD_BYTES);
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let long = "é".repeat(2_500);
        let preview = applied("a.txt", "", &format!("{long}\n"));
        let line = preview.diff.lines().nth(3).unwrap();
        // `+` and 511 two-byte characters: a 512th would pass the bound.
        assert_eq!(line, format!("+{}", "é".repeat(511)));
        assert_eq!(line.len(), PREVIEW_LINE_BYTES - 1);
        assert!(preview.truncated);
        let ascii = applied("a.txt", "", &format!("{}\n", "x".repeat(5_000)));
        assert_eq!(ascii.diff.lines().nth(3).unwrap().len(), PREVIEW_LINE_BYTES);
        assert!(ascii.truncated);
        assert!(payload_bytes(&ascii) <= PREVIEW_PAYLOAD_BYTES);
    }

    #[test]
    fn the_payload_stays_within_its_bound_escaping_included() {
        // Quotes and backslashes double when escaped: 100 lines of 1000 of them would
        // be far over the payload bound.
        let new: String = (0..100)
            .map(|_| format!("{}\n", "\"\\".repeat(500)))
            .collect();
        let preview = applied("a.txt", "", &new);
        assert!(preview.truncated);
        let bytes = payload_bytes(&preview);
        assert!(bytes <= PREVIEW_PAYLOAD_BYTES, "{bytes}");
        // Only whole lines are dropped, and no more than needed.
        assert!(preview.diff.ends_with('\n'));
        // Each line costs 2,003 escaped bytes: `+`, 1,000 doubled characters, `\n`.
        assert!(bytes + 2_003 > PREVIEW_PAYLOAD_BYTES, "{bytes}");
        assert_eq!(
            payload(&preview)["schema_version"],
            serde_json::json!(PREVIEW_SCHEMA_VERSION)
        );
    }

    #[test]
    fn secrets_and_controls_never_reach_the_preview() {
        let preview = applied(
            "env.sh",
            "export A=1\n",
            "export A=1\nexport KEY=sk-proj-4f9Qx7LmZ2aB8cD1eF6gH3jK\necho \u{1b}[31mred\r\n",
        );
        assert!(!preview.diff.contains("sk-proj"), "{}", preview.diff);
        assert!(
            preview.diff.contains("+export [redacted]\n"),
            "{}",
            preview.diff
        );
        assert!(preview.diff.contains("+echo red\n"), "{}", preview.diff);
        assert!(!preview.truncated);
    }
}
