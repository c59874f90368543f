//! `todo`: the plan of the work, kept by the model where the person sees it
//! (`plan.todo`). Each call replaces the whole list; the call's facts are the list, and
//! its card is the checklist (docs/protocol/cards.md). Nothing outside the call is
//! touched: the current plan is the newest successful call's, read back from the
//! records like every card.

use magi_protocol::limits::{TODO_ITEM_BYTES, TODO_ITEMS};
use magi_protocol::plan::{PlanItem, PlanStatus, TODO_TOOL};
use serde_json::{Value, json};

use crate::facts::Facts;
use crate::{ToolDefinition, ToolOutput, ToolReport};

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::Todo.name(),
        description: "Show the person your plan as a checklist. Each call replaces the whole \
                      list: give every item, in order, with its status (`pending`, \
                      `in_progress` or `done`); at most one item is `in_progress`. At most 20 \
                      items, each one line of at most 256 bytes. An empty list clears the \
                      plan.",
        parameters: json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "maxItems": TODO_ITEMS,
                    "description": format!(
                        "The whole plan, at most {TODO_ITEMS} items."
                    ),
                    "items": {
                        "type": "object",
                        "properties": {
                            "text": {
                                "type": "string",
                                "description": format!(
                                    "The step, one line of at most {TODO_ITEM_BYTES} bytes."
                                )
                            },
                            "status": {
                                "type": "string",
                                "enum": PlanStatus::ALL.map(PlanStatus::wire),
                            }
                        },
                        "required": ["text", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["items"],
            "additionalProperties": false
        }),
    }
}

/// Runs a `todo` call: checks the list and records it as the call's facts. A list off
/// the contract is a failed call telling the model what to fix, with no facts.
pub(crate) fn run(arguments: &Value) -> ToolReport {
    match parse(arguments) {
        Ok(items) => {
            let done = items
                .iter()
                .filter(|i| i.status == PlanStatus::Done)
                .count();
            let total = items.len();
            let content = match items.iter().find(|i| i.status == PlanStatus::InProgress) {
                _ if total == 0 => "The plan is cleared.".to_owned(),
                Some(current) => format!(
                    "The plan is updated: {done} of {total} done; in progress: {}.",
                    current.text
                ),
                None => format!("The plan is updated: {done} of {total} done."),
            };
            let output = ToolOutput {
                content,
                summary: format!("plan: {done} of {total} done"),
                is_error: false,
            };
            ToolReport::with_facts(output, Facts::Plan { items })
        }
        Err(why) => {
            ToolOutput::failed("invalid plan", format!("The plan was not changed: {why}.")).into()
        }
    }
}

/// The plan the arguments give, or what is wrong with them, in words for the model.
fn parse(arguments: &Value) -> Result<Vec<PlanItem>, String> {
    let Some(object) = arguments.as_object() else {
        return Err("the arguments must be an object with an `items` array".into());
    };
    if let Some(other) = object.keys().find(|k| k.as_str() != "items") {
        return Err(format!(
            "{other:?} is not an argument of {TODO_TOOL}; give only `items`"
        ));
    }
    let Some(list) = object.get("items").and_then(Value::as_array) else {
        return Err("`items` must be an array of {\"text\", \"status\"} objects".into());
    };
    if list.len() > TODO_ITEMS {
        return Err(format!(
            "the list has {} items; at most {TODO_ITEMS} fit: merge small steps",
            list.len()
        ));
    }
    let mut items = Vec::with_capacity(list.len());
    for (n, entry) in list.iter().enumerate() {
        let place = n + 1;
        let Some(fields) = entry.as_object() else {
            return Err(format!(
                "item {place} must be an object with `text` and `status`"
            ));
        };
        if let Some(other) = fields
            .keys()
            .find(|k| !matches!(k.as_str(), "text" | "status"))
        {
            return Err(format!(
                "item {place} has {other:?}; an item has only `text` and `status`"
            ));
        }
        let Some(text) = fields.get("text").and_then(Value::as_str) else {
            return Err(format!("item {place} needs a `text` string"));
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(format!("item {place}'s text is empty"));
        }
        if magi_protocol::text::has_control(text) {
            return Err(format!(
                "item {place}'s text is not one line (it holds a line break or another \
                 control character)"
            ));
        }
        if text.len() > TODO_ITEM_BYTES {
            return Err(format!(
                "item {place}'s text is {} bytes; at most {TODO_ITEM_BYTES} fit: say the \
                 step shorter",
                text.len()
            ));
        }
        let words = PlanStatus::ALL.map(PlanStatus::wire).join("`, `");
        let status = match fields.get("status").and_then(Value::as_str) {
            Some(word) => PlanStatus::from_wire(word)
                .ok_or_else(|| format!("item {place}'s status {word:?} is none of `{words}`"))?,
            None => return Err(format!("item {place} needs a `status`: one of `{words}`")),
        };
        items.push(PlanItem {
            text: text.to_owned(),
            status,
        });
    }
    let working = items
        .iter()
        .filter(|i| i.status == PlanStatus::InProgress)
        .count();
    if working > 1 {
        return Err(format!(
            "{working} items are in_progress; at most one is: mark the others pending or done"
        ));
    }
    Ok(items)
}

