//! The model's plan (`plan.todo`) as ACP's `plan` session update: each finished `todo`
//! card that carries a whole plan (`magi_protocol::plan::plan_of`) becomes one update
//! with every entry, as ACP asks (the client replaces its checklist with each). Our
//! plan has no priorities, so every entry is `medium`; `done` is ACP's `completed`.

use agent_client_protocol_schema::v1::{
    Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate,
};
use magi_protocol::cards::Card;
use magi_protocol::plan::{PlanStatus, plan_of};

/// The `plan` update a card gives; none for a card that is not a whole plan (another
/// tool's, a refused list's, one reduced to its core).
pub(crate) fn plan_update(card: &Card) -> Option<SessionUpdate> {
    let entries = plan_of(card)?
        .into_iter()
        .map(|item| {
            let status = match item.status {
                PlanStatus::Pending => PlanEntryStatus::Pending,
                PlanStatus::InProgress => PlanEntryStatus::InProgress,
                PlanStatus::Done => PlanEntryStatus::Completed,
            };
            PlanEntry::new(item.text, PlanEntryPriority::Medium, status)
        })
        .collect();
    Some(SessionUpdate::Plan(Plan::new(entries)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(rows: serde_json::Value, total: u64, outcome: &str) -> Card {
        serde_json::from_value(serde_json::json!({
            "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
            "parent_activity_id": null, "parent_state": "root", "task_id": null,
            "tool_kind": "other", "state": "finished", "outcome": outcome,
            "changes": "not_applicable", "revision": 1, "origin": "live",
            "detail": {"availability": "complete", "reason": null},
            "title": "todo 1 of 3 done",
            "metadata": {"tool_name": "todo", "resource_path": null, "working_directory": null,
                         "public_protection": {"decision": "not_reported", "summary": null}},
            "blocks": [
                {"type": "progress", "label": "Items done", "completed": 1, "total": total,
                 "unit": "items"},
                {"type": "results", "rows": rows},
            ],
            "omissions": []
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_entry_goes_with_its_status_and_a_medium_priority() {
        let rows = serde_json::json!([
            {"label": "Done", "value": "Read it", "outcome": "unknown"},
            {"label": "In progress", "value": "Fix it", "outcome": "unknown"},
            {"label": "Pending", "value": "Test it", "outcome": "unknown"},
        ]);
        let update = plan_update(&card(rows.clone(), 3, "success")).unwrap();
        assert_eq!(
            serde_json::to_value(update).unwrap(),
            serde_json::json!({"sessionUpdate": "plan", "entries": [
                {"content": "Read it", "priority": "medium", "status": "completed"},
                {"content": "Fix it", "priority": "medium", "status": "in_progress"},
                {"content": "Test it", "priority": "medium", "status": "pending"},
            ]})
        );
        assert!(
            plan_update(&card(rows.clone(), 4, "success")).is_none(),
            "rows missing"
        );
        assert!(
            plan_update(&card(rows, 3, "failure")).is_none(),
            "a refused list"
        );
    }
}
