//! Crash points for tests, so a crash can be placed exactly where it matters instead of
//! guessed by timing: between two durable steps of the tool-call service, or inside a
//! thread whose panic must be contained.
//!
//! In a debug build `MAGI_FAULT` names one point:
//! - `after_claim:K` kills the backend with `SIGKILL` right after the sync that made the
//!   K-th claim of this process durable (counted from 1), before its call starts;
//!   `after_result:K` right after the sync that made the K-th result durable, before
//!   its end is told;
//! - `panic_after_claim:K` panics on the run's thread at the same place instead;
//! - `panic_loop:K` panics on the protocol loop as it admits the K-th `turn.start`;
//! - `panic_session_work:K` panics on the session worker as it starts its K-th
//!   operation.
//!
//! One point orders instead of crashing: `title_first:K` makes the run that plans the
//! K-th title request ask for it before sending its terminal event, and send that event
//! only once the protocol loop took the title: the order the loop sees when a title
//! comes back before the loop got to the terminal event, which otherwise only timing
//! (a busy machine) brings about.
//!
//! Release builds have no crash points and never read the variable.

/// A place a crash may be put.
#[cfg(debug_assertions)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Point {
    Claim,
    Result,
    PanicAfterClaim,
    PanicLoop,
    PanicSessionWork,
    TitleFirst,
}

/// Notes a sync that made `claims` claims and `results` results durable, and crashes
/// the process (or panics the run's thread) when it reached the crash point.
#[cfg(debug_assertions)]
pub(crate) fn durable(claims: usize, results: usize) {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CLAIMS: AtomicUsize = AtomicUsize::new(0);
    static RESULTS: AtomicUsize = AtomicUsize::new(0);
    let Some((point, k)) = crash_point() else {
        return;
    };
    let (counter, added) = match point {
        Point::Claim | Point::PanicAfterClaim => (&CLAIMS, claims),
        Point::Result => (&RESULTS, results),
        Point::PanicLoop | Point::PanicSessionWork | Point::TitleFirst => return,
    };
    let before = counter.fetch_add(added, Ordering::SeqCst);
    if before < k && k <= before + added {
        if point == Point::PanicAfterClaim {
            panic!("crash point panic_after_claim:{k} reached");
        }
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// Release builds have no crash points.
#[cfg(not(debug_assertions))]
pub(crate) fn durable(_claims: usize, _results: usize) {}

/// Notes that the protocol loop admits a `turn.start`, and panics there when that is
/// the crash point.
#[cfg(debug_assertions)]
pub fn turn_admitted() {
    static TURNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    counted(Point::PanicLoop, &TURNS);
}

/// Release builds have no crash points.
#[cfg(not(debug_assertions))]
pub fn turn_admitted() {}

/// Notes that the session worker starts an operation, and panics there when that is
/// the crash point.
#[cfg(debug_assertions)]
pub fn session_work_started() {
    static OPERATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    counted(Point::PanicSessionWork, &OPERATIONS);
}

/// Release builds have no crash points.
#[cfg(not(debug_assertions))]
pub fn session_work_started() {}

/// Notes that a run planned a title request; true when it is to be asked for before
/// the run's terminal event (`title_first:K`).
#[cfg(debug_assertions)]
pub(crate) fn title_first() -> bool {
    static TITLES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    reached(Point::TitleFirst, &TITLES).is_some()
}

/// Release builds have no ordering point.
#[cfg(not(debug_assertions))]
pub(crate) fn title_first() -> bool {
    false
}

/// Counts one more event of `point` and panics when the count is the crash point's.
#[cfg(debug_assertions)]
fn counted(point: Point, counter: &std::sync::atomic::AtomicUsize) {
    if let Some(k) = reached(point, counter) {
        panic!("crash point reached ({k})");
    }
}

/// Counts one more event of `point` when `MAGI_FAULT` names it; its K at the K-th.
#[cfg(debug_assertions)]
fn reached(point: Point, counter: &std::sync::atomic::AtomicUsize) -> Option<usize> {
    let (named, k) = crash_point()?;
    (named == point && counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == k)
        .then_some(k)
}

/// The crash point `MAGI_FAULT` names, if it names one; read once.
#[cfg(debug_assertions)]
fn crash_point() -> Option<(Point, usize)> {
    static POINT: std::sync::OnceLock<Option<(Point, usize)>> = std::sync::OnceLock::new();
    *POINT.get_or_init(|| {
        let value = std::env::var("MAGI_FAULT").ok()?;
        let (point, k) = value.split_once(':')?;
        let k = k.parse().ok().filter(|k| *k > 0)?;
        let point = match point {
            "after_claim" => Point::Claim,
            "after_result" => Point::Result,
            "panic_after_claim" => Point::PanicAfterClaim,
            "panic_loop" => Point::PanicLoop,
            "panic_session_work" => Point::PanicSessionWork,
            "title_first" => Point::TitleFirst,
            _ => return None,
        };
        Some((point, k))
    })
}
