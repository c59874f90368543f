//! Opaque revisions and the cursors issued under them.
//!
//! A revision names one immutable snapshot (a history projection, a discovery
//! listing) for this child only; a cursor is valid only once this revision issued it,
//! so a cursor from another revision, child or invention is refused.

use std::collections::HashSet;

/// A snapshot's revision and the cursors issued for it.
#[derive(Debug)]
pub(crate) struct Revision {
    id: String,
    issued: HashSet<usize>,
}

impl Revision {
    /// A fresh revision: `prefix` and 32 random hex digits, well inside the 64-byte ID
    /// grammar even with a cursor's `.<index>` after it.
    pub(crate) fn new(prefix: char) -> Revision {
        Revision {
            id: format!("{prefix}{}", uuid::Uuid::new_v4().simple()),
            issued: HashSet::new(),
        }
    }

    /// The revision as clients see it.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// The cursor for entry `index`, without issuing it (for sizing a page).
    pub(crate) fn cursor(&self, index: usize) -> String {
        format!("{}.{index}", self.id)
    }

    /// Issues the cursor for entry `index`.
    pub(crate) fn issue(&mut self, index: usize) -> String {
        self.issued.insert(index);
        self.cursor(index)
    }

    /// The entry index of a cursor this revision issued.
    pub(crate) fn resolve(&self, cursor: &str) -> Option<usize> {
        let index = cursor
            .strip_prefix(&self.id)?
            .strip_prefix('.')?
            .parse()
            .ok()?;
        self.issued.contains(&index).then_some(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_issued_cursors_resolve() {
        let mut revision = Revision::new('h');
        assert_eq!(revision.id().len(), 33);
        let cursor = revision.issue(100);
        assert_eq!(revision.resolve(&cursor), Some(100));
        assert_eq!(revision.resolve(&revision.cursor(200)), None);
        assert_eq!(Revision::new('h').resolve(&cursor), None);
        assert_eq!(revision.resolve("made-up"), None);
    }
}
