//! The file operands of each known program, by its usage.
//!
//! Programs whose usage fits in a few lines are read here; the longer readings are
//! parts of their own: `search` (grep, ripgrep and diff, which read what they search or
//! compare) and `changes` (cp and mv, sed, chmod, chown and chgrp, which write or edit).

use super::FileOperation;
use super::options::{FLAGS, Found, Parsed, Spec, all};

mod changes;
mod search;

use changes::{chmod, copy, owner_change, sed};
use search::{diff, grep, ripgrep};

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
