//! `magi-code acp` as an editor sees it: spawn to `initialize` answered, then
//! `session/new` and one prompt turn on the mock model, and the peak memory of the
//! agent's process tree (for magi-code, the ACP process and its session's backend).
//! Run with `cargo bench -p magi-cli --bench acp`; it prints figures and asserts
//! nothing about them.
//!
//! With `MAGI_BENCH_OPENCODE=/path/to/opencode` the same rounds run `opencode acp` (npm
//! `opencode-ai`) against the same mock, configured as an OpenAI-compatible provider
//! in its workspace's `opencode.json`, for comparison.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use magi_testkit::{MockServer, Scenario};
use serde_json::{Value, json};

const MAGI_ROUNDS: usize = 7;
const PEER_ROUNDS: usize = 3;
/// The longest a benchmark waits for one answer.
const WAIT: Duration = Duration::from_secs(120);

/// One agent process spoken to over ACP.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Agent {
    fn spawn(mut command: Command) -> Agent {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Agent {
            child,
            stdin,
            lines,
        }
    }

    /// Sends a request and waits for its response, declining any request of the agent.
    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{request}").unwrap();
        loop {
            let line = self.lines.recv_timeout(WAIT).expect("an answer in time");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("method").is_some() {
                if let Some(asked) = message.get("id") {
                    let reply = json!({"jsonrpc": "2.0", "id": asked,
                        "result": {"outcome": {"outcome": "cancelled"}}});
                    writeln!(self.stdin, "{reply}").unwrap();
                }
                continue;
            }
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    /// The peak resident set of the agent and every process under it, in KiB.
    fn peak_kib(&self) -> u64 {
        tree(self.child.id())
            .into_iter()
            .map(|pid| status_kib(pid, "VmHWM:"))
            .sum()
    }

    fn stop(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `pid` and its descendants.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut index = 0;
    while index < all.len() {
        let parent = all[index];
        let tasks = std::fs::read_dir(format!("/proc/{parent}/task"))
            .into_iter()
            .flatten();
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            all.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        index += 1;
    }
    all
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

/// One round's figures.
struct Round {
    initialize: Duration,
    new_session: Duration,
    prompt: Duration,
    peak_kib: u64,
}

/// One round: spawn, initialize, a session and one prompt turn, the memory, the stop.
fn round(command: Command, cwd: &Path) -> Round {
    let started = Instant::now();
    let mut agent = Agent::spawn(command);
    agent.call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let initialize = started.elapsed();
    let at = Instant::now();
    let session = agent.call(2, "session/new", json!({"cwd": cwd, "mcpServers": []}));
    let new_session = at.elapsed();
    let at = Instant::now();
    let prompt = json!({"sessionId": session["sessionId"],
        "prompt": [{"type": "text", "text": "Say hello"}]});
    let answer = agent.call(3, "session/prompt", prompt);
    let prompt = at.elapsed();
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let peak_kib = agent.peak_kib();
    agent.stop();
    Round {
        initialize,
        new_session,
        prompt,
        peak_kib,
    }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn report(name: &str, rounds: &[Round]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let peak = rounds.iter().map(|r| r.peak_kib).max().unwrap_or(0);
    println!(
        "  {name}: initialize answered {:.1} ms; session/new {:.1} ms; one prompt turn {:.1} ms; \
         peak memory of the process tree {:.1} MiB (median of {} rounds, peak the largest)",
        ms(median(rounds.iter().map(|r| r.initialize).collect())),
        ms(median(rounds.iter().map(|r| r.new_session).collect())),
        ms(median(rounds.iter().map(|r| r.prompt).collect())),
        peak as f64 / 1024.0,
        rounds.len()
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mock = runtime
        .block_on(MockServer::start_scenario(Scenario::Text))
        .unwrap();
    let root = tempfile::tempdir().unwrap();
    println!("ACP benchmark (the mock model answering one short text reply at once)");

    let magi: Vec<Round> = (0..MAGI_ROUNDS)
        .map(|n| {
            let cwd = root.path().join(format!("magi-{n}"));
            std::fs::create_dir_all(&cwd).unwrap();
            let mut command = Command::new(env!("CARGO_BIN_EXE_magi-code"));
            command
                .arg("acp")
                .current_dir(&cwd)
                .env_clear()
                .env("MC_HOME", root.path().join(format!("magi-home-{n}")))
                .env("MAGI_PROVIDER", "openai-chat")
                .env("MAGI_MODEL", "mock-model")
                .env("OPENAI_BASE_URL", mock.base_url());
            round(command, &cwd)
        })
        .collect();
    report("magi-code acp", &magi);

    let Ok(opencode) = std::env::var("MAGI_BENCH_OPENCODE") else {
        println!(
            "  (set MAGI_BENCH_OPENCODE to an opencode binary to compare with `opencode acp`)"
        );
        return;
    };
    let peer: Vec<Round> = (0..PEER_ROUNDS)
        .map(|n| {
            let cwd = root.path().join(format!("opencode-{n}"));
            let home = root.path().join(format!("opencode-home-{n}"));
            std::fs::create_dir_all(&cwd).unwrap();
            std::fs::create_dir_all(&home).unwrap();
            let config = json!({
                "$schema": "https://opencode.ai/config.json",
                "provider": {"mock": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Mock",
                    "options": {"baseURL": mock.base_url(), "apiKey": "none"},
                    "models": {"mock-model": {"name": "Mock model"}},
                }},
                "model": "mock/mock-model",
                "small_model": "mock/mock-model",
            });
            std::fs::write(cwd.join("opencode.json"), config.to_string()).unwrap();
            let mut command = Command::new(&opencode);
            command
                .arg("acp")
                .current_dir(&cwd)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", &home)
                // Nothing it would fetch or update is reachable here; told not to try.
                .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
                .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
                .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
                .env("OPENCODE_DISABLE_SHARE", "1");
            round(command, &cwd)
        })
        .collect();
    report("opencode acp", &peer);
}
