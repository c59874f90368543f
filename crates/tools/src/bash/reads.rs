//! Which `bash` commands only read: such calls run beside the other reads of a
//! response instead of one after another.
//!
//! The judgement is conservative: a command counts as reading only when every part of
//! it is known to change nothing outside its own shell. That is a list of simple
//! commands joined by `|`, `&&`, `||`, `;` or a newline, each an allowed program with
//! arguments that do not make it write, and no redirection but to `/dev/null` or
//! between descriptors (`2>&1`). Anything the shell could use to run something else is
//! refused on sight, quoted or not: command and process substitution, `${…}`, subshells
//! and groups, functions, assignments (`PATH=. ls` would run a file of the workspace),
//! a program named with a `/`, and every program not on the list. A command refused
//! here is not judged harmful, only not known to be harmless: it runs alone, in the
//! model's order, as every command did before.
//!
//! Approval and recovery do not use this: a command that reads is still a command.

/// Whether `command` (a `bash -c` command line) is known to only read.
pub(crate) fn only_reads(command: &str) -> bool {
    // What could run another program, wherever it appears (quotes do not stop
    // `$(…)` or backquotes inside double quotes; refusing them in single quotes too
    // only costs a command its place beside the reads).
    const SUBSTITUTIONS: [&str; 5] = ["`", "$(", "${", "<(", ">("];
    if SUBSTITUTIONS.iter().any(|s| command.contains(s)) {
        return false;
    }
    let Some(commands) = simple_commands(command) else {
        return false;
    };
    !commands.is_empty() && commands.iter().all(|words| program_only_reads(words))
}

/// A word of the command line, its quotes removed.
#[derive(Debug, Default)]
struct Word {
    text: String,
    /// Whether any of it was quoted or escaped: a quoted `2` is not a descriptor.
    quoted: bool,
}

/// The command line's simple commands, each its words; none when it holds anything
/// but words, the list operators and the allowed redirections, or a quote that does
/// not end.
fn simple_commands(command: &str) -> Option<Vec<Vec<String>>> {
    let mut commands = vec![Vec::new()];
    let mut word: Option<Word> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let word = word.get_or_insert_with(Word::default);
                word.quoted = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        inner => word.text.push(inner),
                    }
                }
            }
            '"' => {
                let word = word.get_or_insert_with(Word::default);
                word.quoted = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => {
                            let escaped = chars.next()?;
                            if !matches!(escaped, '"' | '\\' | '$' | '`' | '\n') {
                                word.text.push('\\');
                            }
                            word.text.push(escaped);
                        }
                        inner => word.text.push(inner),
                    }
                }
            }
            '\\' => {
                let word = word.get_or_insert_with(Word::default);
                word.quoted = true;
                match chars.next() {
                    // A line continuation joins the lines.
                    Some('\n') => {}
                    Some(escaped) => word.text.push(escaped),
                    None => word.text.push('\\'),
                }
            }
            '#' if word.is_none() => {
                // A comment, to the end of the line.
                while chars.next_if(|c| *c != '\n').is_some() {}
            }
            ' ' | '\t' => end_word(&mut word, &mut commands),
            '\n' | ';' => {
                end_word(&mut word, &mut commands);
                commands.push(Vec::new());
            }
            '|' => {
                end_word(&mut word, &mut commands);
                // `|&` also sends standard error down the pipe: still only a pipe.
                let _ = chars.next_if(|c| *c == '|' || *c == '&');
                commands.push(Vec::new());
            }
            '&' if chars.next_if_eq(&'&').is_some() => {
                end_word(&mut word, &mut commands);
                commands.push(Vec::new());
            }
            '&' if chars.peek() == Some(&'>') => {
                // `&>target`: both streams, so the target must be `/dev/null`.
                end_word(&mut word, &mut commands);
                chars.next();
                if !discards(&mut chars) {
                    return None;
                }
            }
            '>' => {
                // A descriptor number just before it belongs to the redirection.
                let descriptor = word
                    .as_ref()
                    .is_some_and(|w| !w.quoted && w.text.chars().all(|c| c.is_ascii_digit()));
                if descriptor {
                    word = None;
                } else {
                    end_word(&mut word, &mut commands);
                }
                if chars.next_if_eq(&'&').is_some() {
                    // `>&2`: to another descriptor, never a file.
                    let mut digits = 0;
                    while chars.next_if(char::is_ascii_digit).is_some() {
                        digits += 1;
                    }
                    let ends = chars.peek().is_none_or(|c| " \t\n;|&".contains(*c));
                    if digits == 0 || !ends {
                        return None;
                    }
                } else if !discards(&mut chars) {
                    return None;
                }
            }
            // Background jobs, input redirections and here-documents, subshells.
            '&' | '<' | '(' | ')' => return None,
            other => word.get_or_insert_with(Word::default).text.push(other),
        }
    }
    end_word(&mut word, &mut commands);
    // Empty commands between operators (`ls;`, a trailing newline) are nothing.
    commands.retain(|words| !words.is_empty());
    Some(commands)
}

