//! Saved tool cards in the projection (the `tool.cards` extension): what the records
//! say of each call, and the card chosen for each activity's first entry.

use std::collections::HashMap;

use magi_protocol::messages::{EntryKind, SavedCard};

use crate::records::{HookDecision, RecordBody, ToolOutcome};

use super::{Projector, entry_bytes};

/// The tool whose calls may be the parents of nested calls (`code_mode`).
const CODE_MODE_TOOL: &str = "code_mode";

/// What the records say of one tool call, for its saved card.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SavedCall {
    /// The tool's name.
    pub name: String,
    /// The call's recorded label.
    pub label: String,
    /// Its result: outcome and summary; none when no result was recorded.
    pub result: Option<(ToolOutcome, String)>,
    /// The result's facts, as recorded.
    pub facts: Option<serde_json::Value>,
    /// The result's public protection label.
    pub protection: Option<String>,
    /// The result's `display_id`, when it named a preview.
    pub display_id: Option<String>,
    /// The preview joined to it.
    pub preview: SavedPreview,
    /// The call ID was used by more than one call of the session: no card is safe.
    pub duplicate: bool,
    /// The result's transcript projection, as recorded.
    pub transcript: Vec<String>,
    /// The colour of its lines, as recorded.
    pub transcript_styles: crate::records::TranscriptStyles,
    /// The turn the call was made in.
    pub turn_id: String,
    /// For a call a Code Mode script made: the `code_mode` call that ran it.
    pub parent_call_id: Option<String>,
    /// For a nested call: its number in the script.
    pub sequence: Option<u64>,
    /// For a nested call whose parent is an unambiguous earlier `code_mode` call of
    /// the same turn: the message ID of the parent's entry, its card's parent.
    pub parent_message_id: Option<String>,
    /// What a `pre_tool_use` hook decided of it, if one blocked it or replaced its
    /// arguments.
    pub hook: Option<SavedHook>,
}

/// A `pre_tool_use` hook's recorded decision on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedHook {
    /// The hook's command.
    pub hook: String,
    /// What it decided.
    pub decision: HookDecision,
    /// A block's reason.
    pub reason: Option<String>,
}

/// The applied preview of a saved call.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum SavedPreview {
    /// None was recorded after the result (or the result named none).
    #[default]
    Missing,
    /// The payload of the one preview recorded after the result.
    Recorded(serde_json::Value),
    /// Recorded but unusable: a second preview for the same result, or a payload that is
    /// not schema 1.
    Unusable,
}

/// Maps a saved call and its entry's message ID to the card `history.page` shows on
/// the entry's first part.
pub type CardSelector = Box<dyn Fn(&SavedCall, &str) -> SavedCard + Send>;

