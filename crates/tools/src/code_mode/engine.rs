//! The engine behind `code_mode`: one QuickJS runtime per script (through `rquickjs`),
//! with a memory limit, an interrupt handler that stops the script at the time limit,
//! at another limit or when the turn is cancelled, the printing functions captured,
//! and a `tools` object whose functions hand nested calls to a [`ScriptHost`].
//!
//! The script runs as the body of an async function, so `await` works at its top level
//! and `return` gives its value. The engine drives the job queue itself: it runs every
//! pending job, then, while the script's promise is still pending and nested calls
//! are out, waits on the host for the next one to end and settles its promise. A
//! script pending with nothing out can never go on and ends as such.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Exception, Function, Promise, Runtime, Value};

use super::ScriptClock;
use crate::facts::CodeModeLimit;

/// The file name scripts run under: error locations name it, and only its lines are
/// reported.
const SCRIPT_NAME: &str = "script.js";

/// What goes before the script: the one line its reported lines are shifted by.
const WRAP_HEAD: &str = "(async () => { try {\n";
/// What goes after it, on a line of its own so a trailing line comment ends before it.
/// The engine throws `null` only when it cannot allocate even an error; a script's own
/// `throw null` becomes an error here, which needs memory, so a bare `null` reaching
/// the engine always means the memory limit.
const WRAP_TAIL: &str =
    "\n} catch (e) { if (e === null) throw new Error(\"the script threw null\"); throw e; } })()";

/// Longest wait on the host before the engine looks at its clock and the turn's
/// cancellation again; the host answers sooner when a nested call ends.
const HOST_POLL: Duration = Duration::from_millis(50);

/// The printing functions: `console.log`, `console.info` and `console.debug` and
/// `print` print a line; `console.warn` and `console.error` too (the model reads one
/// stream). Strings print as they are; other values as JSON when they have one.
const PRELUDE: &str = r#"(function (emit) {
  const show = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return String(v);
    try { const j = JSON.stringify(v); if (j !== undefined) return j; } catch (e) {}
    return String(v);
  };
  const out = (...args) => { emit(args.map(show).join(" ")); };
  globalThis.console = Object.freeze({ log: out, info: out, debug: out, warn: out, error: out });
  globalThis.print = out;
})"#;

/// The `tools` object: one async function per callable tool. Each hands its call to the
/// host and keeps the promise's ends under the call's number until the host settles it.
/// The error a failed call rejects with is made when the call is, so that its stack,
/// and an uncaught failure's reported line, name the script's line that made the call.
const TOOLS: &str = r#"(function (start, names) {
  const pending = new Map();
  const tools = {};
  for (const name of names) {
    tools[name] = (args) => {
      const error = new Error();
      return new Promise((resolve, reject) => {
        const json = JSON.stringify(args === undefined ? {} : args);
        pending.set(start(name, json === undefined ? "{}" : json), { resolve, reject, error });
      });
    };
  }
  globalThis.tools = Object.freeze(tools);
  return (id, ok, text) => {
    const ends = pending.get(id);
    if (ends === undefined) return;
    pending.delete(id);
    if (ok) { ends.resolve(text); } else { ends.error.message = text; ends.reject(ends.error); }
  };
})"#;

/// The bounds one script runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptLimits {
    /// Wall time, without the time nested calls waited for a person.
    pub timeout: Duration,
    /// Nested tool calls the script may start.
    pub max_tool_calls: usize,
    /// Bytes the engine may allocate.
    pub memory_bytes: usize,
    /// Bytes of printed output kept; printing past them stops the script.
    pub output_bytes: usize,
}

/// Where a script's nested calls go. The engine numbers them 1, 2, … in start order.
pub trait ScriptHost {
    /// Starts nested call `sequence` of `tool` with `arguments` (JSON text). Its end
    /// comes back through [`ScriptHost::wait`].
    fn start(&mut self, sequence: u64, tool: &str, arguments: String);

