//! The tools the agent can call. Each has a JSON Schema the model sees, runs against
//! the session's working directory, and reports two things: what the model is given,
//! and a short safe summary for activities and history.

mod ast_grep;
mod bash;
mod builtin;
pub mod code_mode;
mod control;
mod diagnostics;
mod edit;
mod editing;
mod editor;
pub mod facts;
mod find;
mod grep;
mod hash_edit;
mod jobs;
mod list;
mod preview;
mod process;
mod proposal;
mod read;
pub mod sandbox;
mod scope;
mod todo;
pub mod tracking;
mod view_image;
mod walk;
mod web_fetch;
mod write;

use std::path::Path;

use serde_json::Value;

pub use bash::running_facts as running_command_facts;
pub use builtin::{BuiltinTool, CardFamily, SubjectArgument, TranscriptLines};
pub use control::{ControlRequest, cut_title, parse_control};
pub use diagnostics::{Projection, process_diagnostics};
pub use editor::{EditorFiles, EditorText};
pub use facts::{AppliedPreview, CommandFacts, Facts};
pub use jobs::{JobLookup, JobNotice, JobTail, job_tail, stop_job, take_notices};
pub use process::await_end;
pub use process::hook::{HookCommand, HookEnd, HookRun, run_hook};
pub use process::launcher;
pub use process::live::LiveOutput;
pub use proposal::proposed_change;
pub use scope::{outside_workspace, subject};
pub use view_image::{IMAGE_ASSET_FILES, check_attachment, keep_attachment, kept_image};
pub use walk::walker;

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

/// The tools of this build, in the order the model is offered them.
pub fn definitions() -> Vec<ToolDefinition> {
    BuiltinTool::ALL.iter().map(|t| t.definition()).collect()
}

/// Kills every background job: the backend is ending.
pub fn stop_background_jobs() {
    jobs::stop_all();
}

/// Whether this build has a tool of that name.
pub fn exists(name: &str) -> bool {
    BuiltinTool::from_name(name).is_some()
}

/// Whether a tool only reads: such calls never need an approval. Unknown names are
/// not read-only.
pub fn is_read_only(name: &str) -> bool {
    BuiltinTool::from_name(name).is_some_and(BuiltinTool::is_read_only)
}

/// Whether a call only reads, judged by its tool and, for `bash`, by its command
/// (`ls`, `cat x | head`, `git status`: see the tools documentation): such calls may
/// run beside other reads, while a call that may change something runs alone, in the
/// model's order. Approval and recovery go by the tool alone ([`is_read_only`]): a
/// command that reads is still a command.
pub fn call_only_reads(name: &str, arguments: &str) -> bool {
    match BuiltinTool::from_name(name) {
        Some(BuiltinTool::Bash) => bash::only_reads(arguments),
        Some(tool) => tool.is_read_only(),
        None => false,
    }
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
    /// Called by `bash` just before it starts its command, once everything else is
    /// ready: it returns once the call's claim is durable, true, or false when the
    /// claim could not be recorded (then the command must not start). The call service
    /// waits for it itself before it runs any other tool; elsewhere it is `&|| true`.
    pub durable: &'a (dyn Fn() -> bool + Sync),
    /// Where a `bash` command's newest output goes while it runs, for its live card;
    /// none when nobody shows it.
    pub live_output: Option<std::sync::Arc<LiveOutput>>,
    /// Whether a command runs confined read-only whatever the sandbox's mode (the
    /// session's approval mode is `plan`).
    pub sandbox_read_only: bool,
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
            durable: &|| true,
            live_output: None,
            sandbox_read_only: false,
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
    execute_with(name, arguments, ctx, None)
}

/// `execute`, with `read`, `write`, `edit` and `hash_edit` reading and writing the
/// workspace's files through `editor` when there is one (`client.files`).
pub fn execute_with(
    name: &str,
    arguments: &str,
    ctx: &ToolContext,
    editor: Option<&dyn EditorFiles>,
) -> ToolReport {
    let Some(tool) = BuiltinTool::from_name(name) else {
        return ToolOutput::failed("unknown tool", format!("There is no tool named {name:?}."))
            .into();
    };
    let mut report = dispatch(tool, arguments, ctx, editor);
    report.transcript = transcript(tool, &report.output);
    // A change's size is counted over the whole of it, which only its preview saw.
    if let (
        Some(preview),
        Some(Facts::Change {
            lines_added,
            lines_removed,
            ..
        }),
    ) = (&report.preview, &mut report.facts)
    {
        *lines_added = Some(preview.added);
        *lines_removed = Some(preview.removed);
    }
    report
}

