//! Search speed: the `grep` tool over the biggest cargo registry source tree on this
//! machine, against ripgrep (`rg`) with the same pattern on the same tree.
//!
//! Run with `cargo bench -p magi-tools --bench search`. It prints figures; it asserts
//! nothing about them. Set `SEARCH_BENCH_TREE` to search another directory.
//!
//! The comparison is kept fair: `rg` runs without a config file, case-sensitively, with
//! `--no-require-git` (the tool honours `.gitignore` outside git repositories too), line
//! numbers on, and its output read and thrown away. The tool stops at
//! `GREP_TOOL_MATCHES` matches, so the ratio is only taken for patterns under that
//! bound; a common pattern is timed separately as "bounded", against `rg --sort path`
//! (which walks in the tool's order) stopped after as many lines.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: figures go to stdout, failures may panic"
)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use magi_protocol::limits::GREP_TOOL_MATCHES;

/// Timed runs of each side, of which the median is shown.
const RUNS: usize = 15;

/// What a pattern stands for in the table.
struct Case {
    label: &'static str,
    pattern: &'static str,
    /// Whether it matches more than the bound: timed as "bounded".
    bounded: bool,
}

const CASES: [Case; 5] = [
    Case {
        label: "rare literal",
        pattern: "unreachable_unchecked",
        bounded: false,
    },
    Case {
        label: "rare literal 2",
        pattern: "transmute_copy",
        bounded: false,
    },
    Case {
        label: "regex",
        pattern: r"unsafe\s+impl\s+Send",
        bounded: false,
    },
    Case {
        label: "regex, no literal",
        pattern: r"\d{4}-\d{2}-\d{2}T\d{2}",
        bounded: false,
    },
    Case {
        label: "common literal",
        pattern: "fn ",
        bounded: true,
    },
];

fn main() {
    let Some(tree) = tree() else {
        println!(
            "no cargo registry sources found ($CARGO_HOME/registry/src or \
             ~/.cargo/registry/src); set SEARCH_BENCH_TREE to a directory to search"
        );
        return;
    };
    let (files, bytes) = size_of(&tree);
    println!("tree: {}", tree.display());
    println!(
        "      {files} files, {:.1} MiB (everything under it, ignored files included)",
        bytes as f64 / 1_048_576.0
    );
    let rg = ripgrep();
    match &rg {
        Some(rg) => {
            let version = Command::new(rg).arg("--version").output().expect("rg runs");
            let version = String::from_utf8_lossy(&version.stdout);
            println!("rg:   {}", version.lines().next().unwrap_or("?"));
            let searched = rg_output(rg, &tree, &["--files"]).lines().count();
            println!("      {searched} files searched once ignore rules and hidden files apply");
        }
        None => println!(
            "rg not found: install it with `cargo install ripgrep --locked` (or your \
             package manager, e.g. `apt-get install ripgrep`) for the comparison; \
             timing the tool alone"
        ),
    }
    println!("median of {RUNS} runs each; the tool's bound is {GREP_TOOL_MATCHES} matches");
    println!();
    println!(
        "{:<18} {:<26} {:>8} {:>8} {:>10} {:>10} {:>7}",
        "case", "pattern", "tool", "rg", "tool ms", "rg ms", "ratio"
    );

    let mut notes = Vec::new();
    for case in &CASES {
        let arguments = serde_json::json!({
            "pattern": case.pattern,
            "path": tree.to_str().expect("a UTF-8 tree path"),
        })
        .to_string();
        let search = || magi_tools::run("grep", &arguments, &tree);
        let first = search();
        assert!(!first.is_error, "{}", first.content);
        let tool_matches = leading_number(&first.summary);
        let tool_cut = first.summary.contains("cut at the bound");
        let (tool_time, rg_lines, rg_time) = match &rg {
            None => (median(|| drop(search())), None, None),
            Some(rg) => {
                let lines = rg_output(rg, &tree, &["--count", "--", case.pattern])
                    .lines()
                    .filter_map(|line| line.rsplit(':').next()?.parse::<usize>().ok())
                    .sum::<usize>();
                // As many lines as the tool reads before it stops, in its order.
                let wanted = GREP_TOOL_MATCHES + 1;
                let (tool, rg) = medians(
                    || drop(search()),
                    || {
                        if tool_cut {
                            rg_first_lines(rg, &tree, case.pattern, wanted);
                        } else {
                            rg_discarding(rg, &tree, case.pattern);
                        }
                    },
                );
                (tool, Some(lines), Some(rg))
            }
        };

        let show = |n: Option<usize>| n.map_or("-".to_owned(), |n| n.to_string());
        let ratio = rg_time.map_or("-".to_owned(), |rg| {
            format!("{:.2}x", tool_time.as_secs_f64() / rg.as_secs_f64())
        });
        println!(
            "{:<18} {:<26} {:>8} {:>8} {:>10.1} {:>10} {:>7}",
            if tool_cut {
                "common (bounded)"
            } else {
                case.label
            },
            case.pattern,
            format!("{}{}", tool_matches, if tool_cut { "+" } else { "" }),
            show(rg_lines),
            ms(tool_time),
            rg_time.map_or("-".to_owned(), |t| format!("{:.1}", ms(t))),
            ratio,
        );
        if tool_cut {
            let compared = rg_lines.map_or(String::new(), |lines| {
                format!(
                    " (of {lines} lines rg finds); rg is timed with `--sort path` until it \
                     printed {} lines, the same work in the same order",
                    GREP_TOOL_MATCHES + 1
                )
            });
            notes.push(format!(
                "\"{}\": the tool stopped at its bound of {GREP_TOOL_MATCHES} matches{compared}",
                case.pattern,
            ));
        } else if case.bounded {
            notes.push(format!(
                "\"{}\" was expected past the bound but was not cut",
                case.pattern
            ));
        }
        if let Some(lines) = rg_lines
            && !tool_cut
            && lines != tool_matches
        {
            notes.push(format!(
                "\"{}\": the tool found {tool_matches} matching lines, rg {lines}",
                case.pattern
            ));
        }
    }
    println!();
    println!("tool/rg above 1 means the tool is slower; counts are matching lines");
    for note in notes {
        println!("note: {note}");
    }
}

