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

/// The command text cannot be read without running a shell.
#[derive(Debug, PartialEq, Eq)]
struct Unreadable;

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// No expansion, glob, brace or tilde: the text is what the program receives.
    literal: bool,
    /// Some part was quoted or escaped, so it cannot be a reserved word.
    quoted: bool,
    /// `NAME=value` with an unquoted name.
    assignment: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Redirect {
    /// `<`
    Read,
    /// `>`, `>|`, `&>`
    Write,
    /// `>>`, `&>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `>&`: a descriptor, or a file for both streams.
    DuplicateOut,
    /// `<&`: a descriptor.
    DuplicateIn,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Redirect(Redirect),
    /// Ends a segment: `;`, `&&`, `||`, `&`, `|`, `|&` or a newline.
    Boundary,
}

/// A word being collected.
struct WordBuilder {
    text: String,
    started: bool,
    literal: bool,
    quoted: bool,
    assignment: bool,
    /// Every character so far is an unquoted name character.
    name_so_far: bool,
    /// Every character so far is an unquoted digit: a descriptor before `<` or `>`.
    digits_only: bool,
}

impl Default for WordBuilder {
    fn default() -> WordBuilder {
        WordBuilder {
            text: String::new(),
            started: false,
            literal: true,
            quoted: false,
            assignment: false,
            name_so_far: true,
            digits_only: true,
        }
    }
}

impl WordBuilder {
    fn push_unquoted(&mut self, c: char) {
        if !c.is_ascii_digit() {
            self.digits_only = false;
        }
        if c == '='
            && self.name_so_far
            && !self.assignment
            && !self.text.is_empty()
            && !self.text.starts_with(|first: char| first.is_ascii_digit())
        {
            self.assignment = true;
        }
        if !(c.is_ascii_alphanumeric() || c == '_') {
            self.name_so_far = false;
        }
        if matches!(c, '*' | '?' | '[' | '{' | '}') || (c == '~' && !self.started) {
            self.literal = false;
        }
        self.text.push(c);
        self.started = true;
    }

    fn push_quoted(&mut self, c: char) {
        self.mark_quoted();
        self.text.push(c);
    }

    fn mark_quoted(&mut self) {
        self.quoted = true;
        self.name_so_far = false;
        self.digits_only = false;
        self.started = true;
    }

    fn push_expansion(&mut self, raw: &[char]) {
        self.literal = false;
        self.name_so_far = false;
        self.digits_only = false;
        self.started = true;
        self.text.extend(raw);
    }

    fn is_descriptor(&self) -> bool {
        self.started && self.digits_only
    }

    fn finish(&mut self, tokens: &mut Vec<Token>) {
        let word = std::mem::take(self);
        if word.started {
            tokens.push(Token::Word(Word {
                text: word.text,
                literal: word.literal,
                quoted: word.quoted,
                assignment: word.assignment,
            }));
        }
    }
}

fn lex(command: &str) -> Result<Vec<Token>, Unreadable> {
    let chars: Vec<char> = command.chars().collect();
    let mut tokens = Vec::new();
    let mut word = WordBuilder::default();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        match c {
            ' ' | '\t' | '\r' => {
                word.finish(&mut tokens);
                i += 1;
            }
            '\n' => {
                word.finish(&mut tokens);
                tokens.push(Token::Boundary);
                i += 1;
            }
            '#' if !word.started => {
                while chars.get(i).is_some_and(|&c| c != '\n') {
                    i += 1;
                }
            }
            '\'' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '\'')
                    .ok_or(Unreadable)?;
                word.mark_quoted();
                word.text.extend(&chars[i + 1..i + 1 + close]);
                i += close + 2;
            }
            '"' => i = lex_double_quoted(&chars, i + 1, &mut word)?,
            '\\' => match next {
                Some('\n') => i += 2,
                Some(escaped) => {
                    word.push_quoted(escaped);
                    i += 2;
                }
                None => return Err(Unreadable),
            },
            '$' => i = lex_dollar(&chars, i, &mut word, false)?,
            '`' | '(' | ')' => return Err(Unreadable),
            ';' => {
                word.finish(&mut tokens);
                tokens.push(Token::Boundary);
                i += 1;
            }
            '&' => {
                word.finish(&mut tokens);
                match (next, chars.get(i + 2).copied()) {
                    (Some('&'), _) => {
                        tokens.push(Token::Boundary);
                        i += 2;
                    }
                    (Some('>'), Some('>')) => {
                        tokens.push(Token::Redirect(Redirect::Append));
                        i += 3;
                    }
                    (Some('>'), _) => {
                        tokens.push(Token::Redirect(Redirect::Write));
                        i += 2;
                    }
                    _ => {
                        tokens.push(Token::Boundary);
                        i += 1;
                    }
                }
            }
            '|' => {
                word.finish(&mut tokens);
                tokens.push(Token::Boundary);
                i += if matches!(next, Some('|' | '&')) {
                    2
                } else {
                    1
                };
            }
            '<' | '>' => {
                // Digits directly before the operator are its descriptor, not a word.
                if word.is_descriptor() {
                    word = WordBuilder::default();
                } else {
                    word.finish(&mut tokens);
                }
                let (redirect, length) = match (c, next) {
                    ('<', Some('<' | '(')) | ('>', Some('(')) => return Err(Unreadable),
                    ('<', Some('>')) => (Redirect::ReadWrite, 2),
                    ('<', Some('&')) => (Redirect::DuplicateIn, 2),
                    ('<', _) => (Redirect::Read, 1),
                    (_, Some('>')) => (Redirect::Append, 2),
                    (_, Some('|')) => (Redirect::Write, 2),
                    (_, Some('&')) => (Redirect::DuplicateOut, 2),
                    _ => (Redirect::Write, 1),
                };
                tokens.push(Token::Redirect(redirect));
                i += length;
            }
            _ => {
                word.push_unquoted(c);
                i += 1;
            }
        }
    }
    word.finish(&mut tokens);
    Ok(tokens)
}

/// Reads a double-quoted part starting after its opening quote; returns the index after
/// its closing quote.
fn lex_double_quoted(
    chars: &[char],
    mut i: usize,
    word: &mut WordBuilder,
) -> Result<usize, Unreadable> {
    word.mark_quoted();
    loop {
        match chars.get(i).copied() {
            None | Some('`') => return Err(Unreadable),
            Some('"') => return Ok(i + 1),
            Some('\\') => match chars.get(i + 1).copied() {
                Some('\n') => i += 2,
                Some(escaped @ ('$' | '`' | '"' | '\\')) => {
                    word.push_quoted(escaped);
                    i += 2;
                }
                Some(_) => {
                    word.push_quoted('\\');
                    i += 1;
                }
                None => return Err(Unreadable),
            },
            Some('$') => i = lex_dollar(chars, i, word, true)?,
            Some(c) => {
                word.push_quoted(c);
                i += 1;
            }
        }
    }
}

