use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::*;

fn limits() -> LimitSettings {
    LimitSettings {
        timeout_secs: 30,
        max_tool_calls: 64,
        memory_mib: 64,
        output_bytes: 4_096,
    }
}

fn run_with(
    code: &str,
    settings: LimitSettings,
    tools: &[&str],
    host: &mut dyn ScriptHost,
) -> ScriptOutcome {
    let tools: Vec<String> = tools.iter().map(|t| (*t).to_owned()).collect();
    run_script(
        code,
        &tools,
        settings.script_limits(),
        Arc::new(ScriptClock::start()),
        Arc::new(|| false),
        host,
    )
}

fn run(code: &str) -> ScriptOutcome {
    run_with(code, limits(), &[], &mut NoTools)
}

#[test]
fn printed_lines_and_the_return_value_make_the_result() {
    let outcome = run(
        "console.log('a', 1, {b: [2]});\nprint('p');\nconsole.error('e');\nreturn {sum: 1 + 2};",
    );
    assert_eq!(outcome.printed, "a 1 {\"b\":[2]}\np\ne\n");
    assert_eq!(outcome.end, ScriptEnd::Returned(Some("{\"sum\":3}".into())));
    let result = report(&outcome, limits(), 3, None);
    assert_eq!(
        result.output.content,
        "a 1 {\"b\":[2]}\np\ne\n\nReturned:\n{\"sum\":3}"
    );
    assert!(!result.output.is_error);
    assert_eq!(result.transcript, vec!["a 1 {\"b\":[2]}", "p", "e"]);
    // A string is returned as it is; nothing returned is none.
    assert_eq!(
        run("return 'text'").end,
        ScriptEnd::Returned(Some("text".into()))
    );
    assert_eq!(run("let x = 1;").end, ScriptEnd::Returned(None));
    let empty = report(&run("let x = 1;"), limits(), 1, None);
    assert!(
        empty
            .output
            .content
            .contains("printed nothing and returned nothing")
    );
}

#[test]
fn top_level_await_works() {
    let outcome = run("const v = await Promise.resolve(41);\nreturn v + 1;");
    assert_eq!(outcome.end, ScriptEnd::Returned(Some("42".into())));
}

#[test]
fn uncaught_errors_and_syntax_errors_name_the_script_line() {
    let outcome = run("let a = 1;\nlet b = 2;\nthrow new TypeError('bad ' + a);");
    assert_eq!(
        outcome.end,
        ScriptEnd::Threw {
            message: "TypeError: bad 1".into(),
            line: Some(3)
        }
    );
    let result = report(&outcome, limits(), 1, None);
    assert!(result.output.is_error);
    assert!(
        result
            .output
            .content
            .starts_with("The script failed at line 3: TypeError: bad 1")
    );
    match run("let a = 1;\nlet = = 2;").end {
        ScriptEnd::Threw { message, line } => {
            assert!(message.starts_with("SyntaxError"), "{message}");
            assert_eq!(line, Some(2));
        }
        other => panic!("{other:?}"),
    }
    // An error thrown after an await is the same.
    match run("await null;\n\nundefinedFunction();").end {
        ScriptEnd::Threw { message, line } => {
            assert!(message.starts_with("ReferenceError"), "{message}");
            assert_eq!(line, Some(3));
        }
        other => panic!("{other:?}"),
    }
    // A thrown non-error is its text, and the script's own null is no memory failure.
    assert!(
        matches!(run("throw null;").end, ScriptEnd::Threw { message, .. } if message == "Error: the script threw null")
    );
    assert!(
        matches!(run("throw 'plain';").end, ScriptEnd::Threw { message, .. } if message == "plain")
    );
}

#[test]
fn a_script_awaiting_what_never_settles_ends() {
    let outcome =
        run("console.log('before');\nawait new Promise(() => {});\nconsole.log('after');");
    assert_eq!(outcome.end, ScriptEnd::Stalled);
    assert_eq!(outcome.printed, "before\n");
}

