//! A writer killed with SIGKILL in the middle of appending loses no acknowledged record,
//! and the next writer continues the log on a clean line.
//!
//! The test re-runs its own binary with one test selected, `crash_writer_child`, which
//! acts as the writer only when `MAGI_CRASH_WRITER_PATH` names a log.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use magi_store::records::{Record, RecordBody};
use magi_store::{Appender, ReadLimits, read_log};

const WRITER_ENV: &str = "MAGI_CRASH_WRITER_PATH";
const SESSION: &str = "crash-session";
/// Acknowledgements to see before the kill.
const ACKS_BEFORE_KILL: usize = 20;
/// The writer stops by itself after this many records, should the kill never come.
const WRITER_RECORDS: usize = 400;
/// Large records make the write itself take long enough for kills to land inside it.
const TEXT_BYTES: usize = 64 * 1024;
/// Longest wait for the writer's acknowledgements.
const DEADLINE: Duration = Duration::from_secs(10);
const SIGKILL: i32 = 9;

fn record(n: usize) -> Record {
    Record::now(
        SESSION,
        RecordBody::UserInput {
            turn_id: "t1".into(),
            message_id: format!("m{n}"),
            text: format!("{n:08}").repeat(TEXT_BYTES / 8),
            images: Vec::new(),
        },
    )
}

fn message_id(record: &Record) -> &str {
    match &record.body {
        RecordBody::UserInput { message_id, .. } => message_id,
        other => panic!("unexpected record {other:?}"),
    }
}

/// The writer half: does nothing unless started by `sigkill_mid_append_loses_no_acknowledged_record`.
#[test]
fn crash_writer_child() {
    let Some(path) = std::env::var_os(WRITER_ENV) else {
        return;
    };
    let mut appender = Appender::open(Path::new(&path), SESSION).unwrap();
    let mut out = std::io::stdout().lock();
    for n in 0..WRITER_RECORDS {
        appender.append(&record(n)).unwrap();
        // Printed only after `append` returned: every printed number is acknowledged.
        writeln!(out, "acked {n}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_mid_append_loses_no_acknowledged_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws").join(format!("{SESSION}.jsonl"));

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_writer_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WRITER_ENV, &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // A reader thread turns the child's stdout into a channel, so every wait on it can
    // have a deadline. It ends at EOF, which the child's death guarantees.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // The test harness prints its own text too, and with one thread the first
            // acknowledgement shares a line with the harness's "test ... " prefix.
            if let Some((_, n)) = line.split_once("acked ")
                && tx.send(n.parse::<usize>().unwrap()).is_err()
            {
                break;
            }
        }
    });

    let start = Instant::now();
    let mut acked = 0;
    while acked < ACKS_BEFORE_KILL {
        let left = DEADLINE.saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok(n) => {
                assert_eq!(n, acked, "acknowledgements come in order");
                acked += 1;
            }
            Err(e) => {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("the writer acknowledged {acked} records, then: {e:?}");
            }
        }
    }
    // A read while the writer runs sees every acknowledged record and no torn line as
    // data. Its duration also moves the kill away from the instant just after an
    // acknowledgement (when the writer is still serializing), so it lands anywhere in
    // an append, the write itself included.
    let live = read_log(&path, SESSION, ReadLimits::STORED).unwrap();
    assert!(live.records.len() >= acked);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.signal(),
        Some(SIGKILL),
        "the writer must die by the kill, not finish: {status:?}"
    );
    reader.join().unwrap();
    // Acknowledgements printed before the kill landed count as well.
    for n in rx.try_iter() {
        assert_eq!(n, acked, "acknowledgements come in order");
        acked += 1;
    }

    let log = read_log(&path, SESSION, ReadLimits::STORED).unwrap();
    let stored: Vec<&str> = log.records.iter().map(message_id).collect();
    assert!(
        stored.len() == acked || stored.len() == acked + 1,
        "{acked} acknowledged, {} stored",
        stored.len()
    );
    for (n, id) in stored.iter().enumerate() {
        assert_eq!(*id, format!("m{n}"), "records are stored in order");
    }
    for (n, r) in log.records.iter().enumerate() {
        assert_eq!(*r, {
            let mut expected = record(n);
            expected.ts.clone_from(&r.ts);
            expected
        });
    }
    assert_eq!(log.lines, stored.len(), "a torn tail is never a line");
    let file_len = std::fs::metadata(&path).unwrap().len();
    assert_eq!(log.bytes, file_len);

    // The next writer cuts the torn tail, if any, and continues on a clean line.
    let mut appender = Appender::open(&path, SESSION).unwrap();
    let after = Record::now(
        SESSION,
        RecordBody::Title {
            title: "after the crash".into(),
        },
    );
    appender.append(&after).unwrap();
    drop(appender);
    let reopened = read_log(&path, SESSION, ReadLimits::STORED).unwrap();
    assert!(!reopened.torn_tail);
    assert_eq!(reopened.records.len(), stored.len() + 1);
    assert_eq!(reopened.records[..stored.len()], log.records[..]);
    assert_eq!(reopened.records.last(), Some(&after));
}
