//! Bash file tracking: a bounded static reading of a command line.
//!
//! [`track`] reads the `command` argument of the `bash` tool and reports the literal
//! file paths it mentions and whether the command reads, writes or edits them. It runs
//! nothing and touches no file: the input is the command text and the output is data.
//! What it reports is what the text says, not what happened; the notices built from it
//! say `not verified effects` for that reason.
//!
//! # What [`track`] produces
//!
//! [`track`] itself only produces four statuses; the others belong to the worker that
//! runs it (canceled, busy, timed out, ...) and are here so recorded reports parse.
//!
//! | status | `entries` | `unsupported_segments` |
//! | --- | --- | --- |
//! | `command_limit` | `None` | 0 |
//! | `unsupported` | `None` | at least 1 |
//! | `no_candidates` | `Some` (empty) | 0 |
//! | `completed` | `Some` (at least one entry) | any |
//!
//! A command longer than [`TRACKING_COMMAND_BYTES`], or one that names more than
//! [`TRACKING_ENTRIES`] distinct entries, is `command_limit`. A command whose text cannot
//! be read at all counts as one unsupported segment; a command that was read but found
//! nothing while skipping something is `unsupported` with the number of skipped
//! segments. Entries keep first-seen order and exact `(path, operation)` duplicates are
//! dropped; the same path with two operations is two entries.
//!
//! # How the command is read
//!
//! The text is split with POSIX shell quoting: single quotes, double quotes, backslash
//! escapes, comments, the separators `;`, `&&`, `||`, `&`, newline, the pipes `|` and
//! `|&`, and the redirections `<`, `>`, `>>`, `>|`, `<>`, `&>`, `&>>`, `>&`, `<&` with an
//! optional file descriptor number. Constructs whose meaning cannot be known without
//! running a shell make the whole command unsupported: command substitution (`$(`,
//! backticks), `$'…'`/`$"…"` quoting, subshells and other parentheses, process
//! substitution, heredocs and here-strings, unterminated quotes, and reserved words
//! (`if`, `for`, `{`, `[[`, ...) at a command position, since control flow changes which
//! segments run.
//!
//! Each simple command (a segment between separators and pipes) is then read on its own:
//!
//! - Leading `NAME=value` assignments, `!`, and the wrappers `command`, `builtin`,
//!   `nohup`, `time`, `exec` and `env` (assignments and `-i`/`-u` only) are skipped to
//!   find the program. `/bin/`, `/usr/bin/` and `/usr/local/bin/` prefixes are dropped.
//! - `echo`, `printf`, `true`, `false`, `:`, `pwd` and `sleep` have no file operands.
//! - Reads: `cat`, `tac`, `head`, `tail`, `less`, `more`, `wc`, `grep` (and `egrep`,
//!   `fgrep`) and `rg` after the pattern, `diff`, `cmp`, `stat`, `file`, `sort`, `uniq`'s
//!   input, `nl`, the checksum tools (`md5sum`, `sha256sum`, ...), and `ls` (a directory
//!   is a path too). Files named by options (`grep -f`, `diff -X`, `touch -r`,
//!   `chmod --reference`, ...) are reads.
//! - Writes: `cp`'s destination (its sources are reads), `rm`, `rmdir`, `unlink`,
//!   `touch`, `mkdir`, `tee`, `sort -o`, `uniq`'s output, and the backup `sed -i` makes
//!   with a plain suffix. `mv`'s destination is a write and each source is `read_write`:
//!   its content is taken and it disappears.
//! - Edits: `tee -a`, `sed -i` (plain `sed` reads), `chmod`, `chown`, `chgrp`.
//! - Redirections: `<` reads, `>`, `>|`, `&>` and `>&` to a file write, `>>` and `&>>`
//!   edit, `<>` is `read_write`; duplications such as `2>&1` and `>&-` name no file.
//!   Redirections count for every segment, including unsupported ones.
//! - `/dev/null`, `/dev/zero`, `/dev/random`, `/dev/urandom`, `/dev/tty`, `/dev/std*`,
//!   `/dev/fd/*`, `-` and empty words are not files and are ignored.
//! - `cd`, `pushd` and `popd` name no file, but from the next segment on a relative path
//!   no longer means what it says: such paths are dropped and their segment counts as
//!   unsupported. Absolute paths are still recorded.
//!
//! A segment is unsupported, and counted once in `unsupported_segments`, when its program
//! is not one of the above, when any argument of a known program is not a literal (an
//! unquoted `$` expansion, a glob `*`, `?`, `[`, braces, a leading `~`: its expansion
//! could shift every operand), when a redirection target is not a literal, or when a
//! known program's operands do not fit its usage (`cp` with one operand). Whatever the
//! segment's redirections and, for known programs, literal operands give is still
//! recorded. Options of known programs are flags unless the program is known to take a
//! value after them; scripts (`sed`'s, `grep`'s patterns) are not read.
//!
//! # The `Inferred file activity` aggregate
//!
//! [`inferred_activity`] selects the first [`INFERRED_ACTIVITY_ENTRIES`] source entries.
//! Within them, entries with a valid path (nonempty, no NUL) deduplicate by path, and
//! each unique path gets the R, W and E bits of its operations (`read_write` sets R and
//! W). Selected entries with an invalid path add to the unsupported count. The text is
//! one line and never contains a path:
//!
//! ```text
//! {files} supported file{s} (R {r}, W {w}, E {e}); first {selected} of {source} entr{y|ies}; {unsupported} unsupported; not verified effects
//! ```
//!
//! followed by `; full totals unknown` when the source has more entries than were
//! selected or the unsupported count is not zero: the counts then cover only the
//! supported selection. `file` is singular for exactly one file, `entry` for a source of
//! exactly one entry. Absent entries give no text; an empty list gives the complete zero
//! `0 supported files (R 0, W 0, E 0); first 0 of 0 entries; 0 unsupported; not verified effects`.

