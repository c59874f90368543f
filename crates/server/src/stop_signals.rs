//! `SIGTERM` and `SIGHUP`, the signals that ask the backend to end, and who sent them.
//!
//! The backend ends as after a cancel and a shutdown either way. What it adds is one
//! line on stderr, last, naming the signal and the process that sent it: a client that
//! finds its backend gone without having asked (a broken pipe at `shutdown`) can then
//! tell a stray `kill` from a bug. The sender is read from the signal's own
//! information (`si_pid`), and its name from `/proc` as the signal arrives.

use signal_hook::consts::{SIGHUP, SIGTERM};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::{Cause, Origin};
use tokio::sync::mpsc;

/// Most bytes of a sender's name read from `/proc/<pid>/comm` (the kernel keeps 16).
const SENDER_NAME_BYTES: usize = 64;

/// A stop signal that arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StopSignal {
    /// `SIGTERM` or `SIGHUP`.
    name: &'static str,
    sender: Sender,
}

/// Who sent a stop signal.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sender {
    /// A process: its ID, and its name when it could still be read.
    Process { pid: i32, name: Option<String> },
    /// The kernel (a terminal that hung up).
    Kernel,
    /// The signal did not say.
    Unknown,
}

impl StopSignal {
    fn of(origin: &Origin) -> StopSignal {
        let name = if origin.signal == SIGHUP {
            "SIGHUP"
        } else {
            "SIGTERM"
        };
        let sender = match (&origin.process, origin.cause) {
            (Some(process), _) => Sender::Process {
                pid: process.pid,
                name: process_name(process.pid),
            },
            (None, Cause::Kernel) => Sender::Kernel,
            (None, _) => Sender::Unknown,
        };
        StopSignal { name, sender }
    }

    /// The line the backend ends with: `magi-code: ended on SIGTERM from process 4242
    /// (kill)`.
    pub(crate) fn describe(&self) -> String {
        let from = match &self.sender {
            Sender::Process {
                pid,
                name: Some(name),
            } => format!("from process {pid} ({name})"),
            Sender::Process { pid, name: None } => format!("from process {pid}"),
            Sender::Kernel => "from the kernel".to_owned(),
            Sender::Unknown => "from an unknown sender".to_owned(),
        };
        format!("magi-code: ended on {} {from}", self.name)
    }
}

/// The name of process `pid`, sanitized, if it can still be read.
fn process_name(pid: i32) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(format!("/proc/{pid}/comm")).ok()?;
    let mut bytes = Vec::new();
    file.take(SENDER_NAME_BYTES as u64)
        .read_to_end(&mut bytes)
        .ok()?;
    let name = magi_protocol::text::strip_controls(String::from_utf8_lossy(&bytes).trim());
    (!name.is_empty()).then_some(name)
}

/// The stop signals of this process, listened for on a thread of their own. A signal
/// that cannot be listened for keeps its default action (the child dies, and its
/// commands with it).
pub(crate) struct StopSignals {
    arrived: Option<mpsc::Receiver<StopSignal>>,
}

impl StopSignals {
    pub(crate) fn new() -> StopSignals {
        let (arrive, arrived) = mpsc::channel(1);
        let listening = SignalsInfo::<WithOrigin>::new([SIGTERM, SIGHUP])
            .ok()
            .and_then(|mut signals| {
                std::thread::Builder::new()
                    .name("stop-signals".to_owned())
                    .spawn(move || {
                        for origin in signals.forever() {
                            // The first one ends the backend; later ones change nothing.
                            if let Err(mpsc::error::TrySendError::Closed(_)) =
                                arrive.try_send(StopSignal::of(&origin))
                            {
                                break;
                            }
                        }
                    })
                    .ok()
            });
        StopSignals {
            arrived: listening.map(|_| arrived),
        }
    }

    /// Resolves when a stop signal arrives.
    pub(crate) async fn next(&mut self) -> StopSignal {
        let arrived = match &mut self.arrived {
            Some(arrived) => arrived.recv().await,
            None => None,
        };
        match arrived {
            Some(signal) => signal,
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_signal_and_its_sender() {
        let line = |sender| StopSignal {
            name: "SIGTERM",
            sender,
        };
        assert_eq!(
            line(Sender::Process {
                pid: 4242,
                name: Some("kill".into())
            })
            .describe(),
            "magi-code: ended on SIGTERM from process 4242 (kill)"
        );
        assert_eq!(
            line(Sender::Process { pid: 7, name: None }).describe(),
            "magi-code: ended on SIGTERM from process 7"
        );
        assert_eq!(
            line(Sender::Kernel).describe(),
            "magi-code: ended on SIGTERM from the kernel"
        );
        // This process's own name reads back from /proc.
        let own = process_name(std::process::id() as i32);
        assert!(own.is_some_and(|n| !n.is_empty() && !n.contains('\n')));
    }
}
