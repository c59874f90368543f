//! Where the attached session keeps its assets, and a tool call's bulky output among
//! them.

use std::path::{Path, PathBuf};

use magi_protocol::names::is_valid_name;

use super::Sessions;

impl Sessions {
    /// Where a tool call of the attached session keeps its bulky output:
    /// `$MC_HOME/data/conversations/<session>/tool-calls/<call>/`. A provider's call ID
    /// outside the ID grammar is replaced by its digest, so it can never name a path.
    pub fn tool_assets_dir(&self, call_id: &str) -> Option<PathBuf> {
        Some(call_assets_dir(&self.conversation_dir()?, call_id))
    }

    /// The attached session's assets: `$MC_HOME/data/conversations/<session>/`.
    pub fn conversation_dir(&self) -> Option<PathBuf> {
        let attachment = self.attachment.as_ref()?;
        Some(
            self.home
                .root()
                .join("data/conversations")
                .join(&attachment.session_id),
        )
    }
}

/// The folder of call `call_id`'s assets inside a session's assets folder
/// `conversation`: the call ID itself when it is a safe name, else a hash of it.
pub(crate) fn call_assets_dir(conversation: &Path, call_id: &str) -> PathBuf {
    conversation.join("tool-calls").join(safe_segment(call_id))
}

/// The folder of the image given at `index` with prompt `message_id`
/// (`input.attachments`), inside a session's assets folder `conversation`.
pub(crate) fn input_assets_dir(conversation: &Path, message_id: &str, index: usize) -> PathBuf {
    conversation
        .join("inputs")
        .join(safe_segment(message_id))
        .join(index.to_string())
}

/// An ID as one path segment: itself when it is a safe name, else a hash of it.
fn safe_segment(id: &str) -> String {
    if is_valid_name(id) && id != "." && id != ".." {
        id.to_owned()
    } else {
        use sha2::Digest;
        sha2::Sha256::digest(id.as_bytes())
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}
