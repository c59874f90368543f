//! `plan.todo`: the plan the model keeps with its `todo` tool, and how the tool's card
//! carries it, so that the backend writing the card and every client reading it share
//! one vocabulary (docs/protocol/extensions.md, docs/protocol/cards.md).
//!
//! A `todo` call replaces the whole plan. Its finished, successful card holds a
//! `progress` block (`Items done`, the items done of the items listed) and, when the
//! plan has items, one `results` block with a row per item in order: the row's label is
//! the item's status (`Pending`, `In progress`, `Done`), its value the item's text. A
//! client reads the current plan from the newest such card ([`plan_of`]).

use serde::{Deserialize, Serialize};

use crate::cards::{Block, Card, CardOutcome, CardState, ParentState, ProgressUnit};

/// The tool's name, on the wire and in the records.
pub const TODO_TOOL: &str = "todo";

/// The label of the card's `progress` block.
pub const PLAN_PROGRESS_LABEL: &str = "Items done";

/// Where an item of the plan stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on: at most one item of a plan.
    InProgress,
    /// Finished.
    Done,
}

impl PlanStatus {
    /// Every status, in the order the tool's schema lists them.
    pub const ALL: [PlanStatus; 3] = [
        PlanStatus::Pending,
        PlanStatus::InProgress,
        PlanStatus::Done,
    ];

    /// The status as the model writes it in the tool's arguments.
    pub const fn wire(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Done => "done",
        }
    }

    /// The label of the item's row on the card.
    pub const fn label(self) -> &'static str {
        match self {
            PlanStatus::Pending => "Pending",
            PlanStatus::InProgress => "In progress",
            PlanStatus::Done => "Done",
        }
    }

    /// The status a card row's label names, if any.
    pub fn from_label(label: &str) -> Option<PlanStatus> {
        PlanStatus::ALL.into_iter().find(|s| s.label() == label)
    }

    /// The status the model's word names, if any.
    pub fn from_wire(word: &str) -> Option<PlanStatus> {
        PlanStatus::ALL.into_iter().find(|s| s.wire() == word)
    }
}

/// One item of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanItem {
    /// What the step is, one line.
    pub text: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// The plan a `todo` card shows: `None` when the card is not a finished, successful
/// `todo` card of the session's own agent, or when it no longer carries the whole plan (a card reduced to its core
/// under the budgets, or a row whose text was left out): a client then keeps the plan it
/// had. An empty list is a plan cleared by the model.
pub fn plan_of(card: &Card) -> Option<Vec<PlanItem>> {
    if card.metadata.tool_name.as_deref() != Some(TODO_TOOL)
        || card.parent_state != ParentState::Root
        || card.state != CardState::Finished
        || card.outcome != Some(CardOutcome::Success)
    {
        return None;
    }
    let total = card.blocks.iter().find_map(|block| match block {
        Block::Progress(p) if p.label == PLAN_PROGRESS_LABEL && p.unit == ProgressUnit::Items => {
            p.total
        }
        _ => None,
    })?;
    let rows = card.blocks.iter().find_map(|block| match block {
        Block::Results(r)
            if !r.rows.is_empty()
                && r.rows
                    .iter()
                    .all(|row| PlanStatus::from_label(&row.label).is_some()) =>
        {
            Some(&r.rows)
        }
        _ => None,
    });
    let items: Vec<PlanItem> = match rows {
        Some(rows) => rows
            .iter()
            .map(|row| {
                Some(PlanItem {
                    text: row.value.clone()?,
                    status: PlanStatus::from_label(&row.label)?,
                })
            })
            .collect::<Option<_>>()?,
        None => Vec::new(),
    };
    (items.len() as u64 == total).then_some(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_labels_name_each_status_once() {
        for status in PlanStatus::ALL {
            assert_eq!(PlanStatus::from_wire(status.wire()), Some(status));
            assert_eq!(PlanStatus::from_label(status.label()), Some(status));
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, status.wire());
        }
        assert_eq!(PlanStatus::from_wire("completed"), None);
        assert_eq!(PlanStatus::from_label("pending"), None);
    }
}
