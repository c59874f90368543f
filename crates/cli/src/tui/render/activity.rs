//! What runs now: the clock that times every activity from when Mission Control first
//! saw it, the background jobs started in this backend, and the activity area above
//! the composer that lists running subagents and jobs with their elapsed times.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use magi_client::fold::{ActivityDisplay, CardView, Item, Role};
use magi_core::cards::{ROW_BACKGROUND_JOB, ROW_JOB, ROW_STATE};
use magi_protocol::cards::{Block, Card, CardOutcome, CardState, ProtectionDecision, ToolKind};
use magi_protocol::messages::{ActivityState, Event};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use super::cards::{Timing, elapsed, main_argument};
use super::saved_times::{SavedTimes, SeenCalls, live_calls};
use crate::tui::App;

/// Lines the activity area shows at most; the rest are counted.
const AREA_LINES: usize = 5;

/// An activity seen to start and end less than this apart was not seen running: its
/// events came in one burst (several calls ending together, or the screen busy), so
/// how long it took is not known here, and no time is shown rather than a false one.
const SEEN_RUNNING: Duration = Duration::from_millis(1);

/// When each activity was first seen and how long it took, and the background jobs.
#[derive(Debug, Default)]
pub(in crate::tui) struct Clock {
    /// By run and activity ID.
    seen: HashMap<(String, String), Seen>,
    /// Background jobs started in this backend, in the order they started.
    jobs: Vec<Job>,
    /// What the saved calls of the history shown took, as seen live.
    saved: SavedTimes,
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    first: Instant,
    /// Once it ended: what it took, unless it was not seen running (`SEEN_RUNNING`).
    took: Option<Option<Duration>>,
    /// Time spent waiting for the person's approval, which is not the call's own.
    waited: Duration,
    /// Since when it waits for an approval, while it does.
    paused: Option<Instant>,
}

impl Seen {
    fn new(first: Instant) -> Seen {
        Seen {
            first,
            took: None,
            waited: Duration::ZERO,
            paused: None,
        }
    }

    /// The wait for an approval ended at `now`.
    fn resume(&mut self, now: Instant) {
        if let Some(since) = self.paused.take() {
            self.waited += now.saturating_duration_since(since);
        }
    }

    /// Time it ran by `now`, approval waits left out.
    fn ran(&self, now: Instant) -> Duration {
        let paused = self
            .paused
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        now.saturating_duration_since(self.first)
            .saturating_sub(self.waited + paused)
    }
}

/// A command left running in the background (`async_bash`, or `bash` moved there).
#[derive(Debug, Clone)]
struct Job {
    id: String,
    command: String,
    since: Instant,
    /// A later call saw it end (`bash_log` or `bash_kill` with another state).
    ended: bool,
}

impl Clock {
    /// Notes what `event` says about activities and jobs, at `now`.
    pub(in crate::tui) fn observe(&mut self, event: &Event, now: Instant) {
        match event {
            Event::Activity(a) => {
                let seen = self
                    .seen
                    .entry((a.run_id.clone(), a.activity_id.clone()))
                    .or_insert(Seen::new(now));
                if a.state != ActivityState::Started && seen.took.is_none() {
                    seen.resume(now);
                    let ran = seen.ran(now);
                    seen.took = Some((ran >= SEEN_RUNNING).then_some(ran));
                }
            }
            Event::ToolCard(e) => {
                let seen = self
                    .seen
                    .entry((e.run_id.clone(), e.activity_id.clone()))
                    .or_insert(Seen::new(now));
                // A call waiting for the person's approval is not running: its time
                // stops until the approval is answered.
                let waiting = e.card.state == CardState::Running
                    && e.card.metadata.public_protection.decision
                        == ProtectionDecision::ApprovalRequired;
                if waiting {
                    seen.paused.get_or_insert(now);
                } else {
                    seen.resume(now);
                }
                self.job_news(&e.card, now);
            }
            _ => {}
        }
    }

