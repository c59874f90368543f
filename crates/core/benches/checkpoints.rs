//! What checkpoints cost (docs/checkpoints.md): a workspace of 10,000 files and 200 MB
//! (100 folders of 100 files of 20,971 random bytes) with a warm file cache, its
//! store's first snapshot, then a turn's two snapshots (its start and its end) when
//! nothing, one file or ten files changed, and a restore's preview and its putting back
//! of ten changed files, one deleted and one added. Run with
//! `cargo bench -p magi-core --bench checkpoints`; it prints figures and asserts nothing
//! about them. `CHECKPOINT_BENCH_ROUNDS` sets the rounds of each case (20);
//! `CHECKPOINT_BENCH_LAUNCHER=PATH/magi-code` starts each `git` through that binary's
//! launcher, as the backend does.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "a benchmark prints its figures and stops at the first failure"
)]

use std::path::Path;
use std::time::{Duration, Instant};

use magi_core::checkpoints::{Phase, Store, apply, plan};
use magi_store::Home;

const FOLDERS: usize = 100;
const FILES_PER_FOLDER: usize = 100;
const FILE_BYTES: usize = 200 * 1024 * 1024 / (FOLDERS * FILES_PER_FOLDER);

/// A fixed generator (xorshift), so every run writes the same bytes.
struct Bytes(u64);

impl Bytes {
    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            let word = self.0.to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

fn file(root: &Path, n: usize) -> std::path::PathBuf {
    root.join(format!("d{:03}", n / FILES_PER_FOLDER))
        .join(format!("f{:03}.bin", n % FILES_PER_FOLDER))
}

fn write_workspace(root: &Path) {
    let mut bytes = Bytes(0x9E37_79B9_7F4A_7C15);
    let mut buffer = vec![0_u8; FILE_BYTES];
    for folder in 0..FOLDERS {
        std::fs::create_dir_all(root.join(format!("d{folder:03}"))).unwrap();
    }
    for n in 0..FOLDERS * FILES_PER_FOLDER {
        bytes.fill(&mut buffer);
        std::fs::write(file(root, n), &buffer).unwrap();
    }
}

/// Reads every file once, so the cache is warm.
fn warm(root: &Path) {
    let mut total = 0;
    for n in 0..FOLDERS * FILES_PER_FOLDER {
        total += std::fs::read(file(root, n)).unwrap().len();
    }
    assert_eq!(total, FOLDERS * FILES_PER_FOLDER * FILE_BYTES);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(case: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let median = samples[samples.len() / 2];
    println!(
        "{case:<48} min {:>8.1} ms  median {:>8.1} ms  max {:>8.1} ms  ({} rounds)",
        ms(samples[0]),
        ms(median),
        ms(samples[samples.len() - 1]),
        samples.len()
    );
}

fn main() {
    let rounds: usize = std::env::var("CHECKPOINT_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    if let Some(launcher) = std::env::var_os("CHECKPOINT_BENCH_LAUNCHER") {
        magi_tools::launcher::enable(launcher.into()).unwrap();
        println!("git through the launcher");
    }
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir(&workspace).unwrap();
    let home = Home::prepare(&dir.path().join("home")).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    print!("writing 10,000 files, 200 MB… ");
    write_workspace(&workspace);
    warm(&workspace);
    println!("done");
    let store = Store::of(&home, &workspace);
    let never = || false;

    let started = Instant::now();
    store.record("first", Phase::Start, &never).unwrap();
    println!(
        "{:<48} {:>8.1} ms",
        "the store's first snapshot (every file stored)",
        ms(started.elapsed())
    );

    let mut turn = 0_usize;
    let mut bytes = Bytes(7);
    let mut buffer = vec![0_u8; FILE_BYTES];
    for changed in [0_usize, 1, 10] {
        let mut samples = Vec::new();
        for _ in 0..rounds {
            turn += 1;
            let id = format!("turn-{turn}");
            let started = Instant::now();
            store.record(&id, Phase::Start, &never).unwrap();
            let mut took = started.elapsed();
            // The turn's work: `changed` files rewritten.
            for k in 0..changed {
                bytes.fill(&mut buffer);
                std::fs::write(file(&workspace, (turn * 37 + k * 101) % 10_000), &buffer).unwrap();
            }
            let started = Instant::now();
            store.record(&id, Phase::End, &never).unwrap();
            took += started.elapsed();
            samples.push(took);
        }
        report(
            &format!("a turn's two snapshots, {changed} files changed"),
            samples,
        );
    }

    let mut previews = Vec::new();
    let mut restores = Vec::new();
    for _ in 0..rounds.min(10) {
        turn += 1;
        let id = format!("turn-{turn}");
        store.record(&id, Phase::Start, &never).unwrap();
        for k in 0..10 {
            bytes.fill(&mut buffer);
            std::fs::write(file(&workspace, (turn * 53 + k * 97) % 10_000), &buffer).unwrap();
        }
        let removed = file(&workspace, (turn * 31 + 5_000) % 10_000);
        std::fs::remove_file(&removed).unwrap();
        std::fs::write(workspace.join("added.txt"), "new\n").unwrap();
        store.record(&id, Phase::End, &never).unwrap();
        let turns = vec![id];
        let started = Instant::now();
        let planned = plan(&store, &turns, &never).unwrap();
        previews.push(started.elapsed());
        assert!(planned.changes.len() >= 11, "{:?}", planned.changes.len());
        let started = Instant::now();
        let restored = apply(&store, &planned, &never).unwrap();
        restores.push(started.elapsed());
        assert_eq!(restored.len(), planned.changes.len());
    }
    report("a restore's preview (12 files differ)", previews);
    report("putting those 12 files back", restores);
}