#[test]
fn the_time_limit_stops_a_busy_loop() {
    let settings = LimitSettings {
        timeout_secs: 1,
        ..limits()
    };
    let outcome = run_with(
        "console.log('x');\nwhile (true) {}",
        settings,
        &[],
        &mut NoTools,
    );
    assert_eq!(outcome.end, ScriptEnd::Stopped(CodeModeLimit::Time));
    let result = report(&outcome, settings, 1000, None);
    assert!(
        result
            .output
            .content
            .contains("time limit of 1 s ([code_mode] timeout_secs)")
    );
    assert!(result.output.content.ends_with("before it stopped:\nx"));
    // Catching does not keep it going: the interrupt cannot be caught.
    let caught = run_with(
        "try { while (true) {} } catch (e) {}\nwhile (true) {}",
        settings,
        &[],
        &mut NoTools,
    );
    assert_eq!(caught.end, ScriptEnd::Stopped(CodeModeLimit::Time));
}

#[test]
fn cancellation_interrupts_at_once() {
    // The cancel closure is polled by the engine's interrupt handler while the script
    // spins: it turns true on its hundredth poll, so the script is surely running.
    let polls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&polls);
    let outcome = run_script(
        "while (true) {}",
        &[],
        limits().script_limits(),
        Arc::new(ScriptClock::start()),
        Arc::new(move || counted.fetch_add(1, Ordering::Relaxed) >= 100),
        &mut NoTools,
    );
    assert!(polls.load(Ordering::Relaxed) > 100);
    assert_eq!(outcome.end, ScriptEnd::Cancelled);
    assert!(report(&outcome, limits(), 1, None).cancelled);
}

#[test]
fn the_memory_limit_stops_a_script_that_allocates_without_end() {
    let settings = LimitSettings {
        memory_mib: 8,
        ..limits()
    };
    let outcome = run_with(
        "const keep = [];\nwhile (true) keep.push('x'.repeat(1024) + keep.length);",
        settings,
        &[],
        &mut NoTools,
    );
    assert_eq!(outcome.end, ScriptEnd::Stopped(CodeModeLimit::Memory));
}

#[test]
fn the_output_bound_stops_a_script_that_prints_without_end() {
    let outcome = run("for (let i = 0; ; i++) { try { console.log('line ' + i); } catch (e) {} }");
    assert_eq!(outcome.end, ScriptEnd::Stopped(CodeModeLimit::Output));
    assert!(outcome.printed.len() <= limits().output_bytes);
    assert!(outcome.printed.starts_with("line 0\n"));
}

#[test]
fn a_long_result_is_cut_and_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let settings = LimitSettings {
        output_bytes: 1_048_576,
        ..limits()
    };
    let outcome = run_with("return 'é'.repeat(20000);", settings, &[], &mut NoTools);
    let result = report(&outcome, settings, 1, Some(dir.path()));
    assert!(result.output.content.len() < CODE_MODE_RESULT_BYTES + 200);
    assert!(result.output.content.contains("[result cut: the first"));
    let kept = std::fs::read_to_string(dir.path().join(CODE_MODE_OUTPUT_FILE)).unwrap();
    assert_eq!(kept, "é".repeat(20000));
}

/// A host answering each call with its tool and arguments, or failing `fail`.
struct Echo {
    started: Vec<(u64, String, String)>,
    queue: VecDeque<(u64, Result<String, String>)>,
}

impl ScriptHost for Echo {
    fn start(&mut self, sequence: u64, tool: &str, arguments: String) {
        let result = if tool == "fail" {
            Err(format!("{tool} failed"))
        } else {
            Ok(format!("{tool}:{arguments}"))
        };
        self.started.push((sequence, tool.to_owned(), arguments));
        self.queue.push_back((sequence, result));
    }

    fn wait(&mut self, _timeout: Duration) -> Option<(u64, Result<String, String>)> {
        // The last started ends first, to show ends are matched by number.
        self.queue.pop_back()
    }
}

