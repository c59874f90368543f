//! What a `pre_tool_use` hook decided of a call (`docs/hooks.md`): a results block of
//! its own, after the tool's blocks, so the fixed rows (the Bash notices, the
//! protection decision) stay as the specification defines them. A hook that let the
//! call go on as it was adds nothing: the call is what it would have been.

use magi_protocol::cards::{STRING_BYTES, Subject};
use magi_store::records::HookDecision;

use super::labels::ROW_HOOK;
use super::part::{Part, row};
use super::source::HookSource;
use super::text::Notes;

/// The `Hook` row: `denied by hook <command>: <reason>` for a block, `arguments
/// replaced by hook <command>` for a call that ran with the hook's arguments.
pub(super) fn hook_part(hook: &HookSource) -> Part {
    let value = match hook.decision {
        HookDecision::Blocked => match hook.reason.map(str::trim).filter(|r| !r.is_empty()) {
            Some(reason) => format!("denied by hook {}: {reason}", hook.hook),
            None => format!("denied by hook {}", hook.hook),
        },
        HookDecision::ArgumentsReplaced => format!("arguments replaced by hook {}", hook.hook),
    };
    let mut notes = Notes::default();
    let value = notes.text(Subject::Text, &value, STRING_BYTES);
    Part::results(vec![row(ROW_HOOK, Some(value))], notes)
}
