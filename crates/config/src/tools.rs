//! `[tools]`: the tools turned off, whatever a profile lists.
//!
//! ```toml
//! [tools]
//! disabled = ["bash", "async_bash", "mcp__github__create_issue"]
//! ```
//!
//! The project file extends the global one: a tool either file disables is disabled, so
//! a project can turn more off but never turns back on what the global file turned off.
//! Each name remembers the file that named it, so that a name no tool has can be
//! reported with its file once startup knows every tool (the built-ins, the MCP servers'
//! and the client's); this crate knows none of them.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ConfigError;
use crate::location::{Location, toml_error};

/// `[tools]`, merged from both files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSettings {
    /// The tools turned off, each once, global ones first.
    pub disabled: Vec<DisabledTool>,
}

/// A tool a settings file turned off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisabledTool {
    /// The tool's name, as the model would call it.
    pub name: String,
    /// The settings file that named it first.
    pub file: PathBuf,
    /// Where in that file (1-based line and column of the name).
    pub line: usize,
    /// The column, 1-based, in characters.
    pub column: usize,
}

/// One file's `[tools]` table, each name with its place in the text.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolSettings {
    #[serde(default)]
    disabled: Vec<toml::Spanned<String>>,
}

/// Only `[tools]` of a settings file: the rest is checked by `settings.rs`.
#[derive(Debug, Default, Deserialize)]
struct ToolsOnly {
    tools: Option<RawToolSettings>,
}

impl ToolSettings {
    /// Whether tool `name` is turned off.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.disabled.iter().any(|tool| tool.name == name)
    }

    /// The names turned off.
    pub fn disabled_names(&self) -> Vec<String> {
        self.disabled.iter().map(|tool| tool.name.clone()).collect()
    }

    /// Checks every disabled name against the tools this backend has (`known`): the
    /// first unknown one is [`ConfigError::Invalid`], naming its file, line, column and
    /// the name.
    pub fn check(&self, known: impl Fn(&str) -> bool) -> Result<(), ConfigError> {
        match self.disabled.iter().find(|tool| !known(&tool.name)) {
            Some(unknown) => Err(ConfigError::Invalid(format!(
                "{}:{}:{}: key `tools.disabled`: {:?} is no tool this backend offers \
                 (a built-in tool such as \"bash\" or \"web_fetch\", \"skill\", \"task\", \
                 a tool of a configured MCP server as mcp__<server>__<tool>, or a tool \
                 the client registered)",
                unknown.file.display(),
                unknown.line,
                unknown.column,
                unknown.name
            ))),
            None => Ok(()),
        }
    }
}

/// Merges the `[tools]` tables of the global and the project file (each file's text,
/// none when it does not exist, with its path): the union of their disabled tools.
pub(crate) fn merge_tools(
    global: (Option<&str>, &Path),
    project: (Option<&str>, &Path),
) -> Result<ToolSettings, ConfigError> {
    let mut merged = ToolSettings::default();
    for (text, file) in [global, project] {
        let Some(text) = text else { continue };
        let raw: ToolsOnly = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
        for name in raw.tools.unwrap_or_default().disabled {
            let place = Location::of(text, name.span().start);
            let name = name.into_inner();
            if !merged.is_disabled(&name) {
                merged.disabled.push(DisabledTool {
                    name,
                    file: file.to_path_buf(),
                    line: place.line,
                    column: place.column,
                });
            }
        }
    }
    Ok(merged)
}
