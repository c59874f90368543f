//! The tools the agent can call. Each has a JSON Schema the model sees, runs against
//! the session's working directory, and reports two things: what the model is given,
//! and a short safe summary for activities and history.

mod bash;
mod diagnostics;
mod edit;
mod editing;
pub mod facts;
mod find;
mod grep;
mod hash_edit;
mod jobs;
mod list;
mod preview;
mod read;
mod scope;
pub mod tracking;
mod walk;
mod web_fetch;
mod write;

use std::path::Path;

use serde_json::Value;

pub use diagnostics::{Projection, process_diagnostics};
pub use facts::{AppliedPreview, CommandFacts, Facts};
pub use jobs::{JobNotice, take_notices};
pub use scope::{outside_workspace, subject};

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDefinition {
    /// Its name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// JSON Schema of its arguments.
    pub parameters: Value,
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// What the model is given.
    pub content: String,
    /// A short description for activities and history (no file contents).
    pub summary: String,
    /// Whether the call failed.
    pub is_error: bool,
}

/// Everything a call reports: its output, and what a card will need of it later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolReport {
    /// What the model is given, and the summary.
    pub output: ToolOutput,
    /// What the call observed, recorded for cards; none when it observed nothing (for
    /// example, arguments it refused).
    pub facts: Option<Facts>,
    /// The change it applied, as a display-only preview.
    pub preview: Option<AppliedPreview>,
    /// Whether it stopped because it was cancelled.
    pub cancelled: bool,
    /// The transcript projection: at most [`TRANSCRIPT_LINES`] lines of the result a
    /// transcript shows (the first lines read or found, the last lines a command
    /// printed), kept as display data for cards; never the base activity summary.
    pub transcript: Vec<String>,
}

/// Lines in a call's transcript projection.
pub const TRANSCRIPT_LINES: usize = 6;

impl From<ToolOutput> for ToolReport {
    fn from(output: ToolOutput) -> ToolReport {
        ToolReport {
            output,
            facts: None,
            preview: None,
            cancelled: false,
            transcript: Vec::new(),
        }
    }
}

impl ToolReport {
    /// The report of `output` with its facts.
    pub fn with_facts(output: ToolOutput, facts: Facts) -> ToolReport {
        ToolReport {
            facts: Some(facts),
            ..ToolReport::from(output)
        }
    }
}

impl ToolOutput {
    fn failed(summary: &str, content: String) -> ToolOutput {
        ToolOutput {
            content,
            summary: summary.to_owned(),
            is_error: true,
        }
    }
}

/// The tools of this build.
pub fn definitions() -> Vec<ToolDefinition> {
    let mut definitions = vec![
        read::definition(),
        grep::definition(),
        find::definition(),
        list::definition(),
        write::definition(),
        edit::definition(),
        hash_edit::definition(),
        web_fetch::definition(),
        bash::definition(),
    ];
    definitions.extend(jobs::definitions());
    definitions
}

/// Kills every background job: the backend is ending.
pub fn stop_background_jobs() {
    jobs::stop_all();
}

/// Whether this build has a tool of that name.
pub fn exists(name: &str) -> bool {
    TOOL_NAMES.contains(&name)
}

/// The names of [`definitions`], in the same order (a test keeps them in step), so
/// that asking about a name does not build every schema.
const TOOL_NAMES: [&str; 12] = [
    "read",
    "grep",
    "find",
    "list",
    "write",
    "edit",
    "hash_edit",
    "web_fetch",
    "bash",
    "async_bash",
    "bash_log",
    "bash_kill",
];

/// Whether a call needs the client's approval (or a rule) before it runs: every tool
/// of this build that is not read-only, except `bash_kill`, which only stops a job an
/// approved call started.
pub fn needs_approval(name: &str) -> bool {
    exists(name) && !is_read_only(name) && name != "bash_kill"
}

/// Whether a tool only reads: such calls never need an approval. Unknown names are
/// not read-only.
pub fn is_read_only(name: &str) -> bool {
    matches!(name, "read" | "grep" | "find" | "list" | "bash_log")
}

