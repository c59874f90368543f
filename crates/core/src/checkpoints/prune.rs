//! Keeping the store within `[checkpoints] keep_turns`: the checkpoints of the
//! workspace's newest turns (over all its sessions) are kept, older turns' refs are
//! removed, and the objects nothing refers to any more are pruned.
//!
//! A prune runs once the store holds a tenth more turns than it keeps (at least one
//! more), so `git prune`, which reads every object the store still refers to, runs
//! once in that many turns rather than after each.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::store::{NotRecorded, Phase, REFS, Store};

/// A turn younger than this whose end is not recorded may still be running in another
/// backend of the workspace: it is kept whatever its place.
const UNFINISHED_GRACE: Duration = Duration::from_secs(24 * 60 * 60);
/// Loose objects younger than this are never pruned: a snapshot another backend is
/// writing has objects no ref names yet.
const PRUNE_EXPIRE: &str = "1.hour.ago";

/// What a prune removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pruned {
    /// Turns whose checkpoints were removed.
    pub turns: usize,
}

/// One turn the store holds a checkpoint of.
struct Held {
    folder: PathBuf,
    /// When its first ref was written.
    recorded: SystemTime,
    finished: bool,
}

impl Store {
    /// Removes the checkpoints of all but the newest `keep_turns` turns once the store
    /// holds a tenth more than that, then the objects only they referred to.
    pub fn prune(&self, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<Pruned, NotRecorded> {
        self.usable()?;
        let keep = self.settings.keep_turns;
        let mut held = self.held();
        if held.len() <= keep + (keep / 10).max(1) {
            return Ok(Pruned::default());
        }
        let _lock = self.lock()?;
        // Newest first; the same time falls back to the folder's name, so the order is
        // one order.
        held.sort_by(|a, b| {
            b.recorded
                .cmp(&a.recorded)
                .then_with(|| a.folder.cmp(&b.folder))
        });
        let now = SystemTime::now();
        let mut pruned = Pruned::default();
        for turn in held.iter().skip(keep) {
            let young = now
                .duration_since(turn.recorded)
                .is_ok_and(|age| age < UNFINISHED_GRACE);
            if !turn.finished && young {
                continue;
            }
            if std::fs::remove_dir_all(&turn.folder).is_ok() {
                pruned.turns += 1;
            }
        }
        if pruned.turns > 0 {
            self.git(cancelled)
                .run(&["prune", &format!("--expire={PRUNE_EXPIRE}")], None)
                .map_err(|e| NotRecorded::Failed(format!("the checkpoint store's prune: {e}")))?;
        }
        Ok(pruned)
    }

    /// The turns the store holds a ref of, each dated by its first ref's file.
    fn held(&self) -> Vec<Held> {
        let Ok(entries) = std::fs::read_dir(self.dir.join(REFS)) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let folder = entry.path();
                let dated = |phase: Phase| {
                    std::fs::metadata(folder.join(phase.name()))
                        .and_then(|m| m.modified())
                        .ok()
                };
                let finished = dated(Phase::End);
                let recorded = dated(Phase::Start).or(finished)?;
                Some(Held {
                    folder,
                    recorded,
                    finished: finished.is_some(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use magi_config::CheckpointSettings;
    use magi_protocol::messages::CheckpointStore;
    use magi_store::Home;

    use super::*;

    #[test]
    fn the_newest_turns_are_kept_and_older_ones_pruned_once_a_tenth_over() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let home = Home::prepare(&dir.path().join("home")).unwrap();
        let store =
            Store::of(&home, &work.canonicalize().unwrap()).configured(CheckpointSettings {
                keep_turns: 2,
                ..CheckpointSettings::default()
            });
        if store.state() != CheckpointStore::Ready {
            return;
        }
        let turn = |n: usize| {
            std::fs::write(work.join("file.txt"), format!("turn {n}")).unwrap();
            store
                .record(&format!("t{n}"), Phase::Start, &|| false)
                .unwrap();
            store
                .record(&format!("t{n}"), Phase::End, &|| false)
                .unwrap();
            // Distinct times for the order, whatever the file system's resolution.
            std::thread::sleep(Duration::from_millis(20));
        };
        for n in 1..=3 {
            turn(n);
        }
        // Three turns held, keeping two: within a tenth (at least one) more.
        assert_eq!(store.prune(&|| false).unwrap(), Pruned::default());
        assert_eq!(store.recorded_turns().len(), 3);
        turn(4);
        let oldest = store.tree_of("t1", Phase::Start).unwrap();
        assert_eq!(store.prune(&|| false).unwrap(), Pruned { turns: 2 });
        let held = store.recorded_turns();
        assert_eq!(held.len(), 2);
        assert!(held.contains("t3") && held.contains("t4"), "{held:?}");
        // The objects are pruned only when older than the expiry: the recent one stays
        // readable, and the kept turns' trees are whole.
        let git = store.git(&|| false);
        assert!(git.run(&["cat-file", "-e", &oldest], None).is_ok());
        let kept = store.tree_of("t3", Phase::Start).unwrap();
        assert!(git.run(&["ls-tree", "-r", &kept], None).is_ok());
    }

    #[test]
    fn an_unfinished_recent_turn_is_kept_whatever_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let home = Home::prepare(&dir.path().join("home")).unwrap();
        let store =
            Store::of(&home, &work.canonicalize().unwrap()).configured(CheckpointSettings {
                keep_turns: 1,
                ..CheckpointSettings::default()
            });
        if store.state() != CheckpointStore::Ready {
            return;
        }
        // Another backend's turn, begun first and still running.
        store.record("running", Phase::Start, &|| false).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        for n in 1..=3 {
            std::fs::write(work.join("file.txt"), format!("turn {n}")).unwrap();
            store
                .record(&format!("t{n}"), Phase::Start, &|| false)
                .unwrap();
            store
                .record(&format!("t{n}"), Phase::End, &|| false)
                .unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(store.prune(&|| false).unwrap(), Pruned { turns: 2 });
        let held = store.recorded_turns();
        assert!(held.contains("running") && held.contains("t3"), "{held:?}");
        assert_eq!(held.len(), 2);
    }

    #[test]
    fn a_store_turned_off_records_nothing_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let home = Home::prepare(&dir.path().join("home")).unwrap();
        let store =
            Store::of(&home, &work.canonicalize().unwrap()).configured(CheckpointSettings {
                enabled: false,
                ..CheckpointSettings::default()
            });
        assert_eq!(store.state(), CheckpointStore::Off);
        assert_eq!(
            store.record("t1", Phase::Start, &|| false),
            Err(NotRecorded::Off)
        );
        assert!(!store.dir().exists());
    }
}
