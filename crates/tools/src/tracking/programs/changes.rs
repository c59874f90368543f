//! The programs that write or edit files: cp and mv, sed (with `-i`), chmod, chown and
//! chgrp.

use crate::tracking::FileOperation;
use crate::tracking::options::{FLAGS, Found, Parsed, Spec, all};

/// `cp`/`mv SOURCE... DESTINATION` or `-t DIRECTORY SOURCE...`; `sources` is what
/// happens to each source.
pub(super) fn copy(args: &[&str], sources: FileOperation) -> Option<Found> {
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
pub(super) fn owner_change(parsed: &Parsed<'_>) -> Option<Found> {
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
