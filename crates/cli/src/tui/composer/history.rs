//! The prompt history, kept across sessions in `$MC_HOME/data/prompt_history.jsonl`.
//!
//! The file is JSON Lines, one prompt (a JSON string) per line, so prompts keep their
//! line breaks. Each send appends one line; once the file holds
//! [`PROMPT_HISTORY_SLACK`] lines past [`PROMPT_HISTORY_ENTRIES`] it is rewritten
//! (through a temporary file and a rename) with the newest entries only. A line that
//! cannot be read is skipped and said once; the file is then rewritten without it at
//! the next send. A file that cannot be read at all is said once and left alone: the
//! prompts of this session are kept in memory, and a prompt is never lost to the
//! history failing.
//!
//! Two Mission Controls at once both append to the file; a rewrite keeps what the one
//! rewriting has read and sent, so the other's prompts since it started are dropped
//! then (the sends themselves are never affected).

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use magi_protocol::limits::{
    PROMPT_BYTES, PROMPT_HISTORY_ENTRIES, PROMPT_HISTORY_READ_BYTES, PROMPT_HISTORY_SLACK,
};

/// The history file, relative to `MC_HOME`.
pub(crate) const HISTORY_FILE: &str = "data/prompt_history.jsonl";

/// Earlier prompts, oldest first, and the file they are kept in.
#[derive(Debug, Default)]
pub(crate) struct History {
    entries: Vec<String>,
    /// The file, while it can be written.
    file: Option<PathBuf>,
    /// Lines in the file, readable or not.
    lines_in_file: usize,
    /// Whether the file holds lines that could not be read.
    damaged: bool,
    /// A problem to say once in the status line.
    problem: Option<String>,
}

impl History {
    /// A history kept in memory only, for when `MC_HOME` cannot be found.
    pub(crate) fn in_memory(why: String) -> History {
        History {
            problem: Some(format!(
                "prompt history: {why}; prompts are kept for this session only"
            )),
            ..History::default()
        }
    }

    /// Reads the history in `path` (a missing file is an empty history).
    pub(crate) fn load(path: PathBuf) -> History {
        let mut history = History::default();
        let bytes = match read_tail(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                history.file = Some(path);
                return history;
            }
            Err(e) => {
                history.problem = Some(format!(
                    "cannot read the prompt history {}: {e}; prompts are kept for this \
                     session only",
                    path.display()
                ));
                return history;
            }
        };
        let mut unreadable = Vec::new();
        for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            history.lines_in_file += 1;
            match serde_json::from_slice::<String>(line) {
                Ok(prompt) if keepable(&prompt) => history.entries.push(prompt),
                _ => unreadable.push(n + 1),
            }
        }
        if let Some(first) = unreadable.first() {
            history.damaged = true;
            history.problem = Some(format!(
                "prompt history {}:{first}: {} unreadable line{} skipped (dropped at the \
                 next send)",
                path.display(),
                unreadable.len(),
                if unreadable.len() == 1 { "" } else { "s" },
            ));
        }
        history.keep_newest();
        history.file = Some(path);
        history
    }

    /// The prompts, oldest first.
    pub(crate) fn entries(&self) -> &[String] {
        &self.entries
    }

    /// The problem to say in the status line, once.
    pub(crate) fn take_problem(&mut self) -> Option<String> {
        self.problem.take()
    }

    /// Adds a sent prompt (not when it repeats the previous one) and writes it.
    pub(crate) fn push(&mut self, prompt: &str) {
        if !keepable(prompt) || self.entries.last().is_some_and(|last| last == prompt) {
            return;
        }
        self.entries.push(prompt.to_owned());
        self.keep_newest();
        let Some(path) = self.file.clone() else {
            return;
        };
        let written = if self.damaged
            || self.lines_in_file >= PROMPT_HISTORY_ENTRIES + PROMPT_HISTORY_SLACK
        {
            self.rewrite(&path)
        } else {
            append(&path, prompt).map(|()| self.lines_in_file += 1)
        };
        if let Err(e) = written {
            self.problem = Some(format!(
                "cannot write the prompt history {}: {e}; prompts are kept for this \
                 session only",
                path.display()
            ));
            // Said once: later sends do not try again.
            self.file = None;
        }
    }

    fn keep_newest(&mut self) {
        let over = self.entries.len().saturating_sub(PROMPT_HISTORY_ENTRIES);
        self.entries.drain(..over);
    }

    /// Replaces the file with the entries kept.
    fn rewrite(&mut self, path: &Path) -> std::io::Result<()> {
        let mut text = Vec::new();
        for entry in &self.entries {
            text.extend(line(entry)?);
        }
        let temporary = path.with_extension("jsonl.tmp");
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)?;
        self.lines_in_file = self.entries.len();
        self.damaged = false;
        Ok(())
    }
}

/// Whether a prompt is kept: one that could be sent (a longer one is refused anyway).
fn keepable(prompt: &str) -> bool {
    !prompt.trim().is_empty() && prompt.len() <= PROMPT_BYTES
}

/// One prompt as a line of the file.
fn line(prompt: &str) -> std::io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(prompt)?;
    line.push(b'\n');
    Ok(line)
}

/// Appends one prompt, in one write so a concurrent Mission Control's lines do not
/// interleave with it.
fn append(path: &Path, prompt: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(&line(prompt)?)
}

