//! Mission Control in a 120x40 tmux window against the mock model, in two parts.
//!
//! 1. Frames and keys: the transcript first holds a reply of 5,000 lines, then a reply
//!    streams 10,000 deltas while keys are typed. The TUI's own statistics
//!    (`MAGI_TUI_STATS`) give the frame times and, for each input, the time from its
//!    read to the end of the frame that showed it; the benchmark also times each key
//!    from outside (`send-keys`, then `capture-pane` until it shows).
//! 2. Memory: the peak resident set (`VmHWM`) of the Mission Control process (not its
//!    backend) after a reply of 10,000 and of 100,000 lines, scrolled from the first
//!    line to the last, against an empty transcript.
//! 3. A command streaming 10,000 lines of output into its live card: frame times from
//!    inside and the peak resident set of Mission Control, sampled while it streams.
//!
//! Run with `cargo bench -p magi-cli --bench mission_control`; it prints figures and
//! asserts nothing about them. Needs tmux.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use magi_testkit::{MockServer, Reply};

const COLUMNS: &str = "120";
const ROWS: &str = "40";
/// Keys typed while the reply streams, one every [`KEY_GAP`].
const KEYS: usize = 40;
const KEY_GAP: Duration = Duration::from_millis(150);
/// The mock's pause before each event of the streamed reply, so it streams for
/// seconds and the keys land while it does.
const DELTA_GAP: Duration = Duration::from_millis(1);
/// Lines of the reply already in the transcript when the stream starts.
const HISTORY_LINES: usize = 5_000;
const DELTAS: usize = 10_000;
/// PageDown presses sent in one `send-keys` while scrolling through a transcript.
const PAGE_BATCH: usize = 50;

/// One Mission Control in its own tmux server.
struct Mc {
    socket: String,
    stats: PathBuf,
    _root: tempfile::TempDir,
}

impl Mc {
    fn start(mock: &MockServer, name: &str) -> Mc {
        Mc::start_with(mock, name, "")
    }

