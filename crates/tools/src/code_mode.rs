//! `code_mode`: a JavaScript script the model writes, run in an embedded engine
//! (`engine`), whose result is what it printed and what it returned. Its schema and
//! its result live here; the backend's turn runs it (`magi_core`'s call service), since
//! its nested tool calls are calls of the turn, never a blocking thread of this crate
//! on its own. See docs/code-mode.md.

mod clock;
mod describe;
mod engine;

use std::path::Path;

use magi_protocol::limits::{CODE_MODE_CODE_BYTES, CODE_MODE_RESULT_BYTES};
use serde::Deserialize;
use serde_json::json;

use crate::facts::{self, CodeModeLimit, Facts};
use crate::{TRANSCRIPT_LINES, ToolDefinition, ToolOutput, ToolReport};

pub use clock::ScriptClock;
pub use describe::describe;
pub use engine::{NoTools, ScriptEnd, ScriptHost, ScriptLimits, ScriptOutcome, run_script};

/// The file of the call's assets that keeps a result too long for the model whole.
pub const CODE_MODE_OUTPUT_FILE: &str = "output.txt";

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::CodeMode.name(),
        description: "Run a JavaScript script (QuickJS, ES2023) in one step, to do what \
                      would take several rounds: loop, filter, combine. The script is the \
                      body of an async function: `await` works at its top level and \
                      `return` gives its value. Its result is what it printed \
                      (`console.log`, `console.error`, `print`; non-strings as JSON) \
                      followed by its return value (JSON when not a string). There is no \
                      file system, network, process or module access but through \
                      `tools`; an uncaught error fails the call with its message and \
                      line. Limits: wall time, memory, tool calls and output, as \
                      configured.",
        parameters: json!({
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "description": "The script: statements of an async function body."
                }
            },
            "required": ["code"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    code: String,
}

/// The script of a call's arguments (JSON text). The error is what the model is told.
pub fn parse_code(arguments: &str) -> Result<String, String> {
    let arguments: Arguments = serde_json::from_str(arguments).map_err(|e| {
        format!("The arguments were not understood ({e}): give {{\"code\": \"...\"}}.")
    })?;
    if arguments.code.trim().is_empty() {
        return Err("The script is empty: give its statements in `code`.".into());
    }
    if arguments.code.len() > CODE_MODE_CODE_BYTES {
        return Err(format!(
            "The script is {} bytes, over the {CODE_MODE_CODE_BYTES}-byte bound: split the \
             work into smaller scripts.",
            arguments.code.len()
        ));
    }
    Ok(arguments.code)
}

/// The `[code_mode]` settings as a script's limits name them to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSettings {
    /// `timeout_secs`.
    pub timeout_secs: u64,
    /// `max_tool_calls`.
    pub max_tool_calls: usize,
    /// `memory_mib`.
    pub memory_mib: usize,
    /// The output bound in bytes.
    pub output_bytes: usize,
}

impl LimitSettings {
    /// The engine's limits.
    pub fn script_limits(self) -> ScriptLimits {
        ScriptLimits {
            timeout: std::time::Duration::from_secs(self.timeout_secs),
            max_tool_calls: self.max_tool_calls,
            memory_bytes: self.memory_mib.saturating_mul(1_048_576),
            output_bytes: self.output_bytes,
        }
    }
}

/// The report of a script that ran: its result as the model is given it (cut to
/// [`CODE_MODE_RESULT_BYTES`], the whole kept as [`CODE_MODE_OUTPUT_FILE`] in
/// `assets_dir` when there is one), its facts and its transcript lines.
pub fn report(
    outcome: &ScriptOutcome,
    settings: LimitSettings,
    wall_ms: u64,
    assets_dir: Option<&Path>,
) -> ToolReport {
    let (text, summary, is_error) = result_text(outcome, settings);
    let content = projected(text, assets_dir);
    let (limit, error_line) = match &outcome.end {
        ScriptEnd::Stopped(limit) => (Some(*limit), None),
        ScriptEnd::Threw { line, .. } => (None, *line),
        _ => (None, None),
    };
    let transcript = outcome
        .printed
        .lines()
        .take(TRANSCRIPT_LINES)
        .map(|l| facts::cut(l, facts::FACT_STRING_BYTES))
        .collect();
    ToolReport {
        output: ToolOutput {
            content,
            summary,
            is_error,
        },
        facts: Some(Facts::CodeMode {
            nested_started: outcome.started,
            nested_completed: outcome.completed,
            nested_failed: outcome.failed,
            wall_ms,
            output_bytes: outcome.printed.len() as u64,
            limit,
            error_line,
        }),
        preview: None,
        cancelled: outcome.end == ScriptEnd::Cancelled,
        transcript,
    }
}

