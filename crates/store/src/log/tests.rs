//! The session log's reads and appends, on real files.

use super::*;
use crate::records::{LOG_FORMAT_VERSION, TurnOutcome};
use std::os::unix::fs::PermissionsExt;

const SID: &str = "s1";

fn line(session_id: &str, body: RecordBody) -> String {
    let mut s = serde_json::to_string(&Record::now(session_id, body)).unwrap();
    s.push('\n');
    s
}

fn started(turn: &str) -> RecordBody {
    RecordBody::TurnStarted {
        turn_id: turn.into(),
    }
}

fn write(dir: &tempfile::TempDir, content: &[u8]) -> PathBuf {
    let path = dir.path().join("s1.jsonl");
    std::fs::write(&path, content).unwrap();
    path
}

fn read(path: &Path) -> Result<StoredLog, ReadError> {
    read_log(path, SID, ReadLimits::STORED)
}

#[test]
fn stored_limits_are_the_protocol_bounds() {
    assert_eq!(ReadLimits::STORED.max_bytes, 64 * 1024 * 1024);
    assert_eq!(ReadLimits::STORED.max_lines, 100_000);
    assert_eq!(ReadLimits::STORED.max_bytes, STORED_READ_BYTES);
    assert_eq!(ReadLimits::STORED.max_lines, STORED_READ_LINES);
}

#[test]
fn reads_complete_lines_and_ignores_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!(
        "{}{}{{\"v\":1,\"session_id\":\"s1\",\"ts\":\"2026",
        line(SID, started("t1")),
        line(SID, started("t2"))
    );
    let path = write(&dir, content.as_bytes());
    let log = read(&path).unwrap();
    assert!(log.torn_tail);
    assert_eq!(log.lines, 2);
    assert_eq!(log.bytes, content.len() as u64);
    assert_eq!(
        log.records
            .iter()
            .map(|r| r.body.clone())
            .collect::<Vec<_>>(),
        vec![started("t1"), started("t2")]
    );

    // A torn tail that would parse as a record on its own is still not data.
    let whole = line(SID, started("t3"));
    let content = format!("{}{}", line(SID, started("t1")), whole.trim_end());
    let path = write(&dir, content.as_bytes());
    let log = read(&path).unwrap();
    assert!(log.torn_tail);
    assert_eq!(log.records.len(), 1);

    let path = write(&dir, line(SID, started("t1")).as_bytes());
    assert!(!read(&path).unwrap().torn_tail);
}

#[test]
fn an_empty_file_is_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, b"");
    let log = read(&path).unwrap();
    assert!(log.records.is_empty());
    assert!(!log.torn_tail);
    assert_eq!((log.bytes, log.lines), (0, 0));
}

#[test]
fn a_torn_only_file_has_no_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, b"{\"v\":1");
    let log = read(&path).unwrap();
    assert!(log.torn_tail);
    assert!(log.records.is_empty());
    assert_eq!((log.bytes, log.lines), (6, 0));
}

#[test]
fn malformed_complete_lines_fail_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let good = line(SID, started("t1"));
    let v0 =
        line(SID, started("t1")).replacen(&format!("\"v\":{LOG_FORMAT_VERSION}"), "\"v\":0", 1);
    assert!(v0.contains("\"v\":0"));
    let diagnostic =
        format!("{{\"v\":1,\"session_id\":\"{SID}\",\"ts\":\"x\",\"kind\":\"diagnostic\"}}\n");
    let cases: [&[u8]; 7] = [
        diagnostic.as_bytes(),
        b"\n",
        b"not json\n",
        b"{\"v\":1,\"session_id\":\"s1\",\"ts\":\"x\",\"kind\":\"turn_started\"}\n",
        b"{\"v\":1,\"session_id\":\"s1\",\"ts\":\"x\",\"kind\":\"title\",\"title\":\"\xff\"}\n",
        b"[1,2]\n",
        v0.as_bytes(),
    ];
    for case in cases {
        let mut content = good.clone().into_bytes();
        content.extend_from_slice(case);
        content.extend_from_slice(good.as_bytes());
        let path = write(&dir, &content);
        assert_eq!(
            read(&path).unwrap_err(),
            ReadError::Malformed,
            "{}",
            String::from_utf8_lossy(case)
        );
    }
    // A blank line between records is malformed too, not skipped.
    let path = write(&dir, format!("{good}\n{good}").as_bytes());
    assert_eq!(read(&path).unwrap_err(), ReadError::Malformed);
}