impl Projector {
    /// Keeps what a saved card needs of a record.
    pub(super) fn collect_card_facts(&mut self, body: &RecordBody) {
        match body {
            RecordBody::ToolCall {
                turn_id,
                call_id,
                name,
                summary,
                parent_call_id,
                sequence,
                ..
            } => {
                self.call_messages
                    .push((self.messages.len(), call_id.clone()));
                if let Some(earlier) = self.saved_calls.get_mut(call_id) {
                    earlier.duplicate = true;
                    return;
                }
                self.saved_calls.insert(
                    call_id.clone(),
                    SavedCall {
                        name: name.clone(),
                        label: summary.clone(),
                        turn_id: turn_id.clone(),
                        parent_call_id: parent_call_id.clone(),
                        sequence: *sequence,
                        ..SavedCall::default()
                    },
                );
            }
            RecordBody::ToolResult {
                call_id,
                outcome,
                summary,
                facts,
                protection,
                display_id,
                transcript,
                transcript_styles,
                ..
            }
            | RecordBody::CodeModeToolResult {
                call_id,
                outcome,
                summary,
                facts,
                protection,
                display_id,
                transcript,
                transcript_styles,
                ..
            } => {
                let Some(call) = self.saved_calls.get_mut(call_id) else {
                    return;
                };
                if call.result.is_some() {
                    call.duplicate = true;
                    return;
                }
                call.result = Some((*outcome, summary.clone()));
                call.facts = facts.clone();
                call.protection = protection.clone();
                call.display_id = display_id.clone();
                call.transcript = transcript.clone();
                call.transcript_styles = transcript_styles.clone();
                if let Some(id) = display_id {
                    // A display ID named by two results belongs to neither.
                    self.display_ids
                        .entry(id.clone())
                        .and_modify(|owner| *owner = None)
                        .or_insert_with(|| Some(call_id.clone()));
                }
            }
            RecordBody::ToolCallHook {
                call_id,
                hook,
                decision,
                reason,
                summary,
                ..
            } => {
                let Some(call) = self.saved_calls.get_mut(call_id) else {
                    return;
                };
                // The call ran with the hook's arguments: its card is labelled from
                // them, as the live one was.
                if let Some(summary) = summary {
                    call.label = summary.clone();
                }
                call.hook = Some(SavedHook {
                    hook: hook.clone(),
                    decision: *decision,
                    reason: reason.clone(),
                });
            }
            RecordBody::ToolAppliedPreview {
                display_id,
                preview,
                parent_call_id,
                sequence,
            } => {
                let owner = self.display_ids.get(display_id).cloned().flatten();
                let Some(call) = owner.and_then(|c| self.saved_calls.get_mut(&c)) else {
                    return;
                };
                // A nested call's preview names the same parent and number as its
                // call; one that does not belongs to another scope.
                let same_scope =
                    call.parent_call_id == *parent_call_id && call.sequence == *sequence;
                call.preview = match call.preview {
                    SavedPreview::Missing if same_scope && preview["schema_version"] == 1 => {
                        SavedPreview::Recorded(preview.clone())
                    }
                    _ => SavedPreview::Unusable,
                };
            }
            _ => {}
        }
    }

