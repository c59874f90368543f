//! A card being assembled from selected blocks, and the reduction steps that shorten
//! or drop its optional detail.

use magi_protocol::cards::{
    Availability, Block, CARD_BYTES, Card, CardOutcome, CardState, Detail, METADATA_BYTES,
    Metadata, Origin, ParentState, Reason, SCHEMA_VERSION, StyleSpan, Subject, TEXT_BLOCK_BYTES,
    TITLE_BYTES, TextBlock, TextFormat, merge_omissions, serialized_len, spans_fit,
    strongest_reason,
};
use magi_store::records::ToolOutcome;
use magi_tools::facts::Facts;
use magi_tools::{BuiltinTool, SubjectArgument};

use super::blocks::{Context, Source, read_facts};
use super::hook::hook_part;
use super::labels::{ROW_FAILURE_EXPLANATION, ROW_OUTPUT_LINES};
use super::metadata::{changes, fixed_title, protection, tool_kind};
use super::part::{Part, Role};
use super::source::{CardSource, Settlement, TranscriptStyles};
use super::task::children_part;
use super::text::{Notes, char_count, safe_count};

/// A card being assembled: the fixed part, the selected blocks with their omissions,
/// and the `blocks` omissions.
pub(super) struct Draft {
    card: Card,
    head: Notes,
    parts: Vec<Part>,
    tail: Notes,
    /// No display detail by design (a running call or a refused one, without facts).
    by_design: bool,
}

impl Draft {
    pub(super) fn new(source: &CardSource) -> Draft {
        let kind = tool_kind(source.tool_name);
        let (state, outcome) = match source.settlement {
            Settlement::Running => (CardState::Running, None),
            Settlement::Interrupted => (CardState::Finished, Some(CardOutcome::Interrupted)),
            Settlement::Settled { outcome, .. } => (
                CardState::Finished,
                Some(match outcome {
                    ToolOutcome::Completed => CardOutcome::Success,
                    ToolOutcome::Failed | ToolOutcome::Denied => CardOutcome::Failure,
                    ToolOutcome::Cancelled => CardOutcome::Cancelled,
                    ToolOutcome::Indeterminate => CardOutcome::Unknown,
                }),
            ),
        };
        let mut head = Notes::default();
        let title = {
            let safe = head.safe(Subject::Title, source.label);
            let safe = safe.trim();
            if safe.is_empty() {
                fixed_title(kind).to_owned()
            } else {
                head.bound(Subject::Title, safe, TITLE_BYTES)
            }
        };
        let facts = read_facts(source.tool_name, kind, source.facts);
        let changes = changes(source, &facts);
        let public_protection = protection(source, &mut head);
        let tool_name = Some(head.text(Subject::Metadata, source.tool_name, METADATA_BYTES))
            .filter(|name| !name.is_empty());
        let resource_path = match &facts {
            Source::Facts(facts, _) => match facts.as_ref() {
                Facts::Read { path, .. }
                | Facts::Change { path, .. }
                | Facts::Image { path, .. } => Some(path.as_str()),
                Facts::Search { path, .. } | Facts::AstGrep { path, .. } => path.as_deref(),
                _ => None,
            },
            _ => None,
        }
        .map(|path| head.text(Subject::Metadata, path, METADATA_BYTES))
        .filter(|path| !path.is_empty());
        let working_directory = match &facts {
            Source::Facts(facts, _) => match facts.as_ref() {
                Facts::Command(command) => Some(command.working_directory.as_str()),
                _ => None,
            },
            _ if BuiltinTool::from_name(source.tool_name)
                .is_some_and(|t| t.subject() == SubjectArgument::Command) =>
            {
                source.working_directory
            }
            _ => None,
        }
        .map(|wd| head.text(Subject::Metadata, wd, METADATA_BYTES))
        .filter(|wd| !wd.is_empty());

        let mut tail = Notes::default();
        let mut by_design = false;
        let parts = match &facts {
            Source::Facts(facts, tracking) => {
                let context = Context {
                    source,
                    changes,
                    outcome: match source.settlement {
                        Settlement::Settled { outcome, .. } => Some(outcome),
                        _ => None,
                    },
                };
                let mut parts = context.parts(facts, tracking.as_ref(), &mut tail);
                parts.extend(source.hook.as_ref().map(hook_part));
                parts.extend(transcript_part(source.transcript, source.transcript_styles));
                parts
            }
            Source::Absent => {
                let refused = matches!(
                    source.settlement,
                    Settlement::Settled {
                        outcome: ToolOutcome::Denied,
                        ..
                    }
                );
                if source.settlement == Settlement::Running || refused {
                    by_design = true;
                } else {
                    tail.add(Subject::Blocks, Reason::NotRecorded, None);
                }
                // A running task shows its subagent's calls so far.
                let mut parts = match (source.children, source.settlement, source.origin) {
                    (Some(children), Settlement::Running, Origin::Live) => {
                        vec![children_part(children)]
                    }
                    _ => Vec::new(),
                };
                // A call a hook blocked, or one that runs with a hook's arguments.
                parts.extend(source.hook.as_ref().map(hook_part));
                // A refusal's own lines: what the person told the model with it.
                if refused {
                    parts.extend(transcript_part(source.transcript, source.transcript_styles));
                }
                parts
            }
            Source::Unsupported => {
                tail.add(Subject::Blocks, Reason::UnsupportedSource, None);
                source.hook.as_ref().map(hook_part).into_iter().collect()
            }
        };

        let card = Card {
            schema_version: SCHEMA_VERSION,
            card_id: source.activity_id.to_owned(),
            activity_id: source.activity_id.to_owned(),
            parent_activity_id: source.parent_activity_id.map(str::to_owned),
            parent_state: if source.parent_activity_id.is_some() {
                ParentState::Available
            } else {
                ParentState::Root
            },
            task_id: source.task_id.map(str::to_owned),
            tool_kind: kind,
            state,
            outcome,
            changes,
            revision: source.revision,
            origin: source.origin,
            detail: Detail {
                availability: Availability::Complete,
                reason: None,
            },
            title,
            metadata: Metadata {
                tool_name,
                resource_path,
                working_directory,
                public_protection,
            },
            blocks: Vec::new(),
            omissions: Vec::new(),
        };
        Draft {
            card,
            head,
            parts,
            tail,
            by_design,
        }
    }

