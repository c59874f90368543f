//! History pages: contiguous parts of one message joined into one item, pages of one
//! revision collected until the last one, then shown in place of the live projection.

use magi_protocol::messages::{EntryKind, HistoryEntry, HistoryPageResult};

/// One message of a history projection, its parts joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryMessage {
    /// The message ID, scoped to the session and revision.
    pub message_id: String,
    /// What it shows.
    pub kind: EntryKind,
    /// The joined text of its parts.
    pub text: String,
    /// Whether the backend marked the message partial (interrupted, failed, cancelled,
    /// started only).
    pub partial: bool,
    /// Whether its parts ran from 0 to one marked `last_part` without a gap.
    pub complete: bool,
    /// Whether its first part seen was part 0.
    from_zero: bool,
    /// Whether a part marked `last_part` was joined: nothing continues it.
    ended: bool,
    /// The next part number that would continue it.
    next_part: u64,
    /// The saved card of an activity's first part (`tool.cards`), when one came.
    pub card: Option<Box<magi_protocol::cards::Card>>,
}

impl HistoryMessage {
    /// Starts a message from its first entry seen.
    fn start(entry: &HistoryEntry) -> HistoryMessage {
        HistoryMessage {
            message_id: entry.message_id.clone(),
            kind: entry.kind,
            text: entry.text.clone(),
            partial: entry.partial,
            // A message that does not start at part 0 is missing its beginning.
            complete: entry.part == 0 && entry.last_part,
            from_zero: entry.part == 0,
            ended: entry.last_part,
            next_part: entry.part.saturating_add(1),
            card: match &entry.tool_card {
                magi_protocol::messages::SavedCard::Card(card) if entry.part == 0 => {
                    Some(card.clone())
                }
                _ => None,
            },
        }
    }

    /// Whether `entry` continues this message: same ID, next part, not yet ended.
    fn continues(&self, entry: &HistoryEntry) -> bool {
        self.message_id == entry.message_id
            && self.kind == entry.kind
            && entry.part == self.next_part
            && !self.ended
    }

    /// Joins a contiguous part.
    fn extend(&mut self, entry: &HistoryEntry) {
        self.text.push_str(&entry.text);
        self.partial |= entry.partial;
        self.next_part = entry.part.saturating_add(1);
        if entry.last_part {
            self.ended = true;
            // Reaching last_part from part 0 without a gap makes the message whole.
            self.complete = self.from_zero;
        }
    }

    /// Joins `entry` to `items`: onto the last message when it continues it, else as
    /// a new message (a non-contiguous part never joins, so a gap stays visible).
    pub(crate) fn push(items: &mut Vec<HistoryMessage>, entry: &HistoryEntry) {
        match items.last_mut() {
            Some(last) if last.continues(entry) => last.extend(entry),
            _ => items.push(HistoryMessage::start(entry)),
        }
    }
}

/// The pages of one revision received so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PageLoad {
    /// The session paged.
    pub(crate) session_id: String,
    /// The revision paged.
    pub(crate) revision: String,
    /// Messages joined so far.
    pub(crate) items: Vec<HistoryMessage>,
}

impl PageLoad {
    /// Folds one page into `load`: a page of another session or revision starts a new
    /// load. Returns the finished load and the page's `complete` flag once the page
    /// is the last one (`next_cursor` null).
    pub(crate) fn fold(
        load: &mut Option<PageLoad>,
        page: &HistoryPageResult,
    ) -> Option<(PageLoad, bool)> {
        let same = load
            .as_ref()
            .is_some_and(|l| l.session_id == page.session_id && l.revision == page.revision);
        let current = match load {
            Some(current) if same => current,
            _ => load.insert(PageLoad {
                session_id: page.session_id.clone(),
                revision: page.revision.clone(),
                items: Vec::new(),
            }),
        };
        for entry in &page.entries {
            HistoryMessage::push(&mut current.items, entry);
        }
        if page.next_cursor.is_none() {
            load.take().map(|done| (done, page.complete))
        } else {
            None
        }
    }
}
