//! `magi-code exec` interrupted: Ctrl-C at a real terminal (tmux), SIGTERM and SIGKILL,
//! during an approved slow command. The backend runs in its own process group, so the
//! terminal's SIGINT reaches `exec` alone, which cancels the run: exit status 130, the
//! partial reply kept in the session, the command stopped before it wrote its file, and
//! nothing left running.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::common::*;
use crate::exec::{exec_command, session_of};
use crate::mcp::{assert_no_processes_in, processes_in, wait_for_processes_in};
use magi_testkit::{MockServer, Reply};

/// The command the model asks for: it would write `done.txt` after half a minute.
const SLOW: &str = "sleep 30; touch done.txt";

/// The model's first reply: some text, then the slow command.
fn slow_call() -> Reply {
    Reply::stream().text(["Working on it."]).tool_call(
        "c1",
        "bash",
        [format!("{{\"command\":\"{SLOW}\"}}")],
    )
}

/// A command that writes, so it waits for the slow one and the cancel keeps it from
/// starting.
const AFTER: &str = "echo two > two.txt";

/// Whether a process working in `dir` runs the slow command's `sleep`.
fn sleeping_in(dir: &Path) -> bool {
    processes_in(dir).iter().any(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| cmdline.starts_with(b"sleep\x0030"))
    })
}

/// Waits (bounded) until the slow command is running.
async fn until_sleeping(dir: &Path) {
    let dir = dir.to_owned();
    wait_for_processes_in(&dir.clone(), "the command never started", move |_| {
        sleeping_in(&dir)
    })
    .await;
}

/// After the run: nothing of it runs any more and the command never wrote its file.
async fn nothing_left(env: &TestEnv) {
    assert_no_processes_in(&env.cwd()).await;
    assert!(!env.cwd().join("done.txt").exists(), "the command ran on");
}

/// The only session log of the workspace, as text.
fn the_log(env: &TestEnv) -> String {
    let logs: Vec<_> = std::fs::read_dir(workspace_dir(env))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1);
    std::fs::read_to_string(logs[0].path()).unwrap()
}

#[tokio::test]
async fn sigterm_and_sighup_cancel_the_run_and_exit_130() {
    for signal in [Signal::SIGTERM, Signal::SIGHUP] {
        let mock = MockServer::start().await;
        mock.enqueue(slow_call().tool_call("c2", "bash", [format!("{{\"command\":\"{AFTER}\"}}")]));
        let env = TestEnv::new();
        let mut command = exec_command(&env, &mock, &["--allow-all", "Do the slow thing"]);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = command.spawn().unwrap();
        until_sleeping(&env.cwd()).await;
        let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
        kill(pid, signal).unwrap();
        let output = tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .expect("exec exits within the wait")
            .unwrap();
        assert_eq!(output.status.code(), Some(130), "{signal}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("cancelling the run"), "{stderr}");
        // The text before the call was commentary: on stderr, and kept in the session.
        assert!(stderr.contains("Working on it."), "{stderr}");
        // Each call's line names its command between quotes, the one kept from
        // starting too.
        assert!(
            stderr.contains(&format!("✗ bash \"{SLOW}\": cancelled")),
            "{stderr}"
        );
        let not_started = format!("✗ bash \"{AFTER}\": not started: the turn was cancelled");
        assert!(stderr.contains(&not_started), "{stderr}");
        assert!(!env.cwd().join("two.txt").exists());
        assert!(output.stdout.is_empty(), "{signal}: {output:?}");
        let session = session_of(&output);
        let log = std::fs::read_to_string(log_path(&env, &session)).unwrap();
        assert!(log.contains("Working on it."), "{log}");
        assert!(log.contains("\"cancelled\""), "{log}");
        nothing_left(&env).await;
        assert_eq!(
            mock.requests().len(),
            1,
            "nothing was asked after the cancel"
        );
    }
}

#[tokio::test]
async fn an_interrupted_reply_is_printed_as_far_as_it_got() {
    // Nothing outside the two processes tells when the backend has the held reply's
    // text, so the signal may come before it: then the run saved no text and printed
    // none. The rule holds either way (stdout is what the session kept); the attempts
    // are repeated, boundedly, until one interrupts the reply halfway.
    for _ in 0..5 {
        let mock = MockServer::start().await;
        mock.enqueue(Reply::stream().text(["The first half"]).held());
        let env = TestEnv::new();
        let mut command = exec_command(&env, &mock, &["Write a lot"]);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = command.spawn().unwrap();
        // The held reply sends its text once the model request is in.
        let deadline = Instant::now() + WAIT;
        while mock.requests().is_empty() {
            assert!(Instant::now() < deadline, "no model request");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
        kill(pid, Signal::SIGINT).unwrap();
        let output = tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .expect("exec exits within the wait")
            .unwrap();
        mock.release();
        assert_eq!(output.status.code(), Some(130), "{output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        if the_log(&env).contains("The first half") {
            assert_eq!(stdout, "The first half\n");
            return;
        }
        assert_eq!(stdout, "", "printed what the session did not keep");
    }
    panic!("no attempt interrupted the reply halfway");
}

#[tokio::test]
async fn a_second_ctrl_c_kills_the_backend_at_once() {
    let mock = MockServer::start().await;
    // A command that ignores SIGTERM holds the cancelled run for the launcher's grace
    // period, until its SIGKILL: the second signal comes while the run is stopping.
    let stubborn = "trap '' TERM; sleep 30; touch done.txt";
    mock.enqueue(Reply::stream().tool_call(
        "c1",
        "bash",
        [format!("{{\"command\":\"{stubborn}\"}}")],
    ));
    let env = TestEnv::new();
    let mut command = exec_command(&env, &mock, &["--allow-all", "Do the slow thing"]);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    until_sleeping(&env.cwd()).await;
    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGINT).unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("cancelling the run") {
        let read = tokio::time::timeout(WAIT, stderr.read_line(&mut seen))
            .await
            .expect("exec said it was cancelling")
            .unwrap();
        assert_ne!(read, 0, "stderr ended: {seen}");
    }
    // Exec may have exited already on a slow machine; the assertions below still hold.
    let _ = kill(pid, Signal::SIGINT);
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exec exits within the wait")
        .unwrap();
    stderr.read_to_string(&mut seen).await.unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(
        seen.contains("stopped at once; the backend was killed"),
        "{seen}"
    );
    // The backend died by SIGKILL; its command's launcher saw the lifeline close.
    nothing_left(&env).await;
}

#[tokio::test]
async fn sigkill_of_exec_ends_the_backend_and_its_command() {
    let mock = MockServer::start().await;
    mock.enqueue(slow_call());
    let env = TestEnv::new();
    let mut command = exec_command(&env, &mock, &["--allow-all", "Do the slow thing"]);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    until_sleeping(&env.cwd()).await;
    child.start_kill().unwrap();
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), None);
    // The backend saw its stdin close, cancelled the run and stopped its command.
    nothing_left(&env).await;
}