/// The transcript projection of a call's output: what a transcript shows of it in at
/// most [`TRANSCRIPT_LINES`] lines, each cut to [`facts::FACT_STRING_BYTES`]. Reads,
/// searches and fetches show their first lines; commands and logs their last lines
/// before the status lines the tool appends; changes show nothing (their applied
/// preview says more), nor does a failed call of a tool that produced no result.
fn transcript(tool: BuiltinTool, output: &ToolOutput) -> Vec<String> {
    let lines: Vec<&str> = output.content.lines().collect();
    let selected: Vec<&str> = match tool.transcript() {
        TranscriptLines::Head if !output.is_error => {
            lines.into_iter().take(TRANSCRIPT_LINES).collect()
        }
        TranscriptLines::Tail => {
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
fn dispatch(
    tool: BuiltinTool,
    arguments: &str,
    ctx: &ToolContext,
    editor: Option<&dyn EditorFiles>,
) -> ToolReport {
    let cwd = ctx.cwd;
    let Ok(arguments) = serde_json::from_str::<Value>(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "The arguments were not valid JSON.".into(),
        )
        .into();
    };
    match tool {
        BuiltinTool::Read => read::run_with(&arguments, cwd, editor),
        BuiltinTool::Grep => grep::run(&arguments, cwd),
        BuiltinTool::Find => find::run(&arguments, cwd),
        BuiltinTool::List => list::run(&arguments, cwd),
        BuiltinTool::AstGrep => ast_grep::run(&arguments, cwd),
        BuiltinTool::Write => write::run_with(&arguments, cwd, editor),
        BuiltinTool::Edit => edit::run_with(&arguments, cwd, editor),
        BuiltinTool::HashEdit => hash_edit::run_with(&arguments, cwd, editor),
        BuiltinTool::WebFetch => web_fetch::run(&arguments),
        BuiltinTool::AsyncBash => jobs::run_start(&arguments, ctx),
        BuiltinTool::BashLog => jobs::run_log(&arguments),
        BuiltinTool::BashKill => jobs::run_kill(&arguments),
        BuiltinTool::Bash => bash::execute(&arguments, ctx),
        BuiltinTool::MagiControl => control::run_elsewhere(),
        BuiltinTool::ViewImage => view_image::run(&arguments, ctx),
        BuiltinTool::Todo => todo::run(&arguments),
        BuiltinTool::CodeMode => ToolOutput::failed(
            "not run",
            "code_mode runs only inside a session's turn, which runs its nested calls.".into(),
        )
        .into(),
    }
}

/// Longest regex or glob quoted in a label, in characters; the caller bounds the whole
/// label, this only keeps a long pattern from crowding out the rest.
const LABEL_PATTERN_CHARS: usize = 60;

/// Longest command line quoted in a label, in characters: enough to recognise the
/// command while it runs; the card's command block carries it whole.
const LABEL_COMMAND_CHARS: usize = 200;

/// A short label of a call for its `started` activity: the tool and its target
/// (`read src/main.rs`, `grep "fn main" in src`, `find **/*.rs`, `list src`, `bash cargo
/// test` with the command's first line, `ast_grep "foo($A)" in src`, `web_fetch https://…`, `magi_control usage`), so
/// a person sees what a call acts on from its start. The caller bounds and sanitizes it
/// (secrets redacted).
pub fn describe(name: &str, arguments: &str) -> String {
    let arguments = serde_json::from_str::<Value>(arguments).ok();
    let field = |key: &str| {
        arguments
            .as_ref()
            .and_then(|v| v.get(key))
            .and_then(Value::as_str)
    };
    if BuiltinTool::from_name(name) == Some(BuiltinTool::MagiControl) {
        // The operation, never the title: the card shows a title once it is checked.
        return match field("operation") {
            Some(operation) => format!("{name} {}", short(operation, LABEL_PATTERN_CHARS)),
            None => name.to_owned(),
        };
    }
    if BuiltinTool::from_name(name) == Some(BuiltinTool::Todo) {
        return todo::describe(arguments.as_ref());
    }
    if BuiltinTool::from_name(name) == Some(BuiltinTool::CodeMode) {
        // The script's first line says what it is about; the card has no room for more.
        let first = field("code")
            .and_then(|code| code.lines().find(|l| !l.trim().is_empty()))
            .map(|l| short(l.trim(), LABEL_PATTERN_CHARS));
        return match first {
            Some(first) => format!("{name} {first}"),
            None => name.to_owned(),
        };
    }
    let subject = match BuiltinTool::from_name(name).map(BuiltinTool::subject) {
        Some(SubjectArgument::Command) => field("command").map(|command| {
            let first = command.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let more = command.trim().lines().count() > 1;
            let shown = short(first.trim(), LABEL_COMMAND_CHARS);
            if more { format!("{shown} …") } else { shown }
        }),
        Some(SubjectArgument::Url) => field("url").map(|url| short(url, LABEL_COMMAND_CHARS)),
        _ => None,
    };
    if let Some(subject) = subject.filter(|s| !s.is_empty()) {
        return format!("{name} {subject}");
    }
    let path = field("path");
    let search = BuiltinTool::from_name(name).filter(|t| {
        matches!(
            t,
            BuiltinTool::Grep | BuiltinTool::Find | BuiltinTool::AstGrep
        )
    });
    let Some(pattern) = field("pattern").filter(|_| search.is_some()) else {
        // The path is the target of `read` and `list`.
        return match path {
            Some(path) => format!("{name} {path}"),
            None => name.to_owned(),
        };
    };
    let pattern = short(pattern, LABEL_PATTERN_CHARS);
    let mut label = match search {
        Some(BuiltinTool::Grep) => format!("grep \"{pattern}\""),
        Some(BuiltinTool::AstGrep) => format!("ast_grep \"{pattern}\""),
        _ => format!("find {pattern}"),
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
    fn every_description_is_within_its_byte_budget() {
        // Every description goes with every request: docs/prompt.md's budget holds.
        for tool in definitions() {
            let bound = if tool.name == BuiltinTool::CodeMode.name() {
                limits::CODE_MODE_DESCRIPTION_BYTES
            } else {
                limits::TOOL_DESCRIPTION_BYTES
            };
            assert!(
                tool.description.len() <= bound,
                "{}: {} bytes",
                tool.name,
                tool.description.len()
            );
        }
    }

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
        assert_eq!(
            describe("magi_control", r#"{"operation": "title", "title": "x"}"#),
            "magi_control title"
        );
        assert_eq!(describe("magi_control", "{}"), "magi_control");
        assert_eq!(
            describe("bash", r#"{"command": "cargo test -q"}"#),
            "bash cargo test -q"
        );
        assert_eq!(
            describe("async_bash", r#"{"command": "\n  make\nmake install"}"#),
            "async_bash make …"
        );
        assert_eq!(
            describe("web_fetch", r#"{"url": "https://example.com/a"}"#),
            "web_fetch https://example.com/a"
        );
        assert_eq!(describe("bash", "{}"), "bash");
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
        let wire: Vec<&str> = BuiltinTool::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(names, wire);
        for definition in definitions() {
            assert_eq!(definition.parameters["additionalProperties"], false);
            let out = run(definition.name, r#"{"unexpected": 1}"#, dir.path());
            assert!(out.is_error, "{}", definition.name);
            // The descriptions spell the bounds out; keep them in step with the constants.
            let Some(tool) = BuiltinTool::from_name(definition.name) else {
                panic!("{} is no built-in", definition.name);
            };
            let bound = match tool {
                BuiltinTool::Grep => limits::GREP_TOOL_MATCHES.to_string(),
                BuiltinTool::Find => limits::FIND_TOOL_FILES.to_string(),
                BuiltinTool::AstGrep => limits::AST_GREP_TOOL_MATCHES.to_string(),
                BuiltinTool::List => limits::LIST_TOOL_ENTRIES.to_string(),
                BuiltinTool::WebFetch => "64 KiB".to_owned(),
                BuiltinTool::Write | BuiltinTool::Edit | BuiltinTool::HashEdit => {
                    format!("{} MiB", limits::WRITE_TOOL_BYTES / 1_048_576)
                }
                BuiltinTool::Bash => limits::BASH_TOOL_MAX_TIMEOUT_MS.to_string(),
                BuiltinTool::BashLog => limits::BASH_LOG_MAX_LINES.to_string(),
                BuiltinTool::Read => limits::READ_TOOL_LINES.to_string(),
                BuiltinTool::MagiControl => limits::TITLE_CHARS.to_string(),
                BuiltinTool::ViewImage => limits::VIEW_IMAGE_SIDE_PIXELS.to_string(),
                BuiltinTool::Todo => limits::TODO_ITEMS.to_string(),
                // Nothing bounded to spell out; Code Mode's limits are the settings'.
                BuiltinTool::AsyncBash | BuiltinTool::BashKill | BuiltinTool::CodeMode => {
                    continue;
                }
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
    fn a_call_reads_by_its_tool_or_its_command() {
        assert!(call_only_reads("read", r#"{"path":"x"}"#));
        assert!(!call_only_reads("write", r#"{"path":"x","content":""}"#));
        assert!(call_only_reads("bash", r#"{"command":"git status"}"#));
        assert!(call_only_reads(
            "bash",
            r#"{"command":"ls","timeout_ms":5000}"#
        ));
        assert!(!call_only_reads("bash", r#"{"command":"rm x"}"#));
        // Arguments the tool would refuse are no call that reads.
        assert!(!call_only_reads("bash", r#"{"command":"ls","extra":1}"#));
        assert!(!call_only_reads("bash", "not json"));
        assert!(!call_only_reads("async_bash", r#"{"command":"ls"}"#));
        assert!(!call_only_reads("mcp__server__read", "{}"));
    }

    #[test]
    fn run_keeps_working_for_bash_without_a_context() {
        let dir = tempfile::tempdir().unwrap();
        let out = run("bash", r#"{"command": "echo hi"}"#, dir.path());
        assert_eq!(out.summary, "exit 0");
        assert_eq!(out.content, "hi\n[exit code 0]");
    }
}
