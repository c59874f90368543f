//! The workspace's `.git` under the sandbox, through the real binary on this kernel:
//! read-only for commands under `workspace-write` (a read-only mount in namespaces of
//! the launcher's own), writable with `git_writable = true` and with the mode `off`, a
//! worktree's git directories included, the uid a command sees unchanged; and, when
//! user namespaces are unavailable, the notice and doctor saying that `.git` is
//! protected from the file tools only.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::sandbox::{available, bash, exec_all, last_told, sandbox_facts, stderr};
use magi_testkit::{MockServer, Reply};
use serde_json::json;

/// A command that records the uid it runs as, writes the workspace, then changes
/// `.git` twice: a file of its own, and a commit.
const CHANGE_GIT: &str = "id -u > uid.txt; echo in > inside.txt; touch .git/mark && echo \
                          touched; git -c user.name=t -c user.email=t@example.com commit -q \
                          --allow-empty -m m && echo committed";

/// Runs `git` with `args` in `dir`, which must succeed.
fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
}

/// A repository with one commit in `dir`.
fn repository(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    );
}

/// The uid of this test process, as `id -u` prints it.
fn own_uid() -> String {
    let output = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test]
async fn git_is_read_only_for_commands_unless_git_writable_or_the_mode_is_off() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    repository(&env.cwd());
    let mark = env.cwd().join(".git/mark");

    mock.enqueue(bash("c1", CHANGE_GIT));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    let told = last_told(&mock);
    assert!(!mark.exists(), "{told:?}");
    assert!(!told[0].contains("touched") && !told[0].contains("committed"));
    assert!(told[0].contains("Read-only file system"), "{told:?}");
    assert!(
        told[0].contains("It keeps the workspace's .git read-only unless [sandbox] git_writable"),
        "{told:?}"
    );
    // The workspace stays writable, and the command runs as the same user.
    assert!(env.cwd().join("inside.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("uid.txt")).unwrap(),
        own_uid()
    );
    assert_eq!(sandbox_facts(&env), ["workspace-write; network none"]);

    env.write_settings("[sandbox]\ngit_writable = true\n");
    mock.enqueue(bash("c2", CHANGE_GIT));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    let told = last_told(&mock);
    assert!(told[0].contains("touched\ncommitted"), "{told:?}");
    assert!(mark.exists());

    std::fs::remove_file(&mark).unwrap();
    env.write_settings("");
    mock.enqueue(bash("c3", CHANGE_GIT));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[("MAGI_SANDBOX", "off")]).await;
    let told = last_told(&mock);
    assert!(told[0].contains("touched\ncommitted"), "{told:?}");
    assert!(mark.exists());
}

/// Clears the read-only flag of the mount at its argument with `mount_setattr`, which
/// Landlock does not refuse (a command running as root keeps, in the launcher's user
/// namespace, the capability it needs).
const LIFT: &str = "import ctypes, sys\n\
class Attr(ctypes.Structure):\n    \
_fields_ = [(n, ctypes.c_uint64) for n in ('set', 'clr', 'prop', 'userns')]\n\
libc = ctypes.CDLL(None, use_errno=True)\n\
rc = libc.syscall(442, -100, sys.argv[1].encode(), 0, ctypes.byref(Attr(0, 1, 0, 0)), 32)\n\
print('lifted' if rc == 0 else 'refused')\n";

#[tokio::test]
async fn a_command_cannot_lift_the_read_only_mount() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    repository(&env.cwd());
    std::fs::write(env.root().join("lift.py"), LIFT).unwrap();
    let command = format!(
        "umount .git; python3 {} \"$PWD/.git\"; touch .git/mark && echo touched",
        env.root().join("lift.py").display()
    );
    mock.enqueue(bash("c1", &command));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    let told = last_told(&mock);
    assert!(!env.cwd().join(".git/mark").exists(), "{told:?}");
    assert!(
        !told[0].contains("touched") && !told[0].contains("lifted"),
        "{told:?}"
    );
}

/// A worktree's `.git` is a file naming its git directory inside the main repository's
/// `.git`: both are kept read-only, though they lie in a temporary directory, which
/// commands may otherwise write.
#[tokio::test]
async fn a_worktrees_git_directories_are_read_only_too() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    let main = tempfile::tempdir().unwrap();
    repository(main.path());
    let worktree = env.cwd();
    git(
        main.path(),
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "wt",
            worktree.to_str().unwrap(),
        ],
    );
    mock.enqueue(bash("c1", CHANGE_GIT));
    mock.enqueue(Reply::stream().text(["Done."]));
    exec_all(&env, &mock, &[]).await;
    let told = last_told(&mock);
    assert!(told[0].contains("Read-only file system"), "{told:?}");
    assert!(!told[0].contains("committed"), "{told:?}");
    assert!(worktree.join("inside.txt").exists());
}

#[tokio::test]
async fn without_user_namespaces_git_is_protected_from_the_file_tools_only() {
    if !available() {
        return;
    }
    let mock = MockServer::start().await;
    let env = TestEnv::new();
    repository(&env.cwd());
    let no_userns = [("MAGI_SANDBOX_NO_USERNS", "1")];
    mock.enqueue(bash("c1", "touch .git/one").tool_call(
        "c2",
        "bash",
        [json!({ "command": "touch .git/two" }).to_string().as_str()],
    ));
    mock.enqueue(Reply::stream().text(["Done."]));
    let output = exec_all(&env, &mock, &no_userns).await;
    let stderr = stderr(&output);
    let notice = "The sandbox cannot keep .git read-only for commands: MAGI_SANDBOX_NO_USERNS \
                  is set. .git is protected from the file tools only.";
    assert_eq!(stderr.matches(notice).count(), 1, "{stderr}");
    assert!(env.cwd().join(".git/one").exists() && env.cwd().join(".git/two").exists());
    assert_eq!(
        sandbox_facts(&env),
        ["workspace-write; network none; .git not protected"; 2]
    );

    // The file tools still keep it.
    let target = env.cwd().join(".git/three");
    mock.enqueue(
        Reply::stream().tool_call(
            "w1",
            "write",
            [json!({ "path": target, "content": "x\n" })
                .to_string()
                .as_str()],
        ),
    );
    mock.enqueue(Reply::stream().text(["Could not."]));
    exec_all(&env, &mock, &no_userns).await;
    assert!(!target.exists(), "{:?}", last_told(&mock));
}

#[tokio::test]
async fn doctor_says_whether_git_is_read_only_for_commands() {
    if !available() {
        return;
    }
    let env = TestEnv::new();
    repository(&env.cwd());
    let output = env.run_cli(&["doctor"]).await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("user namespaces available"), "{text}");
    assert!(
        text.contains(".git is read-only for commands (a read-only mount) and the file tools"),
        "{text}"
    );

    let env = env.var("MAGI_SANDBOX_NO_USERNS", "1");
    let output = env.run_cli(&["doctor"]).await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("warning  sandbox: workspace-write; network none; .git not protected"),
        "{text}"
    );
    assert!(
        text.contains(".git is protected from the file tools only: commands may change it"),
        "{text}"
    );
}