/// The file, or its newest [`PROMPT_HISTORY_READ_BYTES`] from the first whole line.
fn read_tail(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let bound = u64::try_from(PROMPT_HISTORY_READ_BYTES).unwrap_or(u64::MAX);
    let mut bytes = Vec::new();
    if size > bound {
        file.seek(SeekFrom::Start(size - bound))?;
        file.take(bound).read_to_end(&mut bytes)?;
        // The first line is likely cut: start after it.
        let first = bytes
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |n| n + 1);
        bytes.drain(..first);
    } else {
        file.take(bound).read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &tempfile::TempDir) -> PathBuf {
        dir.path().join(HISTORY_FILE)
    }

    #[test]
    fn prompts_are_kept_across_loads_with_their_line_breaks() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::load(file(&dir));
        assert!(history.entries().is_empty());
        assert_eq!(history.take_problem(), None);
        history.push("first");
        history.push("two\nlines \"quoted\"");
        history.push("two\nlines \"quoted\"");
        history.push("   ");
        history.push(&"x".repeat(PROMPT_BYTES + 1));
        let again = History::load(file(&dir));
        assert_eq!(again.entries(), ["first", "two\nlines \"quoted\""]);
        let text = std::fs::read_to_string(file(&dir)).unwrap();
        assert_eq!(text, "\"first\"\n\"two\\nlines \\\"quoted\\\"\"\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file(&dir)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn the_file_is_bounded_and_compacted_past_the_slack() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::load(file(&dir));
        let total = PROMPT_HISTORY_ENTRIES + PROMPT_HISTORY_SLACK;
        for n in 0..total {
            history.push(&format!("prompt {n}"));
        }
        assert_eq!(history.entries().len(), PROMPT_HISTORY_ENTRIES);
        let lines =
            |dir: &tempfile::TempDir| std::fs::read_to_string(file(dir)).unwrap().lines().count();
        assert_eq!(lines(&dir), total, "appended, not yet rewritten");
        // The next send rewrites it with the newest entries only.
        history.push("newest");
        assert_eq!(lines(&dir), PROMPT_HISTORY_ENTRIES);
        let again = History::load(file(&dir));
        assert_eq!(again.entries().len(), PROMPT_HISTORY_ENTRIES);
        assert_eq!(again.entries().last().unwrap(), "newest");
        assert_eq!(
            again.entries()[0],
            format!("prompt {}", total + 1 - PROMPT_HISTORY_ENTRIES)
        );
        assert!(!file(&dir).with_extension("jsonl.tmp").exists());
    }

    #[test]
    fn unreadable_lines_are_said_once_skipped_and_dropped_at_the_next_send() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(file(&dir).parent().unwrap()).unwrap();
        std::fs::write(
            file(&dir),
            b"\"good\"\nnot json\n\xff\xfe\n42\n\"also good\"\n",
        )
        .unwrap();
        let mut history = History::load(file(&dir));
        assert_eq!(history.entries(), ["good", "also good"]);
        let problem = history.take_problem().unwrap();
        assert!(
            problem.contains("prompt_history.jsonl:2: 3 unreadable lines skipped"),
            "{problem}"
        );
        assert_eq!(history.take_problem(), None, "said once");
        history.push("typed");
        assert_eq!(
            std::fs::read_to_string(file(&dir)).unwrap(),
            "\"good\"\n\"also good\"\n\"typed\"\n"
        );
    }

    #[test]
    fn an_unreadable_file_is_said_and_the_prompts_are_kept_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be can be neither read nor written.
        std::fs::create_dir_all(file(&dir)).unwrap();
        let mut history = History::load(file(&dir));
        let problem = history.take_problem().unwrap();
        assert!(
            problem.starts_with("cannot read the prompt history"),
            "{problem}"
        );
        history.push("still kept");
        assert_eq!(history.entries(), ["still kept"]);
        assert_eq!(history.take_problem(), None);
    }

    #[test]
    fn a_failed_write_is_said_once_and_the_prompt_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut history = History::load(file(&dir));
        // The folder the file goes in became a file: the append fails.
        std::fs::write(dir.path().join("data"), "").unwrap();
        history.push("one");
        let problem = history.take_problem().unwrap();
        assert!(
            problem.starts_with("cannot write the prompt history"),
            "{problem}"
        );
        history.push("two");
        assert_eq!(history.take_problem(), None, "said once");
        assert_eq!(history.entries(), ["one", "two"]);
    }

    #[test]
    fn only_the_newest_part_of_a_huge_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(file(&dir).parent().unwrap()).unwrap();
        let filler = format!("\"{}\"\n", "f".repeat(PROMPT_BYTES - 10));
        let mut text = String::new();
        while text.len() <= PROMPT_HISTORY_READ_BYTES {
            text.push_str(&filler);
        }
        text.push_str("\"last\"\n");
        std::fs::write(file(&dir), text).unwrap();
        let mut history = History::load(file(&dir));
        assert_eq!(history.take_problem(), None, "the cut line is not counted");
        assert_eq!(history.entries().last().unwrap(), "last");
        assert!(history.entries().len() < PROMPT_HISTORY_ENTRIES + 1);
    }

    #[test]
    fn without_mc_home_the_history_is_in_memory() {
        let mut history = History::in_memory("cannot find MC_HOME: Unresolvable".into());
        assert!(
            history
                .take_problem()
                .unwrap()
                .contains("kept for this session only")
        );
        history.push("a");
        assert_eq!(history.entries(), ["a"]);
    }
}
