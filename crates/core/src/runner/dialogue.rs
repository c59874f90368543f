//! One model round trip of an agent's conversation: older tool output pruned from the
//! request, compaction when the conversation nears the context window or the agent
//! asked for it (`magi_control`; the turn ends when it still does not fit), the
//! model's response, then the calls it asks for.

use magi_protocol::ErrorCode;
use magi_protocol::messages::DIAGNOSTIC_CONTEXT_EXCEEDED;
use magi_provider::Item;

use super::calls::{CallService, Role};
use super::compaction::{compact, compactable, needs_compaction, overflow};
use super::ending::Ending;
use super::exchange::Exchange;
use super::pruning::pruned;
use super::steps::{RoundCall, round_calls};

/// How one round trip left the conversation.
pub(super) enum Round {
    /// The conversation ends.
    Ended(Ending),
    /// The model asked for tools and they settled, so the conversation goes on: each
    /// call of the round with its arguments and result, for the watch on repeats.
    Called(Vec<RoundCall>),
}

impl From<Ending> for Round {
    fn from(ending: Ending) -> Round {
        Round::Ended(ending)
    }
}

/// Takes one model round trip of the agent of `exchange`, whose calls go through
/// `service` as `role`: how the conversation ends, or the calls of a round after which
/// it goes on.
///
/// Compaction may replace `items` with a shorter summary at the start of the round, so
/// nobody keeps a position in `items` across a round trip: what the loop needs of the
/// round is returned as a value.
pub(super) async fn round_trip(
    exchange: &Exchange,
    service: &mut CallService<'_, '_>,
    role: &mut Role<'_>,
    items: &mut Vec<Item>,
) -> Round {
    let system = exchange.system().to_owned();
    let workspace = service.workspace;
    let prune = |items: &[Item]| {
        let current = exchange.current_round(items.len());
        let assets = |call_id: &str| workspace.tool_assets_dir(call_id);
        let mut sent = pruned(items, exchange.agent.prune_protect_tokens, current, &assets);
        // Images an earlier model took are not sent to one that takes none.
        if !exchange.agent.images {
            sent.retain(|item| !matches!(item, Item::Image { .. } | Item::UserImage { .. }));
        }
        sent
    };
    let mut sent = prune(items);
    // What is sent is what must fit the context window. A request the agent made is
    // taken either way: it is for this request only.
    let requested = service.journal.take_compaction_request() && compactable(&sent);
    if requested || needs_compaction(exchange, &system, &sent) {
        let trigger = if requested { "requested" } else { "auto" };
        let cwd = workspace.cwd();
        super::hooks::pre_compact(service.output, &exchange.agent, cwd, trigger).await;
        compact(
            exchange,
            service.output,
            service.journal,
            service.turn_id,
            &system,
            &sent,
            items,
        )
        .await;
        sent = prune(items);
    }
    if let Some(estimate) = overflow(exchange, &system, &sent) {
        let said = format!(
            "the conversation (about {estimate} tokens) does not fit the context window of \
             model {:?} ({} tokens) even after compaction; start a new session, or set the \
             model's context_window in [models.\"{}/{}\"] if the window is larger",
            exchange.agent.model,
            exchange.agent.context_window_tokens.unwrap_or_default(),
            exchange.agent.provider,
            exchange.agent.model,
        );
        service
            .output
            .diagnostic(DIAGNOSTIC_CONTEXT_EXCEEDED, &said)
            .await;
        return Ending::failed(ErrorCode::ExecutionFailed).into();
    }
    let request = exchange.request(system, items, sent);
    let response = exchange
        .respond(&request, service.output, service.journal, service.turn_id)
        .await;
    if service.output.lost() {
        return Ending::failed(ErrorCode::OutputUnavailable).into();
    }
    // The round's items begin here: nothing below replaces the conversation, it only
    // appends the response and its calls' results.
    let round_start = items.len();
    // The response as it came: its reasoning, its text, then its calls.
    items.extend(response.reasoning);
    if let Some(text) = &response.text {
        items.push(Item::Assistant { text: text.clone() });
    }
    if let Some(ending) = response.ending {
        return ending.into();
    }
    if response.calls.is_empty() {
        return Ending::completed().into();
    }
    let calls = response
        .calls
        .into_iter()
        .map(|(call_id, name, arguments)| service.call(role, call_id, name, arguments))
        .collect();
    if let Some(ending) = service.run_calls(role, calls, items).await {
        return ending.into();
    }
    if service.output.lost() {
        return Ending::failed(ErrorCode::OutputUnavailable).into();
    }
    if service.output.cancel.is_cancelled() {
        return Ending::cancelled().into();
    }
    Round::Called(round_calls(&items[round_start..]))
}
