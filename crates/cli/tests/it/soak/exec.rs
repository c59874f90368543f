//! A share of the soak through `magi-code exec`: one or two turns from a script, the
//! second continuing the session, now and then interrupted (SIGINT, SIGTERM) or killed
//! (SIGKILL) mid-turn. Whatever happens, `exec` ends with one of its documented
//! statuses, says why on stderr when it fails, and leaves nothing running.

use std::process::Stdio;
use std::time::Duration;

use magi_testkit::MockServer;

use super::model::Model;
use super::random::Random;
use super::session::Failed;
use super::{Stats, leftovers, workspace};
use crate::common::*;

/// The statuses `exec` documents (docs/exec.md), and 137 for a SIGKILL the soak sends.
const STATUSES: [i32; 6] = [0, 1, 2, 3, 4, 130];

/// Runs the exec soak session of `seed`, its processes marked with `tag`.
pub async fn run(seed: u64, tag: &str) -> Result<Stats, Failed> {
    let mut random = Random::new(seed);
    let model = Model::new(random.next_u64());
    let mock = MockServer::start_responder(Model::responder(&model))
        .await
        .map_err(|e| format!("the mock model could not start: {e}"))?;
    let env = env_for_wire(Wire::Chat, &mock)
        .var(super::TAG, tag)
        // The soak tells a crash itself, with the seed that replays it.
        .expect_crashes();
    let window = random.between(4_000, 32_000);
    // Half the sessions take their title beside the turn. Read off the seed, not
    // drawn, so that the plans of earlier seeds stay as they were.
    let beside = (seed >> 7) & 1 == 1;
    env.write_settings(&format!(
        "[models.\"openai-chat/mock-model\"]\ncontext_window = {window}\n\n\
         [providers.openai-chat]\nconcurrent_requests = {beside}\n"
    ));
    workspace::populate(&env.cwd(), env.root(), &mut random);
    let mut stats = Stats::default();
    for turn in 0..random.between(1, 2) {
        model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .begin_turn(random.between(0, 4));
        let prompt = format!("soak exec {}", random.text_between(1, 500));
        let mut args = vec!["exec".to_owned()];
        if turn > 0 {
            args.push("--continue".to_owned());
        }
        if random.chance(0.7) {
            args.push("--allow-all".to_owned());
        }
        args.push(prompt);
        let mut child = tokio::process::Command::new(bin())
            .args(&args)
            .env_clear()
            .env("MC_HOME", env.mc_home())
            .envs(env.vars())
            .current_dir(env.cwd())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("exec did not start: {e}"))?;
        let signal = match random.weighted(&[80, 8, 6, 6]) {
            0 => None,
            1 => Some(nix::sys::signal::Signal::SIGINT),
            2 => Some(nix::sys::signal::Signal::SIGTERM),
            _ => Some(nix::sys::signal::Signal::SIGKILL),
        };
        let after = Duration::from_millis(random.between(0, 400) as u64);
        let stderr = child.stderr.take();
        let read = tokio::spawn(async move {
            let mut text = String::new();
            if let Some(mut stderr) = stderr {
                use tokio::io::AsyncReadExt;
                let _ = stderr.read_to_string(&mut text).await;
            }
            text
        });
        // Whether exec already caught or held the signal when it was sent: before that
        // (the first instants of the process) dying of it is the default, not a fault.
        let mut answered = true;
        let status = match signal {
            Some(signal) => match tokio::time::timeout(after, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    if let Some(pid) = child.id() {
                        answered = answers(pid, signal);
                        let pid = nix::unistd::Pid::from_raw(pid as i32);
                        let _ = nix::sys::signal::kill(pid, signal);
                    }
                    stats.interrupts += 1;
                    match tokio::time::timeout(Duration::from_secs(60), child.wait()).await {
                        Ok(status) => status,
                        Err(_) => return Err(format!("exec did not end within 60 s of {signal}")),
                    }
                }
            },
            None => match tokio::time::timeout(Duration::from_secs(120), child.wait()).await {
                Ok(status) => status,
                Err(_) => return Err("exec did not end within 120 s".to_owned()),
            },
        }
        .map_err(|e| format!("exec could not be waited for: {e}"))?;
        let stderr = read.await.unwrap_or_default();
        stats.turns += 1;
        use std::os::unix::process::ExitStatusExt;
        let killed_by_us = signal.is_some_and(|signal| {
            status.signal() == Some(signal as i32)
                && (signal == nix::sys::signal::Signal::SIGKILL || !answered)
        });
        let fine = status.code().is_some_and(|code| STATUSES.contains(&code)) || killed_by_us;
        if !fine {
            return Err(format!("exec ended {status:?}; stderr:\n{stderr}"));
        }
        if status.code() == Some(1) && stderr.trim().is_empty() {
            return Err("exec failed without a word on stderr".to_owned());
        }
        if stderr.contains("crashed") {
            return Err(format!("the backend crashed under exec:\n{stderr}"));
        }
        stats.outcomes.push(format!("exec {status}"));
        // After a SIGKILL of exec, its backend sees its input close and ends; the rest
        // of the session waits for that.
        leftovers::wait_for_none(tag).await?;
    }
    if let Some(report) = env.crash_report_texts().first() {
        return Err(format!("a crash report was written:\n{report}"));
    }
    Ok(stats)
}

/// Whether process `pid` catches or blocks `signal` now, read from the `SigCgt` and
/// `SigBlk` masks of `/proc/<pid>/status`. A process only ever goes from not answering
/// to answering, so "yes" here holds when the signal arrives. Unknown counts as yes.
fn answers(pid: u32, signal: nix::sys::signal::Signal) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return true;
    };
    let bit = 1u64 << (signal as u32 - 1);
    let mask = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
    };
    match (mask("SigCgt:"), mask("SigBlk:")) {
        (Some(caught), Some(blocked)) => (caught | blocked) & bit != 0,
        _ => true,
    }
}
