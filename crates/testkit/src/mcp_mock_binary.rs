//! Finding the `magi-mock-mcp` binary from another package's tests and benchmarks.
//!
//! Cargo tells a package's own tests where its binaries are, but not another
//! package's, so the binary is built here through cargo itself (a no-op when it is up
//! to date) and its path read from cargo's report. Building every time, rather than
//! trusting a binary already in the target folder, means a test never runs a stale
//! server.
//!
//! It is built the way `cargo test --workspace` builds it (this package's integration
//! test needs the package's binaries), so the features match that run's and after it
//! nothing is compiled again.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// The name of the mock MCP server's binary.
pub const MOCK_MCP_BIN: &str = "magi-mock-mcp";

/// This package's integration test, whose build includes the package's binaries.
const TESTKIT_TEST: &str = "server";

/// Variables cargo sets for the test it runs, which the nested cargo must not see:
/// build scripts that watch them (`rerun-if-env-changed`) would run again, and so
/// would everything built on them, once here and once more in the next plain build.
const SET_FOR_TESTS: [&str; 8] = [
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "OUT_DIR",
];

/// Prefixes of more such variables (`CARGO_PKG_NAME`, `CARGO_PKG_VERSION_MAJOR`, …).
const SET_FOR_TESTS_PREFIXES: [&str; 2] = ["CARGO_PKG_", "CARGO_CFG_"];

/// Most compiler messages a failed build's error repeats.
const ERRORS_SHOWN: usize = 5;

/// The path of an up-to-date `magi-mock-mcp`, built (once per process) by the cargo
/// running the tests, into the same target folder, in the test profile.
///
/// The error says why the build failed.
pub fn mock_mcp_server() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> Result<PathBuf, String> {
    // Cargo names itself to the tests it runs; outside cargo, the one on PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let mut command = Command::new(&cargo);
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if SET_FOR_TESTS.contains(&key_text.as_ref())
            || SET_FOR_TESTS_PREFIXES
                .iter()
                .any(|prefix| key_text.starts_with(prefix))
        {
            command.env_remove(&key);
        }
    }
    let mut child = command
        .args(["test", "--workspace", "--no-run", "--quiet"])
        .args(["--message-format=json", "--test", TESTKIT_TEST])
        .arg("--manifest-path")
        .arg(manifest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", cargo.to_string_lossy()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| "cargo's output is not readable".to_owned())?;
    let mut executable = None;
    let mut errors = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("cannot read cargo's output: {e}"))?;
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        match message["reason"].as_str() {
            Some("compiler-artifact")
                if message["target"]["name"] == MOCK_MCP_BIN
                    && message["profile"]["test"] == false =>
            {
                executable = message["executable"].as_str().map(PathBuf::from);
            }
            Some("compiler-message")
                if message["message"]["level"] == "error" && errors.len() < ERRORS_SHOWN =>
            {
                errors.extend(message["message"]["rendered"].as_str().map(str::to_owned));
            }
            _ => {}
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("cannot wait for cargo: {e}"))?;
    match executable {
        Some(path) if status.success() => Ok(path),
        _ => Err(format!(
            "building {MOCK_MCP_BIN} failed ({status}):\n{}",
            errors.join("\n")
        )),
    }
}