fn end_word(word: &mut Option<Word>, commands: &mut [Vec<String>]) {
    if let (Some(word), Some(words)) = (word.take(), commands.last_mut()) {
        words.push(word.text);
    }
}

/// Whether what follows a `>` is ` /dev/null` and the word ends there.
fn discards(chars: &mut std::iter::Peekable<std::str::Chars>) -> bool {
    // `>>` and `>|` write as surely as `>`; only the target decides.
    let _ = chars.next_if(|c| *c == '>' || *c == '|');
    while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
    let mut target = String::new();
    while let Some(c) = chars.next_if(|c| !" \t\n;|&<>()'\"\\".contains(*c)) {
        target.push(c);
    }
    target == "/dev/null"
}

/// Programs that never write, whatever their arguments, except those refused in
/// [`program_only_reads`].
const READING_PROGRAMS: &[&str] = &[
    "[",
    "basename",
    "cat",
    "cd",
    "cmp",
    "cut",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "false",
    "fgrep",
    "file",
    "find",
    "git",
    "grep",
    "head",
    "id",
    "jq",
    "ls",
    "md5sum",
    "nl",
    "printenv",
    "printf",
    "pwd",
    "readlink",
    "realpath",
    "rg",
    "sed",
    "seq",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "sleep",
    "sort",
    "stat",
    "tail",
    "test",
    "tr",
    "tree",
    "true",
    "uname",
    "uniq",
    "wc",
    "which",
    "whoami",
];

/// `git` subcommands that only read (`status` may refresh the index's cached file
/// times, and does so only when no other git holds the index's lock).
const READING_GIT: &[&str] = &[
    "blame",
    "describe",
    "diff",
    "log",
    "ls-files",
    "rev-parse",
    "show",
    "status",
];

/// Whether one simple command (its words, the program first) only reads.
fn program_only_reads(words: &[String]) -> bool {
    let Some((program, arguments)) = words.split_first() else {
        return false;
    };
    if !READING_PROGRAMS.contains(&program.as_str()) {
        return false;
    }
    let any = |refused: &dyn Fn(&str) -> bool| arguments.iter().any(|a| refused(a));
    match program.as_str() {
        // Actions that run, delete or write.
        "find" => !any(&|a| {
            matches!(
                a,
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fls"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
            )
        }),
        // A preprocessor is a program ripgrep runs.
        "rg" => !any(&|a| a.starts_with("--pre")),
        // `-C` compiles a magic file, writing it.
        "file" => !any(&|a| a == "-C" || a.starts_with("--compile")),
        // `-o FILE` writes the result; a compression program runs.
        "sort" => !any(&|a| {
            a.starts_with("--output")
                || a.starts_with("--compress-program")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('o'))
        }),
        // A second operand is a file it writes.
        "uniq" => arguments.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        // `-o FILE` writes the listing; `-R` writes one into every folder.
        "tree" => !any(&|a| {
            a.starts_with('-') && !a.starts_with("--") && (a.contains('o') || a.contains('R'))
        }),
        "sed" => sed_only_prints(arguments),
        "git" => git_only_reads(arguments),
        _ => true,
    }
}

/// Whether `sed` with these arguments only prints lines of its files: `-n` and one
/// script that prints a line or a range of them (`10p`, `1,80p`, `5,$p`), then files.
/// Any other script may write (`w`), run (`e`) or edit in place (`-i`), and is not
/// judged.
fn sed_only_prints(arguments: &[String]) -> bool {
    let address = |a: &str| a == "$" || (!a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()));
    let prints_lines = |script: &str| {
        script
            .strip_suffix('p')
            .is_some_and(|range| match range.split_once(',') {
                Some((from, to)) => address(from) && address(to),
                None => address(range),
            })
    };
    let mut quiet = false;
    let mut script = false;
    for argument in arguments {
        match argument.as_str() {
            "-n" | "--quiet" | "--silent" => quiet = true,
            option if option.starts_with('-') => return false,
            text if !script => {
                if !prints_lines(text) {
                    return false;
                }
                script = true;
            }
            // A file it reads.
            _ => {}
        }
    }
    quiet && script
}

