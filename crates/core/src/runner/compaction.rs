//! Auto-compaction: when the conversation nears the model's context window, the older
//! conversation is summarised by the model, the summary is recorded (`compaction`), and
//! the turn goes on from the summary.
//!
//! The trigger is an estimate, not a tokenizer: a conversation counts one token per
//! [`BYTES_PER_TOKEN`](super::estimate::BYTES_PER_TOKEN) bytes of its text (instructions, prompts, replies, tool calls and
//! results), and compaction runs before a model request whose estimate passes
//! [`TRIGGER_PERCENT`] of the model's context window (`crate::model_limits`). The summary
//! is bounded to [`SUMMARY_BYTES`]. A conversation whose estimate still passes the whole
//! window afterwards (compaction failed, or the summary with what follows is too long)
//! ends the turn with a `context_exceeded` diagnostic: never a request the model cannot
//! take, never a silent cut.
//! The model is asked to end the summary with a `Title:` line; a safe title there is
//! recorded with the summary (the session's title from then on) and taken out of it.

use std::sync::Arc;

use magi_protocol::messages::{ActivityKind, ActivityState};
use magi_protocol::text::redact_values;
use magi_provider::{Failure, Item, ModelEvent, ModelRequest};
use magi_store::records::RecordBody;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::estimate::estimate_tokens;
use super::exchange::Exchange;
use super::journal::Journal;
use super::output::Output;
use super::text::bounded;
use super::title::title_of;
use super::usage::{self, Reported};

/// Percent of the context window the estimate may reach before compaction.
pub(super) const TRIGGER_PERCENT: usize = 80;
/// Longest summary kept, in bytes.
pub(super) const SUMMARY_BYTES: usize = 16 * 1024;
/// What the summary is introduced with, in the conversation that follows it.
pub(super) const SUMMARY_HEADING: &str = "Summary of the earlier conversation:";

/// What the model is asked to do to compact.
const COMPACT_PROMPT: &str = "Summarise the conversation so far for your own later use: the \
    user's requests, what was done, which files were read or changed and how, results of \
    commands, decisions, and what remains to do. Be complete and concise; do not call \
    tools. End with one line `Title: ` followed by a title of at most 50 characters naming \
    the work.";

/// What the model is told besides during a turn, whose prompt follows the summary.
const PROMPT_FOLLOWS: &str = "The user's latest request, which this turn is working on, \
    will be given again word for word right after your summary: say in the summary how \
    far the work on it got, but do not answer it or carry it out here.";

/// The conversation that follows a compaction: the summary alone.
pub(super) fn summary_item(summary: &str) -> Item {
    Item::User {
        text: format!("{SUMMARY_HEADING}\n\n{summary}"),
    }
}

/// Whether the next request of `exchange` should be compacted first.
pub(super) fn needs_compaction(exchange: &Exchange, instructions: &str, items: &[Item]) -> bool {
    // A conversation that is only a summary already cannot shrink further.
    compactable(items)
        && exchange.agent.context_window_tokens.is_some_and(|window| {
            estimate_tokens(instructions, items) * 100 > window * TRIGGER_PERCENT
        })
}

/// Asks the model of `exchange`, without tools, for a summary of `items`: the summary (bounded,
/// credentials redacted; none when the request failed, was cancelled or said nothing)
/// and the request's usage. With `prompt_follows` (a compaction during a turn) the model
/// is told the turn's prompt follows the summary, to be answered there, not in it.
pub(super) async fn summarise(
    exchange: &Exchange,
    instructions: &str,
    items: &[Item],
    prompt_follows: bool,
    cancel: &CancellationToken,
) -> (Result<String, Option<Failure>>, Reported) {
    let mut request_items = items.to_vec();
    let ask = if prompt_follows {
        format!("{COMPACT_PROMPT} {PROMPT_FOLLOWS}")
    } else {
        COMPACT_PROMPT.to_owned()
    };
    request_items.push(Item::User { text: ask });
    let agent = &exchange.agent;
    let max_output_tokens = agent.output_bound(estimate_tokens(instructions, &request_items));
    let request = ModelRequest {
        model: agent.model.clone(),
        instructions: Some(instructions.to_owned()),
        items: request_items,
        tools: Vec::new(),
        reasoning_summaries: false,
        reasoning: None,
        max_output_tokens,
        cache_key: exchange.cache_key().map(str::to_owned),
    };
    let (events, mut received) = mpsc::channel(64);
    let client = Arc::clone(&agent.client);
    let collect = async {
        let mut text = String::new();
        let mut usage = Reported::default();
        while let Some(event) = received.recv().await {
            usage.observe(&event);
            if let ModelEvent::TextDelta(delta) = event
                && text.len() <= SUMMARY_BYTES
            {
                text.push_str(&delta);
            }
        }
        (text, usage)
    };
    let (outcome, (text, usage)) = tokio::join!(client.stream(&request, events, cancel), collect);
    let summary = bounded(&redact_values(text.trim(), &agent.secrets), SUMMARY_BYTES);
    let summary = match outcome {
        Err(failure) => Err(Some(failure)),
        Ok(()) if summary.is_empty() => Err(None),
        Ok(()) => Ok(summary),
    };
    (summary, usage)
}

