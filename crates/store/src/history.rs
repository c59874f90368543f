//! The history projection: stored records to the entries `history.page` shows, chunked
//! to the content bounds, and cut into pages.
//!
//! Pure functions over records: what a revision shows depends on the recorded facts
//! only, never on today's files. Text is reconciled first (one assistant copy), then
//! sanitized (controls stripped, secrets redacted), then chunked, so every part fits
//! both the raw 16,384-byte chunk bound and a 32,768-byte page on its own.

use std::collections::HashMap;

use magi_protocol::limits::{
    HISTORY_CHUNK_BYTES, HISTORY_PAGE_BYTES, HISTORY_SNAPSHOT_BYTES, HISTORY_SNAPSHOT_PARTS,
};
use magi_protocol::messages::{EntryKind, HistoryEntry, SavedCard};
use magi_protocol::text::sanitize;

use crate::records::{Record, RecordBody, ToolOutcome, TurnOutcome};

mod cards;
mod pages;

pub use cards::{CardSelector, SavedCall, SavedHook, SavedPreview};
pub use pages::page;

/// Room kept in a page for everything but one entry's text: the result's own fields
/// (session ID, revision and cursor of at most 64 bytes each) and the entry's fields.
const PAGE_OVERHEAD_BYTES: usize = 1_024;
/// The most serialized text one part may take, so that any single part fits a page.
const PART_ESCAPED_BYTES: usize = HISTORY_PAGE_BYTES - PAGE_OVERHEAD_BYTES;

/// The projection of one history revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    /// Every part of every message, in stored order.
    pub entries: Vec<HistoryEntry>,
    /// Whether the history is complete: no interrupted turn, no torn record.
    pub complete: bool,
}

/// The projection exceeds the snapshot budget (8 MiB serialized, 10,000 parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget;

/// One message, already sanitized and chunked into its entries.
struct Message {
    entries: Vec<HistoryEntry>,
    /// Serialized bytes of its entries, each with a separating comma.
    bytes: usize,
}

/// Builds a projection one record at a time, so a reader can stream a large log and
/// keep only what history shows. Messages are chunked as they arrive; a tool result or
/// a repeated identified summary replaces its message in place.
#[derive(Default)]
pub struct Projector {
    messages: Vec<Message>,
    complete: bool,
    bytes: usize,
    parts: usize,
    over_budget: bool,
    /// The message showing each tool call and its tool's name, by call ID.
    tool_calls: HashMap<String, (usize, String)>,
    /// The message of each identified summary, by turn and item.
    summaries: HashMap<(String, String), usize>,
    open_turn: Option<String>,
    /// With `tool.cards`: how saved cards are selected, and what each call recorded.
    cards: Option<CardSelector>,
    saved_calls: HashMap<String, SavedCall>,
    /// The call whose result named each display ID (none once two results did).
    display_ids: HashMap<String, Option<String>>,
    /// The message of every tool call, with its call ID, duplicates included.
    call_messages: Vec<(usize, String)>,
}

/// What one record adds to history.
enum Shown {
    /// A new message.
    New(EntryKind, String, bool),
    /// A new message, or the replacement of an earlier one.
    Replace(Option<usize>, EntryKind, String, bool),
    /// Nothing.
    Nothing,
}

const INTERRUPTED: &str = "The turn was interrupted before it finished.";

impl Projector {
    /// An empty projection.
    pub fn new() -> Projector {
        Projector {
            complete: true,
            ..Projector::default()
        }
    }

    /// An empty projection whose activity entries carry saved cards chosen by
    /// `selector` (the `tool.cards` extension).
    pub fn with_cards(selector: CardSelector) -> Projector {
        Projector {
            cards: Some(selector),
            ..Projector::new()
        }
    }