#[test]
fn a_record_of_another_session_fails_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!("{}{}", line(SID, started("t1")), line("s2", started("t2")));
    let path = write(&dir, content.as_bytes());
    assert_eq!(read(&path).unwrap_err(), ReadError::ForeignSession);
    assert!(read_log(&path, "s2", ReadLimits::STORED).is_err());
    // The envelope applies to kinds this build does not know as well.
    let unknown = r#"{"v":1,"session_id":"s2","ts":"x","kind":"hologram"}"#;
    let path = write(&dir, format!("{unknown}\n").as_bytes());
    assert_eq!(read(&path).unwrap_err(), ReadError::ForeignSession);
}

#[test]
fn unknown_kinds_are_skipped_but_counted() {
    let dir = tempfile::tempdir().unwrap();
    let unknown = r#"{"v":7,"session_id":"s1","ts":"x","kind":"hologram","x":[1]}"#;
    let finished = RecordBody::TurnFinished {
        turn_id: "t1".into(),
        outcome: TurnOutcome::Completed,
        error_code: None,
    };
    let content = format!(
        "{}{unknown}\n{}",
        line(SID, started("t1")),
        line(SID, finished.clone())
    );
    let path = write(&dir, content.as_bytes());
    let log = read(&path).unwrap();
    assert_eq!(log.lines, 3);
    assert_eq!(
        log.records
            .iter()
            .map(|r| r.body.clone())
            .collect::<Vec<_>>(),
        vec![started("t1"), finished]
    );
}

#[test]
fn symlinks_directories_and_missing_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(&dir, line(SID, started("t1")).as_bytes());
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(read(&link).unwrap_err(), ReadError::Unsafe);
    assert_eq!(fingerprint(&link).unwrap_err(), ReadError::Unsafe);

    let sub = dir.path().join("sub.jsonl");
    std::fs::create_dir(&sub).unwrap();
    assert_eq!(read(&sub).unwrap_err(), ReadError::Unsafe);
    assert_eq!(fingerprint(&sub).unwrap_err(), ReadError::Unsafe);

    let missing = dir.path().join("missing.jsonl");
    assert_eq!(read(&missing).unwrap_err(), ReadError::Missing);
    assert_eq!(fingerprint(&missing).unwrap_err(), ReadError::Missing);

    assert!(read(&target).is_ok());
}

#[test]
fn the_byte_bound_is_inclusive() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!("{}{}", line(SID, started("t1")), line(SID, started("t2")));
    let path = write(&dir, content.as_bytes());
    let exact = ReadLimits {
        max_bytes: content.len(),
        max_lines: 10,
    };
    assert_eq!(read_log(&path, SID, exact).unwrap().records.len(), 2);
    let under = ReadLimits {
        max_bytes: content.len() - 1,
        max_lines: 10,
    };
    assert_eq!(
        read_log(&path, SID, under).unwrap_err(),
        ReadError::OverLimit
    );
    // A torn tail counts towards the byte bound.
    let path = write(&dir, format!("{content}x").as_bytes());
    assert_eq!(
        read_log(&path, SID, exact).unwrap_err(),
        ReadError::OverLimit
    );
}

#[test]
fn the_line_bound_is_inclusive() {
    let dir = tempfile::tempdir().unwrap();
    let three: String = ["t1", "t2", "t3"]
        .iter()
        .map(|t| line(SID, started(t)))
        .collect();
    let path = write(&dir, three.as_bytes());
    let limits = ReadLimits {
        max_bytes: 1 << 20,
        max_lines: 3,
    };
    assert_eq!(read_log(&path, SID, limits).unwrap().lines, 3);
    // A torn tail is not a line.
    let path = write(&dir, format!("{three}{{").as_bytes());
    assert_eq!(read_log(&path, SID, limits).unwrap().lines, 3);
    let four = format!("{three}{}", line(SID, started("t4")));
    let path = write(&dir, four.as_bytes());
    assert_eq!(
        read_log(&path, SID, limits).unwrap_err(),
        ReadError::OverLimit
    );
}