    /// Waits at most `timeout` for a nested call to end: its number, and the text the
    /// model would have been given or the failure's message.
    fn wait(&mut self, timeout: Duration) -> Option<(u64, Result<String, String>)>;
}

/// A host for a script that may call no tools.
pub struct NoTools;

impl ScriptHost for NoTools {
    fn start(&mut self, _sequence: u64, _tool: &str, _arguments: String) {}

    fn wait(&mut self, _timeout: Duration) -> Option<(u64, Result<String, String>)> {
        None
    }
}

/// How a script ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptEnd {
    /// It returned: its value as text (JSON when not a string), none for `undefined`.
    Returned(Option<String>),
    /// It threw, or did not parse: the error as text, and its line in the script.
    Threw {
        /// The error, as `String(error)` gives it (`TypeError: x is not a function`).
        message: String,
        /// The script's line (1-based) the error names, when it names one.
        line: Option<u32>,
    },
    /// A limit stopped it.
    Stopped(CodeModeLimit),
    /// The turn was cancelled.
    Cancelled,
    /// It awaited something that can never settle: no nested call was out.
    Stalled,
}

/// What a script did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptOutcome {
    /// How it ended.
    pub end: ScriptEnd,
    /// What it printed, a line per call, within the output bound.
    pub printed: String,
    /// Nested calls started.
    pub started: u64,
    /// Nested calls that completed (their promise resolved).
    pub completed: u64,
    /// Nested calls that failed, were denied or cancelled (their promise rejected).
    pub failed: u64,
    /// Bytes the engine had allocated when the script ended.
    pub memory_bytes: u64,
}

/// What the interrupt handler and the script's functions share: why the script must
/// stop, if it must.
struct Stop {
    reason: AtomicU8,
    cancelled: Arc<dyn Fn() -> bool + Send + Sync>,
    clock: Arc<ScriptClock>,
    timeout: Duration,
}

const RUNNING: u8 = 0;
const CANCELLED: u8 = 1;

fn limit_code(limit: CodeModeLimit) -> u8 {
    match limit {
        CodeModeLimit::Time => 2,
        CodeModeLimit::ToolCalls => 3,
        CodeModeLimit::Memory => 4,
        CodeModeLimit::Output => 5,
    }
}