    /// Adds one stored record.
    pub fn push(&mut self, record: &Record) {
        if self.cards.is_some() {
            self.collect_card_facts(&record.body);
        }
        let shown = match &record.body {
            RecordBody::TurnStarted { turn_id } => {
                if self.open_turn.replace(turn_id.clone()).is_some() {
                    self.complete = false;
                    Shown::New(EntryKind::Diagnostic, INTERRUPTED.into(), true)
                } else {
                    Shown::Nothing
                }
            }
            RecordBody::TurnFinished {
                turn_id,
                outcome,
                error_code,
            } => {
                if self.open_turn.as_deref() == Some(turn_id.as_str()) {
                    self.open_turn = None;
                }
                match (outcome, error_code) {
                    (TurnOutcome::Completed, _) => Shown::Nothing,
                    (TurnOutcome::Cancelled, _) => Shown::New(
                        EntryKind::Diagnostic,
                        "The turn was cancelled.".into(),
                        false,
                    ),
                    (TurnOutcome::Failed, Some(code)) => Shown::New(
                        EntryKind::Diagnostic,
                        format!("The turn failed: {code}."),
                        false,
                    ),
                    (TurnOutcome::Failed, None) => {
                        Shown::New(EntryKind::Diagnostic, "The turn failed.".into(), false)
                    }
                }
            }
            RecordBody::UserInput { text, .. } => Shown::New(EntryKind::User, text.clone(), false),
            RecordBody::AssistantOutput {
                text,
                chunks,
                partial,
                ..
            } => {
                // One reconciled copy: the stored text, or the legacy chunks joined.
                let text = text.clone().unwrap_or_else(|| chunks.concat());
                Shown::New(EntryKind::Assistant, text, *partial)
            }
            RecordBody::ReasoningSummary {
                turn_id,
                item_id,
                text,
                provider_summary,
            } => match (provider_summary, item_id) {
                (Some(true), Some(item)) => {
                    let key = (turn_id.clone(), item.clone());
                    let earlier = self.summaries.get(&key).copied();
                    if earlier.is_none() {
                        self.summaries.insert(key, self.messages.len());
                    }
                    Shown::Replace(earlier, EntryKind::ReasoningSummary, text.clone(), false)
                }
                (Some(true), None) => Shown::New(EntryKind::ReasoningSummary, text.clone(), false),
                // Without the provider's own summary mark nothing is shown.
                _ => Shown::Nothing,
            },
            RecordBody::ToolCall {
                call_id,
                name,
                summary,
                ..
            } => {
                self.tool_calls
                    .insert(call_id.clone(), (self.messages.len(), name.clone()));
                Shown::New(
                    EntryKind::Activity,
                    format!("{name}: started. {summary}"),
                    true,
                )
            }
            RecordBody::ToolResult {
                call_id,
                name,
                outcome,
                summary,
                ..
            }
            | RecordBody::CodeModeToolResult {
                call_id,
                name,
                outcome,
                summary,
                ..
            } => {
                let state = match outcome {
                    ToolOutcome::Completed => "completed",
                    ToolOutcome::Failed => "failed",
                    ToolOutcome::Cancelled => "cancelled",
                    ToolOutcome::Indeterminate => "outcome unknown",
                    ToolOutcome::Denied => "denied",
                };
                let call = self.tool_calls.get(call_id.as_str()).map(|(index, _)| *index);
                Shown::Replace(
                    call,
                    EntryKind::Activity,
                    format!("{name}: {state}. {summary}"),
                    false,
                )
            }
            // A hook gave the call other arguments: it runs as this label says.
            RecordBody::ToolCallHook {
                call_id,
                summary: Some(summary),
                ..
            } => match self.tool_calls.get(call_id.as_str()) {
                Some((call, name)) => {
                    Shown::Replace(
                        Some(*call),
                        EntryKind::Activity,
                        format!("{name}: started. {summary}"),
                        true,
                    )
                }
                None => Shown::Nothing,
            },
            RecordBody::AsyncBashEvent { job_id, state, .. } => Shown::New(
                EntryKind::Activity,
                format!("async_bash: {job_id} ended. {state}"),
                false,
            ),
            RecordBody::Compaction { summary, .. } => {
                Shown::New(EntryKind::Compaction, summary.clone(), false)
            }
            RecordBody::SessionMeta { .. }
            | RecordBody::SessionPreferences { .. }
            | RecordBody::SessionRule { .. }
            | RecordBody::SessionRuleRevoked { .. }
            | RecordBody::PermissionMode { .. }
            // The mode's change as the model was told it.
            | RecordBody::ModeNote { .. }
            | RecordBody::Title { .. }
            | RecordBody::Usage { .. }
            | RecordBody::TaskLink { .. }
            | RecordBody::ToolAppliedPreview { .. }
            | RecordBody::ToolCallState { .. }
            | RecordBody::ToolCallHook { .. }
            // An automatic prompt to the model, which history never shows.
            | RecordBody::LoopNote { .. }
            // Context a hook added for the model.
            | RecordBody::HookNote { .. }
            // Reasoning for the provider alone.
            | RecordBody::ProviderReasoning { .. }
            // The turn's context, for the model alone.
            | RecordBody::TurnContext { .. }
            // A restore's note to the model, and where a fork came from.
            | RecordBody::CheckpointRestored { .. }
            | RecordBody::SessionForked { .. }
            | RecordBody::Diagnostic
            | RecordBody::Unknown => Shown::Nothing,
        };
        match shown {
            Shown::New(kind, text, partial) | Shown::Replace(None, kind, text, partial) => {
                self.place(None, kind, &text, partial)
            }
            Shown::Replace(Some(index), kind, text, partial) => {
                self.place(Some(index), kind, &text, partial)
            }
            Shown::Nothing => {}
        }
    }

