//! The blocks of a `todo` card (`plan.todo`): the plan as a checklist. A `progress`
//! block counts the items done, then a `results` block has one row per item in order,
//! labelled with its status, its text the value. `magi_protocol::plan` holds the
//! vocabulary, which clients read the plan back with.

use magi_protocol::cards::{Block, ProgressBlock, ProgressUnit, STRING_BYTES, Subject};
use magi_protocol::plan::{PLAN_PROGRESS_LABEL, PlanItem, PlanStatus};

use super::blocks::Context;
use super::part::{Part, Role, row};
use super::text::Notes;

impl Context<'_, '_> {
    pub(super) fn plan(&self, items: &[PlanItem]) -> Vec<Part> {
        let done = items
            .iter()
            .filter(|i| i.status == PlanStatus::Done)
            .count();
        let progress = Part::new(
            Block::Progress(ProgressBlock {
                label: PLAN_PROGRESS_LABEL.to_owned(),
                completed: Some(done as u64),
                total: Some(items.len() as u64),
                unit: ProgressUnit::Items,
            }),
            Notes::default(),
            Role::Optional,
        );
        if items.is_empty() {
            return vec![progress];
        }
        let mut notes = Notes::default();
        let rows = items
            .iter()
            .map(|item| {
                row(
                    item.status.label(),
                    Some(notes.text(Subject::Text, &item.text, STRING_BYTES)),
                )
            })
            .collect();
        vec![progress, Part::results(rows, notes)]
    }
}

#[cfg(test)]
mod tests {
    use magi_protocol::cards::{
        Availability, CARD_BYTES, Card, Changes, Origin, ToolKind, serialized_len, validate,
    };
    use magi_protocol::limits::{TODO_ITEM_BYTES, TODO_ITEMS};
    use magi_protocol::plan::{PlanItem, PlanStatus, plan_of};
    use magi_store::records::ToolOutcome;
    use magi_tools::facts::Facts;

    use crate::cards::{CardSource, PreviewSource, Settlement, TranscriptStyles, project};

    fn card(items: &[PlanItem], origin: Origin) -> Card {
        let facts = serde_json::to_value(Facts::Plan {
            items: items.to_vec(),
        })
        .unwrap();
        project(&CardSource {
            activity_id: "tool-1",
            origin,
            revision: 0,
            tool_name: "todo",
            label: "todo 1 of 3 done",
            working_directory: None,
            settlement: Settlement::Settled {
                outcome: ToolOutcome::Completed,
                summary: "plan: 1 of 3 done",
            },
            facts: Some(&facts),
            protection: None,
            awaiting_approval: false,
            preview: PreviewSource::NotApplicable,
            parent_activity_id: None,
            task_id: None,
            children: None,
            transcript: &[],
            transcript_styles: TranscriptStyles::Off,
            hook: None,
        })
    }

    fn item(text: &str, status: PlanStatus) -> PlanItem {
        PlanItem {
            text: text.to_owned(),
            status,
        }
    }

    #[test]
    fn the_card_is_the_checklist_and_reads_back_as_the_plan() {
        let items = vec![
            item("Read the parser", PlanStatus::Done),
            item("Fix the off-by-one", PlanStatus::InProgress),
            item("Run the tests", PlanStatus::Pending),
        ];
        for origin in [Origin::Live, Origin::Saved] {
            let shown = card(&items, origin);
            validate(&shown).unwrap();
            assert_eq!(
                (shown.tool_kind, shown.changes, shown.detail.availability),
                (
                    ToolKind::Other,
                    Changes::NotApplicable,
                    Availability::Complete
                )
            );
            assert_eq!(shown.title, "todo 1 of 3 done");
            let json = serde_json::to_value(&shown.blocks).unwrap();
            assert_eq!(
                json,
                serde_json::json!([
                    {"type": "progress", "label": "Items done", "completed": 1, "total": 3,
                     "unit": "items"},
                    {"type": "results", "rows": [
                        {"label": "Done", "value": "Read the parser", "outcome": "unknown"},
                        {"label": "In progress", "value": "Fix the off-by-one",
                         "outcome": "unknown"},
                        {"label": "Pending", "value": "Run the tests", "outcome": "unknown"},
                    ]},
                ])
            );
            assert_eq!(plan_of(&shown), Some(items.clone()));
        }
        let cleared = card(&[], Origin::Saved);
        validate(&cleared).unwrap();
        assert_eq!(cleared.blocks.len(), 1);
        assert_eq!(plan_of(&cleared), Some(Vec::new()));
    }

    #[test]
    fn the_largest_plan_fits_the_card_budget_whole() {
        // Every byte a quote, which escaping doubles: the worst case the bounds allow.
        let text = "\"".repeat(TODO_ITEM_BYTES);
        let items: Vec<PlanItem> = (0..TODO_ITEMS)
            .map(|_| item(&text, PlanStatus::Pending))
            .collect();
        let shown = card(&items, Origin::Live);
        validate(&shown).unwrap();
        assert!(serialized_len(&shown) <= CARD_BYTES);
        assert_eq!(plan_of(&shown).map(|p| p.len()), Some(TODO_ITEMS));
    }

    #[test]
    fn a_card_that_lost_rows_or_failed_is_no_plan() {
        let items = vec![
            item("One", PlanStatus::Pending),
            item("Two", PlanStatus::Done),
        ];
        let mut shown = card(&items, Origin::Live);
        if let Some(magi_protocol::cards::Block::Results(results)) = shown.blocks.get_mut(1) {
            results.rows.pop();
        }
        assert_eq!(plan_of(&shown), None, "a row short of the count");
        let core = crate::cards::core(&card(&items, Origin::Live));
        assert_eq!(plan_of(&core), None, "a core keeps no plan");
        let mut failed = card(&items, Origin::Live);
        failed.outcome = Some(magi_protocol::cards::CardOutcome::Failure);
        assert_eq!(plan_of(&failed), None);
    }
}
