//! The process groups of the stdio MCP servers, killed when the hub goes.
//!
//! A leader's process ID names its group only as long as the leader is not reaped or
//! its group keeps members. A server's transport reaps its leader as soon as the server
//! ends, which can be hours before the hub goes; by then the number may name another
//! process, and that one may lead a group of its own (a shell's job, another program's
//! command). So each leader is remembered with its start time, and a number that names a
//! process started at another time is left alone: neither signalled nor waited for.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// Longest [`ProcessGroups::kill_all`] waits for killed servers to be reaped. SIGKILL
/// cannot be ignored, so this bounds only a process stuck in the kernel.
const REAP_WAIT: Duration = Duration::from_millis(500);

/// One server's leader: its process ID and when it started (clock ticks since boot, as
/// `/proc/<pid>/stat` says; none where that could not be read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Leader {
    pid: Pid,
    started: Option<u64>,
}

/// Whose process the leader's number names now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// The leader itself, running or not yet reaped: its group is certainly ours.
    Leader,
    /// No process: the leader was reaped. Its group lives on only while members it
    /// left do, and a group cannot take a number in use, so the group is ours if any.
    Nobody,
    /// A process started at another time: the number was reused.
    Another,
    /// Unknown (no start time could be read): treated as the leader, since a server
    /// left running is the harm that is sure.
    Unknown,
}

/// The process groups of the stdio servers started.
#[derive(Debug, Clone, Default)]
pub(super) struct ProcessGroups(Arc<Mutex<Vec<Leader>>>);

impl ProcessGroups {
    fn lock(&self) -> MutexGuard<'_, Vec<Leader>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers a leader just started (its number cannot have been reused yet: it is
    /// not reaped before its start is reported).
    pub(super) fn add(&self, leader: u32) {
        let Ok(pid) = i32::try_from(leader) else {
            return;
        };
        let pid = Pid::from_raw(pid);
        self.lock().push(Leader {
            pid,
            started: start_time(pid),
        });
    }

    /// Sends SIGKILL to every group still ours (a group already gone is no error), then
    /// reaps each leader not reaped yet, waiting at most [`REAP_WAIT`] in all, so that
    /// a server killed here is gone, not a zombie, when the caller goes on.
    pub(super) fn kill_all(&self) {
        let leaders: Vec<(Leader, Holder)> = self
            .lock()
            .drain(..)
            .map(|leader| (leader, holder(leader)))
            .filter(|(_, holder)| *holder != Holder::Another)
            .collect();
        for (leader, _) in &leaders {
            let _ = killpg(leader.pid, Signal::SIGKILL);
        }
        let deadline = Instant::now() + REAP_WAIT;
        for (leader, holder) in leaders {
            // A reaped leader's number is nobody's child: nothing to wait for.
            if holder == Holder::Nobody {
                continue;
            }
            // Its pidfd says when it has ended; a leader already reaped (by its
            // transport) answers ECHILD at once. Without pidfds it is looked at in turns.
            let left = || deadline.saturating_duration_since(Instant::now());
            let watched = magi_tools::await_end(leader.pid.as_raw(), left());
            while let Ok(WaitStatus::StillAlive) = waitpid(leader.pid, Some(WaitPidFlag::WNOHANG)) {
                if watched || left().is_zero() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

/// Whose process `leader`'s number names now.
fn holder(leader: Leader) -> Holder {
    let Some(started) = leader.started else {
        return Holder::Unknown;
    };
    match std::fs::read_to_string(format!("/proc/{}/stat", leader.pid)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Holder::Nobody,
        Err(_) => Holder::Unknown,
        Ok(stat) => match parse_start_time(&stat) {
            Some(now) if now == started => Holder::Leader,
            Some(_) => Holder::Another,
            None => Holder::Unknown,
        },
    }
}

/// When process `pid` started, from `/proc/<pid>/stat`; none if it cannot be read.
fn start_time(pid: Pid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// The start time (field 22) of a `/proc/<pid>/stat` line. The command name (field 2)
/// is in parentheses and may hold spaces and parentheses itself, so fields are counted
/// from its last `)`.
fn parse_start_time(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // After the name come field 3 (state) onwards: the start time is the 20th of them.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};

    /// A `sleep` leading a group of its own.
    fn leader() -> Child {
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn pid_of(child: &Child) -> Pid {
        Pid::from_raw(i32::try_from(child.id()).unwrap())
    }

    /// Whether `pid` has ended (gone, or a zombie) within 10 s, told by its pidfd.
    fn ended(pid: Pid) -> bool {
        magi_tools::await_end(pid.as_raw(), Duration::from_secs(10));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let (_, rest) = stat.rsplit_once(')')?;
                rest.split_whitespace().next().map(str::to_owned)
            });
        matches!(state.as_deref(), None | Some("Z"))
    }

    #[test]
    fn the_start_time_is_counted_from_the_names_last_parenthesis() {
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98765 \
                    1000 10 18446744073709551615";
        assert_eq!(parse_start_time(stat), Some(98765));
        assert_eq!(parse_start_time("42 (short) S 1"), None);
        assert_eq!(parse_start_time("no name"), None);
    }

    #[test]
    fn a_leader_still_there_is_killed_and_reaped() {
        let mut child = leader();
        let groups = ProcessGroups::default();
        groups.add(child.id());
        assert_eq!(holder(groups.lock()[0]), Holder::Leader);
        groups.kill_all();
        // Reaped by the kill: its own handle finds no child left to wait for.
        assert!(child.try_wait().is_err(), "the leader was reaped");
        assert!(groups.lock().is_empty());
    }

    #[test]
    fn a_number_that_names_another_process_now_is_left_alone() {
        let mut other = leader();
        // As if a server with this number, started at another time, had been reaped
        // and its number given to this group's leader.
        let groups = ProcessGroups::default();
        let started = start_time(pid_of(&other)).map(|t| t + 1);
        groups.lock().push(Leader {
            pid: pid_of(&other),
            started,
        });
        assert_eq!(holder(groups.lock()[0]), Holder::Another);
        groups.kill_all();
        assert!(
            matches!(other.try_wait(), Ok(None)),
            "another program's group was signalled"
        );
        let _ = other.kill();
        let _ = other.wait();
    }

    #[test]
    fn what_a_reaped_leader_left_in_its_group_is_killed() {
        // The leader starts a member and exits at once; once it is reaped, only the
        // member holds the group.
        let mut shell = Command::new("sh")
            .args(["-c", "sleep 30 & echo $!"])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let groups = ProcessGroups::default();
        groups.add(shell.id());
        let mut line = String::new();
        BufReader::new(shell.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let member = Pid::from_raw(line.trim().parse().unwrap());
        shell.wait().unwrap();
        assert_eq!(holder(groups.lock()[0]), Holder::Nobody);
        groups.kill_all();
        assert!(ended(member), "the member was left running");
    }
}
