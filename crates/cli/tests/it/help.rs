//! Every command's `--help`, through the real binary: each says what it does and shows
//! an example; `magi-code --help` leads with Mission Control; `magi-code help serve`
//! explains the launch rule (that `serve --help` stays refused is in `launch`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::{Command, Stdio};

use crate::common::*;

/// The help `args` print on stdout, asserting a clean exit and that nothing was touched.
fn help(args: &[&str]) -> String {
    let env = TestEnv::new();
    let output = Command::new(bin())
        .args(args)
        .env_clear()
        .env("MC_HOME", env.mc_home())
        .current_dir(env.cwd())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{args:?}: {output:?}");
    assert!(output.stderr.is_empty(), "{args:?}");
    assert!(!env.mc_home().exists(), "{args:?} touched MC_HOME");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn every_command_says_what_it_does_with_examples() {
    let cases: [(&[&str], &[&str]); 8] = [
        (
            &["--help"],
            &["Mission Control, the interactive client", "magi-code exec"],
        ),
        (
            &["exec", "--help"],
            &[
                "Run one turn in this directory",
                "Stdout carries the final reply alone",
                "  130  interrupted",
                "  3    the run completed, but the model's output limit cut the reply",
                "  4    the run completed, but the provider refused",
                "--continue",
                "magi-code exec --resume",
            ],
        ),
        (
            &["help", "serve"],
            &[
                "Serve the magi-code.local-agent protocol",
                "exactly `magi-code serve --stdio`",
                "refused with exit status 2",
                "magi-code serve --stdio",
            ],
        ),
        (
            &["doctor", "--help"],
            &["Check the setup", "magi-code doctor"],
        ),
        (
            &["mcp", "--help"],
            &[
                "approve or revoke",
                "approved here, by a person",
                "magi-code mcp list",
            ],
        ),
        (
            &["mcp", "list", "--help"],
            &["List the MCP servers", "magi-code mcp list"],
        ),
        (
            &["mcp", "approve", "--help"],
            &[
                "Approve a server's current definition",
                "magi-code mcp approve github",
            ],
        ),
        (
            &["mcp", "revoke", "--help"],
            &["Withdraw the approval", "magi-code mcp revoke github"],
        ),
    ];
    for (args, expected) in cases {
        let text = help(args);
        assert!(text.contains("Example"), "{args:?} has no example:\n{text}");
        for line in expected {
            assert!(text.contains(line), "{args:?} lacks {line:?}:\n{text}");
        }
    }
    // Mission Control comes first, before the list of commands.
    let top = help(&["--help"]);
    assert!(top.find("Mission Control").unwrap() < top.find("Commands:").unwrap());
}
