//! Structural search speed: the `ast_grep` tool over a large tree against the `ast-grep`
//! command-line tool with the same pattern on the same tree.
//!
//! Run with `AST_GREP_BENCH_TREE=DIR AST_GREP_CLI=PATH cargo bench -p magi-tools --bench
//! ast_grep`; it prints figures and asserts nothing about them. Without
//! `AST_GREP_BENCH_TREE` it searches this repository's `crates` directory; without
//! `AST_GREP_CLI` (the `ast-grep` binary, e.g. from the npm package `@ast-grep/cli`) it
//! times the tool alone.
//!
//! Both sides search every Rust file the ignore rules leave and report every match: the
//! tool scans the whole tree before it applies its bound, and the CLI's output is read
//! and thrown away.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: figures go to stdout, failures may panic"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Timed runs of each side, of which the median is shown.
const RUNS: usize = 7;

const PATTERNS: [&str; 3] = [
    "Ok($A)",
    "$X.unwrap()",
    "fn $NAME($$$ARGS) -> $R { $$$BODY }",
];

fn main() {
    let tree = std::env::var_os("AST_GREP_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let cli = std::env::var_os("AST_GREP_CLI").map(PathBuf::from);
    println!("tree: {}", tree.display());
    println!("median of {RUNS} runs each");
    println!(
        "{:<40} {:>10} {:>10} {:>10} {:>10} {:>7}",
        "pattern", "tool", "cli", "tool ms", "cli ms", "ratio"
    );
    for pattern in PATTERNS {
        let arguments = serde_json::json!({"pattern": pattern, "language": "rust"}).to_string();
        let mut summary = String::new();
        let tool = median(|| {
            summary = magi_tools::run("ast_grep", &arguments, &tree).summary;
        });
        let (cli_count, cli_time) = match &cli {
            Some(cli) => {
                let count = cli_matches(cli, &tree, pattern);
                (
                    count.to_string(),
                    Some(median(|| {
                        cli_matches(cli, &tree, pattern);
                    })),
                )
            }
            None => ("-".to_owned(), None),
        };
        let shown = summary.split(' ').next().unwrap_or("?").to_owned();
        println!(
            "{:<40} {:>10} {:>10} {:>10.1} {:>10} {:>7}",
            pattern,
            shown,
            cli_count,
            ms(tool),
            cli_time.map_or("-".to_owned(), |t| format!("{:.1}", ms(t))),
            cli_time.map_or("-".to_owned(), |t| format!("{:.2}", ms(tool) / ms(t))),
        );
    }
}

/// The CLI's match count for `pattern`, its output read whole.
fn cli_matches(cli: &Path, tree: &Path, pattern: &str) -> usize {
    let output = Command::new(cli)
        .args([
            "run",
            "--lang",
            "rust",
            "--pattern",
            pattern,
            "--json=stream",
        ])
        .arg(tree)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("the ast-grep CLI runs");
    output
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count()
}

fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}
