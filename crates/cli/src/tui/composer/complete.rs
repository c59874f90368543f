//! The candidates shown above the composer: workspace paths for an `@` mention, slash
//! commands for a `/` at the start of the prompt.

use magi_protocol::limits::COMPLETION_CANDIDATES;

use super::files::Walked;
use super::fuzzy;
use crate::tui::commands::Command;

/// What is being completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::tui) enum CompletionKind {
    /// An `@` mention of a workspace path.
    Mention,
    /// A slash command.
    Command,
}

/// One candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::tui) struct Candidate {
    /// What replaces the word being completed.
    pub(in crate::tui) insert: String,
    /// How it is listed.
    pub(in crate::tui) label: String,
    /// What follows it in the list (a command's summary).
    pub(in crate::tui) detail: &'static str,
}

/// The candidates for the word at the cursor, one selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::tui) struct Completion {
    pub(in crate::tui) kind: CompletionKind,
    /// Where the word being completed starts (a byte index of the text).
    pub(in crate::tui) start: usize,
    pub(in crate::tui) candidates: Vec<Candidate>,
    pub(in crate::tui) selected: usize,
    /// A line said instead of, or after, the candidates.
    pub(in crate::tui) note: Option<&'static str>,
}

/// The paths for `@query`: `None` when nothing matches (no list is shown).
pub(super) fn mentions(
    start: usize,
    query: &str,
    walked: Option<&Walked>,
    walking: bool,
) -> Option<Completion> {
    let (candidates, note) = match walked {
        Some(walked) => {
            let candidates: Vec<Candidate> =
                fuzzy::rank(query, &walked.paths, COMPLETION_CANDIDATES)
                    .into_iter()
                    .map(|path| Candidate {
                        insert: format!("@{path} "),
                        label: format!("@{path}"),
                        detail: "",
                    })
                    .collect();
            if candidates.is_empty() {
                return None;
            }
            let note = walked
                .truncated
                .then_some("(the workspace has more files than are listed)");
            (candidates, note)
        }
        None if walking => (Vec::new(), Some("listing the workspace's files…")),
        None => return None,
    };
    Some(Completion {
        kind: CompletionKind::Mention,
        start,
        candidates,
        selected: 0,
        note,
    })
}

/// The commands whose name starts with `name`, all of them (the list scrolls past
/// [`COMPLETION_CANDIDATES`]): `None` when there are none.
pub(super) fn commands(start: usize, name: &str) -> Option<Completion> {
    let candidates: Vec<Candidate> = Command::every_name()
        .filter(|(word, _)| word.starts_with(name))
        .map(|(word, command)| Candidate {
            insert: format!("/{word} "),
            label: format!("/{word}"),
            detail: command.summary(),
        })
        .collect();
    (!candidates.is_empty()).then_some(Completion {
        kind: CompletionKind::Command,
        start,
        candidates,
        selected: 0,
        note: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(completion: &Completion) -> Vec<&str> {
        completion
            .candidates
            .iter()
            .map(|c| c.label.as_str())
            .collect()
    }

    #[test]
    fn commands_complete_by_prefix_with_their_summaries() {
        let all = commands(0, "").unwrap();
        assert_eq!(
            all.candidates.len(),
            Command::every_name().count(),
            "the list scrolls"
        );
        let s = commands(0, "s").unwrap();
        assert_eq!(labels(&s), ["/sessions", "/status"]);
        assert_eq!(s.candidates[0].insert, "/sessions ");
        assert_eq!(s.candidates[0].detail, Command::Sessions.summary());
        assert_eq!(commands(0, "nope"), None);
    }

    #[test]
    fn mentions_rank_the_walked_paths() {
        let walked = Walked {
            paths: vec!["README.md".into(), "src/".into(), "src/main.rs".into()],
            truncated: true,
        };
        let found = mentions(4, "main", Some(&walked), false).unwrap();
        assert_eq!(labels(&found), ["@src/main.rs"]);
        assert_eq!(found.candidates[0].insert, "@src/main.rs ");
        assert!(found.note.is_some(), "a cut walk is said");
        assert_eq!(mentions(4, "zzz", Some(&walked), false), None);
        let waiting = mentions(0, "x", None, true).unwrap();
        assert!(waiting.candidates.is_empty());
        assert_eq!(waiting.note, Some("listing the workspace's files…"));
        assert_eq!(mentions(0, "x", None, false), None);
    }
}