    /// Sanitizes and chunks a message into the slot `index` (a replacement) or a new one.
    fn place(&mut self, index: Option<usize>, kind: EntryKind, text: &str, partial: bool) {
        if self.over_budget {
            return;
        }
        let slot = index.unwrap_or(self.messages.len());
        let text = sanitize(text);
        let parts = split_text(&text);
        let last = parts.len() - 1;
        let entries: Vec<HistoryEntry> = parts
            .into_iter()
            .enumerate()
            .map(|(part, chunk)| HistoryEntry {
                message_id: format!("m{slot}"),
                kind,
                text: chunk.to_owned(),
                partial,
                part: part as u64,
                last_part: part == last,
                tool_card: SavedCard::Absent,
            })
            .collect();
        let message = Message {
            bytes: entries.iter().map(|e| entry_bytes(e) + 1).sum(),
            entries,
        };
        self.bytes += message.bytes;
        self.parts += message.entries.len();
        match index {
            Some(index) => {
                let old = std::mem::replace(&mut self.messages[index], message);
                self.bytes -= old.bytes;
                self.parts -= old.entries.len();
            }
            None => self.messages.push(message),
        }
        // Replacements can shrink the projection again, so the exact check is at the
        // end; this guard only keeps memory within twice the budget meanwhile.
        if self.bytes > 2 * HISTORY_SNAPSHOT_BYTES || self.parts > 2 * HISTORY_SNAPSHOT_PARTS {
            self.over_budget = true;
            self.messages = Vec::new();
        }
    }

    /// The projection. `torn_tail` says the log ended in a record cut short by a crash:
    /// it is shown as an interruption, never as data.
    pub fn finish(mut self, torn_tail: bool) -> Result<Projection, OverBudget> {
        if self.open_turn.is_some() || torn_tail {
            self.complete = false;
            self.place(None, EntryKind::Diagnostic, INTERRUPTED, true);
        }
        self.attach_cards();
        if self.over_budget
            || self.bytes > HISTORY_SNAPSHOT_BYTES
            || self.parts > HISTORY_SNAPSHOT_PARTS
        {
            return Err(OverBudget);
        }
        Ok(Projection {
            entries: self.messages.into_iter().flat_map(|m| m.entries).collect(),
            complete: self.complete,
        })
    }
}
/// Projects stored records into history entries (see [`Projector`]).
pub fn project(records: &[Record], torn_tail: bool) -> Result<Projection, OverBudget> {
    let mut projector = Projector::new();
    for record in records {
        projector.push(record);
    }
    projector.finish(torn_tail)
}

/// Splits text into parts of at most [`HISTORY_CHUNK_BYTES`] raw bytes and
/// [`PART_ESCAPED_BYTES`] once JSON-escaped, never inside a UTF-8 scalar. Empty text is
/// one empty part.
fn split_text(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = 0;
    for (offset, c) in text.char_indices() {
        let width = escaped_width(c);
        if offset + c.len_utf8() - start > HISTORY_CHUNK_BYTES
            || escaped + width > PART_ESCAPED_BYTES
        {
            parts.push(&text[start..offset]);
            start = offset;
            escaped = 0;
        }
        escaped += width;
    }
    parts.push(&text[start..]);
    parts
}

