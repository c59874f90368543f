//! What the kernel can enforce for this process's commands: asked once, of this program
//! re-executed as a probe launcher (`magi-code __launch --probe`), which confines itself
//! in a process of its own and says what the kernel enforced.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use magi_config::SandboxNetwork;

use super::{Config, NO_USERNS_ENV, UNAVAILABLE_ENV};
use crate::process::confine;
use crate::process::{launcher, wait_until_exited};

/// Longest wait for the probe launcher, which only asks the kernel and exits.
const PROBE_WAIT: Duration = Duration::from_secs(10);

/// The most the probe's answer may hold: two short lines.
const PROBE_ANSWER_BYTES: usize = 4_096;

/// What the kernel can enforce, as a probe launcher found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI the kernel offers; none without Landlock.
    pub landlock_abi: Option<i32>,
    /// Whether every file-system and network right the sandbox asks for is enforced.
    pub landlock_full: bool,
    /// Whether a seccomp filter can be installed; the error says why not.
    pub seccomp: Result<(), String>,
    /// Whether a path can be made read-only for commands (a user and mount namespace
    /// of their own); the error says why not.
    pub userns: Result<(), String>,
}

impl Support {
    /// No sandbox, for the reason given.
    pub(super) fn none(why: String) -> Support {
        Support {
            landlock_abi: None,
            landlock_full: false,
            seccomp: Err(why.clone()),
            userns: Err(why),
        }
    }

    /// One line for doctor and the docs: `Landlock ABI 7, seccomp available, user
    /// namespaces available`.
    pub fn describe(&self) -> String {
        let landlock = match self.landlock_abi {
            Some(abi) if self.landlock_full => format!("Landlock ABI {abi}"),
            Some(abi) => format!("Landlock ABI {abi} (some rights not enforced)"),
            None => "no Landlock".to_owned(),
        };
        let seccomp = match &self.seccomp {
            Ok(()) => "seccomp available".to_owned(),
            Err(why) => format!("no seccomp ({why})"),
        };
        let userns = match &self.userns {
            Ok(()) => "user namespaces available".to_owned(),
            Err(why) => format!("no user namespaces ({why})"),
        };
        format!("{landlock}, {seccomp}, {userns}")
    }
}

/// Asks `program` (this program, re-executed as a probe launcher that confines itself
/// and says what the kernel enforced) what the kernel offers; whether user namespaces
/// serve includes a network of the command's own when `network` is `loopback` (making
/// one costs the kernel more than the mounts: it is tried only when it would be used).
pub fn probe(program: &Path, network: SandboxNetwork) -> Support {
    let mut arguments = vec![launcher::LAUNCH_ARGUMENT, confine::PROBE_OPTION];
    if network == SandboxNetwork::Loopback {
        arguments.push(confine::OWN_NETWORK_OPTION);
    }
    let child = Command::new(program)
        .args(arguments)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return Support::none(format!("the probe could not start: {e}")),
    };
    // Its answer ends when it exits: read until then rather than look at it in turns.
    let deadline = Instant::now() + PROBE_WAIT;
    let answer = child
        .stdout
        .take()
        .and_then(|stdout| read_until_closed(stdout, deadline));
    let left = deadline.saturating_duration_since(Instant::now());
    let (Some(line), true) = (answer, wait_until_exited(&mut child, left)) else {
        let _ = child.kill();
        let _ = child.wait();
        return Support::none("the probe did not answer".to_owned());
    };
    let mut support = parse_probe(line.trim());
    if std::env::var_os(NO_USERNS_ENV).is_some_and(|value| value == "1") {
        support.userns = Err(format!("{NO_USERNS_ENV} is set"));
    }
    support
}

/// What `stdout` says until it is closed, at most [`PROBE_ANSWER_BYTES`], waiting no
/// later than `deadline`; none when it stays open past it or cannot be read.
fn read_until_closed(stdout: std::process::ChildStdout, deadline: Instant) -> Option<String> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut stdout = stdout;
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 1_024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::POLLIN)];
        match poll(
            &mut fds,
            PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return None,
        }
        match stdout.read(&mut chunk) {
            Ok(0) => return Some(String::from_utf8_lossy(&answer).into_owned()),
            Ok(read) if answer.len() + read <= PROBE_ANSWER_BYTES => {
                answer.extend_from_slice(chunk.get(..read)?);
            }
            Ok(_) => return None,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// The probe's lines: `landlock 7 full seccomp yes` or `landlock none seccomp no: why`,
/// then `userns yes` or `userns no: why`.
pub(super) fn parse_probe(text: &str) -> Support {
    let (line, userns) = text.split_once('\n').unwrap_or((text, ""));
    let userns = match userns.trim().strip_prefix("userns ") {
        Some("yes") => Ok(()),
        Some(no) => Err(no.strip_prefix("no: ").unwrap_or(no).to_owned()),
        None => Err("the probe did not say".to_owned()),
    };
    let Some(rest) = line.strip_prefix("landlock ") else {
        return Support::none(format!("the probe said {line:?}"));
    };
    let (landlock_abi, landlock_full, rest) = match rest.strip_prefix("none ") {
        Some(rest) => (None, false, rest),
        None => {
            let mut words = rest.splitn(3, ' ');
            let abi = words.next().and_then(|abi| abi.parse().ok());
            let full = words.next() == Some("full");
            (abi, full, words.next().unwrap_or_default())
        }
    };
    let seccomp = match rest.strip_prefix("seccomp ") {
        Some("yes") => Ok(()),
        Some(no) => Err(no.strip_prefix("no: ").unwrap_or(no).to_owned()),
        None => Err(format!("the probe said {line:?}")),
    };
    Support {
        landlock_abi,
        landlock_full,
        seccomp,
        userns,
    }
}

/// What this kernel offers commands of this process, asked once.
pub(super) fn support(config: &Config) -> Support {
    if config.simulate_unavailable {
        return Support::none(format!("{UNAVAILABLE_ENV} is set"));
    }
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT
        .get_or_init(|| match launcher::program() {
            Some(program) => probe(program, config.settings.network),
            None => Support::none("commands start without the launcher".to_owned()),
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_line_is_read() {
        assert_eq!(
            parse_probe("landlock 7 full seccomp yes\nuserns yes"),
            Support {
                landlock_abi: Some(7),
                landlock_full: true,
                seccomp: Ok(()),
                userns: Ok(()),
            }
        );
        let none = parse_probe("landlock none seccomp no: not permitted");
        assert_eq!(none.landlock_abi, None);
        assert_eq!(none.seccomp, Err("not permitted".to_owned()));
        assert_eq!(none.userns, Err("the probe did not say".to_owned()));
        let no_userns = parse_probe("landlock 7 full seccomp yes\nuserns no: unshare: EPERM");
        assert_eq!(no_userns.userns, Err("unshare: EPERM".to_owned()));
        assert_eq!(parse_probe("garbage").landlock_abi, None);
    }
}