/// Reads a `$` at `i`: a parameter expansion makes the word non-literal, a lone `$` is
/// itself, and command substitution or `$'…'` quoting cannot be read.
fn lex_dollar(
    chars: &[char],
    i: usize,
    word: &mut WordBuilder,
    in_double_quotes: bool,
) -> Result<usize, Unreadable> {
    match chars.get(i + 1).copied() {
        Some('(') => Err(Unreadable),
        Some('\'' | '"') if !in_double_quotes => Err(Unreadable),
        Some('{') => {
            // Only a plain `${...}` is followed; anything nested inside it could hide a
            // command substitution.
            let close = chars[i + 2..]
                .iter()
                .position(|&c| c == '}')
                .ok_or(Unreadable)?;
            let inner = &chars[i + 2..i + 2 + close];
            if inner
                .iter()
                .any(|c| matches!(c, '`' | '$' | '\'' | '"' | '\\' | '{' | '\n'))
            {
                return Err(Unreadable);
            }
            let end = i + 3 + close;
            word.push_expansion(&chars[i..end]);
            Ok(end)
        }
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            let length = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                .count();
            let end = i + 1 + length;
            word.push_expansion(&chars[i..end]);
            Ok(end)
        }
        Some(c) if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '-' | '$' | '!') => {
            word.push_expansion(&chars[i..i + 2]);
            Ok(i + 2)
        }
        _ => {
            if in_double_quotes {
                word.push_quoted('$');
            } else {
                word.push_unquoted('$');
            }
            Ok(i + 1)
        }
    }
}

/// One simple command: its words and its redirections.
#[derive(Debug, Default)]
struct Segment {
    words: Vec<Word>,
    redirects: Vec<(Redirect, Word)>,
}

fn split(tokens: Vec<Token>) -> Result<Vec<Segment>, Unreadable> {
    let mut segments = Vec::new();
    let mut current = Segment::default();
    let mut tokens = tokens.into_iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word) => current.words.push(word),
            Token::Redirect(redirect) => match tokens.next() {
                Some(Token::Word(target)) => current.redirects.push((redirect, target)),
                _ => return Err(Unreadable),
            },
            Token::Boundary => {
                let segment = std::mem::take(&mut current);
                if !segment.words.is_empty() || !segment.redirects.is_empty() {
                    segments.push(segment);
                }
            }
        }
    }
    if !current.words.is_empty() || !current.redirects.is_empty() {
        segments.push(current);
    }
    Ok(segments)
}

/// Words that start compound commands; a segment starting with one is part of a
/// construct whose segments do not run once each in order.
const RESERVED_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "select", "function", "coproc", "in", "{", "}", "[[", "]]",
];

/// Programs that take no file operands; their redirections still count.
const NO_FILE_OPERANDS: &[&str] = &["echo", "printf", "true", "false", ":", "pwd", "sleep"];

/// Programs that change the shell's working directory.
const CHANGE_DIRECTORY: &[&str] = &["cd", "pushd", "popd"];

/// Device paths that are streams, not files.
const NOT_FILES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
];

/// What a segment runs, once assignments and wrappers are skipped.
enum Command<'w> {
    /// Nothing: only assignments or redirections.
    Empty,
    /// A program and its arguments.
    Run { name: &'w str, args: &'w [Word] },
    /// Something that cannot be followed.
    Unsupported,
}

fn resolve(words: &[Word]) -> Result<Command<'_>, Unreadable> {
    let mut rest = words;
    loop {
        while rest.first().is_some_and(|word| word.assignment) {
            rest = &rest[1..];
        }
        let Some((first, args)) = rest.split_first() else {
            return Ok(Command::Empty);
        };
        if !first.quoted && RESERVED_WORDS.contains(&first.text.as_str()) {
            return Err(Unreadable);
        }
        if !first.literal {
            return Ok(Command::Unsupported);
        }
        let name = program_name(&first.text);
        rest = match name {
            "!" if !first.quoted => args,
            "command" | "builtin" | "nohup" | "time" | "exec" => {
                match args.first().map(|word| word.text.as_str()) {
                    // `command -v` and `-V` only look a program up.
                    Some("-v" | "-V") if name == "command" => return Ok(Command::Empty),
                    Some("-p") if name == "command" || name == "time" => &args[1..],
                    Some("--") => &args[1..],
                    Some(option) if option.starts_with('-') => return Ok(Command::Unsupported),
                    _ => args,
                }
            }
            "env" => match skip_env_options(args) {
                Some(rest) => rest,
                None => return Ok(Command::Unsupported),
            },
            _ => return Ok(Command::Run { name, args }),
        };
    }
}

/// The arguments after `env`'s options, or `None` for an option that changes more than
/// the environment (`-C` changes directory, `-S` splits a string into words).
fn skip_env_options(args: &[Word]) -> Option<&[Word]> {
    let mut rest = args;
    while let Some((first, after)) = rest.split_first() {
        if first.assignment {
            rest = after;
            continue;
        }
        match first.text.as_str() {
            "-i" | "-" | "--ignore-environment" => rest = after,
            "-u" | "--unset" => rest = after.get(1..)?,
            "--" => return Some(after),
            option if option.starts_with("--unset=") => rest = after,
            option if option.starts_with('-') => return None,
            _ => return Some(rest),
        }
    }
    Some(rest)
}

/// The name to look a program up by: its usual system locations are the same program.
fn program_name(text: &str) -> &str {
    for directory in ["/bin/", "/usr/bin/", "/usr/local/bin/"] {
        if let Some(name) = text.strip_prefix(directory)
            && !name.contains('/')
        {
            return name;
        }
    }
    text
}

#[derive(Default)]
struct Reader {
    entries: Vec<TrackedPath>,
    unsupported: usize,
    directory_changed: bool,
    overflow: bool,
}

