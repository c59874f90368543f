//! The suite's report for a person: one row a task (passed or failed, model requests,
//! input, cached input and output tokens, wall time), a summary line, then what went
//! wrong with each task that failed.

use std::fmt::Write;

use crate::runner::{Baseline, SuiteReport, TaskReport};
use crate::task::Task;
use crate::usage::{Tokens, Usage};

/// The table of `report`, its summary and the failures' details.
pub fn table(report: &SuiteReport) -> String {
    let mut rows = vec![[
        "task".to_owned(),
        "language".to_owned(),
        "result".to_owned(),
        "requests".to_owned(),
        "input".to_owned(),
        "cached".to_owned(),
        "output".to_owned(),
        "time".to_owned(),
    ]];
    for task in &report.tasks {
        let usage = task.usage;
        rows.push([
            task.task.to_owned(),
            task.language.name().to_owned(),
            if task.passed { "passed" } else { "FAILED" }.to_owned(),
            usage.map_or("?".to_owned(), |u| thousands(u.requests)),
            tokens(usage, |u| u.input_tokens),
            tokens(usage, |u| u.cached_input_tokens),
            tokens(usage, |u| u.output_tokens),
            seconds(task.wall_ms),
        ]);
    }
    let mut out = columns(&rows, 3);
    let total = report.usage;
    let _ = write!(
        out,
        "\npassed {}/{} · requests {} · input {} · cached {}{} · output {} · time {}",
        report.passed,
        report.tasks.len(),
        thousands(total.requests),
        count(total.input_tokens),
        count(total.cached_input_tokens),
        share(total),
        count(total.output_tokens),
        seconds(report.wall_ms),
    );
    if report.usage_unknown > 0 {
        let _ = write!(
            out,
            " (usage unknown for {} tasks, not counted)",
            report.usage_unknown
        );
    }
    out.push('\n');
    for task in report.tasks.iter().filter(|t| !t.passed) {
        out.push_str(&failure(task));
    }
    out
}

/// The tasks, one a row: name, language, kind.
pub fn list(tasks: &[Task]) -> String {
    let mut rows = vec![["task", "language", "kind"].map(str::to_owned)];
    for task in tasks {
        rows.push([
            task.name.to_owned(),
            task.language.name().to_owned(),
            task.kind.to_owned(),
        ]);
    }
    columns(&rows, 0)
}

/// The baseline: each check that fails on the untouched repository with the last line
/// it said (why it failed), each that did not with all its output, then a summary line.
pub fn baselines(baselines: &[Baseline]) -> String {
    let mut out = String::new();
    for baseline in baselines {
        if baseline.failed {
            // The last line the check said, not how it ended.
            let last = baseline
                .output
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty() && !l.starts_with('['))
                .unwrap_or_default();
            let _ = writeln!(out, "{}: fails: {last}", baseline.task);
        } else {
            let _ = writeln!(
                out,
                "{}: the check passed on the untouched repository (it must fail):\n{}",
                baseline.task,
                indent(&baseline.output)
            );
        }
    }
    let failed = baselines.iter().filter(|b| b.failed).count();
    let _ = writeln!(
        out,
        "{failed}/{} checks fail on the untouched repository, as they must",
        baselines.len()
    );
    out
}

fn failure(task: &TaskReport) -> String {
    let mut out = format!("\n{} failed", task.task);
    if let Some(left) = task.replies_left.filter(|left| *left > 0) {
        let _ = write!(out, " ({left} scripted replies left unasked)");
    }
    out.push_str(":\n");
    for problem in &task.problems {
        out.push_str(&indent(problem));
        out.push('\n');
    }
    out
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `rows` as aligned columns, those from `numeric` on aligned right.
fn columns<const N: usize>(rows: &[[String; N]], numeric: usize) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c >= numeric && numeric > 0 {
                    format!("{cell:>width$}", width = widths[c])
                } else {
                    format!("{cell:<width$}", width = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn tokens(usage: Option<Usage>, pick: impl Fn(Usage) -> Tokens) -> String {
    usage.map_or("?".to_owned(), |u| count(pick(u)))
}

/// A token count: exact when every request reported it, `≥N` when some did not, `?`
/// when none did.
fn count(tokens: Tokens) -> String {
    if tokens.complete() {
        thousands(tokens.reported)
    } else if tokens.reported == 0 {
        "?".to_owned()
    } else {
        format!("≥{}", thousands(tokens.reported))
    }
}

/// The cached share of the input, when both are exact.
fn share(usage: Usage) -> String {
    let (cached, input) = (usage.cached_input_tokens, usage.input_tokens);
    if !cached.complete() || !input.complete() || input.reported == 0 {
        return String::new();
    }
    format!(" ({}%)", cached.reported * 100 / input.reported)
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Milliseconds as seconds with one decimal (cut, not rounded), e.g. `1.2 s`.
pub fn seconds(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, ms % 1000 / 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Language;

    fn task(name: &'static str, passed: bool, usage: Option<Usage>) -> TaskReport {
        TaskReport {
            task: name,
            language: Language::Python,
            kind: "fix a failing test",
            passed,
            outcome: None,
            exit_code: Some(0),
            timed_out: false,
            session_id: None,
            usage,
            wall_ms: 1_234,
            replies_left: None,
            problems: vec!["the check failed:\nFAILED (failures=1)".to_owned()],
        }
    }

    #[test]
    fn the_table_tells_unknown_counts_apart_from_zero() {
        let usage = Usage {
            requests: 3,
            input_tokens: Tokens {
                reported: 12_000,
                unreported_requests: 0,
            },
            cached_input_tokens: Tokens {
                reported: 0,
                unreported_requests: 3,
            },
            output_tokens: Tokens {
                reported: 900,
                unreported_requests: 1,
            },
        };
        let report = SuiteReport {
            tasks: vec![task("a", true, Some(usage)), task("b", false, None)],
            passed: 1,
            usage,
            usage_unknown: 1,
            wall_ms: 2_468,
        };
        let table = table(&report);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "task  language  result  requests   input  cached  output   time"
        );
        assert_eq!(
            lines[1],
            "a     python    passed         3  12,000       ?    ≥900  1.2 s"
        );
        assert_eq!(
            lines[2],
            "b     python    FAILED         ?       ?       ?       ?  1.2 s"
        );
        assert_eq!(
            lines[4],
            "passed 1/2 · requests 3 · input 12,000 · cached ? · output ≥900 · time 2.4 s \
             (usage unknown for 1 tasks, not counted)"
        );
        assert!(table.contains("\nb failed:\n    the check failed:\n    FAILED (failures=1)\n"));
    }
}