fn echo() -> Echo {
    Echo {
        started: Vec::new(),
        queue: VecDeque::new(),
    }
}

#[test]
fn nested_calls_resolve_with_their_text_and_reject_with_an_error() {
    let mut host = echo();
    let outcome = run_with(
        "const one = await tools.read({path: 'a'});\n\
         const both = await Promise.all([tools.read({path: 'b'}), tools.grep({pattern: 'x'})]);\n\
         let caught;\n\
         try { await tools.fail({}); } catch (e) { caught = e instanceof Error && e.message; }\n\
         return [one, both, caught, typeof tools.code_mode];",
        limits(),
        &["read", "grep", "fail"],
        &mut host,
    );
    assert_eq!(
        outcome.end,
        ScriptEnd::Returned(Some(
            r#"["read:{\"path\":\"a\"}",["read:{\"path\":\"b\"}","grep:{\"pattern\":\"x\"}"],"fail failed","undefined"]"#.into()
        ))
    );
    let sequences: Vec<u64> = host.started.iter().map(|s| s.0).collect();
    assert_eq!(sequences, [1, 2, 3, 4]);
    assert_eq!(
        (outcome.started, outcome.completed, outcome.failed),
        (4, 3, 1)
    );
    // An uncaught nested failure fails the script with its message, at the line of
    // the call.
    let mut host = echo();
    let outcome = run_with(
        "let x = 1;\n\nawait tools.fail();",
        limits(),
        &["fail"],
        &mut host,
    );
    assert!(
        matches!(outcome.end, ScriptEnd::Threw { ref message, line: Some(3) } if message == "Error: fail failed"),
        "{outcome:?}"
    );
}

#[test]
fn the_tool_call_limit_stops_the_script() {
    let settings = LimitSettings {
        max_tool_calls: 2,
        ..limits()
    };
    let mut host = echo();
    let outcome = run_with(
        "for (let i = 0; i < 5; i++) { try { await tools.read({path: String(i)}); } catch (e) {} }",
        settings,
        &["read"],
        &mut host,
    );
    assert_eq!(outcome.end, ScriptEnd::Stopped(CodeModeLimit::ToolCalls));
    assert_eq!(outcome.started, 2);
    let result = report(&outcome, settings, 1, None);
    assert!(result.output.content.contains("more than 2 tool calls ([code_mode] max_tool_calls), after 2 tool calls (2 completed, 0 failed)"), "{}", result.output.content);
}

#[test]
fn the_description_stays_within_its_budget() {
    let description = definition().description;
    assert!(
        description.len() <= magi_protocol::limits::CODE_MODE_DESCRIPTION_BYTES,
        "{} bytes",
        description.len()
    );
    for api in ["await", "return", "console.log", "print", "JSON"] {
        assert!(description.contains(api), "{api}");
    }
}

#[test]
fn arguments_take_one_script_within_its_bound() {
    assert_eq!(parse_code(r#"{"code":"return 1"}"#), Ok("return 1".into()));
    for (arguments, says) in [
        (r#"{"code":"  "}"#, "empty"),
        (r#"{}"#, "not understood"),
        (r#"{"code":"1","x":1}"#, "not understood"),
    ] {
        let error = parse_code(arguments).unwrap_err();
        assert!(error.contains(says), "{arguments}: {error}");
    }
    let long = serde_json::json!({"code": "x".repeat(CODE_MODE_CODE_BYTES + 1)}).to_string();
    assert!(parse_code(&long).unwrap_err().contains("bound"));
}

#[test]
fn a_held_clock_does_not_count_until_released() {
    let clock = ScriptClock::start();
    std::thread::sleep(std::time::Duration::from_millis(5));
    clock.hold();
    let at_hold = clock.counted();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Nothing counts while held.
    assert!(clock.counted() <= at_hold);
    clock.release();
    let after = clock.counted();
    assert!(after >= at_hold);
    assert!(clock.wall() >= after + std::time::Duration::from_millis(20));
}