/// Whether `items` are worth compacting: something beyond a summary and the prompts
/// after it (a reply, a call or its result). A summary followed by the turn's prompt
/// cannot shrink further.
pub(super) fn compactable(items: &[Item]) -> bool {
    items.iter().any(|item| {
        matches!(
            item,
            Item::Assistant { .. } | Item::ToolCall { .. } | Item::ToolResult { .. }
        )
    })
}

/// The estimated tokens of the next request of `exchange` when they pass its context
/// window (compaction could not make the conversation fit), none when it fits.
pub(super) fn overflow(exchange: &Exchange, instructions: &str, items: &[Item]) -> Option<usize> {
    let estimate = estimate_tokens(instructions, items);
    exchange
        .agent
        .context_window_tokens
        .is_some_and(|window| estimate > window)
        .then_some(estimate)
}

/// Has the model of `exchange` summarise the conversation, given `shown` (the
/// conversation as requests carry it, older tool output pruned), records the summary
/// and replaces `items` by it followed by the turn's prompt, word for word. On failure
/// (the provider, cancellation) `items` stay as they were and the request goes on
/// uncompacted.
pub(super) async fn compact(
    exchange: &Exchange,
    output: &mut Output,
    journal: &mut Journal<'_>,
    turn_id: &str,
    instructions: &str,
    shown: &[Item],
    items: &mut Vec<Item>,
) {
    let activity_id = output.next_activity_id("compaction");
    compaction_activity(
        output,
        &activity_id,
        ActivityState::Started,
        "compacting the conversation",
    )
    .await;
    let cancel = output.cancel.clone();
    // The model summarises what it is shown, older tool output pruned, so the summary
    // request fits where the conversation itself no longer does.
    let (summary, usage) = summarise(exchange, instructions, shown, true, &cancel).await;
    usage::record(
        output,
        journal,
        turn_id,
        exchange.agent.context_window_tokens,
        usage,
    )
    .await;
    // The closing `Title:` line is the session's title, not part of the summary.
    let split = summary
        .ok()
        .map(|text| split_title(&text, &exchange.agent.secrets))
        .map(|(text, title)| (text.trim().to_owned(), title))
        .filter(|(text, _)| !text.is_empty());
    let Some((summary, title)) = split else {
        compaction_activity(
            output,
            &activity_id,
            ActivityState::Failed,
            "compaction failed",
        )
        .await;
        return;
    };
    journal.append(RecordBody::Compaction {
        summary: summary.clone(),
        title,
    });
    *items = vec![summary_item(&summary)];
    items.extend(exchange.prompt().iter().cloned());
    exchange.conversation_replaced();
    compaction_activity(
        output,
        &activity_id,
        ActivityState::Completed,
        "conversation compacted",
    )
    .await;
}

/// A summary without its closing `Title:` line, and the title that line gives when it
/// is a safe one (the same rules as a title the model is asked for after a turn).
fn split_title(text: &str, secrets: &[String]) -> (String, Option<String>) {
    let trimmed = text.trim_end();
    let (body, last) = match trimmed.rsplit_once('\n') {
        Some((body, last)) => (body, last),
        None => ("", trimmed),
    };
    let labelled = last
        .trim()
        .get(..6)
        .is_some_and(|label| label.eq_ignore_ascii_case("title:"));
    if !labelled {
        return (text.to_owned(), None);
    }
    (body.to_owned(), title_of(last, secrets))
}

async fn compaction_activity(
    output: &mut Output,
    activity_id: &str,
    state: ActivityState,
    summary: &str,
) {
    output
        .activity_of(
            ActivityKind::Compaction,
            activity_id,
            "compaction",
            state,
            summary,
        )
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closing_title_line_is_taken_out_of_the_summary() {
        let none: &[String] = &[];
        let (summary, title) = split_title("Did a.\nDid b.\n\nTitle: Parser work\n", none);
        assert_eq!(
            (summary.as_str(), title.as_deref()),
            ("Did a.\nDid b.\n", Some("Parser work"))
        );
        let (summary, title) = split_title("Did a.\nNo title here.", none);
        assert_eq!((summary.as_str(), title), ("Did a.\nNo title here.", None));
        // A title line that is not a safe title is dropped, the summary kept.
        let (summary, title) = split_title("Did a.\ntitle: sk-abc123def456", none);
        assert_eq!((summary.as_str(), title), ("Did a.", None));
        let (summary, title) = split_title("Title: Only a title", none);
        assert_eq!(
            (summary.as_str(), title.as_deref()),
            ("", Some("Only a title"))
        );
    }
}
