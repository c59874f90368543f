//! `session.compact`: the attached session's conversation summarised now, between
//! turns, the way a turn compacts one that nears the context window.

use std::sync::Arc;

use magi_protocol::ErrorCode;
use magi_protocol::messages::SessionCompactResult;
use magi_provider::ProviderError;
use magi_store::records::RecordBody;
use tokio_util::sync::CancellationToken;

use super::compaction::{compactable, summarise};
use super::conversation::conversation;
use super::exchange::Exchange;
use super::journal::Workspace;
use super::offer::Offer;
use crate::agent::Agent;
use crate::sessions::Sessions;

/// Compacts the conversation of `session_id`, the attached session, with `agent`'s
/// model: the summary and the request's usage are recorded together, and from then on
/// the summary stands for everything before it. Nothing is compacted (`compacted:
/// false`) when the conversation is empty or a summary alone. A request that fails is
/// `execution_failed` and records nothing but its usage; cancelling `cancel` (shutdown,
/// `operation.cancel`) is `operation_cancelled`.
pub fn compact_session(
    sessions: &mut Sessions,
    mut agent: Agent,
    session_id: &str,
    cancel: &CancellationToken,
) -> Result<SessionCompactResult, ErrorCode> {
    sessions.check_attached(session_id)?;
    // On the session worker, never the protocol loop: this reads the cached catalog.
    agent.resolve_limits();
    let items = conversation(&sessions.records()?, sessions.conversation_dir().as_deref());
    if !compactable(&items) {
        return Ok(SessionCompactResult {
            compacted: false,
            hook_errors: Vec::new(),
        });
    }
    // The session's `pre_compact` hooks run first, as before a turn's compaction.
    let cwd = Workspace::of(sessions).cwd().to_owned();
    let Some(hook_errors) = super::hooks::pre_compact_idle(&agent, &cwd, session_id, cancel) else {
        return Err(ErrorCode::OperationCancelled);
    };
    let window = agent.context_window_tokens;
    let offer = Offer::session(Arc::clone(&agent.disabled_tools), None, Arc::default());
    let exchange = Exchange::new(agent, offer, &cwd, false).cached_as(session_id);
    let instructions = exchange.system();
    // The session worker is a plain thread: the request gets its own small runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|_| ErrorCode::ExecutionFailed)?;
    let (summary, usage) =
        runtime.block_on(summarise(&exchange, instructions, &items, false, cancel));
    let mut records = Vec::new();
    let answer = match summary {
        Ok(summary) => {
            records.push(RecordBody::Compaction {
                summary,
                title: None,
            });
            Ok(SessionCompactResult {
                compacted: true,
                hook_errors,
            })
        }
        Err(Some(failure)) if failure.error == ProviderError::Cancelled => {
            Err(ErrorCode::OperationCancelled)
        }
        Err(_) => Err(ErrorCode::ExecutionFailed),
    };
    records.insert(0, usage.record(None, window));
    sessions
        .append_all(records)
        .map_err(|_| ErrorCode::PersistenceFailed)?;
    answer
}
