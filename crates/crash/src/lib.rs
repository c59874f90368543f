//! Panics contained: a bug on one thread ends that thread's operation with a defined
//! outcome instead of the process, and leaves a crash report a person can send.
//!
//! The binary installs the panic hook once, at start ([`install`]). When a thread
//! panics, the hook runs on that thread before it unwinds: it writes a report to
//! `$MC_HOME/logs/crash-<time>-<pid>.txt` (`report`) and remembers the panic for that
//! thread. The root of each thread that does work catches the unwind with [`contain`]
//! (or [`contained`] for a future) and gets the panic back as a [`Crash`]: its message,
//! where it happened and the report's path, for the operation's failure to say.
//!
//! The hook writes nothing to stderr: a backend's stderr may be a pipe nobody reads,
//! and a full one must never stall it. Only a panic the process cannot outlive says one
//! line there ([`exit_fatal`]), and the exit never waits long for it.

mod fatal;
mod hook;
mod report;

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};

pub use fatal::{exit_fatal, last_line};
pub use hook::{Reports, install, register_secrets};
pub use report::{ReportSummary, recent};

/// A panic, caught at the root of the thread it happened on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash {
    /// The panic's message, redacted like everything that leaves the process.
    pub message: String,
    /// Where it happened: `file:line` in the source.
    pub location: String,
    /// The crash report it left, when one could be written.
    pub report: Option<PathBuf>,
}

impl Crash {
    /// What an operation's failure says of it: where it happened and the report,
    /// never the panic's message, which may hold the arguments of the work.
    pub fn summary(&self) -> String {
        match &self.report {
            Some(report) => format!(
                "internal error at {}; the crash report is {}",
                self.location,
                report.display()
            ),
            None => format!("internal error at {}", self.location),
        }
    }

    /// What a person is told of a crash that ended a process: the message, where it
    /// happened and the report.
    pub fn describe(&self) -> String {
        let message = self.message.replace('\n', " ");
        match &self.report {
            Some(report) => format!(
                "{message} at {} (report: {})",
                self.location,
                report.display()
            ),
            None => format!("{message} at {} (no report was written)", self.location),
        }
    }
}

/// A panic the hook saw on this thread, not yet taken by a catch.
struct Remembered {
    /// The payload's message as the panic gave it, to match the catch's payload.
    raw: String,
    crash: Crash,
}

thread_local! {
    /// The newest panic on this thread that no catch took yet.
    static LAST: RefCell<Option<Remembered>> = const { RefCell::new(None) };
}

/// Runs `work`, and returns the panic as a [`Crash`] instead of unwinding further.
///
/// Whatever `work` touched may be half-updated after a panic: the caller decides what
/// of it can still be trusted, which is why this asks no `UnwindSafe` bound.
pub fn contain<T>(work: impl FnOnce() -> T) -> Result<T, Crash> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|payload| caught(payload.as_ref()))
}

/// The crash a caught `payload` was: what the hook remembered of it on this thread, or,
/// without the hook (a test, or a panic the hook could not note), the payload's message
/// at an unknown place.
pub fn caught(payload: &(dyn Any + Send)) -> Crash {
    let raw = payload_message(payload);
    let remembered = LAST
        .try_with(|last| last.try_borrow_mut().ok().and_then(|mut last| last.take()))
        .ok()
        .flatten();
    match remembered {
        Some(remembered) if remembered.raw == raw => remembered.crash,
        _ => Crash {
            message: hook::redacted(&raw),
            location: "an unknown place".to_owned(),
            report: None,
        },
    }
}

/// The message a panic payload carries: the `&str` or `String` of `panic!`, or a
/// placeholder for any other payload.
fn payload_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// `future`, with a panic in any of its polls returned as a [`Crash`]; see
/// [`contain`].
pub fn contained<F: Future>(future: F) -> Contained<F> {
    Contained {
        inner: Some(Box::pin(future)),
    }
}

/// The future [`contained`] returns.
pub struct Contained<F: Future> {
    /// The work, until it ended or panicked.
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future> Future for Contained<F> {
    type Output = Result<F::Output, Crash>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(inner) = self.inner.as_mut() else {
            // Polled after it resolved: it never resolves twice.
            return Poll::Pending;
        };
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => {
                self.inner = None;
                Poll::Ready(Ok(output))
            }
            Err(payload) => {
                let crash = caught(payload.as_ref());
                // What the work held is dropped here, and a drop that panics too is
                // contained with it rather than taking the thread.
                let inner = self.inner.take();
                let _ = catch_unwind(AssertUnwindSafe(move || drop(inner)));
                Poll::Ready(Err(crash))
            }
        }
    }
}

/// Remembers `crash` for this thread's next catch of a payload whose message is `raw`.
fn remember(raw: String, crash: Crash) {
    let _ = LAST.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = Some(Remembered { raw, crash });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_a_crash_value_with_its_message() {
        let result: Result<(), Crash> = contain(|| panic!("boom {}", 7));
        let crash = result.unwrap_err();
        assert_eq!(crash.message, "boom 7");
        assert_eq!(contain(|| 5), Ok(5));
    }

    #[test]
    fn a_sign_in_token_in_a_panic_never_reaches_the_crash() {
        // The shapes the redaction knows, as a panic over a sign-in could print them: a
        // JWT access token, an `rt_` refresh token, a bearer header.
        let jwt = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2lnbmF0dXJl";
        let refresh = "rt_Abc-defGhi_jklMno.pqrStuv";
        let result: Result<(), Crash> = contain(|| {
            panic!("token {jwt} refresh {refresh} sent as Authorization: Bearer opaque-value-1")
        });
        let message = result.unwrap_err().message;
        assert!(!message.contains(jwt), "{message}");
        assert!(!message.contains(refresh), "{message}");
        assert!(!message.contains("opaque-value-1"), "{message}");
        assert!(message.starts_with("token [redacted]"), "{message}");
    }

    #[test]
    fn a_panicking_future_resolves_to_its_crash() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let crash = runtime
            .block_on(contained(async {
                tokio::task::yield_now().await;
                panic!("in a poll")
            }))
            .unwrap_err();
        assert_eq!(crash.message, "in a poll");
        assert_eq!(runtime.block_on(contained(async { 3 })), Ok(3));
    }

    #[test]
    fn the_summary_names_the_place_and_never_the_message() {
        let crash = Crash {
            message: "secret argument".into(),
            location: "crates/x/src/y.rs:12".into(),
            report: Some(PathBuf::from("/home/logs/crash-1.txt")),
        };
        assert_eq!(
            crash.summary(),
            "internal error at crates/x/src/y.rs:12; the crash report is /home/logs/crash-1.txt"
        );
        assert_eq!(
            crash.describe(),
            "secret argument at crates/x/src/y.rs:12 (report: /home/logs/crash-1.txt)"
        );
    }
}
