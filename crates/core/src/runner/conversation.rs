//! The conversation replayed from the durable records, as the model is given it.

use std::path::{Path, PathBuf};

use magi_provider::Item;
use magi_store::records::{Record, RecordBody, ToolOutcome};

use crate::sessions::{call_assets_dir, input_assets_dir};

/// What the model is told of a call a crashed run left without a result.
pub(super) const INTERRUPTED_CALL: &str = "The call was interrupted; its outcome is unknown.";

/// The image a settled call gives the model after its result: a `view_image` call's
/// kept image, read from its assets (`assets` gives a call's folder) while it is still
/// the file the call wrote. The one place live results and replayed ones get it.
pub(super) fn attached_image(
    name: &str,
    call_id: &str,
    facts: Option<&serde_json::Value>,
    assets: &dyn Fn(&str) -> Option<PathBuf>,
) -> Option<Item> {
    if name != magi_tools::BuiltinTool::ViewImage.name() {
        return None;
    }
    let (media_type, data) = magi_tools::kept_image(facts?, &assets(call_id)?)?;
    Some(Item::Image {
        call_id: call_id.to_owned(),
        media_type,
        data,
    })
}

/// The images given with prompt `message_id` (`input.attachments`), from their facts
/// as recorded, each read from its folder in the session's assets `folder` while it is
/// still the file kept; one gone or changed is left out.
pub(super) fn input_images(
    message_id: &str,
    images: &[serde_json::Value],
    folder: Option<&Path>,
) -> Vec<Item> {
    let Some(folder) = folder else {
        return Vec::new();
    };
    images
        .iter()
        .enumerate()
        .filter_map(|(index, facts)| {
            let dir = input_assets_dir(folder, message_id, index);
            let (media_type, data) = magi_tools::kept_image(facts, &dir)?;
            Some(Item::UserImage { media_type, data })
        })
        .collect()
}

/// The conversation the model is given, from the durable records: prompts with the
/// images given with them, replies, each tool call with its result (and the image a
/// `view_image` call kept), and what the backend told the model in between (background
/// jobs' ends, loop notes), images read from the session's assets `folder`. A call
/// whose result was never recorded (a crashed turn) is answered as interrupted, so the
/// provider sees a complete pairing. The calls of Code Mode scripts and their results
/// are never replayed: the model was given only the script's result.
pub fn conversation(records: &[Record], folder: Option<&Path>) -> Vec<Item> {
    let assets = |call_id: &str| folder.map(|f| call_assets_dir(f, call_id));
    let answered: std::collections::HashSet<&str> = records
        .iter()
        .filter_map(|r| match &r.body {
            RecordBody::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut items = Vec::new();
    for record in records {
        match &record.body {
            RecordBody::UserInput {
                text,
                message_id,
                images,
                ..
            } => {
                items.push(Item::User { text: text.clone() });
                items.extend(input_images(message_id, images, folder));
            }
            RecordBody::AssistantOutput { text, chunks, .. } => items.push(Item::Assistant {
                text: text.clone().unwrap_or_else(|| chunks.concat()),
            }),
            RecordBody::ToolCall {
                call_id,
                name,
                arguments,
                parent_call_id: None,
                ..
            } => {
                items.push(Item::ToolCall {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone().unwrap_or_else(|| "{}".into()),
                });
                if !answered.contains(call_id.as_str()) {
                    items.push(Item::ToolResult {
                        call_id: call_id.clone(),
                        output: INTERRUPTED_CALL.into(),
                        is_error: true,
                    });
                }
            }
            RecordBody::AsyncBashEvent { text, .. }
            | RecordBody::LoopNote { text, .. }
            | RecordBody::HookNote { text, .. } => items.push(Item::User { text: text.clone() }),
            // What came before a compaction is its summary, for the model.
            RecordBody::Compaction { summary, .. } => {
                items.clear();
                items.push(super::compaction::summary_item(summary));
            }
            RecordBody::ToolResult {
                call_id,
                name,
                outcome,
                summary,
                content,
                facts,
                ..
            } => {
                items.push(Item::ToolResult {
                    call_id: call_id.clone(),
                    output: content.clone().unwrap_or_else(|| summary.clone()),
                    is_error: *outcome != ToolOutcome::Completed,
                });
                if *outcome == ToolOutcome::Completed {
                    items.extend(attached_image(name, call_id, facts.as_ref(), &assets));
                }
            }
            _ => {}
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unanswered_calls_are_replayed_as_interrupted() {
        let records = vec![
            Record::now(
                "s",
                RecordBody::UserInput {
                    turn_id: "t".into(),
                    message_id: "u".into(),
                    text: "q".into(),
                    images: Vec::new(),
                },
            ),
            Record::now(
                "s",
                RecordBody::ToolCall {
                    turn_id: "t".into(),
                    call_id: "c1".into(),
                    name: "read".into(),
                    summary: "read a".into(),
                    arguments: Some("{\"path\":\"a\"}".into()),
                    parent_call_id: None,
                    sequence: None,
                },
            ),
        ];
        let items = conversation(&records, None);
        assert_eq!(items.len(), 3);
        assert!(
            matches!(&items[2], Item::ToolResult { call_id, is_error: true, .. } if call_id == "c1")
        );
    }
}
