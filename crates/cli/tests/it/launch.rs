//! `magi-code serve --stdio` refuses anything but Unix pipes and exact arguments, before
//! any side effect.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::{Command, Stdio};

use crate::common::*;

fn serve(env: &TestEnv, args: &[&str]) -> Command {
    let mut command = Command::new(bin());
    command
        .args(args)
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .env("MAGI_PROVIDER", "openai-chat")
        .env("MAGI_MODEL", "m")
        .current_dir(env.cwd())
        .stderr(Stdio::null());
    command
}

fn assert_refused(env: &TestEnv, mut command: Command) {
    let status = command.status().unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(!env.mc_home().exists(), "MC_HOME was touched");
}

#[test]
fn regular_file_as_stdin_exits_2_without_touching_mc_home() {
    let env = TestEnv::new();
    let input = env.root().join("requests.jsonl");
    std::fs::write(
        &input,
        frame(
            "i",
            "initialize",
            serde_json::json!({"required_capabilities": []}),
        ),
    )
    .unwrap();
    let mut command = serve(&env, &["serve", "--stdio"]);
    command
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(Stdio::piped());
    assert_refused(&env, command);
}

#[test]
fn regular_file_as_stdout_exits_2() {
    let env = TestEnv::new();
    let output = std::fs::File::create(env.root().join("out")).unwrap();
    let mut command = serve(&env, &["serve", "--stdio"]);
    command.stdin(Stdio::piped()).stdout(output);
    assert_refused(&env, command);
    assert_eq!(std::fs::metadata(env.root().join("out")).unwrap().len(), 0);
}

#[test]
fn socket_as_stdin_exits_2() {
    let env = TestEnv::new();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut command = serve(&env, &["serve", "--stdio"]);
    command
        .stdin(std::os::fd::OwnedFd::from(theirs))
        .stdout(Stdio::piped());
    assert_refused(&env, command);
    drop(ours);
}

#[test]
fn character_device_as_stdin_exits_2() {
    // A terminal is a character device; /dev/null stands in for one here.
    let env = TestEnv::new();
    let mut command = serve(&env, &["serve", "--stdio"]);
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    assert_refused(&env, command);
}

#[test]
fn other_arguments_with_serve_exit_2() {
    for args in [
        &["serve"][..],
        &["serve", "--stdio", "--verbose"],
        &["serve", "--stdio", "extra"],
        &["serve", "--help"],
        &["serve", "--stdio", "--stdio"],
        &["serve", "--listen", "127.0.0.1:1"],
    ] {
        let env = TestEnv::new();
        let mut command = serve(&env, args);
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        assert_refused(&env, command);
    }
}
