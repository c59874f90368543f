//! The conversation replayed from the durable records, as the model is given it.

use std::path::{Path, PathBuf};

use magi_provider::{Item, ReasoningItem};
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
/// images given with them (each turn's context note before its prompt), the reasoning a response carried (for its provider to take
/// back, as it came), replies, the calls of each response together followed by
/// their results in the calls' order (and the image a `view_image` call kept), and what
/// the backend told the model in between (background jobs' ends, loop notes), images
/// read from the session's assets `folder`. A call whose result was never recorded (a
/// crashed turn) is answered as interrupted, so the provider sees a complete pairing.
/// The calls of Code Mode scripts and their results are never replayed: the model was
/// given only the script's result. A compaction's summary stands for everything before
/// it; one made during a turn is followed by that turn's prompt, as the live
/// conversation was.
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
    let mut calls = Calls::default();
    // The prompt of the turn under way (none between turns): what follows a summary
    // made during it.
    let mut turn_prompt: Option<Vec<Item>> = None;
    for record in records {
        match &record.body {
            RecordBody::TurnStarted { .. } => turn_prompt = Some(Vec::new()),
            RecordBody::TurnFinished { .. } => turn_prompt = None,
            RecordBody::TurnContext { text, .. } => {
                calls.close(&mut items, &answered);
                let context = Item::User { text: text.clone() };
                items.push(context.clone());
                if let Some(kept) = &mut turn_prompt {
                    kept.push(context);
                }
            }
            RecordBody::UserInput {
                text,
                message_id,
                images,
                ..
            } => {
                calls.close(&mut items, &answered);
                let mut prompt = vec![Item::User { text: text.clone() }];
                prompt.extend(input_images(message_id, images, folder));
                items.extend(prompt.iter().cloned());
                if let Some(kept) = &mut turn_prompt {
                    kept.extend(prompt);
                }
            }
            RecordBody::ProviderReasoning {
                format,
                model,
                item,
                ..
            } => {
                calls.close(&mut items, &answered);
                // A format this build does not know is left out, as the provider would
                // refuse it.
                if let Ok(format) = serde_json::from_value(serde_json::json!(format)) {
                    items.push(Item::Reasoning(ReasoningItem {
                        format,
                        model: model.clone(),
                        raw: item.clone(),
                    }));
                }
            }
            RecordBody::AssistantOutput { text, chunks, .. } => {
                calls.close(&mut items, &answered);
                items.push(Item::Assistant {
                    text: text.clone().unwrap_or_else(|| chunks.concat()),
                });
            }
            RecordBody::ToolCall {
                call_id,
                name,
                arguments,
                parent_call_id: None,
                ..
            } => {
                // A call after results begins the calls of another response.
                if calls.has_results() {
                    calls.close(&mut items, &answered);
                }
                items.push(Item::ToolCall {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone().unwrap_or_else(|| "{}".into()),
                });
                calls.open.push(call_id.clone());
            }
            RecordBody::AsyncBashEvent { text, .. }
            | RecordBody::LoopNote { text, .. }
            | RecordBody::ModeNote { text, .. }
            | RecordBody::HookNote { text, .. }
            | RecordBody::CheckpointRestored { text, .. } => {
                calls.close(&mut items, &answered);
                items.push(Item::User { text: text.clone() });
            }
            // What came before a compaction is its summary, for the model.
            RecordBody::Compaction { summary, .. } => {
                calls = Calls::default();
                items.clear();
                items.push(super::compaction::summary_item(summary));
                items.extend(turn_prompt.iter().flatten().cloned());
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
                let mut answer = vec![Item::ToolResult {
                    call_id: call_id.clone(),
                    output: content.clone().unwrap_or_else(|| summary.clone()),
                    is_error: *outcome != ToolOutcome::Completed,
                }];
                if *outcome == ToolOutcome::Completed {
                    answer.extend(attached_image(name, call_id, facts.as_ref(), &assets));
                }
                calls.answer(call_id, answer, &mut items);
            }
            _ => {}
        }
    }
    calls.close(&mut items, &answered);
    items
}

/// The calls of the response being replayed, whose results follow them together.
#[derive(Default)]
struct Calls {
    /// The calls, in order.
    open: Vec<String>,
    /// The results recorded so far (settled in any order), by call.
    results: std::collections::HashMap<String, Vec<Item>>,
}

