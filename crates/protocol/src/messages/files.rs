//! `client.files`: the backend's file tools reading and writing through the client
//! (an editor's buffers), and the client's answers. The contract is
//! docs/protocol/client-files.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::present;

/// The `extensions["client.files"]` descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFilesDescriptor {
    /// Always 1.
    pub schema_version: u64,
    /// Longest JSON encoding of one part's `content`, in bytes.
    pub part_encoded_bytes: u64,
    /// Most bytes a read asks for.
    pub read_bytes: u64,
    /// Most bytes a write carries.
    pub write_bytes: u64,
    /// Milliseconds the client has to answer (each part of a read anew).
    pub timeout_ms: u64,
}

impl ClientFilesDescriptor {
    /// Schema 1's descriptor, from the bounds in `limits`.
    pub fn schema_1() -> ClientFilesDescriptor {
        use crate::limits::{
            CLIENT_FILE_PART_ENCODED_BYTES, CLIENT_FILE_READ_BYTES, CLIENT_FILE_TIMEOUT_MS,
            CLIENT_FILE_WRITE_BYTES,
        };
        ClientFilesDescriptor {
            schema_version: 1,
            part_encoded_bytes: CLIENT_FILE_PART_ENCODED_BYTES as u64,
            read_bytes: CLIENT_FILE_READ_BYTES as u64,
            write_bytes: CLIENT_FILE_WRITE_BYTES as u64,
            timeout_ms: CLIENT_FILE_TIMEOUT_MS,
        }
    }
}

/// Data of `client.file.read`: the client is to send the text of a file as it holds
/// it (an unsaved buffer wins over the disk).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFileRead {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The tool call this read serves.
    pub call_id: String,
    /// This read, as `client.file.result` names it.
    pub file_id: String,
    /// The file, absolute, inside the workspace.
    pub path: String,
    /// Most bytes of text to send; a longer text is cut there (at a character
    /// boundary) and its last part says `truncated`.
    pub max_bytes: u64,
    /// Milliseconds the client has to answer.
    pub timeout_ms: u64,
}

/// Data of `client.file.write`, one part of the new text of a file. The client writes
/// once the last part came, then answers with one `client.file.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFileWrite {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The tool call this write serves.
    pub call_id: String,
    /// This write, as `client.file.result` names it.
    pub file_id: String,
    /// The file, absolute, inside the workspace.
    pub path: String,
    /// The part's number, from 0.
    pub part: u64,
    /// Whether this is the last part.
    pub last_part: bool,
    /// This part of the text.
    pub content: String,
    /// Milliseconds the client has to answer, from the last part.
    pub timeout_ms: u64,
}

/// Why a read or write was withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClientFileCancelReason {
    /// The run was cancelled.
    Cancelled,
    /// No answer came in time.
    TimedOut,
}

/// Data of `client.file.cancel`: the read or write no longer takes an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFileCancel {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The read or write.
    pub file_id: String,
    /// Why.
    pub reason: ClientFileCancelReason,
}

/// Params of `client.file.result`: one part of a read's text, or the one answer of a
/// write, or a failure of either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientFileResultParams {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The read or write answered.
    pub file_id: String,
    /// The part's number, from 0 (always 0 for a write or a failure).
    pub part: u64,
    /// Whether this is the last part (always true for a write or a failure).
    pub last_part: bool,
    /// This part of a read's text (empty for a write); its JSON encoding at most
    /// `part_encoded_bytes`.
    #[serde(default)]
    pub content: String,
    /// On a read's last part: the text went on past `max_bytes`.
    #[serde(default)]
    pub truncated: bool,
    /// Why the client could not read or write, at most 1,024 bytes; the call fails
    /// naming it. Present only on a failure.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub error: Option<String>,
}

/// The result of `client.file.result`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFileResultResult {
    /// Always true: the part was taken.
    pub recorded: bool,
}

/// Splits `text` into parts whose JSON encodings (quotes included) are each at most
/// `max_encoded` bytes, at character boundaries; an empty text is one empty part.
/// `max_encoded` must leave room for the quotes and one escaped character (8 bytes).
pub fn split_encoded(text: &str, max_encoded: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut size = 2;
    for (index, ch) in text.char_indices() {
        let encoded = match ch {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if u32::from(c) < 0x20 => 6,
            c => c.len_utf8(),
        };
        if size + encoded > max_encoded && index > start {
            parts.push(&text[start..index]);
            start = index;
            size = 2;
        }
        size += encoded;
    }
    if start < text.len() || parts.is_empty() {
        parts.push(&text[start..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_fit_their_encoded_bound_and_join_to_the_text() {
        let text = format!("{}\u{1}\"é\n{}", "a".repeat(20), "\u{7}".repeat(9));
        for bound in [8, 9, 16, 40, 1_000] {
            let parts = split_encoded(&text, bound);
            assert_eq!(parts.concat(), text);
            for part in &parts {
                let encoded = serde_json::to_string(part).unwrap().len();
                assert!(encoded <= bound, "{part:?} is {encoded} bytes over {bound}");
            }
        }
        assert_eq!(split_encoded("", 8), vec![""]);
        assert_eq!(split_encoded("abc", 1_000), vec!["abc"]);
    }
}