    /// A job a card started, or the end of one a card saw.
    fn job_news(&mut self, card: &Card, now: Instant) {
        if card.state != CardState::Finished {
            return;
        }
        if card.outcome == Some(CardOutcome::Success)
            && let Some(id) = row(card, ROW_BACKGROUND_JOB)
            && !self.jobs.iter().any(|j| j.id == id)
        {
            self.jobs.push(Job {
                id,
                command: main_argument(card).unwrap_or_default(),
                since: now,
                ended: false,
            });
        }
        if let (Some(id), Some(state)) = (row(card, ROW_JOB), row(card, ROW_STATE))
            && !state.starts_with("running")
            && let Some(job) = self.jobs.iter_mut().find(|j| j.id == id)
        {
            job.ended = true;
        }
    }

    /// The pending approval was answered at `now`: the call it held runs again.
    pub(in crate::tui) fn approval_answered(&mut self, now: Instant) {
        for seen in self.seen.values_mut() {
            seen.resume(now);
        }
    }

    /// The background jobs started in this backend, oldest first: their IDs, commands
    /// and whether a later call saw them end.
    pub(in crate::tui) fn jobs(&self) -> impl Iterator<Item = (&str, &str, bool)> {
        self.jobs
            .iter()
            .map(|j| (j.id.as_str(), j.command.as_str(), j.ended))
    }

    /// Whether a background job started here has no known end.
    pub(in crate::tui) fn has_jobs(&self) -> bool {
        self.jobs.iter().any(|j| !j.ended)
    }

    /// A fresh backend: the old one's jobs ended with it.
    pub(in crate::tui) fn backend_renewed(&mut self) {
        self.jobs.clear();
    }

    /// The calls shown live in `items` (those of the runs since the history was last
    /// shown), with what each took.
    pub(in crate::tui) fn seen_calls(&self, items: &[Item]) -> SeenCalls {
        live_calls(items, |run_id, activity_id| {
            self.seen
                .get(&(run_id.to_owned(), activity_id.to_owned()))
                .and_then(|seen| seen.took.flatten())
        })
    }

    /// The history of `session_id` in `items` replaced the live entries, after a run
    /// whose calls were `ran`: its saved calls keep the times seen live.
    pub(in crate::tui) fn history_shown(
        &mut self,
        session_id: &str,
        items: &[Item],
        ran: &SeenCalls,
    ) {
        self.saved.history_shown(session_id, items, ran);
    }

    /// How long a saved call of the history shown took, when it was seen live.
    pub(super) fn saved_timing(&self, message_id: &str) -> Timing {
        self.saved
            .took(message_id)
            .map_or(Timing::Unknown, Timing::Took)
    }

    /// How long an activity has run or took, as seen here.
    pub(super) fn timing(&self, run_id: &str, activity_id: &str, now: Instant) -> Timing {
        match self.seen.get(&(run_id.to_owned(), activity_id.to_owned())) {
            Some(Seen {
                took: Some(Some(took)),
                ..
            }) => Timing::Took(*took),
            Some(Seen {
                took: Some(None), ..
            }) => Timing::Unknown,
            Some(seen) => Timing::Running(seen.ran(now)),
            None => Timing::Unknown,
        }
    }
}

/// The value of a card's results row.
fn row(card: &Card, label: &str) -> Option<String> {
    card.blocks.iter().find_map(|b| match b {
        Block::Results(r) => r
            .rows
            .iter()
            .find(|row| row.label == label)
            .and_then(|row| row.value.clone()),
        _ => None,
    })
}