/// The directory to search: `SEARCH_BENCH_TREE`, or the biggest directory under the
/// cargo registry's sources.
fn tree() -> Option<PathBuf> {
    if let Some(tree) = std::env::var_os("SEARCH_BENCH_TREE") {
        return Some(PathBuf::from(tree));
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))?;
    std::fs::read_dir(cargo_home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .max_by_key(|path| size_of(path).1)
}

/// Files and bytes under `dir`, everything counted, symbolic links not followed.
fn size_of(dir: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files += 1;
                bytes += entry.metadata().map_or(0, |m| m.len());
            }
        }
    }
    (files, bytes)
}

/// The `rg` to compare with: on the `PATH`, or where `cargo install` puts it.
fn ripgrep() -> Option<PathBuf> {
    let mut candidates = vec![PathBuf::from("rg")];
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        candidates.push(Path::new(&home).join("bin/rg"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join(".cargo/bin/rg"));
    }
    candidates.into_iter().find(|rg| {
        Command::new(rg)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}

/// `rg` with the tool's rules: no config file, case-sensitive, ignore files honoured
/// outside git repositories, binary files skipped, hidden files skipped, in `tree`.
fn rg_command(rg: &Path, tree: &Path) -> Command {
    let mut command = Command::new(rg);
    command
        .current_dir(tree)
        .env_remove("RIPGREP_CONFIG_PATH")
        .args(["--no-config", "--no-require-git", "--case-sensitive"])
        .args(["--color", "never", "--no-heading", "--line-number"])
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// What `rg <args> .` prints.
fn rg_output(rg: &Path, tree: &Path, args: &[&str]) -> String {
    let output = rg_command(rg, tree)
        .args(args)
        .arg(".")
        .output()
        .expect("rg runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs a full `rg -n` search, its output read through a pipe and dropped (a pipe
/// rather than `/dev/null`, so it cannot take a shortcut).
fn rg_discarding(rg: &Path, tree: &Path, pattern: &str) {
    let mut child = rg_command(rg, tree)
        .args(["--", pattern, "."])
        .stdout(Stdio::piped())
        .spawn()
        .expect("rg starts");
    let mut sink = Vec::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_end(&mut sink)
        .expect("rg output");
    child.wait().expect("rg ends");
}

/// Runs `rg --sort path -n` (one thread, the tool's walk order) until it printed
/// `wanted` lines, then stops it.
fn rg_first_lines(rg: &Path, tree: &Path, pattern: &str, wanted: usize) {
    let mut child = rg_command(rg, tree)
        .args(["--sort", "path", "--", pattern, "."])
        .stdout(Stdio::piped())
        .spawn()
        .expect("rg starts");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).split(b'\n');
    for _ in 0..wanted {
        if lines.next().is_none() {
            break;
        }
    }
    drop(lines);
    let _ = child.kill();
    child.wait().expect("rg ends");
}

/// The median time of `RUNS` runs of `f`, after one run to warm the caches.
fn median(mut f: impl FnMut()) -> Duration {
    medians(&mut f, || {}).0
}

/// The median times of `RUNS` runs of `a` and of `b`, after one run of each to warm the
/// caches. Their runs alternate, so a change in the machine's load weighs on both.
fn medians(mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration) {
    a();
    b();
    let mut times = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        times.0.push(timed(&mut a));
        times.1.push(timed(&mut b));
    }
    times.0.sort();
    times.1.sort();
    (times.0[RUNS / 2], times.1[RUNS / 2])
}

fn timed(mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// The number a summary starts with (`42 matches in 3 files`).
fn leading_number(summary: &str) -> usize {
    summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}