impl Reader {
    fn read(&mut self, segment: &Segment) -> Result<(), Unreadable> {
        let mut found: Found = Vec::new();
        let mut unsupported = false;
        let mut changes_directory = false;
        match resolve(&segment.words)? {
            Command::Empty => {}
            Command::Unsupported => unsupported = true,
            Command::Run { name, args } => {
                if NO_FILE_OPERANDS.contains(&name) {
                } else if CHANGE_DIRECTORY.contains(&name) {
                    changes_directory = true;
                } else if args.iter().any(|word| !word.literal) {
                    unsupported = true;
                } else {
                    let args: Vec<&str> = args.iter().map(|word| word.text.as_str()).collect();
                    match operands(name, &args) {
                        Some(paths) => found.extend(paths),
                        None => unsupported = true,
                    }
                }
            }
        }
        for (redirect, target) in &segment.redirects {
            match redirect_operation(*redirect, target) {
                Ok(Some(operation)) => found.push((target.text.clone(), operation)),
                Ok(None) => {}
                Err(Unreadable) => unsupported = true,
            }
        }
        for (path, operation) in &found {
            let (path, operation) = (path.as_str(), *operation);
            if path.is_empty()
                || path == "-"
                || NOT_FILES.contains(&path)
                || path.starts_with("/dev/fd/")
            {
                continue;
            }
            if self.directory_changed && !path.starts_with('/') {
                unsupported = true;
                continue;
            }
            self.push(path, operation);
        }
        if unsupported {
            self.unsupported += 1;
        }
        if changes_directory {
            self.directory_changed = true;
        }
        Ok(())
    }

    fn push(&mut self, path: &str, operation: FileOperation) {
        let known = self
            .entries
            .iter()
            .any(|entry| entry.path == path && entry.operation == operation);
        if known {
            return;
        }
        if self.entries.len() >= TRACKING_ENTRIES {
            self.overflow = true;
            return;
        }
        self.entries.push(TrackedPath {
            path: path.to_owned(),
            operation,
        });
    }
}

/// What a redirection does to its target; `None` for a descriptor duplication.
fn redirect_operation(
    redirect: Redirect,
    target: &Word,
) -> Result<Option<FileOperation>, Unreadable> {
    if !target.literal {
        return Err(Unreadable);
    }
    let descriptor = {
        let text = target.text.strip_suffix('-').unwrap_or(&target.text);
        text.chars().all(|c| c.is_ascii_digit())
    };
    Ok(match redirect {
        Redirect::Read => Some(FileOperation::Read),
        Redirect::Write => Some(FileOperation::Write),
        Redirect::Append => Some(FileOperation::Edit),
        Redirect::ReadWrite => Some(FileOperation::ReadWrite),
        Redirect::DuplicateOut | Redirect::DuplicateIn if descriptor => None,
        // `>& file` sends both streams to the file; `<& file` is not valid.
        Redirect::DuplicateOut => Some(FileOperation::Write),
        Redirect::DuplicateIn => return Err(Unreadable),
    })
}

type Found = Vec<(String, FileOperation)>;

/// Which options of a program take a value.
#[derive(Clone, Copy)]
struct Spec {
    /// Short options whose value is attached or the next argument.
    short: &'static str,
    /// Short options whose value can only be attached (`-i.bak`), possibly empty.
    attached: &'static str,
    /// Long options whose value follows `=` or is the next argument.
    long: &'static [&'static str],
}

const FLAGS: Spec = Spec {
    short: "",
    attached: "",
    long: &[],
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OptionName<'a> {
    Short(char),
    Long(&'a str),
}

/// A program's arguments split into options and operands, the way GNU tools accept
/// them: options may follow operands, and `--` ends them.
struct Parsed<'a> {
    options: Vec<(OptionName<'a>, Option<&'a str>)>,
    operands: Vec<&'a str>,
}

impl<'a> Parsed<'a> {
    fn new(args: &[&'a str], spec: Spec) -> Parsed<'a> {
        let mut parsed = Parsed {
            options: Vec::new(),
            operands: Vec::new(),
        };
        let mut i = 0;
        while let Some(&arg) = args.get(i) {
            i += 1;
            if arg == "--" {
                parsed.operands.extend_from_slice(&args[i..]);
                break;
            }
            if let Some(long) = arg.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((name, value)) => (name, Some(value)),
                    None if spec.long.contains(&long) => {
                        let value = args.get(i).copied();
                        i += 1;
                        (long, value)
                    }
                    None => (long, None),
                };
                parsed.options.push((OptionName::Long(name), value));
                continue;
            }
            let Some(cluster) = arg.strip_prefix('-').filter(|cluster| !cluster.is_empty()) else {
                parsed.operands.push(arg);
                continue;
            };
            for (at, c) in cluster.char_indices() {
                let attached = &cluster[at + c.len_utf8()..];
                if spec.short.contains(c) {
                    let value = if attached.is_empty() {
                        let value = args.get(i).copied();
                        i += 1;
                        value
                    } else {
                        Some(attached)
                    };
                    parsed.options.push((OptionName::Short(c), value));
                    break;
                }
                if spec.attached.contains(c) {
                    parsed.options.push((OptionName::Short(c), Some(attached)));
                    break;
                }
                parsed.options.push((OptionName::Short(c), None));
            }
        }
        parsed
    }

    fn matches(name: OptionName<'_>, short: Option<char>, long: &str) -> bool {
        match name {
            OptionName::Short(c) => short == Some(c),
            OptionName::Long(name) => name == long,
        }
    }

    fn has(&self, short: Option<char>, long: &str) -> bool {
        self.options
            .iter()
            .any(|(name, _)| Parsed::matches(*name, short, long))
    }

    /// The values given to an option, each as a path with `operation`.
    fn values(&self, short: Option<char>, long: &str, operation: FileOperation) -> Found {
        self.options
            .iter()
            .filter(|(name, _)| Parsed::matches(*name, short, long))
            .filter_map(|(_, value)| value.map(|value| (value.to_owned(), operation)))
            .collect()
    }
}

fn all(paths: &[&str], operation: FileOperation) -> Found {
    paths
        .iter()
        .map(|path| ((*path).to_owned(), operation))
        .collect()
}