/// What a tool call runs against, beyond its arguments.
pub struct ToolContext<'a> {
    /// The session's working directory; relative paths are joined to it.
    pub cwd: &'a Path,
    /// Where a call may keep files that outlive it (`bash` writes its captures there);
    /// without it, such files go to a temporary directory removed when the call ends.
    pub assets_dir: Option<&'a Path>,
    /// Polled while a call waits (every 50 ms at most); once it returns true the call
    /// stops, killing what it started, and reports itself cancelled.
    pub cancelled: &'a (dyn Fn() -> bool + Sync),
    /// Environment variables a process a tool starts must not see: the backend's own
    /// credentials never enter what the model can read.
    pub hidden_env: &'a [String],
}

/// Runs tool `name` with the model's `arguments` (JSON text) in `cwd`, keeping no assets
/// and never cancelled: `run_in` with the plainest context.
pub fn run(name: &str, arguments: &str, cwd: &Path) -> ToolOutput {
    run_in(
        name,
        arguments,
        &ToolContext {
            cwd,
            assets_dir: None,
            cancelled: &|| false,
            hidden_env: &[],
        },
    )
}

/// Runs tool `name` with the model's `arguments` (JSON text) in `ctx`. An unknown tool
/// or invalid arguments is a failed call the model is told about, not an error of the
/// run.
pub fn run_in(name: &str, arguments: &str, ctx: &ToolContext) -> ToolOutput {
    execute(name, arguments, ctx).output
}

/// Runs tool `name` with the model's `arguments` (JSON text) in `ctx` and reports its
/// output with its facts. An unknown tool or invalid arguments is a failed call the
/// model is told about, not an error of the run.
pub fn execute(name: &str, arguments: &str, ctx: &ToolContext) -> ToolReport {
    let mut report = dispatch(name, arguments, ctx);
    report.transcript = transcript(name, &report.output);
    report
}

/// The transcript projection of a call's output: what a transcript shows of it in at
/// most [`TRANSCRIPT_LINES`] lines, each cut to [`facts::FACT_STRING_BYTES`]. Reads,
/// searches and fetches show their first lines; commands and logs their last lines
/// before the status lines the tool appends; changes show nothing (their applied
/// preview says more), nor does a failed call of a tool that produced no result.
fn transcript(name: &str, output: &ToolOutput) -> Vec<String> {
    let lines: Vec<&str> = output.content.lines().collect();
    let selected: Vec<&str> = match name {
        "read" | "grep" | "find" | "list" | "web_fetch" if !output.is_error => {
            lines.into_iter().take(TRANSCRIPT_LINES).collect()
        }
        "bash" | "bash_log" => {
            // The tool's own status lines come last, each one bracketed.
            let body_end = lines
                .iter()
                .rposition(|l| !(l.starts_with('[') && l.ends_with(']')))
                .map_or(0, |i| i + 1);
            let body = &lines[..body_end];
            let from = body.len().saturating_sub(TRANSCRIPT_LINES);
            body[from..].to_vec()
        }
        _ => Vec::new(),
    };
    selected
        .into_iter()
        .map(|l| facts::cut(l, facts::FACT_STRING_BYTES))
        .collect()
}

/// Runs the tool a call names.
fn dispatch(name: &str, arguments: &str, ctx: &ToolContext) -> ToolReport {
    let cwd = ctx.cwd;
    let Ok(arguments) = serde_json::from_str::<Value>(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "The arguments were not valid JSON.".into(),
        )
        .into();
    };
    let output = match name {
        "read" => return read::run(&arguments, cwd),
        "grep" => return grep::run(&arguments, cwd),
        "find" => return find::run(&arguments, cwd),
        "list" => return list::run(&arguments, cwd),
        "write" => return write::run(&arguments, cwd),
        "edit" => return edit::run(&arguments, cwd),
        "hash_edit" => return hash_edit::run(&arguments, cwd),
        "web_fetch" => return web_fetch::run(&arguments),
        "async_bash" => return jobs::run_start(&arguments, ctx),
        "bash_log" => return jobs::run_log(&arguments),
        "bash_kill" => return jobs::run_kill(&arguments),
        "bash" => return bash::execute(&arguments, ctx),
        _ => ToolOutput::failed("unknown tool", format!("There is no tool named {name:?}.")),
    };
    output.into()
}