impl Stop {
    /// Records why the script stops; the first reason wins.
    fn set(&self, code: u8) {
        let _ = self
            .reason
            .compare_exchange(RUNNING, code, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Whether the script must stop now, noting why.
    fn check(&self) -> bool {
        if self.reason.load(Ordering::Relaxed) == RUNNING {
            if (self.cancelled)() {
                self.set(CANCELLED);
            } else if self.clock.counted() >= self.timeout {
                self.set(limit_code(CodeModeLimit::Time));
            }
        }
        self.reason.load(Ordering::Relaxed) != RUNNING
    }

    fn end(&self) -> Option<ScriptEnd> {
        let end = match self.reason.load(Ordering::Relaxed) {
            RUNNING => return None,
            CANCELLED => ScriptEnd::Cancelled,
            code => {
                let limit = [
                    CodeModeLimit::Time,
                    CodeModeLimit::ToolCalls,
                    CodeModeLimit::Memory,
                    CodeModeLimit::Output,
                ]
                .into_iter()
                .find(|l| limit_code(*l) == code)
                .unwrap_or(CodeModeLimit::Time);
                ScriptEnd::Stopped(limit)
            }
        };
        Some(end)
    }
}

/// The printed output, kept within its bound.
struct Printed {
    text: String,
    bound: usize,
}

/// Nested calls the script started and the host has not yet been given: number, tool
/// and arguments. The script's `start` function queues them; the engine hands them to
/// the host between jobs.
type Queued = Rc<RefCell<Vec<(u64, String, String)>>>;

/// The nested calls' counts, shared with the `start` function.
struct Calls {
    started: Cell<u64>,
    completed: Cell<u64>,
    failed: Cell<u64>,
    max: u64,
}

/// Runs `code` under `limits`, offering `tools` (their names) through `host`, until it
/// ends. `cancelled` is polled by the interrupt handler and while nested calls are out.
pub fn run_script(
    code: &str,
    tools: &[String],
    limits: ScriptLimits,
    clock: Arc<ScriptClock>,
    cancelled: Arc<dyn Fn() -> bool + Send + Sync>,
    host: &mut dyn ScriptHost,
) -> ScriptOutcome {
    let stop = Arc::new(Stop {
        reason: AtomicU8::new(RUNNING),
        cancelled,
        clock,
        timeout: limits.timeout,
    });
    let printed = Rc::new(RefCell::new(Printed {
        text: String::new(),
        bound: limits.output_bytes,
    }));
    let calls = Rc::new(Calls {
        started: Cell::new(0),
        completed: Cell::new(0),
        failed: Cell::new(0),
        max: u64::try_from(limits.max_tool_calls).unwrap_or(u64::MAX),
    });
    let (end, memory_bytes) = match Runtime::new() {
        Ok(runtime) => {
            runtime.set_memory_limit(limits.memory_bytes);
            let watched = Arc::clone(&stop);
            runtime.set_interrupt_handler(Some(Box::new(move || watched.check())));
            let end = match Context::full(&runtime) {
                Ok(context) => context.with(|ctx| {
                    let run = Run {
                        ctx: &ctx,
                        stop: &stop,
                        printed: &printed,
                        calls: &calls,
                    };
                    run.script(code, tools, host)
                }),
                Err(_) => ScriptEnd::Stopped(CodeModeLimit::Memory),
            };
            let memory = runtime.memory_usage().memory_used_size;
            (end, u64::try_from(memory).unwrap_or(0))
        }
        // Only a failed allocation keeps a runtime from starting.
        Err(_) => (ScriptEnd::Stopped(CodeModeLimit::Memory), 0),
    };
    let text = std::mem::take(&mut printed.borrow_mut().text);
    ScriptOutcome {
        end,
        printed: text,
        started: calls.started.get(),
        completed: calls.completed.get(),
        failed: calls.failed.get(),
        memory_bytes,
    }
}

/// One script's run inside its context.
struct Run<'a, 'js> {
    ctx: &'a Ctx<'js>,
    stop: &'a Arc<Stop>,
    printed: &'a Rc<RefCell<Printed>>,
    calls: &'a Rc<Calls>,
}

impl<'js> Run<'_, 'js> {
    fn script(&self, code: &str, tools: &[String], host: &mut dyn ScriptHost) -> ScriptEnd {
        let ctx = self.ctx;
        let started: Queued = Rc::default();
        let settle = match self.install(tools, &started) {
            Ok(settle) => settle,
            Err(_) => return self.failure(None),
        };
        let mut options = EvalOptions::default();
        options.global = true;
        options.strict = false;
        options.filename = Some(SCRIPT_NAME.to_owned());
        let source = format!("{WRAP_HEAD}{code}{WRAP_TAIL}");
        let promise = match ctx.eval_with_options::<Promise, _>(source, options) {
            Ok(promise) => promise,
            Err(_) => return self.failure(None),
        };
        loop {
            while !self.stop.check() && ctx.execute_pending_job() {}
            // Calls the jobs started go to the host in start order.
            for (sequence, tool, arguments) in started.borrow_mut().drain(..) {
                host.start(sequence, &tool, arguments);
            }
            if let Some(end) = self.stop.end() {
                return end;
            }
            match promise.state() {
                PromiseState::Resolved => {
                    let value = promise.result::<Value>();
                    return match value {
                        Some(Ok(value)) => ScriptEnd::Returned(self.text_of(value)),
                        _ => self.failure(None),
                    };
                }
                PromiseState::Rejected => {
                    let _ = promise.result::<Value>();
                    return self.failure(Some(ctx.catch()));
                }
                PromiseState::Pending => {}
            }
            if self.calls.completed.get() + self.calls.failed.get() >= self.calls.started.get() {
                return ScriptEnd::Stalled;
            }
            let left = self.stop.timeout.saturating_sub(self.stop.clock.counted());
            if let Some((sequence, result)) = host.wait(left.min(HOST_POLL)) {
                let (ok, text, count) = match result {
                    Ok(text) => (true, text, &self.calls.completed),
                    Err(message) => (false, message, &self.calls.failed),
                };
                count.set(count.get() + 1);
                if settle.call::<_, ()>((sequence, ok, text)).is_err() {
                    return self.failure(None);
                }
            }
        }
    }

    /// Defines the printing functions and the `tools` object; returns the function
    /// that settles a nested call's promise.
    fn install(&self, tools: &[String], started: &Queued) -> rquickjs::Result<Function<'js>> {
        let ctx = self.ctx;
        let printed = Rc::clone(self.printed);
        let stop = Arc::clone(self.stop);
        let emit = Function::new(ctx.clone(), move |ctx: Ctx<'js>, line: String| {
            let mut printed = printed.borrow_mut();
            if printed.text.len() + line.len() + 1 > printed.bound {
                stop.set(limit_code(CodeModeLimit::Output));
                return Err(Exception::throw_range(&ctx, "output limit reached"));
            }
            printed.text.push_str(&line);
            printed.text.push('\n');
            Ok(())
        })?;
        let prelude: Function = ctx.eval(PRELUDE)?;
        prelude.call::<_, ()>((emit,))?;
        let calls = Rc::clone(self.calls);
        let stop = Arc::clone(self.stop);
        let queue = Rc::clone(started);
        let start = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, tool: String, arguments: String| {
                let next = calls.started.get() + 1;
                if next > calls.max {
                    stop.set(limit_code(CodeModeLimit::ToolCalls));
                    return Err(Exception::throw_range(&ctx, "tool call limit reached"));
                }
                calls.started.set(next);
                queue.borrow_mut().push((next, tool, arguments));
                Ok(next)
            },
        )?;
        let installer: Function = ctx.eval(TOOLS)?;
        installer.call((start, tools.to_vec()))
    }

    /// A value as the script's result: a string as it is, anything else as JSON (or as
    /// `String(value)` when it has none); none for `undefined`.
    fn text_of(&self, value: Value<'js>) -> Option<String> {
        if value.is_undefined() {
            return None;
        }
        if let Some(text) = value.as_string() {
            return text.to_string().ok();
        }
        if let Ok(Some(json)) = self.ctx.json_stringify(value.clone()) {
            return json.to_string().ok();
        }
        coerced(&value)
    }

    /// How a script ends on an exception: `thrown` when it is known, else the context's
    /// pending one. An interrupt or a memory failure says which limit stopped it.
    fn failure(&self, thrown: Option<Value<'js>>) -> ScriptEnd {
        if let Some(end) = self.stop.end() {
            return end;
        }
        let thrown = thrown.unwrap_or_else(|| self.ctx.catch());
        let (message, stack) = match thrown
            .as_object()
            .and_then(|o| Exception::from_object(o.clone()))
        {
            Some(error) => (coerced(&thrown), error.stack()),
            None => (coerced(&thrown), None),
        };
        let message = message.unwrap_or_else(|| "the script threw a value with no text".into());
        if thrown.is_null() || message.contains("out of memory") {
            return ScriptEnd::Stopped(CodeModeLimit::Memory);
        }
        let line = stack.as_deref().and_then(script_line);
        ScriptEnd::Threw { message, line }
    }
}

/// `String(value)`, if it can be had.
fn coerced(value: &Value<'_>) -> Option<String> {
    value.get::<rquickjs::Coerced<String>>().ok().map(|c| c.0)
}

/// The script line the first frame of `stack` in the script names, shifted back by the
/// wrapper's line.
fn script_line(stack: &str) -> Option<u32> {
    let marker = format!("{SCRIPT_NAME}:");
    let at = stack.find(&marker)? + marker.len();
    let digits: String = stack[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let line: u32 = digits.parse().ok()?;
    // The wrapper's first line holds no script; an error there is the script's first.
    Some(line.saturating_sub(1).max(1))
}