/// The paths a known program names, or `None` for a program this reading does not know
/// or arguments that do not fit its usage.
fn operands(name: &str, args: &[&str]) -> Option<Found> {
    use FileOperation::{Edit, Read, ReadWrite, Write};
    let reads = |spec: Spec| Some(all(&Parsed::new(args, spec).operands, Read));
    match name {
        "cat" => reads(FLAGS),
        "tac" => reads(Spec {
            short: "s",
            long: &["separator"],
            ..FLAGS
        }),
        "head" => reads(Spec {
            short: "nc",
            long: &["lines", "bytes"],
            ..FLAGS
        }),
        "tail" => reads(Spec {
            short: "ncs",
            long: &[
                "lines",
                "bytes",
                "sleep-interval",
                "pid",
                "max-unchanged-stats",
            ],
            ..FLAGS
        }),
        "stat" => reads(Spec {
            short: "c",
            long: &["format", "printf"],
            ..FLAGS
        }),
        "nl" => reads(Spec {
            short: "bdfhilnsvw",
            long: &[
                "body-numbering",
                "section-delimiter",
                "footer-numbering",
                "header-numbering",
                "line-increment",
                "join-blank-lines",
                "number-format",
                "number-separator",
                "starting-line-number",
                "number-width",
            ],
            ..FLAGS
        }),
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum"
        | "cksum" => reads(Spec {
            short: "la",
            long: &["length", "algorithm"],
            ..FLAGS
        }),
        "ls" => reads(Spec {
            short: "IwT",
            long: &[
                "ignore",
                "hide",
                "width",
                "tabsize",
                "format",
                "sort",
                "time",
                "time-style",
                "block-size",
                "quoting-style",
                "indicator-style",
            ],
            ..FLAGS
        }),
        "wc" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    long: &["files0-from"],
                    ..FLAGS
                },
            );
            let mut found = all(&parsed.operands, Read);
            found.extend(parsed.values(None, "files0-from", Read));
            Some(found)
        }
        "file" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    short: "mfFeP",
                    long: &[
                        "magic-file",
                        "files-from",
                        "separator",
                        "exclude",
                        "exclude-quiet",
                        "parameter",
                    ],
                    ..FLAGS
                },
            );
            let mut found = all(&parsed.operands, Read);
            found.extend(parsed.values(Some('f'), "files-from", Read));
            found.extend(parsed.values(Some('m'), "magic-file", Read));
            Some(found)
        }
        "less" | "more" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    short: "bhjkoOpPtTxyzn#",
                    long: &["log-file", "LOG-FILE"],
                    ..FLAGS
                },
            );
            // `+command` arguments are pager commands, not files.
            let files: Vec<&str> = parsed
                .operands
                .iter()
                .copied()
                .filter(|operand| !operand.starts_with('+'))
                .collect();
            let mut found = all(&files, Read);
            if name == "less" {
                found.extend(parsed.values(Some('o'), "log-file", Write));
                found.extend(parsed.values(Some('O'), "LOG-FILE", Write));
            }
            Some(found)
        }
        "grep" | "egrep" | "fgrep" => Some(grep(args)),
        "rg" => Some(ripgrep(args)),
        "diff" => Some(diff(args)),
        "cmp" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    short: "in",
                    long: &["ignore-initial", "bytes"],
                    ..FLAGS
                },
            );
            // Operands after the two files are byte offsets.
            Some(all(&parsed.operands[..parsed.operands.len().min(2)], Read))
        }
        "sort" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    short: "ktSTo",
                    long: &[
                        "key",
                        "field-separator",
                        "buffer-size",
                        "temporary-directory",
                        "output",
                        "files0-from",
                        "parallel",
                        "batch-size",
                        "compress-program",
                        "random-source",
                        "sort",
                    ],
                    ..FLAGS
                },
            );
            let mut found = all(&parsed.operands, Read);
            found.extend(parsed.values(None, "files0-from", Read));
            found.extend(parsed.values(None, "random-source", Read));
            found.extend(parsed.values(Some('o'), "output", Write));
            Some(found)
        }
        "uniq" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    short: "fsw",
                    long: &["skip-fields", "skip-chars", "check-chars"],
                    ..FLAGS
                },
            );
            match parsed.operands.as_slice() {
                [] => Some(Vec::new()),
                [input] => Some(all(&[input], Read)),
                [input, output] => {
                    let mut found = all(&[input], Read);
                    found.extend(all(&[output], Write));
                    Some(found)
                }
                _ => None,
            }
        }
        "cp" => copy(args, Read),
        "mv" => copy(args, ReadWrite),
        "rm" | "rmdir" | "unlink" => Some(all(&Parsed::new(args, FLAGS).operands, Write)),
        "mkdir" => Some(all(
            &Parsed::new(
                args,
                Spec {
                    short: "m",
                    long: &["mode"],
                    ..FLAGS
                },
            )
            .operands,
            Write,
        )),
        "touch" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    short: "dtr",
                    long: &["date", "reference"],
                    ..FLAGS
                },
            );
            let mut found = parsed.values(Some('r'), "reference", Read);
            found.extend(all(&parsed.operands, Write));
            Some(found)
        }
        "tee" => {
            let parsed = Parsed::new(args, FLAGS);
            let operation = if parsed.has(Some('a'), "append") {
                Edit
            } else {
                Write
            };
            Some(all(&parsed.operands, operation))
        }
        "sed" => Some(sed(args)),
        "chmod" => chmod(args),
        "chown" | "chgrp" => {
            let parsed = Parsed::new(
                args,
                Spec {
                    long: &["from", "reference"],
                    ..FLAGS
                },
            );
            owner_change(&parsed)
        }
        _ => None,
    }
}

/// `grep [options] PATTERN [FILE...]`, or `grep -e/-f ... [FILE...]`.
fn grep(args: &[&str]) -> Found {
    let parsed = Parsed::new(
        args,
        Spec {
            short: "efmABCdD",
            long: &[
                "regexp",
                "file",
                "max-count",
                "after-context",
                "before-context",
                "context",
                "directories",
                "devices",
                "include",
                "exclude",
                "exclude-dir",
                "exclude-from",
                "label",
                "binary-files",
                "group-separator",
            ],
            ..FLAGS
        },
    );
    let explicit_pattern = parsed.has(Some('e'), "regexp") || parsed.has(Some('f'), "file");
    let files = if explicit_pattern {
        &parsed.operands[..]
    } else {
        parsed.operands.get(1..).unwrap_or_default()
    };
    let mut found = parsed.values(Some('f'), "file", FileOperation::Read);
    found.extend(parsed.values(None, "exclude-from", FileOperation::Read));
    found.extend(all(files, FileOperation::Read));
    found
}