use serde::{Deserialize, Serialize};

mod lex;
mod options;
mod programs;
mod reader;
#[cfg(test)]
mod tests;

use lex::{Unreadable, lex, split};
use reader::Reader;

/// The longest command, in bytes, that [`track`] reads; a longer one is `command_limit`.
pub const TRACKING_COMMAND_BYTES: usize = 4096;

/// The most distinct entries [`track`] records; a command naming more is
/// `command_limit`. Far above [`INFERRED_ACTIVITY_ENTRIES`] so the aggregate can tell
/// when its selection was shortened.
pub const TRACKING_ENTRIES: usize = 256;

/// How many source entries the `Inferred file activity` aggregate examines.
pub const INFERRED_ACTIVITY_ENTRIES: usize = 32;

/// The outcome of a file tracking assessment, as recorded in `bash_file_tracking.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrackingStatus {
    /// The command was read and names at least one literal path.
    Completed,
    /// The command, or what it names, is beyond the tracking bounds.
    CommandLimit,
    /// The assessment was canceled.
    Canceled,
    /// The worker that assesses commands was busy.
    Busy,
    /// No worker could assess the command.
    Unavailable,
    /// The assessment took too long.
    TimedOut,
    /// The assessment failed.
    Error,
    /// The command is sensitive and was not assessed.
    Redacted,
    /// The command could not be read.
    Unsupported,
    /// The command was read and names no literal path.
    NoCandidates,
    /// The command did not succeed, so its file activity was not assessed.
    CommandFailed,
}

impl TrackingStatus {
    /// Every status, in the order of the public table.
    pub const ALL: [TrackingStatus; 11] = [
        TrackingStatus::Completed,
        TrackingStatus::CommandLimit,
        TrackingStatus::Canceled,
        TrackingStatus::Busy,
        TrackingStatus::Unavailable,
        TrackingStatus::TimedOut,
        TrackingStatus::Error,
        TrackingStatus::Redacted,
        TrackingStatus::Unsupported,
        TrackingStatus::NoCandidates,
        TrackingStatus::CommandFailed,
    ];

    /// The recorded name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            TrackingStatus::Completed => "completed",
            TrackingStatus::CommandLimit => "command_limit",
            TrackingStatus::Canceled => "canceled",
            TrackingStatus::Busy => "busy",
            TrackingStatus::Unavailable => "unavailable",
            TrackingStatus::TimedOut => "timed_out",
            TrackingStatus::Error => "error",
            TrackingStatus::Redacted => "redacted",
            TrackingStatus::Unsupported => "unsupported",
            TrackingStatus::NoCandidates => "no_candidates",
            TrackingStatus::CommandFailed => "command_failed",
        }
    }

    /// The fixed public label of the `File tracking` notice row.
    pub fn label(self) -> &'static str {
        match self {
            TrackingStatus::Completed => "completed",
            TrackingStatus::CommandLimit => "skipped (command limit)",
            TrackingStatus::Canceled => "skipped (canceled)",
            TrackingStatus::Busy => "skipped (worker busy)",
            TrackingStatus::Unavailable => "skipped (worker unavailable)",
            TrackingStatus::TimedOut => "timed out",
            TrackingStatus::Error => "assessment failed",
            TrackingStatus::Redacted => "skipped (sensitive command)",
            TrackingStatus::Unsupported => "skipped (unsupported command)",
            TrackingStatus::NoCandidates => "skipped (no literal paths)",
            TrackingStatus::CommandFailed => "skipped (command did not succeed)",
        }
    }

    /// The status of a recorded name; an unknown name is `None`, never a guess.
    pub fn parse(name: &str) -> Option<TrackingStatus> {
        TrackingStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }
}

