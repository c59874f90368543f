//! History benchmark of `magi-code serve --stdio`: opening and paging generated
//! sessions of 1, 16 and 64 MiB whose bulk is tool results (which history never
//! shows), reaching `history_limit` on a session whose projection is over budget, and
//! the child's peak memory while doing so.
//!
//! Run with `cargo bench -p magi-cli --bench history`. It prints figures; it asserts
//! nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: failures abort the run, figures go to stdout"
)]

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use magi_client::{Backend, BackendCommand};
use magi_protocol::messages::{HistoryPageParams, SessionListParams, SessionOpenParams};
use magi_protocol::methods;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{median, millis, status_kib, stop};

const MIB: usize = 1024 * 1024;
const ROUNDS: usize = 5;
/// Bytes of model-visible content per tool result: the bulk of each generated log.
const TOOL_CONTENT_BYTES: usize = 60 * 1024;

fn log_path(home: &Path, cwd: &Path, id: &str) -> PathBuf {
    let digest: String = Sha256::digest(cwd.as_os_str().as_encoded_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    home.join("sessions")
        .join(&digest[..32])
        .join(format!("{id}.jsonl"))
}

fn line(out: &mut impl Write, id: &str, kind: &str, fields: Value) -> usize {
    let mut object =
        json!({"v": 1, "session_id": id, "ts": "2026-11-01T10:00:00.000Z", "kind": kind});
    for (k, v) in fields.as_object().unwrap() {
        object[k] = v.clone();
    }
    let mut text = object.to_string();
    text.push('\n');
    out.write_all(text.as_bytes()).unwrap();
    text.len()
}

/// Writes a session of about `target` bytes: turns of a prompt, one tool call whose
/// result carries `TOOL_CONTENT_BYTES` of content, and a reply.
fn generate(path: &Path, id: &str, cwd: &Path, target: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut written = line(
        &mut out,
        id,
        "session_meta",
        json!({"cwd": cwd.display().to_string()}),
    );
    let content = "let x = 1; // generated source line\n".repeat(TOOL_CONTENT_BYTES / 36);
    let mut turn = 0;
    while written < target {
        let t = format!("t{turn}");
        written += line(&mut out, id, "turn_started", json!({"turn_id": t}));
        written += line(
            &mut out,
            id,
            "user_input",
            json!({"turn_id": t, "message_id": format!("u{turn}"), "text": format!("Please read file {turn} and explain it.")}),
        );
        written += line(
            &mut out,
            id,
            "tool_call",
            json!({"turn_id": t, "call_id": format!("c{turn}"), "name": "read", "summary": format!("src/file{turn}.rs")}),
        );
        written += line(
            &mut out,
            id,
            "tool_result",
            json!({"turn_id": t, "call_id": format!("c{turn}"), "name": "read", "outcome": "completed", "summary": "1,700 lines", "content": content}),
        );
        written += line(
            &mut out,
            id,
            "assistant_output",
            json!({"turn_id": t, "message_id": format!("a{turn}"), "text": "The file declares one variable. ".repeat(8)}),
        );
        written += line(
            &mut out,
            id,
            "turn_finished",
            json!({"turn_id": t, "outcome": "completed"}),
        );
        turn += 1;
    }
    out.flush().unwrap();
}

/// Writes a session whose prompts alone exceed the 8 MiB snapshot budget.
fn generate_over_budget(path: &Path, id: &str, cwd: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    line(
        &mut out,
        id,
        "session_meta",
        json!({"cwd": cwd.display().to_string()}),
    );
    let prompt = "p".repeat(16_000);
    for n in 0..600 {
        line(
            &mut out,
            id,
            "user_input",
            json!({"turn_id": "t", "message_id": format!("u{n}"), "text": prompt}),
        );
    }
    out.flush().unwrap();
}

async fn backend(home: &Path, cwd: &Path) -> Backend {
    let mut backend = BackendCommand::new(env!("CARGO_BIN_EXE_magi-code"))
        .env_clear()
        .env("MC_HOME", home)
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "bench-model")
        .current_dir(cwd)
        .spawn()
        .unwrap();
    backend
        .initialize(&["session.open", "session.list", "history.page", "shutdown"])
        .await
        .unwrap()
        .unwrap();
    backend
}

