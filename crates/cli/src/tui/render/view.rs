//! The transcript's view: which of its rows are on screen, and the rows laid out so far.
//!
//! The view either follows the bottom or is anchored to a row of an entry (by the
//! entry's stamp id), so output arriving below never moves what a person reads above;
//! it then says that there is news below. Moving down to the last row follows again.
//!
//! Each frame lays out only the rows it shows and those it moves through. An entry is
//! cut into pieces (a reply between its top-level markdown blocks, anything else
//! whole), and each piece's rows at a width are kept in a cache bounded by rows, keyed
//! by the piece's text or the entry's revision: an entry that changes (the reply
//! streaming, an activity running) is laid out again, a settled one is not.

mod bounded;
mod plan;

use std::rc::Rc;

use magi_client::fold::{Item, Stamp};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;

use super::{markdown, transcript};
use bounded::Bounded;
use plan::{Piece, PieceKey, Plan};

/// The rows of laid-out pieces kept, beyond those on screen.
const CACHE_ROWS: usize = 8_192;
/// The entries whose pieces are kept (their cut points, not their rows).
const CACHE_PLANS: usize = 1_024;

/// Where the view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    /// Following the newest rows.
    Bottom,
    /// At the first row (resolved at the next draw).
    Top,
    /// The top row of the screen is `row` of piece `piece` of the entry `id` (last
    /// seen at index `item`).
    At {
        id: u64,
        item: usize,
        piece: usize,
        row: usize,
    },
}

/// A row of a piece of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos {
    item: usize,
    piece: usize,
    row: usize,
}

/// The transcript's scroll position and its laid-out rows.
pub(in crate::tui) struct View {
    anchor: Anchor,
    /// Rows to move at the next draw (negative towards older rows).
    pending: i64,
    /// Content arrived below while the view was anchored above.
    news: bool,
    /// The last entry count and last entry's revision drawn, to notice new output.
    end: Option<(usize, u64)>,
    /// The height of the last drawn view.
    height: usize,
    frame: u64,
    plans: Bounded<u64, Plan>,
    rows: Bounded<(PieceKey, usize, bool, u64), Rc<[Line<'static>]>>,
    /// Pieces laid out so far (for the tests of what a frame costs).
    #[cfg(test)]
    laid_out: usize,
}

impl Default for View {
    fn default() -> View {
        View {
            anchor: Anchor::Bottom,
            pending: 0,
            news: false,
            end: None,
            height: 1,
            frame: 0,
            plans: Bounded::new(CACHE_PLANS),
            rows: Bounded::new(CACHE_ROWS),
            #[cfg(test)]
            laid_out: 0,
        }
    }
}

/// The entries a view shows, and how those not written in markdown are drawn.
pub(in crate::tui) struct Entries<'a> {
    /// The fold's entries.
    pub(in crate::tui) items: &'a [Item],
    /// Their stamps, at the same indexes.
    pub(in crate::tui) stamps: &'a [Stamp],
    /// Draws an entry that is not a reply at a width (a prompt, an activity and its
    /// card, an approval, a diagnostic).
    pub(in crate::tui) draw: &'a dyn Fn(&Item, usize) -> Vec<Line<'static>>,
    /// Changes when something besides the entries changes how `draw` draws them (a
    /// card expanded, say): entries drawn under another look are drawn again.
    pub(in crate::tui) look: u64,
}

/// What a draw reads.
struct Ctx<'a> {
    items: &'a [Item],
    stamps: &'a [Stamp],
    draw: &'a dyn Fn(&Item, usize) -> Vec<Line<'static>>,
    look: u64,
    width: usize,
}

impl View {
    /// Moves the view by `rows` (negative towards older rows) at the next draw.
    pub(in crate::tui) fn scroll(&mut self, rows: i32) {
        self.pending += i64::from(rows);
    }

    /// Moves the view by `pages` screens less a row, so one row stays in sight.
    pub(in crate::tui) fn page(&mut self, pages: i32) {
        let page = i64::try_from(self.height.saturating_sub(1).max(1)).unwrap_or(1);
        self.pending += i64::from(pages) * page;
    }

    /// Shows the first row.
    pub(in crate::tui) fn top(&mut self) {
        self.anchor = Anchor::Top;
        self.pending = 0;
    }

    /// Follows the newest rows again.
    pub(in crate::tui) fn bottom(&mut self) {
        self.anchor = Anchor::Bottom;
        self.pending = 0;
        self.news = false;
    }

