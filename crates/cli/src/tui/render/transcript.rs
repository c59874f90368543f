//! The transcript's entries as rows: prompts, replies (markdown), activities with
//! their cards, approvals, diagnostics and saved history.
//!
//! A reply is drawn from its text alone, whether it is live or came back in the saved
//! history after its run, so it looks the same before and after (it used to re-indent
//! when history replaced it).

use std::time::Instant;

use magi_client::fold::{ActivityDisplay, ApprovalState, Item, MessageState, PromptState, Role};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::activity::Clock;
use super::approval::approval_line;
use super::cards::{Look, activity_lines, saved_lines};
use super::wrap::{wrap, wrap_plain};
use super::{diagnostic_line, styled, words};

/// What the entries other than replies are drawn with in one frame: the cards' look
/// and each call's timing.
pub(super) struct Drawing<'a> {
    pub(super) look: Look,
    pub(super) clock: &'a Clock,
    pub(super) now: Instant,
}

impl Drawing<'_> {
    /// The look as the view names it: entries drawn under another are drawn again.
    pub(super) fn look_key(&self) -> u64 {
        u64::from(self.look.expanded) | (u64::from(self.look.approval_pending) << 1)
    }
}

/// The markdown text of an entry the model wrote (a reply, live or saved), or `None`
/// for an entry drawn from rows of its own ([`entry_rows`]).
pub(super) fn markdown(item: &Item) -> Option<&str> {
    match item {
        Item::Message(m) => Some(m.text()),
        Item::History(h) if item.role() == Role::Assistant => Some(&h.text),
        _ => None,
    }
}

/// What is said under a reply whose text is not the whole of it, if anything.
pub(super) fn reply_note(item: &Item) -> Option<Line<'static>> {
    let note = match item {
        Item::Message(m) if m.state() == MessageState::Unknown => {
            "? how this reply ended is unknown (reopen the session to see it)"
        }
        Item::History(h) if !h.complete => "(parts of this reply are missing)",
        Item::History(h) if h.partial => "(this reply was interrupted)",
        _ => return None,
    };
    Some(styled(note.to_owned(), Color::Magenta))
}

/// Whether an entry's rows change without a new revision (a running call shows its
/// elapsed time), so they are drawn again each frame rather than kept.
pub(super) fn changing(item: &Item) -> bool {
    matches!(item, Item::Activity(a) if a.state == ActivityDisplay::Started)
}

/// Whether a blank row goes between `previous` and `item`: between everything but
/// consecutive tool lines (activities and approvals), which stay together.
pub(super) fn separated(previous: &Item, item: &Item) -> bool {
    let tool = |item: &Item| matches!(item.role(), Role::Activity | Role::Approval);
    !(tool(previous) && tool(item))
}

