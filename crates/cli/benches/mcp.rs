//! Initialization with 0, 1 and 5 stdio MCP servers, and the memory each connected
//! server costs: its own process's resident set, and what the backend grows by. Run
//! with `cargo bench -p magi-cli --bench mcp`; it prints figures and asserts nothing
//! about them.
//!
//! The servers are the in-repo mock (`magi-mock-mcp`), so the figures are the
//! backend's own cost; with `MAGI_BENCH_MCP=everything` they are the reference
//! "everything" server from npm (installed on first use; needs Node.js and npm), a
//! server as heavy as real ones are.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use magi_client::BackendCommand;

const ROUNDS: usize = 7;

/// The environment variable choosing the reference server instead of the mock.
const SERVER_CHOICE: &str = "MAGI_BENCH_MCP";

/// How each server is started: a program and its arguments.
struct ServerCommand {
    program: PathBuf,
    args: Vec<String>,
    what: String,
}

impl ServerCommand {
    fn chosen() -> ServerCommand {
        if std::env::var(SERVER_CHOICE).is_ok_and(|v| v == "everything") {
            let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
            let script = magi_testkit::everything_server(cache).unwrap();
            ServerCommand {
                program: "node".into(),
                args: vec![script.display().to_string(), "stdio".into()],
                what: format!(
                    "{}@{}, Node.js",
                    magi_testkit::EVERYTHING_PACKAGE,
                    magi_testkit::EVERYTHING_VERSION
                ),
            }
        } else {
            ServerCommand {
                program: magi_testkit::mock_mcp_server().unwrap(),
                args: Vec::new(),
                what: format!("{}, dev build", magi_testkit::MOCK_MCP_BIN),
            }
        }
    }

    /// The settings table defining the server `name` with this command.
    fn settings(&self, name: &str) -> String {
        format!(
            "[mcp.servers.{name}]\ncommand = {:?}\nargs = {:?}\n",
            self.program.display().to_string(),
            self.args
        )
    }
}

/// Resident set of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

/// The processes working in `dir`.
fn processes_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            (cwd == dir).then_some(pid)
        })
        .collect()
}

struct Figures {
    times: Vec<Duration>,
    backend_kib: u64,
    servers_kib: u64,
}

async fn measure(servers: usize, command: &ServerCommand) -> Figures {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let work = root.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let settings: String = (0..servers)
        .map(|n| command.settings(&format!("s{n}")))
        .collect();
    std::fs::write(home.join("settings.toml"), settings).unwrap();
    let path = std::env::var("PATH").unwrap();
    for n in 0..servers {
        let approved = std::process::Command::new(env!("CARGO_BIN_EXE_magi-code"))
            .args(["mcp", "approve", &format!("s{n}")])
            .env_clear()
            .env("MC_HOME", &home)
            .env("PATH", &path)
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(approved.status.success());
    }
    let mut figures = Figures {
        times: Vec::new(),
        backend_kib: 0,
        servers_kib: 0,
    };
    for round in 0..ROUNDS {
        let started = Instant::now();
        let mut backend = BackendCommand::new(env!("CARGO_BIN_EXE_magi-code"))
            .env_clear()
            .env("MC_HOME", &home)
            .env("PATH", &path)
            .env("MAGI_PROVIDER", "openai-chat")
            .env("MAGI_MODEL", "m")
            .current_dir(&work)
            .spawn()
            .unwrap();
        backend
            .initialize(&["status", "shutdown"])
            .await
            .unwrap()
            .unwrap();
        figures.times.push(started.elapsed());
        if round == ROUNDS - 1 {
            let backend_pid = backend.pid().unwrap();
            figures.backend_kib = rss_kib(backend_pid);
            let others: Vec<u32> = processes_in(&work)
                .into_iter()
                .filter(|pid| *pid != backend_pid)
                .collect();
            // Each server runs under its launcher, the `magi-code` process that leads
            // its process group so that it dies with the backend.
            assert_eq!(others.len(), 2 * servers, "each server and its launcher");
            figures.servers_kib = others.into_iter().map(rss_kib).sum();
        }
        backend.shutdown().await.unwrap().unwrap();
        backend.wait_within(Duration::from_secs(10)).await.unwrap();
    }
    figures.times.sort();
    figures
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let command = ServerCommand::chosen();
    println!(
        "initialize with N stdio MCP servers ({}), {ROUNDS} rounds each",
        command.what
    );
    println!("servers  median ms  min ms  max ms  backend RSS  servers' RSS");
    let mut without = 0;
    for servers in [0, 1, 5] {
        let f = measure(servers, &command).await;
        if servers == 0 {
            without = f.backend_kib;
        }
        println!(
            "{servers:>7}  {:>9.1}  {:>6.1}  {:>6.1}  {:>8} KiB  {:>9} KiB",
            ms(f.times[f.times.len() / 2]),
            ms(f.times[0]),
            ms(f.times[f.times.len() - 1]),
            f.backend_kib,
            f.servers_kib
        );
        if servers > 0 {
            let per = servers as u64;
            println!(
                "         per connected server: {} KiB in its own processes (launcher and server), {} KiB more in the backend",
                f.servers_kib / per,
                f.backend_kib.saturating_sub(without) / per
            );
        }
    }
}