#[test]
fn the_appender_creates_owner_only_files_and_appends_readable_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws").join("deeper").join("s1.jsonl");
    let mut appender = Appender::open(&path, SID).unwrap();
    let first = Record::now(SID, started("t1"));
    let second = Record::now(
        SID,
        RecordBody::UserInput {
            turn_id: "t1".into(),
            message_id: "m1".into(),
            text: "two\nlines and a \u{0} byte".into(),
            images: Vec::new(),
        },
    );
    appender.append(&first).unwrap();
    appender.append(&second).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    assert_eq!(mode(path.parent().unwrap().parent().unwrap()), 0o700);

    let log = read(&path).unwrap();
    assert_eq!(log.records, vec![first.clone(), second]);
    assert_eq!(log.lines, 2);

    // Reopening an intact log keeps it as it is.
    let before = std::fs::read(&path).unwrap();
    drop(appender);
    Appender::open(&path, SID).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let mut appender = Appender::open(&path, SID).unwrap();
    let foreign = Record::now("s2", started("t9"));
    assert_eq!(
        appender.append(&foreign).unwrap_err(),
        AppendError::ForeignSession
    );
    let mut v0 = first.clone();
    v0.v = 0;
    assert_eq!(appender.append(&v0).unwrap_err(), AppendError::Serialize);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Refused records do not spoil the appender.
    appender.append(&first).unwrap();
    assert_eq!(read(&path).unwrap().records.len(), 3);
}

#[test]
fn the_appender_cuts_a_torn_tail_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let kept = line(SID, started("t1"));
    let path = write(
        &dir,
        format!("{kept}{{\"v\":1,\"session_id\":\"s1\",\"ts").as_bytes(),
    );
    assert!(read(&path).unwrap().torn_tail);

    let mut appender = Appender::open(&path, SID).unwrap();
    // The cut happens at open, before anything is appended.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), kept);
    let next = Record::now(SID, started("t2"));
    appender.append(&next).unwrap();

    let log = read(&path).unwrap();
    assert!(!log.torn_tail);
    assert_eq!(log.lines, 2);
    assert_eq!(log.records.last(), Some(&next));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{kept}{}\n", serde_json::to_string(&next).unwrap())
    );
}

#[test]
fn the_appender_cuts_a_file_that_is_all_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    // Longer than one scan chunk, so the backwards scan crosses chunks.
    let path = write(&dir, &vec![b'x'; TAIL_SCAN_CHUNK * 2 + 17]);
    let mut appender = Appender::open(&path, SID).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    appender.append(&Record::now(SID, started("t1"))).unwrap();
    let log = read(&path).unwrap();
    assert_eq!((log.lines, log.torn_tail), (1, false));

    let kept = line(SID, started("t1"));
    let mut content = kept.clone().into_bytes();
    content.extend(vec![b'y'; TAIL_SCAN_CHUNK + 3]);
    let path = write(&dir, &content);
    Appender::open(&path, SID).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), kept);
}

#[test]
fn the_appender_refuses_symlinks_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    let target = write(&dir, b"");
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(Appender::open(&link, SID).unwrap_err(), AppendError::Unsafe);
    let sub = dir.path().join("sub.jsonl");
    std::fs::create_dir(&sub).unwrap();
    assert_eq!(Appender::open(&sub, SID).unwrap_err(), AppendError::Unsafe);
    // A dangling symlink is not followed into creating its target.
    let dangling = dir.path().join("dangling.jsonl");
    let nowhere = dir.path().join("nowhere");
    std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
    assert_eq!(
        Appender::open(&dangling, SID).unwrap_err(),
        AppendError::Unsafe
    );
    assert!(!nowhere.exists());
}

#[test]
fn the_fingerprint_changes_with_every_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.jsonl");
    let mut appender = Appender::open(&path, SID).unwrap();
    let empty = fingerprint(&path).unwrap();
    assert_eq!(read(&path).unwrap().fingerprint, empty);
    appender.append(&Record::now(SID, started("t1"))).unwrap();
    let one = fingerprint(&path).unwrap();
    assert_ne!(one, empty);
    assert_eq!(one.len, std::fs::metadata(&path).unwrap().len());
    assert_eq!(read(&path).unwrap().fingerprint, one);
    appender.append(&Record::now(SID, started("t2"))).unwrap();
    let two = fingerprint(&path).unwrap();
    assert_ne!(two, one);
    assert_eq!((one.dev, one.ino), (two.dev, two.ino));
    // Nothing changed, nothing differs.
    assert_eq!(fingerprint(&path).unwrap(), two);
}

#[test]
fn errors_say_nothing_of_the_contents() {
    let all = [
        ReadError::Missing,
        ReadError::Unsafe,
        ReadError::Unreadable,
        ReadError::Malformed,
        ReadError::ForeignSession,
        ReadError::OverLimit,
    ];
    let texts: std::collections::HashSet<String> = all.iter().map(|e| e.to_string()).collect();
    assert_eq!(texts.len(), all.len());
    let append = [
        AppendError::Unsafe,
        AppendError::Io,
        AppendError::ForeignSession,
        AppendError::Serialize,
    ];
    let texts: std::collections::HashSet<String> = append.iter().map(|e| e.to_string()).collect();
    assert_eq!(texts.len(), append.len());
}
