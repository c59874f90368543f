//! Crash points for tests, so a crash can be placed exactly between two durable steps
//! of the tool-call service instead of guessed by timing.
//!
//! In a debug build, `MAGI_FAULT=after_claim:K` kills the backend with `SIGKILL` right
//! after the sync that made the K-th claim of this process durable (counted from 1),
//! before its call starts; `MAGI_FAULT=after_result:K` right after the sync that made
//! the K-th result durable, before its end is told. Release builds have no crash
//! points and never read the variable.

/// A durable step a crash may follow.
#[cfg(debug_assertions)]
#[derive(Clone, Copy)]
enum Step {
    Claim,
    Result,
}

/// Notes a sync that made `claims` claims and `results` results durable, and kills the
/// process when it reached the crash point.
#[cfg(debug_assertions)]
pub(super) fn durable(claims: usize, results: usize) {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static POINT: OnceLock<Option<(Step, usize)>> = OnceLock::new();
    static CLAIMS: AtomicUsize = AtomicUsize::new(0);
    static RESULTS: AtomicUsize = AtomicUsize::new(0);
    let Some((step, k)) = *POINT.get_or_init(crash_point) else {
        return;
    };
    let (counter, added) = match step {
        Step::Claim => (&CLAIMS, claims),
        Step::Result => (&RESULTS, results),
    };
    let before = counter.fetch_add(added, Ordering::SeqCst);
    if before < k && k <= before + added {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// Release builds have no crash points.
#[cfg(not(debug_assertions))]
pub(super) fn durable(_claims: usize, _results: usize) {}

/// The crash point `MAGI_FAULT` names, if it names one.
#[cfg(debug_assertions)]
fn crash_point() -> Option<(Step, usize)> {
    let value = std::env::var("MAGI_FAULT").ok()?;
    let (step, k) = value.split_once(':')?;
    let k = k.parse().ok().filter(|k| *k > 0)?;
    match step {
        "after_claim" => Some((Step::Claim, k)),
        "after_result" => Some((Step::Result, k)),
        _ => None,
    }
}