    /// The card as it stands.
    pub(super) fn card(&self) -> Card {
        let mut card = self.card.clone();
        card.blocks = self.parts.iter().map(|p| p.block.clone()).collect();
        let all = self
            .head
            .0
            .iter()
            .chain(self.parts.iter().flat_map(|p| p.notes.0.iter()))
            .chain(self.tail.0.iter())
            .copied();
        card.omissions = merge_omissions(all);
        let reason = strongest_reason(card.omissions.iter().map(|o| o.reason));
        card.detail = if card.blocks.is_empty() {
            match reason {
                Some(reason) if !self.by_design => Detail {
                    availability: Availability::Unavailable,
                    reason: Some(reason),
                },
                _ => Detail {
                    availability: Availability::None,
                    reason: None,
                },
            }
        } else {
            match reason {
                Some(reason) => Detail {
                    availability: Availability::Truncated,
                    reason: Some(reason),
                },
                None => Detail {
                    availability: Availability::Complete,
                    reason: None,
                },
            }
        };
        card
    }

    pub(super) fn excess(&self) -> usize {
        serialized_len(&self.card()).saturating_sub(CARD_BYTES)
    }

    pub(super) fn fits(&self) -> bool {
        self.excess() == 0
    }

    /// Drops a block, recording it.
    pub(super) fn drop_part(&mut self, index: usize) {
        self.parts.remove(index);
        self.tail.add(Subject::Blocks, Reason::SizeLimit, Some(1));
    }

    /// Shortens diff previews from their end, last block first, until the card fits;
    /// a diff left without lines is dropped.
    pub(super) fn trim_diff_lines(&mut self) {
        for index in (0..self.parts.len()).rev() {
            while !self.fits() {
                let excess = self.excess();
                let part = &mut self.parts[index];
                let Block::Diff(diff) = &mut part.block else {
                    break;
                };
                let removed = pop_until(&mut diff.lines, excess);
                if removed == 0 {
                    break;
                }
                part.notes
                    .add(Subject::DiffLines, Reason::SizeLimit, Some(removed));
                if diff.lines.is_empty() {
                    self.drop_part(index);
                    break;
                }
            }
        }
    }