/// Longest regex or glob quoted in a label, in characters; the caller bounds the whole
/// label, this only keeps a long pattern from crowding out the rest.
const LABEL_PATTERN_CHARS: usize = 60;

/// A short label of a call for its `started` activity: the tool and its target
/// (`read src/main.rs`, `grep "fn main" in src`, `find **/*.rs`, `list src`). The caller
/// bounds and sanitizes it.
pub fn describe(name: &str, arguments: &str) -> String {
    let arguments = serde_json::from_str::<Value>(arguments).ok();
    let field = |key: &str| {
        arguments
            .as_ref()
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
    };
    let path = field("path");
    let Some(pattern) = field("pattern").filter(|_| matches!(name, "grep" | "find")) else {
        // The path is the target of `read` and `list`.
        return match path {
            Some(path) => format!("{name} {path}"),
            None => name.to_owned(),
        };
    };
    let pattern = short(pattern, LABEL_PATTERN_CHARS);
    let mut label = if name == "grep" {
        format!("grep \"{pattern}\"")
    } else {
        format!("find {pattern}")
    };
    // For the search tools the path is where they look.
    if let Some(path) = path {
        label.push_str(" in ");
        label.push_str(path);
    }
    label
}

/// `text` cut to `max` characters, with an ellipsis when something was cut.
fn short(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use magi_protocol::limits;

    use super::*;

    #[test]
    fn labels_name_the_tool_and_its_target() {
        assert_eq!(describe("read", r#"{"path": "src/a.rs"}"#), "read src/a.rs");
        assert_eq!(
            describe("grep", r#"{"pattern": "fn main"}"#),
            "grep \"fn main\""
        );
        assert_eq!(
            describe("grep", r#"{"pattern": "x", "path": "src"}"#),
            "grep \"x\" in src"
        );
        assert_eq!(
            describe("find", r#"{"pattern": "**/*.rs"}"#),
            "find **/*.rs"
        );
        assert_eq!(describe("list", r#"{"path": "src"}"#), "list src");
        assert_eq!(describe("list", "{}"), "list");
        assert_eq!(describe("grep", "not json"), "grep");
        let long = "a".repeat(100);
        assert_eq!(
            describe("grep", &format!(r#"{{"pattern": "{long}"}}"#)),
            format!("grep \"{}…\"", "a".repeat(LABEL_PATTERN_CHARS))
        );
    }

    #[test]
    fn every_definition_runs_and_refuses_extra_properties() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<&str> = definitions().iter().map(|d| d.name).collect();
        assert_eq!(names, TOOL_NAMES);
        for definition in definitions() {
            assert_eq!(definition.parameters["additionalProperties"], false);
            let out = run(definition.name, r#"{"unexpected": 1}"#, dir.path());
            assert!(out.is_error, "{}", definition.name);
            // The descriptions spell the bounds out; keep them in step with the constants.
            let bound = match definition.name {
                "grep" => limits::GREP_TOOL_MATCHES.to_string(),
                "find" => limits::FIND_TOOL_FILES.to_string(),
                "list" => limits::LIST_TOOL_ENTRIES.to_string(),
                "web_fetch" => "64 KiB".to_owned(),
                "write" | "edit" | "hash_edit" => {
                    format!("{} MiB", limits::WRITE_TOOL_BYTES / 1_048_576)
                }
                "bash" => limits::BASH_TOOL_MAX_TIMEOUT_MS.to_string(),
                "bash_log" => limits::BASH_LOG_MAX_LINES.to_string(),
                "read" => limits::READ_TOOL_LINES.to_string(),
                // Nothing bounded to spell out.
                _ => continue,
            };
            assert!(
                definition.description.contains(&format!("maximum {bound}"))
                    || definition.description.contains(&format!("most {bound}")),
                "{}",
                definition.name
            );
        }
        assert!(!is_read_only("bash"));
    }

    #[test]
    fn run_keeps_working_for_bash_without_a_context() {
        let dir = tempfile::tempdir().unwrap();
        let out = run("bash", r#"{"command": "echo hi"}"#, dir.path());
        assert_eq!(out.summary, "exit 0");
        assert_eq!(out.content, "hi\n[exit code 0]");
    }
}
