//! The plan pinned above the composer (`plan.todo`): the newest plan the model gave
//! with `todo`, read from its card by `magi_protocol::plan::plan_of`, live or saved, so
//! a reopened session shows it again from its history. Collapsed it takes one row (the
//! step in progress, else the next one), with the counts in its frame's title; Ctrl-O,
//! which expands the cards, lists every step, at most [`PLAN_ROWS`] rows. Each step is
//! one row cut to the width by display cells, so wide characters never spill.

use magi_client::fold::{CardView, Item};
use magi_protocol::cards::Card;
use magi_protocol::plan::{PlanItem, PlanStatus, plan_of};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{spans_width, wrap};

/// Most rows the expanded plan takes, its last saying how many steps it leaves out.
pub(super) const PLAN_ROWS: usize = 8;

/// The current plan of the transcript: the newest card that carries a whole plan (a
/// failed `todo` call's card, or one reduced to its core, leaves the one before).
/// `None` when the model gave none, or cleared it.
pub(super) fn current(items: &[Item]) -> Option<Vec<PlanItem>> {
    let card = |item: &Item| -> Option<Vec<PlanItem>> {
        let card: &Card = match item {
            Item::Activity(activity) => match &activity.card {
                CardView::Card(card) => card,
                _ => return None,
            },
            Item::History(message) => message.card.as_deref()?,
            _ => return None,
        };
        plan_of(card)
    };
    items
        .iter()
        .rev()
        .find_map(card)
        .filter(|plan| !plan.is_empty())
}

/// The frame's title: how far the plan is.
pub(super) fn title(plan: &[PlanItem], expanded: bool) -> String {
    let done = plan.iter().filter(|i| i.status == PlanStatus::Done).count();
    let hint = if expanded { "" } else { " · Ctrl-O all" };
    format!(" plan · {done} of {} done{hint} ", plan.len())
}

/// The plan's rows, each at most `width` cells: collapsed, the one step that matters
/// now; expanded, every step, at most [`PLAN_ROWS`] rows.
pub(super) fn lines(plan: &[PlanItem], expanded: bool, width: usize) -> Vec<Line<'static>> {
    if !expanded {
        let now = plan
            .iter()
            .find(|i| i.status == PlanStatus::InProgress)
            .map(|i| step(i, None, width))
            .or_else(|| {
                plan.iter()
                    .find(|i| i.status == PlanStatus::Pending)
                    .map(|i| step(i, Some("next: "), width))
            })
            .unwrap_or_else(|| {
                Line::from(Span::styled(
                    format!("[x] all {} steps done", plan.len()),
                    Style::default().fg(Color::Green),
                ))
            });
        return vec![now];
    }
    if plan.len() <= PLAN_ROWS {
        return plan.iter().map(|i| step(i, None, width)).collect();
    }
    // The rows show the step in progress (or the next one) with the one before it.
    let focus = plan
        .iter()
        .position(|i| i.status != PlanStatus::Done)
        .unwrap_or(plan.len() - 1);
    let room = PLAN_ROWS - 1;
    let first = focus.saturating_sub(1).min(plan.len() - room);
    let mut rows: Vec<Line<'static>> = plan[first..first + room]
        .iter()
        .map(|i| step(i, None, width))
        .collect();
    let (before, after) = (first, plan.len() - first - room);
    let left_out = match (before, after) {
        (0, after) => format!("  … {after} more after"),
        (before, 0) => format!("  … {before} more before"),
        (before, after) => format!("  … {before} more before, {after} after"),
    };
    rows.push(Line::from(Span::styled(
        left_out,
        Style::default().fg(Color::DarkGray),
    )));
    rows
}

