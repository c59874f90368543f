//! Code Mode through a real turn against the loopback mock model answering at once,
//! over `serve --stdio`: 50 `read` calls made by one `code_mode` script (in one model
//! round, sequentially and through `Promise.all`) against the same 50 reads asked for
//! as top-level calls in 50 model rounds. For each: the turn's wall time and the bytes
//! of the requests sent to the model.
//!
//! Run with `cargo bench -p magi-cli --bench code_mode`. It prints figures; it asserts
//! nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: failures abort the run, figures go to stdout"
)]

mod support;

use std::path::Path;
use std::time::Duration;

use magi_testkit::{MockServer, Reply};
use serde_json::json;
use support::{TURN_METHODS, command, median, millis, stop, timed_turn};

/// The reads each way makes.
const READS: usize = 50;
/// Runs of each way.
const RUNS: usize = 5;

/// The script: each file read, its lines counted.
fn script(concurrent: bool) -> String {
    let read = "(i) => tools.read({path: `f${i}.txt`})";
    let texts = if concurrent {
        format!("await Promise.all(Array.from({{length: {READS}}}, (_, i) => ({read})(i)))")
    } else {
        format!("[]; for (let i = 0; i < {READS}; i++) texts.push(await ({read})(i))")
    };
    format!("const texts = {texts};\nreturn texts.map((t) => t.split('\\n').length);")
}

/// Queues the replies of one way: a script in one round, or one `read` a round.
fn enqueue(mock: &MockServer, way: Way) {
    match way {
        Way::TopLevel => {
            for n in 0..READS {
                let arguments = json!({ "path": format!("f{n}.txt") }).to_string();
                mock.enqueue(Reply::stream().tool_call(
                    format!("c{n}"),
                    "read",
                    [arguments.as_str()],
                ));
            }
        }
        Way::Script { concurrent } => {
            let arguments = json!({ "code": script(concurrent) }).to_string();
            mock.enqueue(Reply::stream().tool_call("s1", "code_mode", [arguments.as_str()]));
        }
    }
    mock.enqueue(Reply::stream().text(["Done."]));
}

#[derive(Clone, Copy)]
enum Way {
    TopLevel,
    Script { concurrent: bool },
}

/// One turn of `way` over a fresh child: its wall time, and the requests' count and
/// total bytes.
async fn one_turn(home: &Path, cwd: &Path, way: Way) -> (Duration, usize, usize) {
    let mock = MockServer::start().await;
    enqueue(&mock, way);
    let mut backend = command(home, cwd, &mock).spawn().unwrap();
    backend.initialize(&TURN_METHODS).await.unwrap().unwrap();
    let elapsed = timed_turn(&mut backend, "Count the lines of f0.txt to f49.txt.").await;
    stop(backend).await;
    let requests = mock.requests();
    let bytes = requests.iter().map(|r| r.body.to_string().len()).sum();
    (elapsed, requests.len(), bytes)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let cwd = root.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    // 50 files of 2 KiB: 32 lines of 64 bytes.
    for n in 0..READS {
        let text = format!("{:063}\n", n).repeat(32);
        std::fs::write(cwd.join(format!("f{n}.txt")), text).unwrap();
    }
    // A window that holds each whole turn, so that neither compacts.
    std::fs::write(
        home.join("settings.toml"),
        "[models.\"openai-chat/bench-model\"]\ncontext_window = 1000000\n",
    )
    .unwrap();
    println!("magi-code Code Mode benchmark (mock model answering at once, {RUNS} runs each)");
    for (name, way) in [
        ("50 top-level reads in 50 rounds", Way::TopLevel),
        (
            "one script, 50 sequential reads",
            Way::Script { concurrent: false },
        ),
        (
            "one script, 50 reads by Promise.all",
            Way::Script { concurrent: true },
        ),
    ] {
        let mut walls = Vec::new();
        let mut sent = (0, 0);
        for _ in 0..RUNS {
            let (wall, requests, bytes) = one_turn(&home, &cwd, way).await;
            walls.push(wall);
            sent = (requests, bytes);
        }
        println!(
            "  {name}: {:.1} ms (median), {} requests, {} bytes sent to the model",
            millis(median(walls)),
            sent.0,
            sent.1
        );
    }
}