    /// Applies a key that moves the transcript, saying whether it was one: PageUp and
    /// PageDown; Home and End when the composer is empty (else they are the
    /// composer's), Ctrl-Home and Ctrl-End always.
    pub(in crate::tui) fn key(&mut self, key: KeyEvent, composer_empty: bool) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::PageUp => self.page(-1),
            KeyCode::PageDown => self.page(1),
            KeyCode::Home if ctrl || composer_empty => self.top(),
            KeyCode::End if ctrl || composer_empty => self.bottom(),
            _ => return false,
        }
        true
    }

    /// Whether output arrived below while the view is anchored above.
    pub(in crate::tui) fn news_below(&self) -> bool {
        self.news
    }

    /// Whether the view follows the newest rows.
    #[cfg(test)]
    fn following(&self) -> bool {
        self.anchor == Anchor::Bottom
    }

    /// The rows on screen, `height` of them at most, each at most `width` cells.
    pub(super) fn rows(
        &mut self,
        entries: &Entries<'_>,
        width: usize,
        height: usize,
    ) -> Vec<Line<'static>> {
        self.frame += 1;
        self.height = height.max(1);
        let (items, stamps) = (entries.items, entries.stamps);
        let ctx = Ctx {
            items,
            stamps,
            draw: entries.draw,
            look: entries.look,
            width,
        };
        let end = stamps.last().map(|s| (stamps.len(), s.revision));
        if self.end != end && self.anchor != Anchor::Bottom {
            self.news = true;
        }
        self.end = end;
        let mut top = match self.anchor {
            Anchor::Bottom => None,
            Anchor::Top => Some(Pos {
                item: 0,
                piece: 0,
                row: 0,
            }),
            Anchor::At {
                id,
                item,
                piece,
                row,
            } => Some(self.resolve(&ctx, id, item, piece, row)),
        };
        let pending = std::mem::take(&mut self.pending);
        if pending != 0 && !items.is_empty() {
            let from = match top {
                Some(pos) => pos,
                None => self.bottom_rows(&ctx).1,
            };
            let by = usize::try_from(pending.unsigned_abs()).unwrap_or(usize::MAX);
            top = if pending < 0 {
                Some(self.up(&ctx, from, by))
            } else {
                self.down(&ctx, from, by)
            };
        }
        let shown = match top {
            Some(pos) if !items.is_empty() => {
                let (rows, more) = self.forward(&ctx, pos);
                more.then(|| {
                    self.anchor = Anchor::At {
                        id: stamps.get(pos.item).map_or(0, |s| s.id),
                        item: pos.item,
                        piece: pos.piece,
                        row: pos.row,
                    };
                    rows
                })
            }
            _ => None,
        };
        let rows = match shown {
            Some(rows) => rows,
            // At (or past) the end: follow the newest rows.
            None => {
                self.anchor = Anchor::Bottom;
                self.news = false;
                self.bottom_rows(&ctx).0
            }
        };
        self.plans.trim(self.frame);
        self.rows.trim(self.frame);
        rows
    }

    /// Finds the anchored entry again: at its index, else by its id (entries before
    /// it left), else the same index (history replaced the entries with new ones).
    fn resolve(&mut self, ctx: &Ctx<'_>, id: u64, item: usize, piece: usize, row: usize) -> Pos {
        let last = ctx.items.len().saturating_sub(1);
        let at = if ctx.stamps.get(item).is_some_and(|s| s.id == id) {
            item
        } else if let Some(at) = ctx.stamps.iter().position(|s| s.id == id) {
            at
        } else {
            item.min(last)
        };
        let pieces = self.plan(ctx, at).len();
        let pos = Pos {
            item: at,
            piece: piece.min(pieces.saturating_sub(1)),
            row: 0,
        };
        // A row past the piece's end (it got shorter) moves on to the next piece.
        self.down(ctx, pos, row).unwrap_or(pos)
    }

    /// The last `height` rows, and the position of the first of them.
    fn bottom_rows(&mut self, ctx: &Ctx<'_>) -> (Vec<Line<'static>>, Pos) {
        let mut taken = Vec::new();
        let mut total = 0;
        'items: for item in (0..ctx.items.len()).rev() {
            for piece in (0..self.plan(ctx, item).len()).rev() {
                let rows = self.piece_rows(ctx, item, piece);
                if rows.is_empty() {
                    continue;
                }
                total += rows.len();
                taken.push((item, piece, rows));
                if total >= self.height {
                    break 'items;
                }
            }
        }
        taken.reverse();
        let skip = total.saturating_sub(self.height);
        let top = taken.first().map_or(
            Pos {
                item: 0,
                piece: 0,
                row: 0,
            },
            |(item, piece, _)| Pos {
                item: *item,
                piece: *piece,
                row: skip,
            },
        );
        let rows = taken
            .iter()
            .flat_map(|(_, _, rows)| rows.iter().cloned())
            .skip(skip)
            .collect();
        (rows, top)
    }

    /// The rows from `pos` down, and whether more follow than fit.
    fn forward(&mut self, ctx: &Ctx<'_>, pos: Pos) -> (Vec<Line<'static>>, bool) {
        let mut rows = Vec::new();
        let mut at = Some(pos);
        while let Some(pos) = at {
            let piece = self.piece_rows(ctx, pos.item, pos.piece);
            for row in piece.iter().skip(pos.row) {
                if rows.len() == self.height {
                    return (rows, true);
                }
                rows.push(row.clone());
            }
            at = self.next_piece(ctx, pos);
        }
        (rows, false)
    }

    /// `pos` moved `by` rows towards older ones, stopping at the first row.
    fn up(&mut self, ctx: &Ctx<'_>, mut pos: Pos, mut by: usize) -> Pos {
        loop {
            if pos.row >= by {
                pos.row -= by;
                return pos;
            }
            by -= pos.row;
            match self.previous_piece(ctx, pos) {
                Some(previous) => {
                    let len = self.piece_rows(ctx, previous.item, previous.piece).len();
                    pos = Pos {
                        row: len,
                        ..previous
                    };
                }
                None => return Pos { row: 0, ..pos },
            }
        }
    }

    /// `pos` moved `by` rows towards newer ones; `None` past the last row.
    fn down(&mut self, ctx: &Ctx<'_>, mut pos: Pos, by: usize) -> Option<Pos> {
        pos.row += by;
        loop {
            let len = self.piece_rows(ctx, pos.item, pos.piece).len();
            if pos.row < len {
                return Some(pos);
            }
            let row = pos.row - len;
            pos = Pos {
                row,
                ..self.next_piece(ctx, pos)?
            };
        }
    }

    fn next_piece(&mut self, ctx: &Ctx<'_>, pos: Pos) -> Option<Pos> {
        if pos.piece + 1 < self.plan(ctx, pos.item).len() {
            return Some(Pos {
                piece: pos.piece + 1,
                row: 0,
                ..pos
            });
        }
        ((pos.item + 1)..ctx.items.len()).find_map(|item| {
            (!self.plan(ctx, item).is_empty()).then_some(Pos {
                item,
                piece: 0,
                row: 0,
            })
        })
    }

    fn previous_piece(&mut self, ctx: &Ctx<'_>, pos: Pos) -> Option<Pos> {
        if pos.piece > 0 {
            return Some(Pos {
                piece: pos.piece - 1,
                row: 0,
                ..pos
            });
        }
        (0..pos.item).rev().find_map(|item| {
            let pieces = self.plan(ctx, item).len();
            (pieces > 0).then(|| Pos {
                item,
                piece: pieces - 1,
                row: 0,
            })
        })
    }

    /// The pieces of entry `item` at its current revision.
    fn plan(&mut self, ctx: &Ctx<'_>, item: usize) -> Rc<[Piece]> {
        let (Some(entry), Some(stamp)) = (ctx.items.get(item), ctx.stamps.get(item)) else {
            return Rc::from([]);
        };
        let old = self.plans.get(&stamp.id, self.frame);
        if let Some(plan) = old
            && plan.revision == stamp.revision
        {
            return plan.pieces.clone();
        }
        let plan = Plan::new(entry, *stamp, old);
        let pieces = plan.pieces.clone();
        self.plans.insert(stamp.id, plan, 1, self.frame);
        pieces
    }

    /// The rows of one piece at the width, with the blank row that separates it from
    /// what is above (laid out once, then kept while the cache holds it).
    fn piece_rows(&mut self, ctx: &Ctx<'_>, item: usize, piece: usize) -> Rc<[Line<'static>]> {
        let Some(spec) = self.plan(ctx, item).get(piece).cloned() else {
            return Rc::from([]);
        };
        let Some(entry) = ctx.items.get(item) else {
            return Rc::from([]);
        };
        let gap = match piece {
            0 => item
                .checked_sub(1)
                .and_then(|previous| ctx.items.get(previous))
                .is_some_and(|previous| transcript::separated(previous, entry)),
            // Markdown pieces are top-level blocks, a row apart; a note sits right under.
            _ => !matches!(spec.key, PieceKey::Note(_)),
        };
        // What else the rows depend on: the look for what `draw` draws, and, for an
        // entry that changes without a new revision (a running call's elapsed time),
        // the frame, so it is drawn once a frame.
        let context = match spec.key {
            PieceKey::Text { .. } => 0,
            PieceKey::Entry(_) if transcript::changing(entry) => self.frame,
            PieceKey::Entry(_) | PieceKey::Note(_) => ctx.look,
        };
        let key = (spec.key.clone(), ctx.width, gap, context);
        if let Some(rows) = self.rows.get(&key, self.frame) {
            return rows.clone();
        }
        let mut rows = match (&spec.key, &spec.text) {
            (PieceKey::Text { .. }, Some(range)) => {
                let text = transcript::markdown(entry).unwrap_or_default();
                markdown::render(text.get(range.clone()).unwrap_or_default(), ctx.width)
            }
            (PieceKey::Note(_), _) => transcript::reply_note(entry).into_iter().collect(),
            _ => (ctx.draw)(entry, ctx.width),
        };
        if gap && !rows.is_empty() {
            rows.insert(0, Line::default());
        }
        let rows: Rc<[Line<'static>]> = rows.into();
        #[cfg(test)]
        {
            self.laid_out += 1;
        }
        self.rows
            .insert(key, rows.clone(), rows.len() + 1, self.frame);
        rows
    }
}

#[cfg(test)]
mod tests;
