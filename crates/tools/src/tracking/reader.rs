//! Reading one simple command: the program behind its wrappers and assignments, and
//! what its words and redirections say it does to files.

use super::lex::{Redirect, Segment, Unreadable, Word};
use super::options::Found;
use super::programs::operands;
use super::{FileOperation, TRACKING_ENTRIES, TrackedPath};

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
pub(super) struct Reader {
    pub(super) entries: Vec<TrackedPath>,
    pub(super) unsupported: usize,
    pub(super) directory_changed: bool,
    pub(super) overflow: bool,
}

impl Reader {
    pub(super) fn read(&mut self, segment: &Segment) -> Result<(), Unreadable> {
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

    pub(super) fn push(&mut self, path: &str, operation: FileOperation) {
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