    /// Shortens resource lists from their end, last block first, until the card fits;
    /// a list left without rows is dropped.
    pub(super) fn trim_resource_rows(&mut self) {
        for index in (0..self.parts.len()).rev() {
            while !self.fits() {
                let excess = self.excess();
                let part = &mut self.parts[index];
                let Block::Resources(resources) = &mut part.block else {
                    break;
                };
                let removed = pop_until(&mut resources.rows, excess);
                if removed == 0 {
                    break;
                }
                part.notes
                    .add(Subject::Rows, Reason::SizeLimit, Some(removed));
                if resources.rows.is_empty() {
                    self.drop_part(index);
                    break;
                }
            }
        }
    }

    /// Nulls the optional execution values (failure explanation, output lines), then
    /// the command text, until the card fits.
    pub(super) fn null_optional_values(&mut self) {
        for part in &mut self.parts {
            let Block::Results(results) = &mut part.block else {
                continue;
            };
            if part.role != Role::Execution {
                continue;
            }
            for row in &mut results.rows {
                let optional =
                    row.label == ROW_FAILURE_EXPLANATION || row.label == ROW_OUTPUT_LINES;
                if optional && row.value.take().is_some() {
                    part.notes.add(Subject::Rows, Reason::SizeLimit, Some(1));
                }
            }
        }
        if self.fits() {
            return;
        }
        for part in &mut self.parts {
            if let Block::Command(command) = &mut part.block
                && let Some(text) = command.command.take()
            {
                part.notes.add(
                    Subject::Text,
                    Reason::SizeLimit,
                    safe_count(char_count(&text)),
                );
            }
        }
    }

    /// Leaves out the styles of text blocks (null), last block first, until the card
    /// fits: colour is the first thing a card gives up.
    pub(super) fn leave_out_styles(&mut self) {
        for index in (0..self.parts.len()).rev() {
            if self.fits() {
                return;
            }
            if let Block::Text(text) = &mut self.parts[index].block
                && matches!(text.styles, Some(Some(_)))
            {
                text.styles = Some(None);
            }
        }
    }

    /// Drops optional blocks, last first, until the card fits.
    pub(super) fn drop_optional_blocks(&mut self) {
        for index in (0..self.parts.len()).rev() {
            if self.fits() {
                return;
            }
            if self.parts[index].role == Role::Optional {
                self.drop_part(index);
            }
        }
    }
}

/// Removes items from the end of `items` until their serialized sizes add up to at
/// least `excess` bytes (or none is left); returns how many were removed.
fn pop_until<T: serde::Serialize>(items: &mut Vec<T>, excess: usize) -> u64 {
    let mut freed = 0usize;
    let mut removed = 0u64;
    while freed < excess {
        let Some(item) = items.pop() else {
            break;
        };
        // An element costs its JSON and the comma before it.
        freed += serde_json::to_string(&item).map_or(usize::MAX / 2, |json| json.len() + 1);
        removed += 1;
    }
    removed
}

/// The transcript projection as a plain `text` block, after the tool's own blocks: what
/// a person reads of the result under the card, in its colour when the client asked for
/// it. Optional detail: the budget may drop it.
fn transcript_part(lines: &[String], styles: TranscriptStyles) -> Option<Part> {
    if lines.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let mut notes = Notes::default();
    let joined = lines.join("\n");
    let safe = notes.safe(Subject::Text, &joined);
    let text = notes.bound(Subject::Text, &safe, TEXT_BLOCK_BYTES);
    let styles = match styles {
        TranscriptStyles::Off => None,
        TranscriptStyles::LeftOut => Some(None),
        // Recorded lines are safe already: text that changed here (a log written by
        // hand) has no spans to trust.
        TranscriptStyles::Spans(_) if safe != joined => Some(None),
        TranscriptStyles::Spans(spans) => {
            let kept = clip_spans(spans, text.len());
            Some(spans_fit(&kept, &text).then_some(kept))
        }
    };
    let block = Block::Text(TextBlock {
        text,
        format: TextFormat::Plain,
        language: None,
        styles,
    });
    Some(Part::new(block, notes, Role::Optional))
}

/// The spans of a text cut to `len` bytes (on a character boundary): those past the
/// cut go, the one across it ends there.
fn clip_spans(spans: &[StyleSpan], len: usize) -> Vec<StyleSpan> {
    let len = len as u64;
    spans
        .iter()
        .filter(|span| span.start < len)
        .map(|span| StyleSpan {
            end: span.end.min(len),
            ..span.clone()
        })
        .collect()
}