/// Bytes a character takes inside a JSON string as serde_json writes it.
fn escaped_width(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The serialized size of one entry.
fn entry_bytes(entry: &HistoryEntry) -> usize {
    serde_json::to_vec(entry).map_or(usize::MAX, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use magi_protocol::limits::HISTORY_PAGE_ENTRIES;
    use magi_protocol::messages::HistoryPageResult;
    use proptest::prelude::*;

    fn rec(body: RecordBody) -> Record {
        Record::now("s", body)
    }

    fn turn(id: &str) -> Record {
        rec(RecordBody::TurnStarted { turn_id: id.into() })
    }

    fn finished(id: &str, outcome: TurnOutcome) -> Record {
        rec(RecordBody::TurnFinished {
            turn_id: id.into(),
            outcome,
            error_code: None,
        })
    }

    fn user(text: &str) -> Record {
        rec(RecordBody::UserInput {
            turn_id: "t".into(),
            message_id: "u".into(),
            text: text.into(),
            images: Vec::new(),
        })
    }

    fn assistant(text: Option<&str>, chunks: &[&str], partial: bool) -> Record {
        rec(RecordBody::AssistantOutput {
            turn_id: "t".into(),
            message_id: "a".into(),
            text: text.map(str::to_owned),
            chunks: chunks.iter().map(|c| (*c).to_owned()).collect(),
            partial,
        })
    }

    fn shown(projection: &Projection) -> Vec<(EntryKind, String, bool)> {
        projection
            .entries
            .iter()
            .map(|e| (e.kind, e.text.clone(), e.partial))
            .collect()
    }

    #[test]
    fn a_completed_turn() {
        let p = project(
            &[
                rec(RecordBody::SessionMeta {
                    cwd: Some("/w".into()),
                }),
                turn("t"),
                user("hello"),
                assistant(Some("hi there"), &["hi ", "there"], false),
                finished("t", TurnOutcome::Completed),
            ],
            false,
        )
        .unwrap();
        assert!(p.complete);
        assert_eq!(
            shown(&p),
            vec![
                (EntryKind::User, "hello".into(), false),
                (EntryKind::Assistant, "hi there".into(), false)
            ]
        );
        assert_eq!(p.entries[0].message_id, "m0");
        assert!(p.entries.iter().all(|e| e.part == 0 && e.last_part));
    }

    #[test]
    fn legacy_assistant_output_uses_its_chunks() {
        let p = project(&[assistant(None, &["a", "b"], false)], false).unwrap();
        assert_eq!(shown(&p), vec![(EntryKind::Assistant, "ab".into(), false)]);
    }

    #[test]
    fn interrupted_and_torn_histories_are_incomplete() {
        let p = project(
            &[turn("t"), user("q"), assistant(Some("par"), &[], true)],
            false,
        )
        .unwrap();
        assert!(!p.complete);
        let last = p.entries.last().unwrap();
        assert_eq!((last.kind, last.partial), (EntryKind::Diagnostic, true));

        let p = project(&[user("q")], true).unwrap();
        assert!(!p.complete);

        let p = project(
            &[turn("a"), turn("b"), finished("b", TurnOutcome::Completed)],
            false,
        )
        .unwrap();
        assert!(!p.complete, "turn a never finished");
    }

    #[test]
    fn failed_and_cancelled_turns_keep_partial_replies_and_can_be_complete() {
        let p = project(
            &[
                turn("t"),
                user("q"),
                assistant(Some("half"), &[], true),
                rec(RecordBody::TurnFinished {
                    turn_id: "t".into(),
                    outcome: TurnOutcome::Failed,
                    error_code: Some("execution_failed".into()),
                }),
            ],
            false,
        )
        .unwrap();
        assert!(p.complete);
        assert_eq!(
            shown(&p)[1..],
            [
                (EntryKind::Assistant, "half".into(), true),
                (
                    EntryKind::Diagnostic,
                    "The turn failed: execution_failed.".into(),
                    false
                )
            ]
        );
    }

    #[test]
    fn only_provider_summaries_are_shown_and_identified_ones_replace() {
        let summary = |item: Option<&str>, text: &str, provider: Option<bool>| {
            rec(RecordBody::ReasoningSummary {
                turn_id: "t".into(),
                item_id: item.map(str::to_owned),
                text: text.into(),
                provider_summary: provider,
            })
        };
        let p = project(
            &[
                summary(Some("r1"), "first", Some(true)),
                summary(None, "raw", None),
                summary(None, "unverified", Some(false)),
                user("between"),
                summary(Some("r1"), "second", Some(true)),
            ],
            false,
        )
        .unwrap();
        assert_eq!(
            shown(&p),
            vec![
                (EntryKind::ReasoningSummary, "second".into(), false),
                (EntryKind::User, "between".into(), false)
            ]
        );
    }

    #[test]
    fn tool_calls_show_their_state_never_their_bodies() {
        let call = |id: &str| {
            rec(RecordBody::ToolCall {
                turn_id: "t".into(),
                call_id: id.into(),
                name: "read".into(),
                summary: "src/main.rs".into(),
                arguments: Some("{\"path\":\"src/main.rs\"}".into()),
                parent_call_id: None,
                sequence: None,
            })
        };
        let p = project(
            &[
                call("c1"),
                call("c2"),
                rec(RecordBody::ToolResult {
                    turn_id: "t".into(),
                    call_id: "c1".into(),
                    name: "read".into(),
                    outcome: ToolOutcome::Completed,
                    summary: "120 lines".into(),
                    content: Some("fn main() {}\n".repeat(120)),
                    facts: None,
                    protection: None,
                    display_id: None,
                    transcript: Vec::new(),
                    transcript_styles: Some(Vec::new()),
                }),
            ],
            false,
        )
        .unwrap();
        assert_eq!(
            shown(&p),
            vec![
                (
                    EntryKind::Activity,
                    "read: completed. 120 lines".into(),
                    false
                ),
                (
                    EntryKind::Activity,
                    "read: started. src/main.rs".into(),
                    true
                )
            ]
        );
    }

    #[test]
    fn text_is_sanitized() {
        let p = project(&[user("key sk-abcdef123456\u{1b}[0m ok")], false).unwrap();
        assert_eq!(p.entries[0].text, "key [redacted] ok");
    }

    #[test]
    fn long_text_is_chunked_within_both_bounds() {
        let quotes = "\"".repeat(40_000);
        let wide = "é".repeat(20_000);
        for text in [quotes.as_str(), wide.as_str(), &"x".repeat(50_000)] {
            let p = project(&[user(text)], false).unwrap();
            assert!(p.entries.len() > 1);
            let joined: String = p.entries.iter().map(|e| e.text.as_str()).collect();
            assert_eq!(joined, text);
            for e in &p.entries {
                assert!(e.text.len() <= HISTORY_CHUNK_BYTES);
                assert!(serde_json::to_string(&e.text).unwrap().len() <= PART_ESCAPED_BYTES + 2);
            }
            assert!(p.entries.last().unwrap().last_part);
        }
    }

    #[test]
    fn over_budget_projections_fail() {
        let records: Vec<Record> = (0..=HISTORY_SNAPSHOT_PARTS).map(|_| user("x")).collect();
        assert_eq!(project(&records, false), Err(OverBudget));
        let big = "y".repeat(HISTORY_CHUNK_BYTES);
        let records: Vec<Record> = (0..(HISTORY_SNAPSHOT_BYTES / HISTORY_CHUNK_BYTES + 1))
            .map(|_| user(&big))
            .collect();
        assert_eq!(project(&records, false), Err(OverBudget));
    }

    fn all_pages(p: &Projection) -> Vec<HistoryPageResult> {
        let mut pages = Vec::new();
        let mut start = Some(0);
        while let Some(s) = start {
            let (page, next) = page(p, "session-id", "revision-id", s, |i| format!("cursor-{i}"));
            assert!(serde_json::to_vec(&page).unwrap().len() <= HISTORY_PAGE_BYTES);
            assert!(page.entries.len() <= HISTORY_PAGE_ENTRIES);
            assert!(!page.entries.is_empty() || p.entries.is_empty());
            pages.push(page);
            start = next;
        }
        pages
    }

    #[test]
    fn pages_respect_entry_and_byte_bounds() {
        let records: Vec<Record> = (0..250).map(|n| user(&format!("message {n}"))).collect();
        let p = project(&records, false).unwrap();
        let pages = all_pages(&p);
        assert_eq!(
            pages.iter().map(|p| p.entries.len()).collect::<Vec<_>>(),
            vec![100, 100, 50]
        );
        assert!(
            pages[..2]
                .iter()
                .all(|p| !p.complete && p.next_cursor.is_some())
        );
        assert!(pages[2].complete && pages[2].next_cursor.is_none());

        let empty = project(&[], false).unwrap();
        let pages = all_pages(&empty);
        assert_eq!(pages.len(), 1);
        assert!(pages[0].complete);
    }

    proptest! {
        // Few cases of large inputs: each case pages megabytes of text in a debug build.
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn paging_and_joining_parts_reproduces_the_projected_text(
            texts in proptest::collection::vec("(\\PC|[\"\\\\\n]){0,400}", 0..12),
            repeat in 1usize..120,
        ) {
            let records: Vec<Record> = texts.iter().map(|t| user(&t.repeat(repeat))).collect();
            let p = project(&records, false).unwrap();
            let mut joined: Vec<String> = Vec::new();
            for page in all_pages(&p) {
                for entry in page.entries {
                    if entry.part == 0 {
                        joined.push(String::new());
                    }
                    joined.last_mut().unwrap().push_str(&entry.text);
                }
            }
            let expected: Vec<String> = texts.iter().map(|t| sanitize(&t.repeat(repeat))).collect();
            prop_assert_eq!(joined, expected);
        }
    }
}
