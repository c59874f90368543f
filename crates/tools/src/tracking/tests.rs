//! Tracking's tests: the statuses, each program's operands and the aggregate's text.

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