    /// Puts each activity's saved card on its first part, in the frozen projection:
    /// repeated pages of one revision show the same cards.
    pub(super) fn attach_cards(&mut self) {
        let Some(select) = self.cards.take() else {
            return;
        };
        if self.over_budget {
            return;
        }
        let messages = std::mem::take(&mut self.call_messages);
        self.join_parents(&messages);
        let calls: HashMap<usize, String> = messages.into_iter().collect();
        // Every activity's first part carries the field: a card, or null when the
        // activity is no tool call or its call cannot be told apart from another.
        let cards: Vec<(usize, SavedCard)> = self
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.entries
                    .first()
                    .is_some_and(|e| e.kind == EntryKind::Activity)
            })
            .map(|(index, _)| {
                let call = calls.get(&index).and_then(|id| self.saved_calls.get(id));
                let card = match call {
                    Some(call) if !call.duplicate => select(call, &format!("m{index}")),
                    _ => SavedCard::Null,
                };
                (index, card)
            })
            .collect();
        for (index, card) in cards {
            let Some(message) = self.messages.get_mut(index) else {
                continue;
            };
            let Some(first) = message.entries.first_mut() else {
                continue;
            };
            first.tool_card = card;
            let bytes: usize = message.entries.iter().map(|e| entry_bytes(e) + 1).sum();
            self.bytes = self.bytes - message.bytes + bytes;
            message.bytes = bytes;
        }
    }

    /// Names each nested call's parent entry: the parent must be an earlier recorded
    /// `code_mode` call of the same turn, told apart from every other call; otherwise
    /// the nested call's card has no parent (its ancestry is unavailable).
    fn join_parents(&mut self, messages: &[(usize, String)]) {
        let first: HashMap<&str, usize> = messages
            .iter()
            .rev()
            .map(|(index, id)| (id.as_str(), *index))
            .collect();
        let mut joined = Vec::new();
        for (index, id) in messages {
            let Some(call) = self.saved_calls.get(id) else {
                continue;
            };
            let Some(parent_id) = &call.parent_call_id else {
                continue;
            };
            let parent = self
                .saved_calls
                .get(parent_id)
                .zip(first.get(parent_id.as_str()));
            if let Some((parent, parent_index)) = parent
                && !parent.duplicate
                && parent.name == CODE_MODE_TOOL
                && parent.parent_call_id.is_none()
                && parent.turn_id == call.turn_id
                && parent_index < index
            {
                joined.push((id.clone(), format!("m{parent_index}")));
            }
        }
        for (id, message_id) in joined {
            if let Some(call) = self.saved_calls.get_mut(&id) {
                call.parent_message_id = Some(message_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::records::Record;

    fn rec(body: RecordBody) -> Record {
        Record::now("s", body)
    }

    fn call(turn: &str, id: &str, name: &str, parent: Option<(&str, u64)>) -> Record {
        rec(RecordBody::ToolCall {
            turn_id: turn.into(),
            call_id: id.into(),
            name: name.into(),
            summary: name.into(),
            arguments: None,
            parent_call_id: parent.map(|(p, _)| p.to_owned()),
            sequence: parent.map(|(_, s)| s),
        })
    }

    fn nested_result(id: &str, parent: &str, sequence: u64, display_id: &str) -> Record {
        rec(RecordBody::CodeModeToolResult {
            turn_id: "t".into(),
            parent_call_id: parent.into(),
            sequence,
            call_id: id.into(),
            name: "write".into(),
            outcome: ToolOutcome::Completed,
            summary: "wrote".into(),
            content: None,
            facts: None,
            protection: None,
            display_id: Some(display_id.into()),
            transcript: Vec::new(),
            transcript_styles: Some(Vec::new()),
        })
    }

    fn preview(display_id: &str, parent: &str, sequence: u64) -> Record {
        rec(RecordBody::ToolAppliedPreview {
            display_id: display_id.into(),
            preview: serde_json::json!({"schema_version": 1, "diff": "+a\n", "truncated": false}),
            parent_call_id: Some(parent.into()),
            sequence: Some(sequence),
        })
    }

    #[test]
    fn nested_calls_name_an_earlier_code_mode_parent_of_their_turn_and_previews_of_their_scope() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&seen);
        let mut projector = Projector::with_cards(Box::new(move |call, message_id| {
            kept.lock().unwrap().push((
                message_id.to_owned(),
                call.name.clone(),
                call.parent_message_id.clone(),
                call.preview.clone(),
            ));
            SavedCard::Null
        }));
        let records = [
            rec(RecordBody::TurnStarted {
                turn_id: "t".into(),
            }),
            call("t", "s1", "code_mode", None),
            call("t", "s1.code_mode.1", "write", Some(("s1", 1))),
            nested_result("s1.code_mode.1", "s1", 1, "d1"),
            preview("d1", "s1", 1),
            call("t", "s1.code_mode.2", "write", Some(("s1", 2))),
            nested_result("s1.code_mode.2", "s1", 2, "d2"),
            // A preview naming another number is not this result's.
            preview("d2", "s1", 3),
            // A parent that is no code_mode call, and one of another turn.
            call("t", "r1", "read", None),
            call("t", "r1.code_mode.1", "read", Some(("r1", 1))),
            call("u", "s1.code_mode.9", "read", Some(("s1", 9))),
        ];
        for record in &records {
            projector.push(record);
        }
        projector.finish(false).unwrap();
        let seen = seen.lock().unwrap();
        let parent_of = |name_index: usize| seen[name_index].2.clone();
        assert_eq!(seen.len(), 6, "{seen:?}");
        assert_eq!(seen[0].1, "code_mode");
        assert_eq!(parent_of(0), None);
        assert_eq!(parent_of(1), Some(seen[0].0.clone()));
        assert!(matches!(seen[1].3, SavedPreview::Recorded(_)));
        assert_eq!(parent_of(2), Some(seen[0].0.clone()));
        assert_eq!(seen[2].3, SavedPreview::Unusable);
        assert_eq!(parent_of(4), None);
        assert_eq!(parent_of(5), None);
    }
}