    /// Starts Mission Control with `settings` as its global settings file.
    fn start_with(mock: &MockServer, name: &str, settings: &str) -> Mc {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("home")).unwrap();
        std::fs::write(root.path().join("home/settings.toml"), settings).unwrap();
        let work = root.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let stats = root.path().join("stats.json");
        let socket = format!("magi-bench-{}-{name}", std::process::id());
        let status = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-s", "mc", "-x", COLUMNS, "-y", ROWS, "-c"])
            .arg(&work)
            .arg("-e")
            .arg(format!("MC_HOME={}", root.path().join("home").display()))
            .args([
                "-e",
                "MAGI_PROVIDER=openai-chat",
                "-e",
                // A model with a window of a million tokens, so the long transcript
                // never calls for compaction (the mock has no summary queued).
                "MAGI_MODEL=gpt-4.1",
            ])
            .arg("-e")
            .arg(format!("OPENAI_BASE_URL={}", mock.base_url()))
            .arg("-e")
            .arg(format!("MAGI_TUI_STATS={}", stats.display()))
            .arg(env!("CARGO_BIN_EXE_magi-code"))
            .status()
            .unwrap();
        assert!(status.success());
        let mc = Mc {
            socket,
            stats,
            _root: root,
        };
        mc.wait_for("idle ·", Duration::from_secs(20)).unwrap();
        mc
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "mc"])
    }

    fn wait_for(&self, text: &str, limit: Duration) -> Option<Duration> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if self.screen().contains(text) {
                return Some(started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        None
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "mc"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "mc", "-l", text]);
    }

    /// Sends a prompt and waits until the screen shows `last` and the run is over.
    fn ask(&self, prompt: &str, last: &str) {
        self.type_text(prompt);
        self.keys(&["Enter"]);
        self.wait_for(last, Duration::from_secs(120))
            .unwrap_or_else(|| panic!("never showed {last:?}:\n{}", self.screen()));
        self.wait_for(" idle ·", Duration::from_secs(60)).unwrap();
    }

    /// The Mission Control process: the pane's (or the shell's child running it).
    fn pid(&self) -> u32 {
        let pane: u32 = self
            .tmux(&["display-message", "-p", "-t", "mc", "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap();
        let comm = std::fs::read_to_string(format!("/proc/{pane}/comm")).unwrap_or_default();
        if comm.trim() == "magi-code" {
            return pane;
        }
        let children =
            std::fs::read_to_string(format!("/proc/{pane}/task/{pane}/children")).unwrap();
        children.split_whitespace().next().unwrap().parse().unwrap()
    }

    /// Clears the composer and quits (Ctrl-C clears, twice on an empty one quits),
    /// then reads the statistics written on exit.
    fn quit(self) -> String {
        self.keys(&["C-c"]);
        self.keys(&["C-c"]);
        self.keys(&["C-c"]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.stats.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Mission Control renames the file into place, so once it exists it is whole.
        let stats = std::fs::read_to_string(&self.stats).unwrap_or_default();
        self.tmux(&["kill-server"]);
        stats
    }
}

/// A reply of `count` numbered lines in paragraphs of ten, streamed a hundred lines
/// a delta; its last line is `line {count:06} …`.
fn long_reply(count: usize) -> Reply {
    let lines: Vec<String> = (1..=count)
        .map(|n| {
            let end = if n % 10 == 0 { "\n\n" } else { "\n" };
            format!("line {n:06} of a long reply{end}")
        })
        .collect();
    Reply::stream().text(lines.chunks(100).map(|c| c.concat()))
}

/// `VmHWM` (peak) and `VmRSS` (now) of a process, in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (field("VmHWM:"), field("VmRSS:"))
}

fn ms(d: &Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn frames_and_keys() {
    let mock = MockServer::start().await;
    mock.enqueue(long_reply(HISTORY_LINES));
    mock.enqueue(
        Reply::stream()
            .text((0..DELTAS).map(|i| format!("w{i} ")))
            .chunk_delay(DELTA_GAP),
    );
    let mc = Mc::start(&mock, "frames");
    mc.ask("fill the transcript", &format!("line {HISTORY_LINES:06}"));
    mc.type_text("stream please");
    mc.keys(&["Enter"]);
    let started = Instant::now();
    // Keys typed while the reply streams: each must show in the composer.
    let mut latencies = Vec::new();
    let mut typed = String::new();
    let last = format!("w{}", DELTAS - 1);
    for n in 0..KEYS {
        std::thread::sleep(KEY_GAP);
        if mc.screen().contains(&last) {
            break;
        }
        let key = char::from(b'a' + (n % 26) as u8).to_string();
        typed.push_str(&key);
        mc.type_text(&key);
        if let Some(took) = mc.wait_for(&format!("› {typed}"), Duration::from_secs(5)) {
            latencies.push(took);
        }
    }
    let streamed = mc.wait_for(&last, Duration::from_secs(60));
    let total = started.elapsed();
    if streamed.is_none() {
        println!("  the end of the stream never showed:\n{}", mc.screen());
    }
    let stats = mc.quit();
    latencies.sort();
    println!(
        "Mission Control, {COLUMNS}x{ROWS}: a {HISTORY_LINES}-line transcript, then a reply of {DELTAS} deltas"
    );
    println!(
        "  key to screen from outside, {} keys during the stream: median {:.1} ms, max {:.1} ms (includes tmux and capture polling)",
        latencies.len(),
        latencies.get(latencies.len() / 2).map_or(0.0, ms),
        latencies.last().map_or(0.0, ms)
    );
    println!(
        "  stream fully shown after {:.0} ms (since Enter){}",
        ms(&total),
        if streamed.is_some() {
            ""
        } else {
            " (end not seen)"
        }
    );
    println!("  statistics from inside (frames; input read to end of its frame): {stats}");
}

/// Memory after a reply of `lines` lines (peak and now), and after it was scrolled
/// from top to bottom.
async fn memory_with(lines: usize) -> ((f64, f64), (f64, f64)) {
    let mock = MockServer::start().await;
    mock.enqueue(long_reply(lines));
    let mc = Mc::start(&mock, &format!("memory-{lines}"));
    let pid = mc.pid();
    let mut streamed = memory(pid);
    if lines > 0 {
        mc.ask("a long reply", &format!("line {lines:06}"));
        streamed = memory(pid);
        mc.keys(&["Home"]);
        mc.wait_for("line 000001", Duration::from_secs(10)).unwrap();
        let batch = vec!["PageDown"; PAGE_BATCH];
        let last = format!("line {lines:06}");
        while !mc.screen().contains(&last) {
            mc.keys(&batch);
        }
    }
    let scrolled = memory(pid);
    mc.quit();
    (streamed, scrolled)
}

fn show_memory(
    label: &str,
    ((peak, now), (scrolled_peak, scrolled_now)): ((f64, f64), (f64, f64)),
) {
    println!(
        "  {label}: peak {peak:.1} MiB, then {now:.1} MiB; after scrolling top to bottom peak {scrolled_peak:.1} MiB, then {scrolled_now:.1} MiB"
    );
}

/// Lines the streaming command prints.
const COMMAND_LINES: usize = 10_000;

/// A command printing [`COMMAND_LINES`] lines over some seconds, in colour, its card
/// updated in place as they come: Mission Control's frames and its memory meanwhile.
async fn command_output() {
    let mock = MockServer::start().await;
    let command = format!(
        "for i in $(seq 1 {COMMAND_LINES}); do \
         printf '\\033[32moutput\\033[0m line %d of a \\033[1;31mlong\\033[0m command\\n' $i; \
         sleep 0.001; done"
    );
    mock.enqueue(Reply::stream().tool_call(
        "b1",
        "bash",
        [serde_json::json!({ "command": command, "timeout_ms": 600_000 }).to_string()],
    ));
    mock.enqueue(Reply::stream().text(["The command is done."]));
    let mc = Mc::start_with(&mock, "command", "[permissions]\nallow = [\"bash\"]\n");
    let pid = mc.pid();
    let started = Instant::now();
    mc.type_text("run the long command");
    mc.keys(&["Enter"]);
    // Sampled while it streams: the peak so far, and the resident set now.
    let mut samples = Vec::new();
    let mut seen_live = 0;
    let done = loop {
        std::thread::sleep(Duration::from_millis(250));
        samples.push(memory(pid).1);
        let screen = mc.screen();
        if screen.contains("output line") && screen.contains("running") {
            seen_live += 1;
        }
        if screen.contains("The command is done.") {
            break true;
        }
        if started.elapsed() > Duration::from_secs(300) {
            break false;
        }
    };
    let took = started.elapsed();
    let (peak, now) = memory(pid);
    let stats = mc.quit();
    samples.sort_by(f64::total_cmp);
    println!(
        "A command printing {COMMAND_LINES} lines into its live card, {COLUMNS}x{ROWS}: {:.1} s{}",
        took.as_secs_f64(),
        if done { "" } else { " (its end never showed)" }
    );
    println!(
        "  screens caught showing its live output while it ran: {seen_live} of {} samples",
        samples.len()
    );
    println!(
        "  Mission Control's memory: resident median {:.1} MiB, max {:.1} MiB while it ran; peak {peak:.1} MiB, {now:.1} MiB at the end",
        samples.get(samples.len() / 2).copied().unwrap_or(0.0),
        samples.last().copied().unwrap_or(0.0)
    );
    println!("  statistics from inside (frames; input read to end of its frame): {stats}");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    command_output().await;
    frames_and_keys().await;
    println!("Mission Control's memory (VmHWM of its process, backend excluded), {COLUMNS}x{ROWS}");
    show_memory("empty transcript", memory_with(0).await);
    for lines in [10_000, 100_000] {
        let started = Instant::now();
        let figures = memory_with(lines).await;
        show_memory(
            &format!(
                "{lines}-line reply (~{} KiB of text; whole run {:.1} s)",
                lines * 28 / 1024,
                started.elapsed().as_secs_f64()
            ),
            figures,
        );
    }
}