/// Opens and pages one session to the end; returns (first page, all pages, peak KiB, pages).
async fn open_and_page(home: &Path, cwd: &Path, id: &str) -> (Duration, Duration, u64, usize) {
    let mut backend = backend(home, cwd).await;
    let started = Instant::now();
    let open = SessionOpenParams {
        session_id: id.to_owned(),
    };
    let opened = backend
        .call::<methods::SessionOpen>(&open)
        .await
        .unwrap()
        .unwrap();
    let mut cursor = None;
    let mut first = None;
    let mut pages = 0;
    loop {
        let params = HistoryPageParams {
            session_id: id.to_owned(),
            revision: opened.revision.clone(),
            cursor,
        };
        let page = backend
            .call::<methods::HistoryPage>(&params)
            .await
            .unwrap()
            .unwrap();
        pages += 1;
        first.get_or_insert(started.elapsed());
        cursor = page.next_cursor;
        if cursor.is_none() {
            assert!(page.complete);
            break;
        }
    }
    let all = started.elapsed();
    let peak = status_kib(backend.pid().unwrap(), "VmHWM:");
    stop(backend).await;
    (first.unwrap(), all, peak, pages)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let cwd = root.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let cwd = cwd.canonicalize().unwrap();

    println!(
        "magi-code history benchmark (median of {ROUNDS}; bulk of each log is tool-result content)"
    );
    for size in [1, 16, 64] {
        let id = format!("bench-{size}");
        let path = log_path(&home, &cwd, &id);
        // Just under the stored-read bound for the largest one.
        let target = if size == 64 {
            64 * MIB - 256 * 1024
        } else {
            size * MIB
        };
        generate(&path, &id, &cwd, target);
        let bytes = std::fs::metadata(&path).unwrap().len();
        let (mut firsts, mut alls, mut peaks) = (Vec::new(), Vec::new(), Vec::new());
        let mut pages = 0;
        for _ in 0..ROUNDS {
            let (first, all, peak, n) = open_and_page(&home, &cwd, &id).await;
            firsts.push(first);
            alls.push(all);
            peaks.push(peak);
            pages = n;
        }
        println!(
            "  {:>5.1} MiB log: open + first page {:>7.1} ms; open + all {pages} pages {:>7.1} ms; peak child memory {:.1} MiB",
            bytes as f64 / MIB as f64,
            millis(median(firsts)),
            millis(median(alls)),
            *peaks.iter().max().unwrap() as f64 / 1024.0
        );
    }

    // session.list over 256 sessions: one turn each, and about 60 MiB in all (the
    // scan reads at most 64 MiB per request).
    for per_session in [1, 200 * 1024] {
        let list_cwd = root.path().join(format!("list-{per_session}"));
        std::fs::create_dir_all(&list_cwd).unwrap();
        let list_cwd = list_cwd.canonicalize().unwrap();
        let mut total = 0;
        for n in 0..256 {
            let id = format!("list-{n:03}");
            let path = log_path(&home, &list_cwd, &id);
            generate(&path, &id, &list_cwd, per_session);
            total += std::fs::metadata(&path).unwrap().len();
        }
        let mut times = Vec::new();
        let mut peak = 0;
        for _ in 0..ROUNDS {
            let mut backend = backend(&home, &list_cwd).await;
            let started = Instant::now();
            let mut params = SessionListParams::default();
            let mut listed = 0;
            loop {
                let page = backend
                    .call::<methods::SessionList>(&params)
                    .await
                    .unwrap()
                    .unwrap();
                listed += page.sessions.len();
                if page.next_cursor.is_none() {
                    break;
                }
                params = SessionListParams {
                    revision: Some(page.revision),
                    cursor: page.next_cursor,
                    limit: None,
                };
            }
            times.push(started.elapsed());
            assert_eq!(listed, 256);
            peak = peak.max(status_kib(backend.pid().unwrap(), "VmHWM:"));
            stop(backend).await;
        }
        println!(
            "  session.list of 256 sessions, {:.2} MiB in all (3 pages): {:.1} ms; peak child memory {:.1} MiB",
            total as f64 / MIB as f64,
            millis(median(times)),
            peak as f64 / 1024.0
        );
    }

    let id = "bench-over";
    let path = log_path(&home, &cwd, id);
    generate_over_budget(&path, id, &cwd);
    let bytes = std::fs::metadata(&path).unwrap().len();
    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..ROUNDS {
        let mut backend = backend(&home, &cwd).await;
        let started = Instant::now();
        let open = SessionOpenParams {
            session_id: (*id).to_owned(),
        };
        let outcome = backend.call::<methods::SessionOpen>(&open).await.unwrap();
        times.push(started.elapsed());
        assert_eq!(outcome.unwrap_err().as_str(), "history_limit");
        peak = peak.max(status_kib(backend.pid().unwrap(), "VmHWM:"));
        stop(backend).await;
    }
    println!(
        "  {:>5.1} MiB log over the 8 MiB projection budget: history_limit in {:.1} ms; peak child memory {:.1} MiB",
        bytes as f64 / MIB as f64,
        millis(median(times)),
        peak as f64 / 1024.0
    );
}
