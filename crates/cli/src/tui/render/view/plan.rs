//! How an entry is cut into pieces: a reply between its top-level markdown blocks,
//! anything else whole; each piece named by what its rows are kept under.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::Range;
use std::rc::Rc;

use magi_client::fold::{Item, MessageState, Stamp};

use super::super::{markdown, transcript};

/// What a piece's rows are kept under: the same key at the same width is the same rows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum PieceKey {
    /// Markdown text, by its hash and length.
    Text { hash: u64, len: usize },
    /// An entry drawn whole, at one revision.
    Entry(u64),
    /// The note under a reply, at one revision.
    Note(u64),
}

/// One piece of an entry.
#[derive(Debug, Clone)]
pub(super) struct Piece {
    pub(super) key: PieceKey,
    /// The markdown text it is, for a reply's piece.
    pub(super) text: Option<Range<usize>>,
}

/// An entry's pieces, at one revision.
pub(super) struct Plan {
    pub(super) revision: u64,
    pub(super) pieces: Rc<[Piece]>,
    /// Whether the entry was a reply still growing by its deltas.
    growing: bool,
}

impl Plan {
    /// The pieces of `entry` at `stamp`'s revision. A reply still streaming only grows
    /// at its end (deltas append; see the fold's rules), so the pieces of `old`, its
    /// plan at an earlier revision, are kept but for the last, and only the text from
    /// there is cut again: a frame costs the reply's tail, not its whole.
    pub(super) fn new(entry: &Item, stamp: Stamp, old: Option<&Plan>) -> Plan {
        let growing = matches!(
            entry,
            Item::Message(m) if matches!(m.state(), MessageState::Streaming | MessageState::Incomplete)
        );
        let mut pieces: Vec<Piece> = match transcript::markdown(entry) {
            Some(text) => {
                let mut kept: Vec<Piece> = match old {
                    Some(old) if growing && old.growing => old.pieces.to_vec(),
                    _ => Vec::new(),
                };
                let from = match kept.pop().and_then(|last| last.text) {
                    Some(last) if last.start <= text.len() => last.start,
                    _ => {
                        kept.clear();
                        0
                    }
                };
                let tail = text.get(from..).unwrap_or_default();
                kept.extend(markdown::pieces(tail).into_iter().map(|range| {
                    let range = range.start + from..range.end + from;
                    let mut hasher = DefaultHasher::new();
                    text.get(range.clone())
                        .unwrap_or_default()
                        .hash(&mut hasher);
                    Piece {
                        key: PieceKey::Text {
                            hash: hasher.finish(),
                            len: range.len(),
                        },
                        text: Some(range),
                    }
                }));
                kept
            }
            None => vec![Piece {
                key: PieceKey::Entry(stamp.revision),
                text: None,
            }],
        };
        if transcript::reply_note(entry).is_some() {
            pieces.push(Piece {
                key: PieceKey::Note(stamp.revision),
                text: None,
            });
        }
        Plan {
            revision: stamp.revision,
            pieces: pieces.into(),
            growing,
        }
    }
}

#[cfg(test)]
mod tests {
    use magi_client::fold::{FoldInput, Transcript};
    use magi_protocol::messages::{Event, MessageDelta};

    use super::*;

    fn delta(part: u64, text: &str) -> FoldInput {
        FoldInput::Event(Event::MessageDelta(MessageDelta {
            session_id: "s".into(),
            run_id: "r".into(),
            message_id: "m".into(),
            part,
            text: text.into(),
        }))
    }

    fn ranges(plan: &Plan) -> Vec<Range<usize>> {
        plan.pieces.iter().filter_map(|p| p.text.clone()).collect()
    }

    #[test]
    fn a_growing_reply_is_cut_again_only_from_its_last_piece() {
        let paragraph = "A paragraph of words that goes on for a while.\n".repeat(20);
        let mut t = Transcript::default();
        let mut plan: Option<Plan> = None;
        for part in 0..40 {
            t.apply(delta(part, &format!("{paragraph}\n")));
            let next = Plan::new(&t.items()[0], t.stamps()[0], plan.as_ref());
            // The same cut as from scratch, every time.
            let scratch = Plan::new(&t.items()[0], t.stamps()[0], None);
            assert_eq!(ranges(&next), ranges(&scratch), "at part {part}");
            plan = Some(next);
        }
        assert!(plan.map_or(0, |p| p.pieces.len()) > 10);
    }
}
