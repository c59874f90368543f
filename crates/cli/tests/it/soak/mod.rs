//! The soak: whole sessions through the real binary, each playing a seeded random plan
//! (`model`: right and wrong tool calls, malformed arguments, tools never offered,
//! several calls at once, huge and binary outputs, unicode, replies of every size,
//! provider failures) against a workspace of big, binary, missing and symlinked files
//! (`workspace`) under a small context window, with random approval answers, cancels,
//! and now and then the backend killed mid-turn and the session reopened (`session`);
//! a share goes through `magi-code exec` (`exec`). Half the sessions ask for cards in
//! colour (`tool.cards.styles`), so every live card and every saved page is checked
//! with its styles; a quarter start the mock MCP server and call its tools (`mcp`),
//! one of which ends the server in its middle. What must hold is checked after every turn; nothing a session
//! started may outlive it (`leftovers`), and no crash report may be written.
//!
//! `MAGI_SOAK_SESSIONS` (default 24) sessions run, `MAGI_SOAK_PARALLEL` at a time (the
//! machine's processors by default), from `MAGI_SOAK_SEED` (a fresh seed by default,
//! printed). A failure names the session's own seed: `scripts/soak --sessions 1 --seed
//! S` replays it alone.

mod exec;
mod leftovers;
mod mcp;
mod model;
mod random;
mod session;
mod workspace;

use std::sync::Arc;
use std::time::Instant;

/// The variable every process a soak session starts carries, with the session's tag.
pub const TAG: &str = "MAGI_SOAK_TAG";

/// Sessions run when `MAGI_SOAK_SESSIONS` does not say.
const DEFAULT_SESSIONS: u64 = 24;

/// What a session did, summed for the report.
#[derive(Debug, Default)]
pub struct Stats {
    turns: usize,
    kills: usize,
    cancels: usize,
    approvals: usize,
    compactions: usize,
    interrupts: usize,
    mode_switches: usize,
    restores: usize,
    forks: usize,
    refreshes: usize,
    /// Turns of sessions whose cards carry colour (`tool.cards.styles`).
    styled_turns: usize,
    /// Sessions with the MCP server, and the calls made to it.
    mcp_sessions: usize,
    mcp_calls: usize,
    outcomes: Vec<String>,
}

impl Stats {
    fn add(&mut self, other: Stats) {
        self.turns += other.turns;
        self.kills += other.kills;
        self.cancels += other.cancels;
        self.approvals += other.approvals;
        self.compactions += other.compactions;
        self.interrupts += other.interrupts;
        self.mode_switches += other.mode_switches;
        self.restores += other.restores;
        self.forks += other.forks;
        self.refreshes += other.refreshes;
        self.styled_turns += other.styled_turns;
        self.mcp_sessions += other.mcp_sessions;
        self.mcp_calls += other.mcp_calls;
        self.outcomes.extend(other.outcomes);
    }
}

/// The seed of session `index` of a run seeded `seed`: the run's own for the first, so
/// a session's seed run alone replays it.
fn session_seed(seed: u64, index: u64) -> u64 {
    if index == 0 {
        return seed;
    }
    // SplitMix64 of the pair: nearby indexes give unrelated seeds.
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A number from the environment, decimal or `0x` hexadecimal.
fn number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    }
}

/// One session of seed `seed`: one in ten goes through `exec`.
async fn one(seed: u64) -> Result<Stats, String> {
    let tag = format!("{seed:016x}-{}", uuid::Uuid::new_v4());
    if seed.is_multiple_of(10) {
        exec::run(seed, &tag).await
    } else {
        session::run(seed, &tag).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_sessions_survive_a_seeded_random_plan() {
    let sessions = number("MAGI_SOAK_SESSIONS").unwrap_or(DEFAULT_SESSIONS);
    let seed = number("MAGI_SOAK_SEED").unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        session_seed(now.as_nanos() as u64, u64::from(std::process::id()))
    });
    let parallel = number("MAGI_SOAK_PARALLEL")
        .map(|n| n.max(1) as usize)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    eprintln!("soak: {sessions} sessions from seed {seed:#x}, {parallel} at a time");
    let started = Instant::now();
    let slots = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut running = tokio::task::JoinSet::new();
    for index in 0..sessions {
        let slots = Arc::clone(&slots);
        let seed = session_seed(seed, index);
        running.spawn(async move {
            let _slot = slots.acquire_owned().await;
            (index, seed, one(seed).await)
        });
    }
    let mut total = Stats::default();
    let mut failures = Vec::new();
    while let Some(done) = running.join_next().await {
        match done {
            Ok((_, _, Ok(stats))) => total.add(stats),
            Ok((index, seed, Err(why))) => failures.push(format!(
                "soak: session {index} (seed {seed:#x}) failed: {why}\n\
                 replay it with: scripts/soak --sessions 1 --seed {seed:#x}"
            )),
            Err(e) => failures.push(format!("soak: a session's task failed: {e}")),
        }
    }
    let elapsed = started.elapsed();
    let failed = total
        .outcomes
        .iter()
        .filter(|o| o.contains("Failed"))
        .count();
    eprintln!(
        "soak: {sessions} sessions, {} turns ({} runs failed, as planned or not), {} backends \
         killed, {} cancels, {} exec interrupts, {} approvals, {} compactions, {} mode switches, {} restores, {} forks, \
         {} sign-in refreshes, {} turns with coloured cards, {} MCP calls in {} sessions with \
         the server in {:.1} s ({:.0} sessions an hour); {} failures",
        total.turns,
        failed,
        total.kills,
        total.cancels,
        total.interrupts,
        total.approvals,
        total.compactions,
        total.mode_switches,
        total.restores,
        total.forks,
        total.refreshes,
        total.styled_turns,
        total.mcp_calls,
        total.mcp_sessions,
        elapsed.as_secs_f64(),
        sessions as f64 * 3600.0 / elapsed.as_secs_f64().max(0.001),
        failures.len()
    );
    for failure in &failures {
        eprintln!("{failure}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Sessions the long soak found failing, each replayed alone on every run with what it
/// found.
const FOUND: &[(u64, &str)] = &[
    (
        0xc064_76d1_c260_4586,
        "a turn cancelled, its end recorded, then the backend killed before run.finished \
         reached the client: the history is complete, and the soak must not call the \
         turn interrupted",
    ),
    (
        0xe0d5_9cc3_59db_f018,
        "exec sent SIGTERM in its first instants, before it answered signals: it died of \
         the signal instead of exiting 130 (now held until the handlers are installed, \
         and dying of it earlier is accepted)",
    ),
    (
        0x3e34_31d4_e374_ca04,
        "the backend killed while appending a record tore the log's last line inside a \
         character, and the soak, reading the log as text, took the killed turn for a \
         finished one (now read as bytes; a_log_torn_inside_a_character_still_shows_its_\
         unfinished_turn checks it without the timing)",
    ),
    (
        0xedbb_8a2f_5647_b223,
        "a mode switch sent as a turn ended was answered after run.finished, and its \
         record made the revision run.finished announced stale for history.page (records \
         history does not show now keep it current; permission_records checks it \
         without the timing)",
    ),
    (0xdf35_0a07_0668_dde0, "the same, after a cancelled turn"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_the_long_soak_found_failing_now_pass() {
    for (seed, found) in FOUND {
        if let Err(why) = one(*seed).await {
            panic!("soak session {seed:#x} ({found}) failed again: {why}");
        }
    }
}
