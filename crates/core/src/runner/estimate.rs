//! The token estimate the runner decides by, without a tokenizer: one token per
//! [`BYTES_PER_TOKEN`] bytes of a request's text. Compaction's trigger, pruning's
//! protected budget and the room a request leaves for its output all use it.

use magi_provider::Item;

/// Bytes of text counted as one token by the estimate.
pub(super) const BYTES_PER_TOKEN: usize = 4;

/// Tokens an image is counted as by the estimate, whatever its size: about what the
/// providers charge for one within `view_image`'s bounds (Anthropic's ~1,600 for the
/// largest it keeps whole; OpenAI's high detail tiles come under that). Its base64 text
/// is not the model's measure.
pub(super) const IMAGE_TOKENS: usize = 1_600;

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
                // Counted whole, though a provider may count less of another turn's.
                Item::Reasoning(reasoning) => reasoning.raw.len(),
                Item::Image { .. } | Item::UserImage { .. } => IMAGE_TOKENS * BYTES_PER_TOKEN,
            })
            .sum::<usize>();
    bytes / BYTES_PER_TOKEN
}
