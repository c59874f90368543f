//! A script's clock: what counts toward its time limit is wall time less the time its
//! nested calls waited for a person.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The script's clock: wall time since it started, less the time nested calls waited
/// for a person, which the host adds as it passes ([`ScriptClock::pause_for`]) or
/// holds the clock through ([`ScriptClock::hold`], [`ScriptClock::release`]).
#[derive(Debug)]
pub struct ScriptClock {
    started: Instant,
    paused_nanos: AtomicU64,
    /// When the clock was held, in nanoseconds since the start; [`NOT_HELD`] when it
    /// runs.
    held_since: AtomicU64,
}

/// [`ScriptClock::held_since`] of a running clock.
const NOT_HELD: u64 = u64::MAX;

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(NOT_HELD - 1)
}

impl ScriptClock {
    /// A clock starting now.
    pub fn start() -> ScriptClock {
        ScriptClock {
            started: Instant::now(),
            paused_nanos: AtomicU64::new(0),
            held_since: AtomicU64::new(NOT_HELD),
        }
    }

    /// Adds `waited` to the time that does not count.
    pub fn pause_for(&self, waited: Duration) {
        self.paused_nanos
            .fetch_add(nanos(waited), Ordering::Relaxed);
    }

    /// Stops counting from now, while a nested call waits for a person, until
    /// [`ScriptClock::release`]. Holding a held clock changes nothing.
    pub fn hold(&self) {
        let now = nanos(self.wall());
        let _ =
            self.held_since
                .compare_exchange(NOT_HELD, now, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Counts again: the time since [`ScriptClock::hold`] does not count.
    pub fn release(&self) {
        let since = self.held_since.swap(NOT_HELD, Ordering::Relaxed);
        if since != NOT_HELD {
            let held = nanos(self.wall()).saturating_sub(since);
            self.paused_nanos.fetch_add(held, Ordering::Relaxed);
        }
    }

    /// Wall time since the start.
    pub fn wall(&self) -> Duration {
        self.started.elapsed()
    }

    /// The time that counts toward the limit.
    pub fn counted(&self) -> Duration {
        let wall = self.wall();
        let paused = Duration::from_nanos(self.paused_nanos.load(Ordering::Relaxed));
        let since = self.held_since.load(Ordering::Relaxed);
        let counted = wall.saturating_sub(paused);
        if since == NOT_HELD {
            counted
        } else {
            // Held: the time up to the hold counts, none after it.
            counted.min(Duration::from_nanos(since).saturating_sub(paused))
        }
    }
}
