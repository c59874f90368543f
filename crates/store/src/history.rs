//! The history projection: stored records to the entries `history.page` shows, chunked
//! to the content bounds, and cut into pages.
//!
//! Pure functions over records: what a revision shows depends on the recorded facts
//! only, never on today's files. Text is reconciled first (one assistant copy), then
//! sanitized (controls stripped, secrets redacted), then chunked, so every part fits
//! both the raw 16,384-byte chunk bound and a 32,768-byte page on its own.

use std::collections::HashMap;

use magi_protocol::limits::{
    HISTORY_CHUNK_BYTES, HISTORY_PAGE_BYTES, HISTORY_PAGE_ENTRIES, HISTORY_SNAPSHOT_BYTES,
    HISTORY_SNAPSHOT_PARTS,
};
use magi_protocol::messages::{EntryKind, HistoryEntry, HistoryPageResult};
use magi_protocol::text::sanitize;

use crate::records::{Record, RecordBody, ToolOutcome, TurnOutcome};

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

/// One message before chunking.
struct Message {
    kind: EntryKind,
    text: String,
    partial: bool,
}

/// Projects stored records into history entries. `torn_tail` says the log ended in a
/// record cut short by a crash: it is shown as an interruption, never as data.
pub fn project(records: &[Record], torn_tail: bool) -> Result<Projection, OverBudget> {
    let mut messages: Vec<Message> = Vec::new();
    let mut complete = true;
    // Index of the message showing each tool call, and of each identified summary.
    let mut tool_calls: HashMap<&str, usize> = HashMap::new();
    let mut summaries: HashMap<(&str, &str), usize> = HashMap::new();
    let mut open_turn: Option<&str> = None;
    let interrupted = |messages: &mut Vec<Message>| {
        messages.push(Message {
            kind: EntryKind::Diagnostic,
            text: "The turn was interrupted before it finished.".into(),
            partial: true,
        })
    };

    for record in records {
        match &record.body {
            RecordBody::TurnStarted { turn_id } => {
                if open_turn.is_some() {
                    interrupted(&mut messages);
                    complete = false;
                }
                open_turn = Some(turn_id);
            }
            RecordBody::TurnFinished {
                turn_id,
                outcome,
                error_code,
            } => {
                if open_turn == Some(turn_id.as_str()) {
                    open_turn = None;
                }
                let text = match (outcome, error_code) {
                    (TurnOutcome::Completed, _) => continue,
                    (TurnOutcome::Cancelled, _) => "The turn was cancelled.".to_owned(),
                    (TurnOutcome::Failed, Some(code)) => format!("The turn failed: {code}."),
                    (TurnOutcome::Failed, None) => "The turn failed.".to_owned(),
                };
                messages.push(Message {
                    kind: EntryKind::Diagnostic,
                    text,
                    partial: false,
                });
            }
            RecordBody::UserInput { text, .. } => messages.push(Message {
                kind: EntryKind::User,
                text: text.clone(),
                partial: false,
            }),
            RecordBody::AssistantOutput {
                text,
                chunks,
                partial,
                ..
            } => messages.push(Message {
                kind: EntryKind::Assistant,
                text: text.clone().unwrap_or_else(|| chunks.concat()),
                partial: *partial,
            }),
            RecordBody::ReasoningSummary {
                turn_id,
                item_id,
                text,
                provider_summary,
            } => {
                if *provider_summary != Some(true) {
                    continue;
                }
                let message = Message {
                    kind: EntryKind::ReasoningSummary,
                    text: text.clone(),
                    partial: false,
                };
                match item_id {
                    Some(item) => match summaries.get(&(turn_id.as_str(), item.as_str())) {
                        Some(&index) => messages[index] = message,
                        None => {
                            summaries.insert((turn_id, item), messages.len());
                            messages.push(message);
                        }
                    },
                    None => messages.push(message),
                }
            }
            RecordBody::ToolCall {
                call_id,
                name,
                summary,
                ..
            } => {
                tool_calls.insert(call_id, messages.len());
                messages.push(Message {
                    kind: EntryKind::Activity,
                    text: format!("{name}: started. {summary}"),
                    partial: true,
                });
            }
            RecordBody::ToolResult {
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
                };
                let message = Message {
                    kind: EntryKind::Activity,
                    text: format!("{name}: {state}. {summary}"),
                    partial: false,
                };
                match tool_calls.get(call_id.as_str()) {
                    Some(&index) => messages[index] = message,
                    None => messages.push(message),
                }
            }
            RecordBody::Compaction { summary, .. } => messages.push(Message {
                kind: EntryKind::Compaction,
                text: summary.clone(),
                partial: false,
            }),
            RecordBody::SessionMeta { .. }
            | RecordBody::SessionPreferences { .. }
            | RecordBody::Title { .. }
            | RecordBody::ToolAppliedPreview { .. }
            | RecordBody::Unknown => {}
        }
    }
    if open_turn.is_some() || torn_tail {
        interrupted(&mut messages);
        complete = false;
    }
    chunk_messages(messages).map(|entries| Projection { entries, complete })
}

/// Sanitizes and chunks messages into entries, within the snapshot budget.
fn chunk_messages(messages: Vec<Message>) -> Result<Vec<HistoryEntry>, OverBudget> {
    let mut entries = Vec::new();
    let mut serialized = 0usize;
    for (index, message) in messages.into_iter().enumerate() {
        let text = sanitize(&message.text);
        let parts = split_text(&text);
        let last = parts.len() - 1;
        for (part, chunk) in parts.into_iter().enumerate() {
            let entry = HistoryEntry {
                message_id: format!("m{index}"),
                kind: message.kind,
                text: chunk.to_owned(),
                partial: message.partial,
                part: part as u64,
                last_part: part == last,
            };
            serialized += entry_bytes(&entry) + 1;
            entries.push(entry);
            if entries.len() > HISTORY_SNAPSHOT_PARTS || serialized > HISTORY_SNAPSHOT_BYTES {
                return Err(OverBudget);
            }
        }
    }
    Ok(entries)
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

fn entry_bytes(entry: &HistoryEntry) -> usize {
    serde_json::to_vec(entry).map_or(usize::MAX, |v| v.len())
}

/// Cuts the page starting at entry `start`: at most 100 entries and a serialized result
/// of at most 32,768 bytes. `cursor_for` names the cursor of a following page. Returns
/// the page and, when entries remain, the index the next page starts at.
pub fn page(
    projection: &Projection,
    session_id: &str,
    revision: &str,
    start: usize,
    cursor_for: impl Fn(usize) -> String,
) -> (HistoryPageResult, Option<usize>) {
    let mut result = HistoryPageResult {
        session_id: session_id.to_owned(),
        revision: revision.to_owned(),
        entries: Vec::new(),
        next_cursor: Some(cursor_for(projection.entries.len())),
        complete: false,
    };
    let mut size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
    let mut end = start;
    for entry in projection.entries.iter().skip(start) {
        let added = entry_bytes(entry) + usize::from(end > start);
        if end - start == HISTORY_PAGE_ENTRIES || size + added > HISTORY_PAGE_BYTES {
            break;
        }
        size += added;
        end += 1;
    }
    result.entries = projection.entries[start.min(end)..end].to_vec();
    let next = (end < projection.entries.len()).then_some(end);
    result.next_cursor = next.map(&cursor_for);
    result.complete = next.is_none() && projection.complete;
    (result, next)
}

#[cfg(test)]
mod tests {
    use super::*;
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
