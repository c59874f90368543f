//! The tasks, one module a language, and how `--tasks` chooses among them.

use crate::task::Task;

mod javascript;
mod python;
mod rust;
mod shell;

/// Every task, in the order the suite runs them.
pub fn all() -> Vec<Task> {
    [rust::TASKS, python::TASKS, javascript::TASKS, shell::TASKS].concat()
}

/// The tasks whose name contains one of `filter`'s comma-separated words (or whose
/// language is one of them); all of them for an empty filter.
pub fn select(filter: &str) -> Vec<Task> {
    let words: Vec<&str> = filter
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    all()
        .into_iter()
        .filter(|task| {
            words.is_empty()
                || words
                    .iter()
                    .any(|w| task.name.contains(w) || task.language.name() == *w)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::task::{Language, Round};

    #[test]
    fn the_tasks_are_many_named_once_and_cover_every_language() {
        let tasks = all();
        assert!(tasks.len() >= 12, "{} tasks", tasks.len());
        let names: HashSet<&str> = tasks.iter().map(|t| t.name).collect();
        assert_eq!(names.len(), tasks.len(), "a name is used twice");
        for language in [
            Language::Rust,
            Language::Python,
            Language::JavaScript,
            Language::Shell,
        ] {
            let count = tasks.iter().filter(|t| t.language == language).count();
            assert!(count >= 3, "{} has {count} tasks", language.name());
        }
        for task in &tasks {
            let solution = (task.solution)();
            assert!(
                matches!(solution.last(), Some(Round::Answer(_))),
                "{}: a solution ends with its answer",
                task.name
            );
            assert!(
                solution[..solution.len() - 1]
                    .iter()
                    .all(|r| matches!(r, Round::Calls(c) if !c.is_empty())),
                "{}: only the last reply answers",
                task.name
            );
        }
    }

    #[test]
    fn a_filter_picks_by_name_or_language() {
        assert_eq!(select("").len(), all().len());
        let rust = select("rust");
        assert!(rust.iter().all(|t| t.language == Language::Rust));
        assert!(!rust.is_empty());
        assert!(select("no-such-task").is_empty());
    }
}
