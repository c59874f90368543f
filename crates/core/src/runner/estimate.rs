//! The token estimate the runner decides by, without a tokenizer: one token per
//! [`BYTES_PER_TOKEN`] bytes of a request's text. Compaction's trigger, pruning's
//! protected budget and the room a request leaves for its output all use it.

use magi_provider::Item;

/// Bytes of text counted as one token by the estimate.
pub(super) const BYTES_PER_TOKEN: usize = 4;

/// The estimated tokens of a request's text.
pub(super) fn estimate_tokens(instructions: &str, items: &[Item]) -> usize {
    let bytes: usize = instructions.len()
        + items
            .iter()
            .map(|item| match item {
                Item::User { text } | Item::Assistant { text } => text.len(),
                Item::ToolCall {
                    name, arguments, ..
                } => name.len() + arguments.len(),
                Item::ToolResult { output, .. } => output.len(),
            })
            .sum::<usize>();
    bytes / BYTES_PER_TOKEN
}
