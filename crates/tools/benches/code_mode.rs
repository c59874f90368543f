//! Code Mode's engine: a fresh QuickJS runtime and context plus a trivial script, the
//! figure that decides whether every call may have an engine of its own; a script that
//! takes 50 nested results of 4 KiB each from a host that answers at once (the engine's
//! own cost of 50 calls, without the calls); and the engine's memory at a script's end.
//!
//! Run with `cargo bench -p magi-tools --bench code_mode`. It prints figures; it asserts
//! nothing about them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a benchmark binary: figures go to stdout, failures may panic"
)]

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use magi_tools::code_mode::{
    LimitSettings, NoTools, ScriptClock, ScriptHost, ScriptOutcome, run_script,
};

/// Timed runs of each row, of which the median is shown.
const RUNS: usize = 200;

const SETTINGS: LimitSettings = LimitSettings {
    timeout_secs: 30,
    max_tool_calls: 64,
    memory_mib: 64,
    output_bytes: 1_048_576,
};

/// A host that answers every call at once with 4 KiB of text.
struct Instant4k(VecDeque<u64>);

impl ScriptHost for Instant4k {
    fn start(&mut self, sequence: u64, _tool: &str, _arguments: String) {
        self.0.push_back(sequence);
    }

    fn wait(&mut self, _timeout: Duration) -> Option<(u64, Result<String, String>)> {
        self.0.pop_front().map(|s| (s, Ok("x".repeat(4_096))))
    }
}

fn run(code: &str, tools: &[String], host: &mut dyn ScriptHost) -> ScriptOutcome {
    run_script(
        code,
        tools,
        SETTINGS.script_limits(),
        Arc::new(ScriptClock::start()),
        Arc::new(|| false),
        host,
    )
}

fn median(mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let began = Instant::now();
            f();
            began.elapsed()
        })
        .collect();
    times.sort();
    (times[RUNS / 2], times[0], times[RUNS - 1])
}

fn show(name: &str, (median, min, max): (Duration, Duration, Duration)) {
    println!(
        "{name:<48} median {:>8.3} ms  (min {:.3}, max {:.3})",
        median.as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
}

fn main() {
    println!("median of {RUNS} runs each");
    let trivial = median(|| {
        run("return 1 + 1;", &[], &mut NoTools);
    });
    show("engine start + `return 1 + 1`", trivial);
    let tools = vec!["read".to_owned()];
    let fifty = "let total = 0;\n\
                 for (let i = 0; i < 50; i++) {\n\
                   const text = await tools.read({ path: `file-${i}.txt` });\n\
                   total += text.length;\n\
                 }\n\
                 return total;";
    let calls = median(|| {
        let outcome = run(fifty, &tools, &mut Instant4k(VecDeque::new()));
        assert_eq!(outcome.completed, 50);
    });
    show("engine start + 50 nested results of 4 KiB", calls);
    let concurrent = "const texts = await Promise.all(Array.from({ length: 50 }, (_, i) =>\n\
                        tools.read({ path: `file-${i}.txt` })));\n\
                      return texts.length;";
    let all = median(|| {
        run(concurrent, &tools, &mut Instant4k(VecDeque::new()));
    });
    show("engine start + 50 nested results, Promise.all", all);
    println!();
    let trivial = run("return 1;", &[], &mut NoTools);
    println!(
        "engine memory at the end of `return 1`: {} bytes",
        trivial.memory_bytes
    );
    let holding = run(
        "const kept = [];\nfor (let i = 0; i < 50; i++) kept.push(await tools.read({ path: String(i) }));\nconsole.log(kept.length);",
        &tools,
        &mut Instant4k(VecDeque::new()),
    );
    println!(
        "engine memory at the end of a script keeping 50 results of 4 KiB: {} bytes",
        holding.memory_bytes
    );
}
