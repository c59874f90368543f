//! The file operands of each known program, by its usage.

use super::FileOperation;
use super::options::{FLAGS, Found, Parsed, Spec, all};

/// The paths a known program names, or `None` for a program this reading does not know
pub(super) fn operands(name: &str, args: &[&str]) -> Option<Found> {
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
pub(super) fn grep(args: &[&str]) -> Found {
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

pub(super) fn diff(args: &[&str]) -> Found {
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
pub(super) fn sed(args: &[&str]) -> Found {
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

pub(super) fn chmod(args: &[&str]) -> Option<Found> {
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