/// One tmux server of its own per test, killed when the test ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_a_terminal_cancels_the_run_and_exits_130() {
    let mock = MockServer::start().await;
    mock.enqueue(slow_call());
    let env = TestEnv::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmux = Tmux {
        socket: format!(
            "magi-exec-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ),
    };
    let mut command = Command::new("tmux");
    command.args(["-L", &tmux.socket, "-f", "/dev/null", "new-session", "-d"]);
    command
        .args(["-s", "x", "-x", "120", "-y", "20", "-c"])
        .arg(env.cwd());
    let status_file = env.root().join("status");
    for (key, value) in [
        ("STATUS", status_file.display().to_string()),
        ("MC_HOME", env.mc_home().display().to_string()),
        ("MAGI_PROVIDER", "openai-chat".into()),
        ("MAGI_MODEL", "mock-model".into()),
        ("OPENAI_BASE_URL", mock.base_url()),
    ] {
        command.arg("-e").arg(format!("{key}={value}"));
    }
    // bash waits for exec and writes its exit status: a foreground job's shell sees
    // Ctrl-C too, and (not being a terminal's job control shell) lets its command
    // decide. Reading the status from tmux instead proved unreliable: its server now
    // and then leaves the exited pane process unreaped.
    command.args(["bash", "-c", "\"$@\"; echo $? > \"$STATUS\"", "bash"]);
    command.args([bin(), "exec", "--allow-all", "Do the slow thing"]);
    // The pane stays after bash exits, so the screen can be read.
    command.args([";", "set-option", "-w", "-t", "x", "remain-on-exit", "on"]);
    assert!(command.status().unwrap().success(), "tmux could not start");
    until_sleeping(&env.cwd()).await;
    // Ctrl-C at the terminal: SIGINT to its whole foreground process group.
    tmux.tmux(&["send-keys", "-t", "x", "C-c"]);
    let deadline = Instant::now() + WAIT;
    let status = loop {
        let status = std::fs::read_to_string(&status_file).unwrap_or_default();
        if status.ends_with('\n') {
            break status.trim().to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "exec did not exit:\n{}",
            tmux.tmux(&["capture-pane", "-p", "-t", "x"])
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let screen = tmux.tmux(&["capture-pane", "-p", "-t", "x"]);
    assert_eq!(status, "130", "{screen}");
    assert!(screen.contains("cancelling the run"), "{screen}");
    let log = the_log(&env);
    assert!(log.contains("Working on it."), "{log}");
    nothing_left(&env).await;
}

/// A signal that reaches `exec` before it can answer signals — here one already pending
/// when the program starts, as when it comes in the first instants — is held, then
/// answered like any other: exit 130, no model request, nothing left running. (Started
/// through `perl`, which can leave a signal blocked and pending across `execve`; Rust's
/// process spawning resets the mask.)
#[tokio::test]
async fn a_signal_in_the_first_instants_is_answered_not_fatal() {
    let mock = MockServer::start().await;
    mock.enqueue(slow_call());
    let env = TestEnv::new();
    let exec = exec_command(&env, &mock, &["--allow-all", "Do the slow thing"]);
    let exec = exec.as_std();
    let mut command = tokio::process::Command::new("perl");
    command
        .arg("-MPOSIX")
        .arg("-e")
        .arg(
            "sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGTERM)) or die 'sigprocmask'; \
             kill 'TERM', $$; exec { $ARGV[0] } @ARGV or die \"exec: $!\"",
        )
        .arg(exec.get_program())
        .args(exec.get_args())
        .env_clear()
        .envs(exec.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(env.cwd())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .expect("exec exits within the wait")
        .unwrap();
    assert_eq!(output.status.code(), Some(130), "{output:?}");
    assert!(mock.requests().is_empty(), "the run never started");
    nothing_left(&env).await;
}
