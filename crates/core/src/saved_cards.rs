//! Saved cards: the card of each activity in `history.page`, selected from what the
//! log recorded of its call by the same selector as live cards.

use magi_protocol::cards::{Origin, validate_saved};
use magi_protocol::messages::SavedCard;
use magi_store::history::{CardSelector, SavedCall, SavedPreview};

use crate::cards::{CardSource, HookSource, PreviewSource, Settlement, TranscriptStyles, project};

/// The selector the history projection uses with `tool.cards` negotiated; with
/// `styles` (`tool.cards.styles`), text blocks carry the colour of their lines.
pub fn selector(styles: bool) -> CardSelector {
    Box::new(move |call, message_id| saved_card(call, message_id, styles))
}

/// The saved card of one call, or null when the selector's card does not hold as a
/// saved card (it always should; a card that would break the contract is withheld).
fn saved_card(call: &SavedCall, message_id: &str, styles: bool) -> SavedCard {
    let settlement = match &call.result {
        Some((outcome, summary)) => Settlement::Settled {
            outcome: *outcome,
            summary,
        },
        // No result was recorded: the turn that made the call ended without one.
        None => Settlement::Interrupted,
    };
    let preview = match (&call.display_id, &call.preview) {
        (_, SavedPreview::Recorded(payload)) => PreviewSource::Recorded(payload),
        (_, SavedPreview::Unusable) => PreviewSource::Malformed,
        (Some(_), SavedPreview::Missing) => PreviewSource::NotRecorded,
        (None, SavedPreview::Missing) => PreviewSource::NotApplicable,
    };
    let card = project(&CardSource {
        activity_id: message_id,
        origin: Origin::Saved,
        revision: 0,
        tool_name: &call.name,
        label: &call.label,
        working_directory: None,
        settlement,
        facts: call.facts.as_ref(),
        protection: call.protection.as_deref(),
        awaiting_approval: false,
        preview,
        // Saved history holds no subagent calls (they are in the subagent's own
        // history), and live task identities do not carry over; a Code Mode script's
        // call names its parent's entry.
        parent_activity_id: call.parent_message_id.as_deref(),
        task_id: None,
        children: None,
        transcript: &call.transcript,
        transcript_styles: if styles {
            TranscriptStyles::recorded(&call.transcript_styles)
        } else {
            TranscriptStyles::Off
        },
        hook: call.hook.as_ref().map(|hook| HookSource {
            hook: &hook.hook,
            decision: hook.decision,
            reason: hook.reason.as_deref(),
        }),
    });
    match validate_saved(&card, message_id) {
        Ok(()) => SavedCard::Card(Box::new(card)),
        Err(_) => SavedCard::Null,
    }
}
