//! Ctrl-R: the reverse incremental search of the prompt history. Typing narrows it to
//! the newest prompt holding the query (case-insensitively), Ctrl-R again goes to older
//! matches; the composer takes the match on Enter and keeps what it had on Esc.

/// An open search.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Search {
    /// What was typed.
    pub(crate) query: String,
    /// The index in the history of the match shown, if any.
    pub(crate) found: Option<usize>,
}

fn holds(entry: &str, query: &str) -> bool {
    query.is_empty() || entry.to_lowercase().contains(&query.to_lowercase())
}

impl Search {
    /// The newest match at or before `from` (an index into `entries`).
    fn find_from(&self, entries: &[String], from: Option<usize>) -> Option<usize> {
        entries
            .get(..=from?)?
            .iter()
            .rposition(|entry| holds(entry, &self.query))
    }

    /// Searches again from the newest entry (the query changed).
    pub(crate) fn refresh(&mut self, entries: &[String]) {
        self.found = self.find_from(entries, entries.len().checked_sub(1));
    }

    /// Ctrl-R again: the next older match, staying on the current one when there is
    /// none.
    pub(crate) fn older(&mut self, entries: &[String]) {
        match self.found {
            Some(at) => {
                if let Some(older) = self.find_from(entries, at.checked_sub(1)) {
                    self.found = Some(older);
                }
            }
            None => self.refresh(entries),
        }
    }

    /// The match shown.
    pub(crate) fn matched<'a>(&self, entries: &'a [String]) -> Option<&'a str> {
        self.found
            .and_then(|at| entries.get(at))
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<String> {
        ["fix the build", "write tests", "Fix the docs", "run it"]
            .map(str::to_owned)
            .to_vec()
    }

    #[test]
    fn typing_finds_the_newest_match_and_ctrl_r_older_ones() {
        let entries = entries();
        let mut search = Search::default();
        search.refresh(&entries);
        assert_eq!(
            search.matched(&entries),
            Some("run it"),
            "empty query: newest"
        );
        search.query.push_str("fix");
        search.refresh(&entries);
        assert_eq!(search.matched(&entries), Some("Fix the docs"));
        search.older(&entries);
        assert_eq!(search.matched(&entries), Some("fix the build"));
        // No older match: it stays.
        search.older(&entries);
        assert_eq!(search.matched(&entries), Some("fix the build"));
        search.query.push_str(" the d");
        search.refresh(&entries);
        assert_eq!(search.matched(&entries), Some("Fix the docs"));
        search.query.push('z');
        search.refresh(&entries);
        assert_eq!(search.matched(&entries), None);
        let empty: Vec<String> = Vec::new();
        let mut search = Search::default();
        search.refresh(&empty);
        search.older(&empty);
        assert_eq!(search.matched(&empty), None);
    }
}