/// Whether `git` with these arguments only reads: a reading subcommand, after at most
/// `--no-pager` and `-C DIR`, that writes no file of its own (`--output`) and runs no
/// external diff program.
fn git_only_reads(arguments: &[String]) -> bool {
    let mut rest = arguments.iter();
    let subcommand = loop {
        match rest.next().map(String::as_str) {
            Some("--no-pager") => {}
            Some("-C") => {
                if rest.next().is_none() {
                    return false;
                }
            }
            Some(subcommand) => break subcommand,
            None => return false,
        }
    };
    READING_GIT.contains(&subcommand)
        && !rest.any(|a| a.starts_with("--output") || a.starts_with("--ext-diff"))
}

#[cfg(test)]
mod tests {
    use super::{READING_GIT, READING_PROGRAMS, only_reads};

    #[test]
    fn the_documentation_names_every_program_and_git_subcommand() {
        let docs = include_str!("../../../../docs/tools.md");
        for name in READING_PROGRAMS.iter().chain(READING_GIT) {
            assert!(
                docs.contains(&format!("`{name}`")),
                "docs/tools.md does not name `{name}` among the commands that read"
            );
        }
    }

    #[test]
    fn reading_commands_are_known() {
        for command in [
            "echo hi",
            "ls -la src",
            "cat Cargo.toml | head -20",
            "grep -rn 'fn main' src 2>/dev/null",
            "rg -n \"a > b\" crates",
            "cd crates && ls",
            "git status --short",
            "git -C sub --no-pager log --oneline -5",
            "git diff HEAD~1 -- src/lib.rs",
            "find . -name '*.rs' -type f | wc -l",
            "wc -l src/*.rs 2>&1",
            "sort names.txt | uniq -c",
            "ls >/dev/null 2>&1; echo done",
            "ls &> /dev/null || echo missing",
            "pwd\nls # what is here",
            "echo a\\\nb",
            "test -f x && cat x",
            "cat 'it''s'",
            "sed -n '1,80p' src/main.rs",
            "sed -n 10p a.txt b.txt",
            "sed -n '5,$p' x | head",
            "tree -L 2 -I 'target|node_modules'",
            "jq -r '.dependencies | keys[]' package.json",
        ] {
            assert!(only_reads(command), "{command:?} should be known to read");
        }
    }

    #[test]
    fn anything_that_may_write_or_run_something_else_is_not() {
        for command in [
            "",
            "touch x",
            "echo hi > out.txt",
            "echo hi >> out.txt",
            "echo hi >| out.txt",
            "ls 2> errors.txt",
            "ls &> all.txt",
            "cat < in.txt",
            "cat <<EOF\nx\nEOF",
            "echo $(rm -rf x)",
            "echo \"$(rm -rf x)\"",
            "echo `rm x`",
            "echo ${x:=y}",
            "diff <(ls a) <(ls b)",
            "(cd x && rm y)",
            "{ ls; }",
            "ls & rm x",
            "PATH=. ls",
            "./ls",
            "/bin/rm x",
            "ls; rm x",
            "cat x | tee y",
            "cat x | sh",
            "find . -delete",
            "find . -name x -exec rm {} ;",
            "find . -fprint out",
            "rg --pre ./run x",
            "rg --pre=./run x",
            "sort -o out.txt in.txt",
            "sort -uo out.txt in.txt",
            "sort --output=out.txt in.txt",
            "sort --compress-program=gzip x",
            "uniq in.txt out.txt",
            "file -C -m magic",
            "git commit -m x",
            "git checkout main",
            "git branch new",
            "git -c core.pager=evil log",
            "git log --output=out.txt",
            "git diff --ext-diff",
            "git",
            "git -C",
            "sed -i s/a/b/ x",
            "sed -n '1,80w out.txt' x",
            "sed -n '1e rm x' x",
            "sed -n 1p -i x",
            "sed -n 1p --in-place x",
            "sed -n '1p;w out' x",
            "sed -n",
            "sed 1,5p x",
            "sed -n -e 1p x",
            "sed -n p x",
            "tree -o listing.txt",
            "tree -aRo x",
            "tree -R -H .",
            "awk '{print > \"x\"}' y",
            "xargs rm",
            "echo 'unterminated",
            "echo \"unterminated",
            "ls 2>&",
            "ls >&2x",
            "ls > /dev/nullx",
            "ls >'/dev/null'",
        ] {
            assert!(
                !only_reads(command),
                "{command:?} should not be known to read"
            );
        }
    }

    #[test]
    fn quoted_operators_are_text() {
        // Inside quotes, `>`, `|`, `;` and `&` are characters of a word.
        assert!(only_reads("grep -n 'a > b; c | d & e' file"));
        assert!(only_reads("echo \"x > y\""));
        assert!(only_reads("echo x\\>y"));
        // A quoted descriptor number is a word, and what follows it still redirects.
        assert!(!only_reads("echo '2'> out"));
    }
}