impl Calls {
    fn has_results(&self) -> bool {
        !self.results.is_empty()
    }

    /// Keeps the result of one of the calls; a result of no open call goes on at once.
    fn answer(&mut self, call_id: &str, answer: Vec<Item>, items: &mut Vec<Item>) {
        if self.open.iter().any(|open| open == call_id) {
            self.results.insert(call_id.to_owned(), answer);
        } else {
            items.extend(answer);
        }
    }

    /// Gives the results in the calls' order: a call never answered is answered as
    /// interrupted; one answered later in the log gets its result then.
    fn close(&mut self, items: &mut Vec<Item>, answered: &std::collections::HashSet<&str>) {
        for call_id in std::mem::take(&mut self.open) {
            match self.results.remove(&call_id) {
                Some(answer) => items.extend(answer),
                None if !answered.contains(call_id.as_str()) => items.push(Item::ToolResult {
                    call_id,
                    output: INTERRUPTED_CALL.into(),
                    is_error: true,
                }),
                None => {}
            }
        }
        self.results.clear();
    }
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

    fn record(body: RecordBody) -> Record {
        Record::now("s", body)
    }

    fn call(id: &str) -> Record {
        record(RecordBody::ToolCall {
            turn_id: "t".into(),
            call_id: id.into(),
            name: "read".into(),
            summary: format!("read {id}"),
            arguments: Some("{}".into()),
            parent_call_id: None,
            sequence: None,
        })
    }

    fn result(id: &str) -> Record {
        record(RecordBody::ToolResult {
            turn_id: "t".into(),
            call_id: id.into(),
            name: "read".into(),
            outcome: ToolOutcome::Completed,
            summary: String::new(),
            content: Some(format!("result {id}")),
            facts: None,
            protection: None,
            display_id: None,
            transcript: Vec::new(),
            transcript_styles: Some(Vec::new()),
        })
    }

    fn prompt(text: &str) -> Record {
        record(RecordBody::UserInput {
            turn_id: "t".into(),
            message_id: format!("u-{text}"),
            text: text.into(),
            images: Vec::new(),
        })
    }

    fn shape(items: &[Item]) -> Vec<String> {
        items
            .iter()
            .map(|item| match item {
                Item::User { text } => format!("user:{text}"),
                Item::Assistant { text } => format!("assistant:{text}"),
                Item::ToolCall { call_id, .. } => format!("call:{call_id}"),
                Item::ToolResult { call_id, .. } => format!("result:{call_id}"),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_responses_calls_come_together_then_their_results_in_the_calls_order() {
        // Settled in another order than asked (reads run side by side), then a second
        // response with one call.
        let records = vec![
            prompt("q"),
            call("a"),
            call("b"),
            result("b"),
            result("a"),
            call("c"),
            result("c"),
        ];
        assert_eq!(
            shape(&conversation(&records, None)),
            [
                "user:q", "call:a", "call:b", "result:a", "result:b", "call:c", "result:c"
            ]
        );
    }

    #[test]
    fn a_summary_made_during_a_turn_is_followed_by_its_prompt_and_one_made_between_turns_is_not() {
        let compaction = || {
            record(RecordBody::Compaction {
                summary: "S".into(),
                title: None,
            })
        };
        let started = || {
            record(RecordBody::TurnStarted {
                turn_id: "t".into(),
            })
        };
        let finished = || {
            record(RecordBody::TurnFinished {
                turn_id: "t".into(),
                outcome: magi_store::records::TurnOutcome::Completed,
                error_code: None,
            })
        };
        let summary = format!("user:{}\n\nS", super::super::compaction::SUMMARY_HEADING);
        let during = vec![
            started(),
            prompt("first"),
            finished(),
            started(),
            prompt("second"),
            call("a"),
            result("a"),
            compaction(),
            call("b"),
            result("b"),
        ];
        assert_eq!(
            shape(&conversation(&during, None)),
            [summary.as_str(), "user:second", "call:b", "result:b"]
        );
        let between = vec![started(), prompt("first"), finished(), compaction()];
        assert_eq!(shape(&conversation(&between, None)), [summary.as_str()]);
    }
}