/// `rg [options] PATTERN [PATH...]`, `rg -e/-f ... [PATH...]` or `rg --files [PATH...]`.
fn ripgrep(args: &[&str]) -> Found {
    let parsed = Parsed::new(
        args,
        Spec {
            short: "efgtTmABCjMdrE",
            long: &[
                "regexp",
                "file",
                "glob",
                "iglob",
                "type",
                "type-not",
                "type-add",
                "type-clear",
                "max-count",
                "after-context",
                "before-context",
                "context",
                "threads",
                "max-columns",
                "max-depth",
                "maxdepth",
                "replace",
                "encoding",
                "sort",
                "sortr",
                "color",
                "colors",
                "ignore-file",
                "pre",
                "pre-glob",
                "context-separator",
                "field-context-separator",
                "field-match-separator",
                "path-separator",
                "max-filesize",
                "engine",
                "dfa-size-limit",
                "regex-size-limit",
                "hyperlink-format",
            ],
            ..FLAGS
        },
    );
    let no_pattern = parsed.has(Some('e'), "regexp")
        || parsed.has(Some('f'), "file")
        || parsed.has(None, "files");
    let paths = if no_pattern {
        &parsed.operands[..]
    } else {
        parsed.operands.get(1..).unwrap_or_default()
    };
    let mut found = parsed.values(Some('f'), "file", FileOperation::Read);
    found.extend(parsed.values(None, "ignore-file", FileOperation::Read));
    found.extend(all(paths, FileOperation::Read));
    found
}

fn diff(args: &[&str]) -> Found {
    let parsed = Parsed::new(
        args,
        Spec {
            short: "CUIxXSLFDW",
            long: &[
                "context",
                "unified",
                "ignore-matching-lines",
                "exclude",
                "exclude-from",
                "starting-file",
                "label",
                "show-function-line",
                "ifdef",
                "width",
                "tabsize",
                "from-file",
                "to-file",
                "line-format",
                "old-line-format",
                "new-line-format",
                "unchanged-line-format",
                "old-group-format",
                "new-group-format",
                "changed-group-format",
                "unchanged-group-format",
                "horizon-lines",
                "palette",
            ],
            ..FLAGS
        },
    );
    let mut found = parsed.values(Some('X'), "exclude-from", FileOperation::Read);
    found.extend(parsed.values(None, "from-file", FileOperation::Read));
    found.extend(parsed.values(None, "to-file", FileOperation::Read));
    found.extend(all(&parsed.operands, FileOperation::Read));
    found
}

/// `cp`/`mv SOURCE... DESTINATION` or `-t DIRECTORY SOURCE...`; `sources` is what
/// happens to each source.
fn copy(args: &[&str], sources: FileOperation) -> Option<Found> {
    let parsed = Parsed::new(
        args,
        Spec {
            short: "tS",
            long: &["target-directory", "suffix"],
            ..FLAGS
        },
    );
    let targets = parsed.values(Some('t'), "target-directory", FileOperation::Write);
    if !targets.is_empty() {
        if parsed.operands.is_empty() {
            return None;
        }
        let mut found = all(&parsed.operands, sources);
        found.extend(targets);
        return Some(found);
    }
    match parsed.operands.split_last() {
        Some((destination, sources_given)) if !sources_given.is_empty() => {
            let mut found = all(sources_given, sources);
            found.extend(all(&[destination], FileOperation::Write));
            Some(found)
        }
        _ => None,
    }
}

/// `sed [options] SCRIPT [FILE...]` or `sed -e/-f ... [FILE...]`; `-i` edits the files.
fn sed(args: &[&str]) -> Found {
    let parsed = Parsed::new(
        args,
        Spec {
            short: "efl",
            attached: "i",
            long: &["expression", "file", "line-length"],
        },
    );
    let in_place: Vec<&str> = parsed
        .options
        .iter()
        .filter(|(name, _)| Parsed::matches(*name, Some('i'), "in-place"))
        .map(|(_, suffix)| suffix.unwrap_or(""))
        .collect();
    let explicit_script = parsed.has(Some('e'), "expression") || parsed.has(Some('f'), "file");
    let mut files = &parsed.operands[..];
    if !explicit_script {
        // BSD sed takes `-i ''` as an empty backup suffix; an empty script is no use, so
        // an empty first operand under `-i` is that suffix and the script follows it.
        if !in_place.is_empty() && files.first() == Some(&"") {
            files = &files[1..];
        }
        files = files.get(1..).unwrap_or_default();
    }
    let mut found = parsed.values(Some('f'), "file", FileOperation::Read);
    if in_place.is_empty() {
        found.extend(all(files, FileOperation::Read));
        return found;
    }
    found.extend(all(files, FileOperation::Edit));
    // A plain suffix keeps a backup next to each file; a `*` template or a directory in
    // it would need the template expanded, so such backups are not reported.
    if let Some(suffix) = in_place.last()
        && !suffix.is_empty()
        && !suffix.contains(['*', '/'])
    {
        for file in files.iter().filter(|file| !file.is_empty()) {
            found.push((format!("{file}{suffix}"), FileOperation::Write));
        }
    }
    found
}

fn chmod(args: &[&str]) -> Option<Found> {
    // A symbolic mode may start with `-` (`chmod -x file`): such an argument is the mode
    // when it uses only mode characters, as the options `-c -f -v -R` do not.
    const MODE: &str = "rwxXstugoa+-=,01234567";
    let has_reference = args
        .iter()
        .any(|arg| *arg == "--reference" || arg.starts_with("--reference="));
    let mut mode_seen = has_reference;
    let mut rest: Vec<&str> = Vec::new();
    for &arg in args {
        if !mode_seen
            && arg.len() > 1
            && arg.starts_with('-')
            && !arg.starts_with("--")
            && arg[1..].chars().all(|c| MODE.contains(c))
        {
            mode_seen = true;
            continue;
        }
        rest.push(arg);
    }
    let parsed = Parsed::new(
        &rest,
        Spec {
            long: &["reference"],
            ..FLAGS
        },
    );
    owner_change_with(&parsed, !mode_seen)
}

/// `chown`/`chgrp OWNER FILE...` or `--reference=FILE FILE...`.
fn owner_change(parsed: &Parsed<'_>) -> Option<Found> {
    owner_change_with(parsed, !parsed.has(None, "reference"))
}