/// The rows of an entry at `width` (a reply's whole, though the view draws a reply
/// piece by piece).
pub(super) fn entry_rows(item: &Item, width: usize, drawing: &Drawing<'_>) -> Vec<Line<'static>> {
    if let Some(text) = markdown(item) {
        return super::markdown::render(text, width);
    }
    let lines = match item {
        Item::Prompt(p) => {
            let note = match p.state {
                PromptState::Submitted => " (sending)",
                _ => "",
            };
            return prompt_rows(&p.text, note, width);
        }
        Item::History(h) if item.role() == Role::User => return prompt_rows(&h.text, "", width),
        Item::Activity(a) => {
            let timing = drawing.clock.timing(&a.run_id, &a.activity_id, drawing.now);
            activity_lines(a, timing, drawing.look)
        }
        // A pending approval is asked above the composer; once answered, its line
        // says how.
        Item::Approval(a) if a.state == ApprovalState::Pending => Vec::new(),
        Item::Approval(a) => vec![approval_line(a)],
        Item::Diagnostic(d) => vec![diagnostic_line(&d.code, &d.summary)],
        // Drawn as markdown above.
        Item::Message(_) => Vec::new(),
        // A saved tool call is shown as its card, like a live one.
        Item::History(h) if item.role() == Role::Activity && h.card.is_some() => h
            .card
            .as_ref()
            .map(|card| {
                let timing = drawing.clock.saved_timing(&h.message_id);
                saved_lines(card, &h.text, timing, drawing.look)
            })
            .unwrap_or_default(),
        Item::History(h) => {
            let (prefix, style) = match item.role() {
                Role::Activity => ("• ", Style::default().fg(Color::Green)),
                Role::Diagnostic => ("! ", Style::default().fg(Color::Red)),
                Role::ReasoningSummary => (
                    "thinking: ",
                    Style::default().add_modifier(Modifier::DIM | Modifier::ITALIC),
                ),
                Role::Compaction => (
                    "earlier conversation, summarised: ",
                    Style::default().add_modifier(Modifier::DIM),
                ),
                _ => ("", Style::default()),
            };
            let text = match item.role() {
                Role::Diagnostic => words::history_diagnostic(&h.text),
                _ => std::borrow::Cow::Borrowed(h.text.as_str()),
            };
            let mut lines = Vec::new();
            for (n, line) in text.lines().enumerate() {
                let text = format!("{}{line}", if n == 0 { prefix } else { "  " });
                lines.push(Line::from(Span::styled(text, style)));
            }
            if let Some(card) = &h.card {
                let timing = drawing.clock.saved_timing(&h.message_id);
                lines.extend(saved_lines(card, &h.text, timing, drawing.look));
            }
            lines
        }
    };
    lines
        .iter()
        .flat_map(|line| wrap_plain(line, width))
        .collect()
}

/// A prompt: `›` before its first line, its other lines under the first, and a note
/// after its last.
fn prompt_rows(text: &str, note: &str, width: usize) -> Vec<Line<'static>> {
    let style = Style::default().fg(Color::Cyan);
    let first = [Span::styled("› ", style)];
    let hang = [Span::styled("  ", style)];
    let lines: Vec<&str> = if text.is_empty() {
        vec![""]
    } else {
        text.lines().collect()
    };
    let mut rows = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let mut content = vec![Span::styled(*line, style)];
        if n + 1 == lines.len() && !note.is_empty() {
            content.push(Span::styled(note, style.add_modifier(Modifier::DIM)));
        }
        let lead: &[Span<'static>] = if n == 0 { &first } else { &hang };
        rows.extend(wrap(lead, &content, &hang, width));
    }
    rows
}

#[cfg(test)]
mod tests {
    use magi_client::fold::{FoldInput, Transcript};
    use magi_protocol::messages::{
        EntryKind, Event, HistoryEntry, HistoryPageResult, MessageDelta, MessageReconcile,
    };

    use super::super::markdown;
    use super::*;

    fn text(rows: &[Line<'_>]) -> Vec<String> {
        rows.iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn a_reply_looks_the_same_live_and_from_history() {
        let reply = "First line\nsecond line\n\n- a\n- b\n\n```sh\nls\n```";
        let mut live = Transcript::default();
        live.apply(FoldInput::Event(Event::MessageDelta(MessageDelta {
            session_id: "s".into(),
            run_id: "r".into(),
            message_id: "m".into(),
            part: 0,
            text: reply.into(),
        })));
        live.apply(FoldInput::Event(Event::MessageReconcile(
            MessageReconcile {
                session_id: "s".into(),
                run_id: "r".into(),
                message_id: "m".into(),
                part: 0,
                text: reply.into(),
                last_part: true,
                partial: false,
            },
        )));
        let mut saved = Transcript::default();
        saved.apply(FoldInput::HistoryPage(HistoryPageResult {
            session_id: "s".into(),
            revision: "h1".into(),
            entries: vec![HistoryEntry {
                message_id: "m".into(),
                kind: EntryKind::Assistant,
                text: reply.into(),
                partial: false,
                part: 0,
                last_part: true,
                tool_card: Default::default(),
            }],
            next_cursor: None,
            complete: true,
        }));
        let shown = |t: &Transcript| {
            let item = &t.items()[0];
            assert!(reply_note(item).is_none());
            text(&markdown::render(markdown(item).unwrap_or_default(), 40))
        };
        assert_eq!(shown(&live), shown(&saved));
        assert_eq!(
            shown(&saved),
            ["First line", "second line", "", "• a", "• b", "", "  ls"]
        );
    }

    #[test]
    fn a_prompt_keeps_its_lines_under_the_mark() {
        assert_eq!(
            text(&prompt_rows("one two three\nfour", " (sending)", 12)),
            ["› one two", "  three", "  four", "  (sending)"]
        );
        assert_eq!(text(&prompt_rows("hi", "", 10)), ["› hi"]);
    }
}