/// What a command does to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOperation {
    /// Reads it.
    Read,
    /// Creates, replaces or removes it.
    Write,
    /// Changes it in place: appends, edits its content or its metadata.
    Edit,
    /// Reads it and writes it.
    ReadWrite,
}

impl FileOperation {
    /// The R (1), W (2) and E (4) bits this operation contributes to a path.
    fn bits(self) -> u8 {
        match self {
            FileOperation::Read => READ_BIT,
            FileOperation::Write => WRITE_BIT,
            FileOperation::Edit => EDIT_BIT,
            FileOperation::ReadWrite => READ_BIT | WRITE_BIT,
        }
    }
}

const READ_BIT: u8 = 1;
const WRITE_BIT: u8 = 2;
const EDIT_BIT: u8 = 4;

/// One literal path a command names, with what it does to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TrackedPath {
    /// The path as written in the command, after quote removal.
    pub path: String,
    /// What the command does to it.
    pub operation: FileOperation,
}

/// The result of reading one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tracking {
    /// How the reading ended.
    pub status: TrackingStatus,
    /// The paths found, in first-seen order; `None` when no reading was made.
    #[serde(default)]
    pub entries: Option<Vec<TrackedPath>>,
    /// How many segments of the command were skipped, wholly or partly.
    #[serde(default)]
    pub unsupported_segments: usize,
}

impl Tracking {
    /// The `Inferred file activity` text of this reading; see [`inferred_activity`].
    pub fn inferred_activity(&self) -> Option<String> {
        inferred_activity(self.entries.as_deref(), self.unsupported_segments)
    }

    fn without_entries(status: TrackingStatus, unsupported_segments: usize) -> Tracking {
        Tracking {
            status,
            entries: None,
            unsupported_segments,
        }
    }
}

/// Reads `command` statically and reports the literal paths it names; see the module
/// documentation for what is read and how.
pub fn track(command: &str) -> Tracking {
    if command.len() > TRACKING_COMMAND_BYTES {
        return Tracking::without_entries(TrackingStatus::CommandLimit, 0);
    }
    let segments = match lex(command).and_then(split) {
        Ok(segments) => segments,
        Err(Unreadable) => return Tracking::without_entries(TrackingStatus::Unsupported, 1),
    };
    let mut reader = Reader::default();
    for segment in &segments {
        if reader.read(segment).is_err() {
            return Tracking::without_entries(TrackingStatus::Unsupported, 1);
        }
    }
    if reader.overflow {
        return Tracking::without_entries(TrackingStatus::CommandLimit, 0);
    }
    match (reader.entries.is_empty(), reader.unsupported) {
        (false, unsupported) => Tracking {
            status: TrackingStatus::Completed,
            entries: Some(reader.entries),
            unsupported_segments: unsupported,
        },
        (true, 0) => Tracking {
            status: TrackingStatus::NoCandidates,
            entries: Some(Vec::new()),
            unsupported_segments: 0,
        },
        (true, unsupported) => Tracking::without_entries(TrackingStatus::Unsupported, unsupported),
    }
}

/// The `Inferred file activity` text for recorded entries and the number of source
/// items that could not be read (for a [`Tracking`], its `unsupported_segments`). The
/// format is in the module documentation. `None` entries give `None`.
pub fn inferred_activity(entries: Option<&[TrackedPath]>, unsupported: usize) -> Option<String> {
    let entries = entries?;
    let selected = &entries[..entries.len().min(INFERRED_ACTIVITY_ENTRIES)];
    let mut files: Vec<(&str, u8)> = Vec::new();
    let mut invalid = 0usize;
    for entry in selected {
        if entry.path.is_empty() || entry.path.contains('\0') {
            invalid += 1;
            continue;
        }
        let bits = entry.operation.bits();
        match files.iter_mut().find(|(path, _)| *path == entry.path) {
            Some((_, known)) => *known |= bits,
            None => files.push((&entry.path, bits)),
        }
    }
    let with = |bit: u8| files.iter().filter(|(_, bits)| bits & bit != 0).count();
    let unsupported = unsupported.saturating_add(invalid);
    let mut text = format!(
        "{} supported {} (R {}, W {}, E {}); first {} of {} {}; {} unsupported; not verified effects",
        files.len(),
        if files.len() == 1 { "file" } else { "files" },
        with(READ_BIT),
        with(WRITE_BIT),
        with(EDIT_BIT),
        selected.len(),
        entries.len(),
        if entries.len() == 1 {
            "entry"
        } else {
            "entries"
        },
        unsupported,
    );
    if entries.len() > selected.len() || unsupported > 0 {
        text.push_str("; full totals unknown");
    }
    Some(text)
}