/// Metadata edits: the first operand is the mode or owner when `leading` says so.
fn owner_change_with(parsed: &Parsed<'_>, leading: bool) -> Option<Found> {
    let files = if leading {
        parsed.operands.get(1..)?
    } else {
        &parsed.operands[..]
    };
    if files.is_empty() {
        return None;
    }
    let mut found = parsed.values(None, "reference", FileOperation::Read);
    found.extend(all(files, FileOperation::Edit));
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use FileOperation::{Edit, Read, ReadWrite, Write};

    fn entries(command: &str) -> Vec<(String, FileOperation)> {
        let tracking = track(command);
        assert_eq!(
            tracking.status,
            TrackingStatus::Completed,
            "{command}: {tracking:?}"
        );
        tracking
            .entries
            .unwrap_or_default()
            .into_iter()
            .map(|entry| (entry.path, entry.operation))
            .collect()
    }

    fn expect(command: &str, expected: &[(&str, FileOperation)]) {
        let expected: Vec<(String, FileOperation)> = expected
            .iter()
            .map(|(path, operation)| ((*path).to_owned(), *operation))
            .collect();
        assert_eq!(entries(command), expected, "{command}");
    }

    fn status(command: &str) -> TrackingStatus {
        track(command).status
    }

    fn unsupported(command: &str) -> usize {
        track(command).unsupported_segments
    }

    fn path(path: &str, operation: FileOperation) -> TrackedPath {
        TrackedPath {
            path: path.to_owned(),
            operation,
        }
    }

    #[test]
    fn labels_are_the_public_table() {
        let table = [
            ("completed", "completed"),
            ("command_limit", "skipped (command limit)"),
            ("canceled", "skipped (canceled)"),
            ("busy", "skipped (worker busy)"),
            ("unavailable", "skipped (worker unavailable)"),
            ("timed_out", "timed out"),
            ("error", "assessment failed"),
            ("redacted", "skipped (sensitive command)"),
            ("unsupported", "skipped (unsupported command)"),
            ("no_candidates", "skipped (no literal paths)"),
            ("command_failed", "skipped (command did not succeed)"),
        ];
        assert_eq!(table.len(), TrackingStatus::ALL.len());
        for (status, (name, label)) in TrackingStatus::ALL.into_iter().zip(table) {
            assert_eq!(status.as_str(), name);
            assert_eq!(status.label(), label);
            assert_eq!(TrackingStatus::parse(name), Some(status));
            assert_eq!(
                serde_json::to_value(status).ok(),
                Some(serde_json::Value::from(name))
            );
        }
    }

    #[test]
    fn unknown_statuses_do_not_parse() {
        assert_eq!(TrackingStatus::parse("Completed"), None);
        assert_eq!(TrackingStatus::parse("skipped (command limit)"), None);
        assert_eq!(TrackingStatus::parse(""), None);
    }

    #[test]
    fn tracking_serializes_with_null_and_defaults() {
        let tracking = track("cat a.txt");
        let json = serde_json::to_string(&tracking).unwrap();
        assert_eq!(
            json,
            r#"{"status":"completed","entries":[{"path":"a.txt","operation":"read"}],"unsupported_segments":0}"#
        );
        let limited = serde_json::to_string(&track(&"a".repeat(5000))).unwrap();
        assert_eq!(
            limited,
            r#"{"status":"command_limit","entries":null,"unsupported_segments":0}"#
        );
        let recorded: Tracking = serde_json::from_str(r#"{"status":"busy"}"#).unwrap();
        assert_eq!(recorded, Tracking::without_entries(TrackingStatus::Busy, 0));
        let edit: FileOperation = serde_json::from_str(r#""read_write""#).unwrap();
        assert_eq!(edit, ReadWrite);
    }

    #[test]
    fn redirections() {
        expect("echo hi > out.txt", &[("out.txt", Write)]);
        expect("echo hi >> log.txt", &[("log.txt", Edit)]);
        expect("wc -l < in.txt", &[("in.txt", Read)]);
        expect("echo hi >| forced", &[("forced", Write)]);
        expect("exec 3<> both", &[("both", ReadWrite)]);
        expect("make &> build.log", &[("build.log", Write)]);
        expect("make &>> build.log", &[("build.log", Edit)]);
        expect("make >& build.log", &[("build.log", Write)]);
        expect("echo a>b", &[("b", Write)]);
        expect("echo x 2> err.txt", &[("err.txt", Write)]);
        expect("echo x 2>>err.txt", &[("err.txt", Edit)]);
    }

    #[test]
    fn descriptor_duplications_and_devices_name_no_file() {
        assert_eq!(status("echo x 2>&1"), TrackingStatus::NoCandidates);
        assert_eq!(status("echo x >&2 3>&- 4<&0"), TrackingStatus::NoCandidates);
        assert_eq!(
            status("echo x > /dev/null 2>&1"),
            TrackingStatus::NoCandidates
        );
        assert_eq!(
            status("cat /dev/stdin > /dev/stderr"),
            TrackingStatus::NoCandidates
        );
        assert_eq!(status("cat - /dev/fd/3"), TrackingStatus::NoCandidates);
        let tracking = track("true");
        assert_eq!(tracking.entries, Some(Vec::new()));
        assert_eq!(tracking.unsupported_segments, 0);
        assert_eq!(status(""), TrackingStatus::NoCandidates);
        assert_eq!(status("  # only a comment"), TrackingStatus::NoCandidates);
    }

    #[test]
    fn quoting() {
        expect("cat 'my file.txt'", &[("my file.txt", Read)]);
        expect(r#"cat "dir/some file""#, &[("dir/some file", Read)]);
        expect(r"cat my\ file", &[("my file", Read)]);
        expect("cat '*.rs' \\*.md", &[("*.rs", Read), ("*.md", Read)]);
        expect(r#"cat "cost$" 'a$b'"#, &[("cost$", Read), ("a$b", Read)]);
        expect(r#"cat "a\"b""#, &[("a\"b", Read)]);
        expect(
            "cat a# b #c\ncat d",
            &[("a#", Read), ("b", Read), ("d", Read)],
        );
        expect("cat long\\\nname", &[("longname", Read)]);
    }

    #[test]
    fn lists_and_pipelines() {
        expect(
            "cat a.txt | grep foo > out.txt && rm tmp || touch flag; head -n 3 b.txt &",
            &[
                ("a.txt", Read),
                ("out.txt", Write),
                ("tmp", Write),
                ("flag", Write),
                ("b.txt", Read),
            ],
        );
        expect(
            "cat a |& tee -a log\ntail b",
            &[("a", Read), ("log", Edit), ("b", Read)],
        );
    }

    #[test]
    fn read_commands() {
        expect("head -n 5 a b", &[("a", Read), ("b", Read)]);
        expect("head -n5 -c 10 a", &[("a", Read)]);
        expect("tail -f --lines 20 log", &[("log", Read)]);
        expect(
            "grep -rn 'fn main' src Cargo.toml",
            &[("src", Read), ("Cargo.toml", Read)],
        );
        expect("grep -e foo -e bar src", &[("src", Read)]);
        expect(
            "grep -f pats.txt -C 2 src",
            &[("pats.txt", Read), ("src", Read)],
        );
        expect("rg -g '*.rs' -t rust needle crates", &[("crates", Read)]);
        expect("rg --files src", &[("src", Read)]);
        expect("diff -u old new", &[("old", Read), ("new", Read)]);
        expect("cmp a b 10 20", &[("a", Read), ("b", Read)]);
        expect("stat -c '%s' f", &[("f", Read)]);
        expect("ls -la src/", &[("src/", Read)]);
        expect("sha256sum a b", &[("a", Read), ("b", Read)]);
        expect("less +F -N log", &[("log", Read)]);
        expect(
            "sort -k 2 -o sorted.txt data.txt",
            &[("data.txt", Read), ("sorted.txt", Write)],
        );
        expect(
            "uniq in.txt out.txt",
            &[("in.txt", Read), ("out.txt", Write)],
        );
        expect("cat -- -weird", &[("-weird", Read)]);
        expect("/usr/bin/cat x", &[("x", Read)]);
        assert_eq!(status("grep foo"), TrackingStatus::NoCandidates);
        assert_eq!(status("ls"), TrackingStatus::NoCandidates);
    }

    #[test]
    fn copy_and_move() {
        expect(
            "cp a b dest/",
            &[("a", Read), ("b", Read), ("dest/", Write)],
        );
        expect(
            "cp -r -t out a b",
            &[("a", Read), ("b", Read), ("out", Write)],
        );
        expect("mv old new", &[("old", ReadWrite), ("new", Write)]);
        expect(
            "mv -f a b dir",
            &[("a", ReadWrite), ("b", ReadWrite), ("dir", Write)],
        );
        assert_eq!(status("cp lonely"), TrackingStatus::Unsupported);
        assert_eq!(unsupported("cp lonely"), 1);
    }

    #[test]
    fn writes_and_edits() {
        expect("rm -rf build dist", &[("build", Write), ("dist", Write)]);
        expect(
            "touch -r ref.txt new.txt",
            &[("ref.txt", Read), ("new.txt", Write)],
        );
        expect("mkdir -p -m 755 a/b", &[("a/b", Write)]);
        expect("echo x | tee out", &[("out", Write)]);
        expect("echo x | tee -a out", &[("out", Edit)]);
        expect("echo x | tee --append out", &[("out", Edit)]);
        expect("chmod +x run.sh", &[("run.sh", Edit)]);
        expect("chmod -x run.sh", &[("run.sh", Edit)]);
        expect("chmod -R 644 a b", &[("a", Edit), ("b", Edit)]);
        expect("chmod --reference=ref f", &[("ref", Read), ("f", Edit)]);
        expect("chown -R me:me dir", &[("dir", Edit)]);
    }

    #[test]
    fn sed_reads_or_edits() {
        expect("sed -n 1,5p file", &[("file", Read)]);
        expect("sed -i 's/a/b/' file", &[("file", Edit)]);
        expect(
            "sed -i -e 's/a/b/' -e 's/c/d/' f1 f2",
            &[("f1", Edit), ("f2", Edit)],
        );
        expect("sed -ni 's/a/b/p' f", &[("f", Edit)]);
        expect("sed --in-place 's/a/b/' f", &[("f", Edit)]);
        expect("sed -i.bak 's/a/b/' f", &[("f", Edit), ("f.bak", Write)]);
        expect("sed -i '' 's/a/b/' f", &[("f", Edit)]);
        expect("sed -f prog.sed in", &[("prog.sed", Read), ("in", Read)]);
    }

    #[test]
    fn wrappers_and_assignments() {
        expect("LC_ALL=C sort data", &[("data", Read)]);
        expect("env -i A=1 cat x", &[("x", Read)]);
        expect("command cat x", &[("x", Read)]);
        expect("time -p nohup cat x", &[("x", Read)]);
        expect("! grep -q x f", &[("f", Read)]);
        expect("exec > log", &[("log", Write)]);
        assert_eq!(status("command -v cat"), TrackingStatus::NoCandidates);
        assert_eq!(status("A=1"), TrackingStatus::NoCandidates);
        assert_eq!(status("env -C dir cat x"), TrackingStatus::Unsupported);
    }

    #[test]
    fn expansions_and_globs_make_a_segment_unsupported() {
        for command in [
            "cat $FILE",
            "cat \"$FILE\"",
            "cat ${FILE}",
            "rm *.o",
            "cat file?.txt",
            "cat [ab].txt",
            "cp a{1,2} dir",
            "cat ~/notes",
            "head -n $N file",
            "echo hi > $OUT",
        ] {
            let tracking = track(command);
            assert_eq!(tracking.status, TrackingStatus::Unsupported, "{command}");
            assert_eq!(tracking.entries, None, "{command}");
            assert_eq!(tracking.unsupported_segments, 1, "{command}");
        }
    }

    #[test]
    fn echo_arguments_may_expand() {
        let tracking = track("echo $HOME *.rs > out.txt");
        assert_eq!(tracking.status, TrackingStatus::Completed);
        assert_eq!(tracking.unsupported_segments, 0);
    }

    #[test]
    fn unknown_programs_keep_their_redirections() {
        let tracking = track("cargo build 2>&1 | tee build.log");
        assert_eq!(tracking.status, TrackingStatus::Completed);
        assert_eq!(tracking.entries, Some(vec![path("build.log", Write)]));
        assert_eq!(tracking.unsupported_segments, 1);
        let tracking = track("python3 script.py < input.txt > output.txt");
        assert_eq!(
            tracking.entries,
            Some(vec![path("input.txt", Read), path("output.txt", Write)])
        );
        assert_eq!(tracking.unsupported_segments, 1);
        for command in [
            "git status",
            "eval cat x",
            "source env.sh",
            ". env.sh",
            "./run.sh x",
        ] {
            assert_eq!(status(command), TrackingStatus::Unsupported, "{command}");
        }
    }

    #[test]
    fn partly_unsupported_commands_still_complete() {
        let tracking = track("cat a; rm $X; make; cat b");
        assert_eq!(tracking.status, TrackingStatus::Completed);
        assert_eq!(
            tracking.entries,
            Some(vec![path("a", Read), path("b", Read)])
        );
        assert_eq!(tracking.unsupported_segments, 2);
    }

    #[test]
    fn unreadable_shell_constructs() {
        for command in [
            "cat $(ls)",
            "cat `ls`",
            "cat \"$(ls)\"",
            "(cd x && cat y)",
            "diff <(sort a) b",
            "cat <<EOF\nx\nEOF",
            "cat <<< hi",
            "cat 'unterminated",
            "cat \"unterminated",
            "echo $'a\\nb' > f",
            "for f in a b; do cat f; done",
            "if true; then cat a; fi",
            "{ cat a; } > out",
            "[[ -f a ]] && cat a",
            "cat a >",
            "cat ${a$(x)}",
        ] {
            let tracking = track(command);
            assert_eq!(tracking.status, TrackingStatus::Unsupported, "{command}");
            assert_eq!(tracking.entries, None, "{command}");
            assert_eq!(tracking.unsupported_segments, 1, "{command}");
        }
    }

    #[test]
    fn quoted_reserved_words_are_programs() {
        assert_eq!(status("'if' x"), TrackingStatus::Unsupported);
        expect("cat if", &[("if", Read)]);
    }

    #[test]
    fn relative_paths_after_cd_are_dropped() {
        let tracking = track("cat before && cd sub && cat after /abs/file > out");
        assert_eq!(tracking.status, TrackingStatus::Completed);
        assert_eq!(
            tracking.entries,
            Some(vec![path("before", Read), path("/abs/file", Read)])
        );
        assert_eq!(tracking.unsupported_segments, 1);
        let tracking = track("cd /tmp && rm -rf build");
        assert_eq!(tracking.status, TrackingStatus::Unsupported);
        assert_eq!(tracking.unsupported_segments, 1);
        assert_eq!(status("cd /tmp"), TrackingStatus::NoCandidates);
    }

    #[test]
    fn duplicates_keep_first_seen_order() {
        expect(
            "cat b a b; cat a > b; cat b",
            &[("b", Read), ("a", Read), ("b", Write)],
        );
    }

    #[test]
    fn bounds() {
        let longest = format!("cat {}", "a".repeat(TRACKING_COMMAND_BYTES - 4));
        assert_eq!(longest.len(), TRACKING_COMMAND_BYTES);
        assert_eq!(status(&longest), TrackingStatus::Completed);
        let tracking = track(&format!("{longest}b"));
        assert_eq!(tracking.status, TrackingStatus::CommandLimit);
        assert_eq!(tracking.entries, None);

        let files = |count: usize| {
            let names: Vec<String> = (0..count).map(|n| format!("f{n}")).collect();
            format!("cat {}", names.join(" "))
        };
        let tracking = track(&files(TRACKING_ENTRIES));
        assert_eq!(tracking.status, TrackingStatus::Completed);
        assert_eq!(
            tracking.entries.map(|entries| entries.len()),
            Some(TRACKING_ENTRIES)
        );
        assert_eq!(
            status(&files(TRACKING_ENTRIES + 1)),
            TrackingStatus::CommandLimit
        );
    }

    #[test]
    fn aggregate_of_absent_and_empty_entries() {
        assert_eq!(inferred_activity(None, 0), None);
        assert_eq!(inferred_activity(None, 3), None);
        assert_eq!(
            inferred_activity(Some(&[]), 0).as_deref(),
            Some(
                "0 supported files (R 0, W 0, E 0); first 0 of 0 entries; 0 unsupported; not verified effects"
            )
        );
        assert_eq!(track("git status").inferred_activity(), None);
        assert_eq!(
            track("true").inferred_activity().as_deref(),
            Some(
                "0 supported files (R 0, W 0, E 0); first 0 of 0 entries; 0 unsupported; not verified effects"
            )
        );
    }

    #[test]
    fn aggregate_of_one_entry() {
        assert_eq!(
            inferred_activity(Some(&[path("a", Read)]), 0).as_deref(),
            Some(
                "1 supported file (R 1, W 0, E 0); first 1 of 1 entry; 0 unsupported; not verified effects"
            )
        );
    }

    #[test]
    fn aggregate_bits_per_unique_path() {
        let entries = [
            path("a", Read),
            path("a", Write),
            path("b", ReadWrite),
            path("c", Edit),
            path("d", Write),
        ];
        assert_eq!(
            inferred_activity(Some(&entries), 0).as_deref(),
            Some(
                "4 supported files (R 2, W 3, E 1); first 5 of 5 entries; 0 unsupported; not verified effects"
            )
        );
    }

    #[test]
    fn aggregate_with_unsupported_entries() {
        assert_eq!(
            track("cargo build > log; cat a")
                .inferred_activity()
                .as_deref(),
            Some(
                "2 supported files (R 1, W 1, E 0); first 2 of 2 entries; 1 unsupported; not verified effects; full totals unknown"
            )
        );
        let entries = [path("", Read), path("x\0y", Write)];
        assert_eq!(
            inferred_activity(Some(&entries), 0).as_deref(),
            Some(
                "0 supported files (R 0, W 0, E 0); first 2 of 2 entries; 2 unsupported; not verified effects; full totals unknown"
            )
        );
        assert_eq!(
            inferred_activity(Some(&[]), 1).as_deref(),
            Some(
                "0 supported files (R 0, W 0, E 0); first 0 of 0 entries; 1 unsupported; not verified effects; full totals unknown"
            )
        );
    }

    #[test]
    fn aggregate_examines_only_the_first_entries() {
        let entries: Vec<TrackedPath> = (0..40)
            .map(|n| path(&format!("f{n}"), if n < 30 { Read } else { Write }))
            .collect();
        assert_eq!(
            inferred_activity(Some(&entries), 0).as_deref(),
            Some(
                "32 supported files (R 30, W 2, E 0); first 32 of 40 entries; 0 unsupported; not verified effects; full totals unknown"
            )
        );
        assert_eq!(
            inferred_activity(Some(&entries[..32]), 0).as_deref(),
            Some(
                "32 supported files (R 30, W 2, E 0); first 32 of 32 entries; 0 unsupported; not verified effects"
            )
        );
    }

    #[test]
    fn aggregate_never_contains_paths() {
        let tracking = track("cp secret-name.txt other-name.txt");
        let text = tracking.inferred_activity().unwrap_or_default();
        assert!(!text.contains("name"), "{text}");
    }
}