impl App {
    /// The activity area's lines: running subagents (with their running calls) and
    /// background jobs, each with its elapsed time; empty when nothing runs.
    pub(super) fn activity_area(&self, now: Instant) -> Vec<Line<'static>> {
        let items = self.transcript.items();
        let mut lines = Vec::new();
        for item in items {
            let Item::Activity(task) = item else { continue };
            let CardView::Card(card) = &task.card else {
                continue;
            };
            if task.state != ActivityDisplay::Started
                || card.tool_kind != ToolKind::Subagent
                || card.parent_activity_id.is_some()
            {
                continue;
            }
            let running: Vec<String> = items
                .iter()
                .filter_map(|i| match i {
                    Item::Activity(child) if child.state == ActivityDisplay::Started => {
                        match &child.card {
                            CardView::Card(c)
                                if c.parent_activity_id.as_deref()
                                    == Some(task.activity_id.as_str()) =>
                            {
                                Some(c.title.clone())
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                })
                .collect();
            let time = match self.clock.timing(&task.run_id, &task.activity_id, now) {
                Timing::Running(d) | Timing::Took(d) => format!(" · {}", elapsed(d)),
                Timing::Unknown => String::new(),
            };
            let doing = match running.first() {
                Some(first) if running.len() > 1 => {
                    format!(" · {first} and {} more", running.len() - 1)
                }
                Some(first) => format!(" · {first}"),
                None => String::new(),
            };
            let what = main_argument(card).unwrap_or_else(|| card.title.clone());
            lines.push(entry("subagent", &what, &format!("{time}{doing}")));
        }
        for job in self.clock.jobs.iter().filter(|j| !j.ended) {
            // The backend tells a job's end to the model at the next turn, recorded as
            // a history entry.
            let ended = items.iter().any(|i| {
                matches!(i, Item::History(h) if i.role() == Role::Activity
                    && h.text.starts_with(&format!("async_bash: {} ended", job.id)))
            });
            if ended {
                continue;
            }
            // Its end is told to the model at the next turn, not to this client: until
            // then all that is known is when it started.
            let time = elapsed(now.saturating_duration_since(job.since));
            lines.push(entry(
                &format!("background {}", job.id),
                &job.command,
                &format!(" · started {time} ago · no end reported yet"),
            ));
        }
        if lines.len() > AREA_LINES {
            let more = lines.len() - (AREA_LINES - 1);
            lines.truncate(AREA_LINES - 1);
            lines.push(Line::from(Span::styled(
                format!("  … and {more} more running"),
                Style::default().fg(Color::DarkGray),
            )));
        }
        lines
    }
}

/// One running thing: `⏵ subagent reviewer: … · 12s · read a.rs`.
fn entry(what: &str, title: &str, rest: &str) -> Line<'static> {
    Line::from(vec![
        Span::styled("⏵ ", Style::default().fg(Color::Yellow)),
        Span::styled(format!("{what} "), Style::default().fg(Color::Yellow)),
        Span::raw(title.to_owned()),
        Span::styled(rest.to_owned(), Style::default().fg(Color::DarkGray)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(json: serde_json::Value) -> Card {
        serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"))
    }

    fn job_card(tool: &str, rows: serde_json::Value) -> Card {
        card(serde_json::json!({
            "schema_version": 1, "card_id": "tool-1", "activity_id": "tool-1",
            "parent_activity_id": null, "parent_state": "root", "task_id": null,
            "tool_kind": "command", "state": "finished", "outcome": "success",
            "changes": "unknown", "revision": 1, "origin": "live",
            "detail": {"availability": "complete", "reason": null},
            "title": format!("{tool} sleep 100"),
            "metadata": {"tool_name": tool, "resource_path": null, "working_directory": null,
                         "public_protection": {"decision": "not_reported", "summary": null}},
            "blocks": [{"type": "results", "rows": rows}],
            "omissions": []
        }))
    }

    #[test]
    fn a_job_runs_until_a_later_call_sees_it_end() {
        let mut clock = Clock::default();
        let now = Instant::now();
        let started = job_card(
            "async_bash",
            serde_json::json!([{"label": "Background job", "value": "job-3", "outcome": "unknown"}]),
        );
        clock.job_news(&started, now);
        clock.job_news(&started, now);
        assert_eq!(clock.jobs.len(), 1);
        assert_eq!(clock.jobs[0].command, "sleep 100");
        let still = job_card(
            "bash_log",
            serde_json::json!([{"label": "Job", "value": "job-3", "outcome": "unknown"},
                               {"label": "State", "value": "running", "outcome": "unknown"}]),
        );
        clock.job_news(&still, now);
        assert!(!clock.jobs[0].ended);
        let killed = job_card(
            "bash_kill",
            serde_json::json!([{"label": "Job", "value": "job-3", "outcome": "unknown"},
                               {"label": "State", "value": "killed", "outcome": "unknown"}]),
        );
        clock.job_news(&killed, now);
        assert!(clock.jobs[0].ended);
    }

    #[test]
    fn an_activity_is_timed_from_when_it_was_first_seen() {
        use magi_protocol::messages::{Activity, ActivityKind};
        let mut clock = Clock::default();
        let start = Instant::now();
        let event = |state| {
            Event::Activity(Activity {
                session_id: "s".into(),
                run_id: "r".into(),
                activity_id: "tool-1".into(),
                kind: ActivityKind::Tool,
                state,
                name: "bash".into(),
                summary: "bash sleep 1".into(),
            })
        };
        clock.observe(&event(ActivityState::Started), start);
        let later = start + Duration::from_secs(3);
        assert_eq!(
            clock.timing("r", "tool-1", later),
            Timing::Running(Duration::from_secs(3))
        );
        clock.observe(&event(ActivityState::Completed), later);
        // Settled: the duration stays what it was when it ended.
        assert_eq!(
            clock.timing("r", "tool-1", later + Duration::from_secs(60)),
            Timing::Took(Duration::from_secs(3))
        );
        assert_eq!(clock.timing("r", "tool-2", later), Timing::Unknown);
    }

    #[test]
    fn a_call_seen_to_start_and_end_in_one_burst_shows_no_time() {
        let mut clock = Clock::default();
        let now = Instant::now();
        let event = |activity: &str, state| {
            Event::Activity(magi_protocol::messages::Activity {
                session_id: "s".into(),
                run_id: "r".into(),
                activity_id: activity.into(),
                kind: magi_protocol::messages::ActivityKind::Tool,
                state,
                name: "bash".into(),
                summary: "bash ls".into(),
            })
        };
        clock.observe(&event("tool-1", ActivityState::Started), now);
        clock.observe(&event("tool-1", ActivityState::Completed), now);
        // Not "0ms": the two events came together, so the time is not known here.
        assert_eq!(clock.timing("r", "tool-1", now), Timing::Unknown);
        clock.observe(&event("tool-2", ActivityState::Started), now);
        let later = now + Duration::from_millis(20);
        clock.observe(&event("tool-2", ActivityState::Completed), later);
        assert_eq!(
            clock.timing("r", "tool-2", later),
            Timing::Took(Duration::from_millis(20))
        );
    }

    #[test]
    fn the_wait_for_an_approval_is_not_the_calls_time() {
        use magi_protocol::cards::ToolCardEvent;
        let mut clock = Clock::default();
        let start = Instant::now();
        let at = |secs| start + Duration::from_secs(secs);
        let card_event = |decision: &str| {
            let mut card = job_card("bash", serde_json::json!([]));
            card.state = CardState::Running;
            card.outcome = None;
            card.metadata.public_protection.decision =
                serde_json::from_value(serde_json::json!(decision))
                    .unwrap_or_else(|e| panic!("{e}"));
            Event::ToolCard(Box::new(ToolCardEvent {
                session_id: "s".into(),
                run_id: "r".into(),
                activity_id: "tool-1".into(),
                part: 0,
                last_part: true,
                card,
            }))
        };
        clock.observe(&card_event("not_reported"), start);
        clock.observe(&card_event("approval_required"), at(2));
        // Waiting: the time stands still.
        assert_eq!(
            clock.timing("r", "tool-1", at(30)),
            Timing::Running(Duration::from_secs(2))
        );
        clock.approval_answered(at(40));
        assert_eq!(
            clock.timing("r", "tool-1", at(43)),
            Timing::Running(Duration::from_secs(5))
        );
    }
}