/// The label of a `todo` call (its activity and card title): how far the plan is, when
/// the arguments say it.
pub(crate) fn describe(arguments: Option<&Value>) -> String {
    match arguments.map(parse) {
        Some(Ok(items)) if items.is_empty() => format!("{TODO_TOOL} cleared"),
        Some(Ok(items)) => {
            let done = items
                .iter()
                .filter(|i| i.status == PlanStatus::Done)
                .count();
            format!("{TODO_TOOL} {done} of {} done", items.len())
        }
        _ => TODO_TOOL.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(text: &str, status: &str) -> Value {
        json!({"text": text, "status": status})
    }

    #[test]
    fn a_list_is_recorded_whole_with_its_counts() {
        let report = run(&json!({"items": [
            item("Read the parser", "done"),
            item("  Fix the off-by-one  ", "in_progress"),
            item("Run the tests", "pending"),
        ]}));
        assert!(!report.output.is_error);
        assert_eq!(report.output.summary, "plan: 1 of 3 done");
        assert!(
            report
                .output
                .content
                .contains("in progress: Fix the off-by-one"),
            "{}",
            report.output.content
        );
        let Some(Facts::Plan { items }) = report.facts else {
            panic!("no plan facts");
        };
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].text, "Fix the off-by-one");
        assert_eq!(items[1].status, PlanStatus::InProgress);
        let cleared = run(&json!({"items": []}));
        assert_eq!(cleared.output.content, "The plan is cleared.");
        assert!(matches!(cleared.facts, Some(Facts::Plan { items }) if items.is_empty()));
    }

    #[test]
    fn a_malformed_list_is_a_failed_call_saying_what_to_fix() {
        let long = "é".repeat(TODO_ITEM_BYTES / 2 + 1);
        let many: Vec<Value> = (0..=TODO_ITEMS)
            .map(|n| item(&format!("step {n}"), "pending"))
            .collect();
        for (arguments, says) in [
            (json!([]), "must be an object"),
            (json!({}), "`items` must be an array"),
            (json!({"items": "read"}), "`items` must be an array"),
            (
                json!({"items": [], "extra": 1}),
                "\"extra\" is not an argument",
            ),
            (json!({"items": many}), "at most 20 fit"),
            (json!({"items": ["read"]}), "item 1 must be an object"),
            (
                json!({"items": [{"status": "done"}]}),
                "item 1 needs a `text`",
            ),
            (
                json!({"items": [item(" ", "done")]}),
                "item 1's text is empty",
            ),
            (json!({"items": [item("a\nb", "done")]}), "not one line"),
            (json!({"items": [item(&long, "done")]}), "at most 256 fit"),
            (
                json!({"items": [item("a", "completed")]}),
                "none of `pending`, `in_progress`, `done`",
            ),
            (json!({"items": [{"text": "a"}]}), "needs a `status`"),
            (
                json!({"items": [{"text": "a", "status": "done", "priority": 1}]}),
                "has \"priority\"",
            ),
            (
                json!({"items": [item("a", "in_progress"), item("b", "in_progress")]}),
                "2 items are in_progress",
            ),
        ] {
            let report = run(&arguments);
            assert!(report.output.is_error, "{arguments}");
            assert_eq!(report.output.summary, "invalid plan");
            assert!(report.facts.is_none());
            assert!(
                report.output.content.contains(says),
                "{arguments}: {}",
                report.output.content
            );
            assert!(
                report
                    .output
                    .content
                    .starts_with("The plan was not changed")
            );
        }
        // A text of exactly the bound fits.
        let fits = "a".repeat(TODO_ITEM_BYTES);
        assert!(
            !run(&json!({"items": [item(&fits, "done")]}))
                .output
                .is_error
        );
    }

    #[test]
    fn the_description_spells_the_item_text_bound_out() {
        assert!(
            definition()
                .description
                .contains(&format!("most {TODO_ITEM_BYTES} bytes"))
        );
    }

    #[test]
    fn the_label_says_how_far_the_plan_is() {
        let arguments = json!({"items": [item("a", "done"), item("b", "pending")]});
        assert_eq!(describe(Some(&arguments)), "todo 1 of 2 done");
        assert_eq!(describe(Some(&json!({"items": []}))), "todo cleared");
        assert_eq!(describe(Some(&json!({"items": 3}))), "todo");
        assert_eq!(describe(None), "todo");
    }
}
