//! The panic hook: on the panicking thread, before it unwinds, it writes the crash
//! report and remembers the panic for the catch at the thread's root.

use std::backtrace::Backtrace;
use std::panic::PanicHookInfo;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock, TryLockError};

use magi_protocol::text::{redact_values, sanitize};

use crate::report::{self, Report};
use crate::{Crash, payload_message, remember};

/// Most credential values remembered for redaction; more are not needed (a backend has
/// a handful) and the list must stay small for a hook to walk.
const SECRETS: usize = 64;

/// Where a process's crash reports go and what they say it was.
#[derive(Debug, Clone)]
pub struct Reports {
    /// The folder (`$MC_HOME/logs`), or none when `MC_HOME` cannot be found: the
    /// panic is still contained, without a report.
    pub dir: Option<PathBuf>,
    /// Which part of magi-code the process is: `serve`, `exec`, `mission-control`,
    /// `acp`, `doctor`, ….
    pub program: &'static str,
}

static REPORTS: OnceLock<Reports> = OnceLock::new();
static KNOWN_SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Installs the panic hook for the whole process, once (a second call changes
/// nothing). From then on a panic on any thread writes a report to `reports.dir` and is
/// remembered for [`crate::contain`] on its thread; nothing goes to stderr.
pub fn install(reports: Reports) {
    if REPORTS.set(reports).is_ok() {
        std::panic::set_hook(Box::new(hook));
    }
}

/// Adds credential values the process holds (a provider key, a token) to what reports
/// redact, whatever they look like: the report of a panic that printed one says
/// `[redacted]` instead. Values shorter than the redaction's minimum are ignored by it.
pub fn register_secrets(values: &[String]) {
    let mut known = KNOWN_SECRETS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for value in values {
        if known.len() < SECRETS && !known.contains(value) {
            known.push(value.clone());
        }
    }
}

/// `text` as it may leave the process: controls stripped, secret-like words and the
/// registered credential values redacted.
pub(crate) fn redacted(text: &str) -> String {
    let text = sanitize(text);
    // Never wait in a hook: the thread that panicked may be the one holding the list.
    match KNOWN_SECRETS.try_lock() {
        Ok(known) => redact_values(&text, &known),
        Err(TryLockError::Poisoned(known)) => redact_values(&text, &known.into_inner()),
        Err(TryLockError::WouldBlock) => text,
    }
}

/// The hook itself. It must not panic: a panic inside a panic hook aborts the process.
fn hook(info: &PanicHookInfo<'_>) {
    let raw = payload_message(info.payload());
    let location = info.location().map_or_else(
        || "an unknown place".to_owned(),
        |at| format!("{}:{}", at.file(), at.line()),
    );
    let message = redacted(&raw);
    let current = std::thread::current();
    let thread = current.name().unwrap_or("unnamed").to_owned();
    let reports = REPORTS.get();
    let report = reports.and_then(|reports| {
        let dir = reports.dir.as_ref()?;
        let backtrace = redacted(&Backtrace::force_capture().to_string());
        let report = Report {
            program: reports.program,
            thread: &thread,
            location: &location,
            message: &message,
            backtrace: &backtrace,
        };
        report::write(dir, &report).ok()
    });
    remember(
        raw,
        Crash {
            message,
            location,
            report,
        },
    );
}