/// One step on one row: its mark, `lead`, its text, cut with `…` to `width` cells.
fn step(item: &PlanItem, lead: Option<&str>, width: usize) -> Line<'static> {
    let (mark, style) = match item.status {
        PlanStatus::Done => ("[x] ", Style::default().fg(Color::Green)),
        PlanStatus::InProgress => (
            "[>] ",
            Style::default()
                .fg(Color::Yellow)
                .add_modifier(Modifier::BOLD),
        ),
        PlanStatus::Pending => ("[ ] ", Style::default()),
    };
    let mut prefix = vec![Span::styled(mark, style)];
    if let Some(lead) = lead {
        prefix.push(Span::styled(
            lead.to_owned(),
            Style::default().fg(Color::DarkGray),
        ));
    }
    let text = [Span::styled(item.text.clone(), style)];
    let rows = wrap(&prefix, &text, &[], width);
    match rows.len() {
        0 | 1 => rows.into_iter().next().unwrap_or_default(),
        _ => {
            // Cut again one cell short, for the ellipsis.
            let mut row = wrap(&prefix, &text, &[], width.saturating_sub(1))
                .into_iter()
                .next()
                .unwrap_or_default();
            if spans_width(&row.spans) < width {
                row.spans.push(Span::styled("…", style));
            }
            row
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(text: &str, status: PlanStatus) -> PlanItem {
        PlanItem {
            text: text.to_owned(),
            status,
        }
    }

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    fn plan(n: usize, working: usize) -> Vec<PlanItem> {
        (0..n)
            .map(|k| {
                let status = match k.cmp(&working) {
                    std::cmp::Ordering::Less => PlanStatus::Done,
                    std::cmp::Ordering::Equal => PlanStatus::InProgress,
                    std::cmp::Ordering::Greater => PlanStatus::Pending,
                };
                item(&format!("step {k}"), status)
            })
            .collect()
    }

    #[test]
    fn collapsed_it_shows_the_step_in_progress_else_the_next_else_all_done() {
        let working = plan(5, 2);
        assert_eq!(title(&working, false), " plan · 2 of 5 done · Ctrl-O all ");
        let shown = lines(&working, false, 80);
        assert_eq!(shown.iter().map(text).collect::<Vec<_>>(), ["[>] step 2"]);
        let waiting = vec![item("a", PlanStatus::Done), item("b", PlanStatus::Pending)];
        assert_eq!(text(&lines(&waiting, false, 80)[0]), "[ ] next: b");
        let finished = vec![item("a", PlanStatus::Done), item("b", PlanStatus::Done)];
        assert_eq!(
            text(&lines(&finished, false, 80)[0]),
            "[x] all 2 steps done"
        );
    }

    #[test]
    fn expanded_it_lists_the_steps_within_its_rows() {
        let shown = lines(&plan(5, 2), true, 80);
        assert_eq!(
            shown.iter().map(text).collect::<Vec<_>>(),
            [
                "[x] step 0",
                "[x] step 1",
                "[>] step 2",
                "[ ] step 3",
                "[ ] step 4"
            ]
        );
        let long = lines(&plan(20, 12), true, 80);
        assert_eq!(long.len(), PLAN_ROWS);
        assert_eq!(text(&long[0]), "[x] step 11");
        assert_eq!(text(&long[1]), "[>] step 12");
        assert_eq!(text(&long[PLAN_ROWS - 1]), "  … 11 more before, 2 after");
        let start = lines(&plan(20, 0), true, 80);
        assert_eq!(text(&start[0]), "[>] step 0");
        assert_eq!(text(&start[PLAN_ROWS - 1]), "  … 13 more after");
        let end = lines(&plan(20, 19), true, 80);
        assert_eq!(text(&end[PLAN_ROWS - 1]), "  … 13 more before");
    }

    /// A finished `todo` call's live activity whose card holds `rows` of `total`
    /// items, with `outcome`.
    fn todo_call(id: &str, rows: serde_json::Value, total: u64, outcome: &str) -> Item {
        let card: Card = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "card_id": id, "activity_id": id,
            "parent_activity_id": null, "parent_state": "root", "task_id": null,
            "tool_kind": "other", "state": "finished", "outcome": outcome,
            "changes": "not_applicable", "revision": 1, "origin": "live",
            "detail": {"availability": "complete", "reason": null}, "title": "todo",
            "metadata": {"tool_name": "todo", "resource_path": null, "working_directory": null,
                         "public_protection": {"decision": "not_reported", "summary": null}},
            "blocks": [
                {"type": "progress", "label": "Items done", "completed": 0, "total": total,
                 "unit": "items"},
                {"type": "results", "rows": rows},
            ],
            "omissions": []
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        Item::Activity(magi_client::fold::ActivityItem {
            run_id: "run".into(),
            activity_id: id.into(),
            kind: magi_protocol::messages::ActivityKind::Tool,
            name: "todo".into(),
            summary: "plan".into(),
            state: magi_client::fold::ActivityDisplay::Completed,
            card: CardView::Card(Box::new(card)),
        })
    }

    #[test]
    fn the_current_plan_is_the_newest_whole_one_and_a_cleared_plan_unpins() {
        let one = serde_json::json!([{"label": "Pending", "value": "one", "outcome": "unknown"}]);
        let two =
            serde_json::json!([{"label": "In progress", "value": "two", "outcome": "unknown"}]);
        let first = todo_call("a1", one, 1, "success");
        assert_eq!(current(&[]), None);
        assert_eq!(
            current(std::slice::from_ref(&first)),
            Some(vec![item("one", PlanStatus::Pending)])
        );
        // A refused list's card, and one that lost rows, leave the plan before them.
        let refused = todo_call("a2", two.clone(), 1, "failure");
        let short = todo_call("a3", two.clone(), 2, "success");
        assert_eq!(
            current(&[first.clone(), refused, short]),
            Some(vec![item("one", PlanStatus::Pending)])
        );
        let second = todo_call("a4", two, 1, "success");
        assert_eq!(
            current(&[first.clone(), second.clone()]),
            Some(vec![item("two", PlanStatus::InProgress)])
        );
        let cleared = todo_call("a5", serde_json::json!([]), 0, "success");
        assert_eq!(current(&[first, second, cleared]), None);
    }

    #[test]
    fn a_long_step_is_cut_to_the_width_and_never_splits_a_wide_character() {
        let wide = item(&"検査する手順".repeat(10), PlanStatus::InProgress);
        for width in [20, 21, 40, 79, 80] {
            let row = &lines(std::slice::from_ref(&wide), true, width)[0];
            let cells = spans_width(&row.spans);
            assert!(cells <= width, "{cells} cells at {width}");
            assert!(text(row).ends_with('…'), "{}", text(row));
        }
        let short = item("短い", PlanStatus::Pending);
        assert_eq!(text(&lines(&[short], true, 20)[0]), "[ ] 短い");
    }
}
