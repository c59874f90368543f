//! The programs that read what they search or compare: grep, ripgrep and diff.

use crate::tracking::FileOperation;
use crate::tracking::options::{FLAGS, Found, Parsed, Spec, all};

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
pub(super) fn ripgrep(args: &[&str]) -> Found {
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