/// The result's whole text, its summary, and whether the call failed.
fn result_text(outcome: &ScriptOutcome, settings: LimitSettings) -> (String, String, bool) {
    let printed = outcome.printed.trim_end_matches('\n');
    let calls = counted(outcome.started, "tool call", "tool calls");
    let so_far = if printed.is_empty() {
        String::new()
    } else {
        format!("\n\nWhat it printed before it stopped:\n{printed}")
    };
    match &outcome.end {
        ScriptEnd::Returned(value) => {
            let text = match (printed.is_empty(), value) {
                (true, None) => {
                    "The script completed; it printed nothing and returned nothing.".to_owned()
                }
                (true, Some(value)) => value.clone(),
                (false, None) => printed.to_owned(),
                (false, Some(value)) => format!("{printed}\n\nReturned:\n{value}"),
            };
            (text, format!("completed, {calls}"), false)
        }
        ScriptEnd::Threw { message, line } => {
            let place = line.map_or(String::new(), |l| format!(" at line {l}"));
            (
                format!("The script failed{place}: {message}{so_far}"),
                "script error".into(),
                true,
            )
        }
        ScriptEnd::Stopped(limit) => {
            let why = match limit {
                CodeModeLimit::Time => format!(
                    "it ran past the time limit of {} s ([code_mode] timeout_secs)",
                    settings.timeout_secs
                ),
                CodeModeLimit::ToolCalls => format!(
                    "it tried to start more than {} tool calls ([code_mode] max_tool_calls)",
                    settings.max_tool_calls
                ),
                CodeModeLimit::Memory => format!(
                    "it ran out of its {} MiB of memory ([code_mode] memory_mib)",
                    settings.memory_mib
                ),
                CodeModeLimit::Output => format!(
                    "it printed more than the {}-byte output bound",
                    settings.output_bytes
                ),
            };
            (
                format!(
                    "The script was stopped: {why}, after {calls} ({} completed, {} failed) \
                     and {} printed.{so_far}",
                    outcome.completed,
                    outcome.failed,
                    counted(outcome.printed.len() as u64, "byte", "bytes")
                ),
                format!("stopped: {} limit", limit_name(*limit)),
                true,
            )
        }
        ScriptEnd::Cancelled => (
            format!("The script was cancelled with the turn, after {calls}.{so_far}"),
            "cancelled".into(),
            true,
        ),
        ScriptEnd::Stalled => (
            format!(
                "The script awaited something that never settles (a promise nothing \
                 resolves), so it could not go on; it was stopped after {calls}.{so_far}"
            ),
            "never settled".into(),
            true,
        ),
    }
}

/// A limit's name as summaries and cards show it.
pub fn limit_name(limit: CodeModeLimit) -> &'static str {
    match limit {
        CodeModeLimit::Time => "time",
        CodeModeLimit::ToolCalls => "tool call",
        CodeModeLimit::Memory => "memory",
        CodeModeLimit::Output => "output",
    }
}

/// `text` within [`CODE_MODE_RESULT_BYTES`]: a longer one is cut on a character
/// boundary, kept whole in the call's assets, and the model told where.
fn projected(text: String, assets_dir: Option<&Path>) -> String {
    if text.len() <= CODE_MODE_RESULT_BYTES {
        return text;
    }
    let total = text.len();
    let mut end = CODE_MODE_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let kept = assets_dir.and_then(|dir| {
        let path = dir.join(CODE_MODE_OUTPUT_FILE);
        std::fs::create_dir_all(dir).ok()?;
        std::fs::write(&path, text.as_bytes()).ok()?;
        Some(path)
    });
    let whole = match kept {
        Some(path) => format!("the whole result is in {}", path.display()),
        None => "the rest was not kept".to_owned(),
    };
    format!(
        "{}\n[result cut: the first {end} of {total} bytes shown; {whole}]",
        &text[..end]
    )
}

fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests;
