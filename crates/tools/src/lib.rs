//! The tools the agent can call. Each has a JSON Schema the model sees, runs against
//! the session's working directory, and reports two things: what the model is given,
//! and a short safe summary for activities and history.

mod read;

use std::path::Path;

use serde_json::Value;

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
    vec![read::definition()]
}

/// Runs tool `name` with the model's `arguments` (JSON text) in `cwd`. An unknown tool
/// or invalid arguments is a failed call the model is told about, not an error of the
/// run.
pub fn run(name: &str, arguments: &str, cwd: &Path) -> ToolOutput {
    let Ok(arguments) = serde_json::from_str::<Value>(arguments) else {
        return ToolOutput::failed(
            "invalid arguments",
            "The arguments were not valid JSON.".into(),
        );
    };
    match name {
        "read" => read::run(&arguments, cwd),
        _ => ToolOutput::failed("unknown tool", format!("There is no tool named {name:?}.")),
    }
}

/// A short, safe label of a call for its `started` activity: the tool and its target.
pub fn describe(name: &str, arguments: &str) -> String {
    let target = serde_json::from_str::<Value>(arguments)
        .ok()
        .and_then(|v| v.get("path").and_then(Value::as_str).map(str::to_owned));
    match target {
        Some(path) => format!("{name} {path}"),
        None => name.to_owned(),
    }
}
