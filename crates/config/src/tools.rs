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
}

/// One file's `[tools]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolSettings {
    #[serde(default)]
    disabled: Vec<String>,
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
    /// first unknown one is [`ConfigError::Invalid`], naming its file and the name.
    pub fn check(&self, known: impl Fn(&str) -> bool) -> Result<(), ConfigError> {
        match self.disabled.iter().find(|tool| !known(&tool.name)) {
            Some(unknown) => Err(ConfigError::Invalid(format!(
                "{}: [tools] disabled names {:?}, which is no tool this backend offers \
                 (a built-in tool, skill, task, a tool of a configured MCP server as \
                 mcp__<server>__<tool>, or a tool the client registered)",
                unknown.file.display(),
                unknown.name
            ))),
            None => Ok(()),
        }
    }
}

/// Merges the `[tools]` tables of the global and the project file (each with the file
/// it came from): the union of their disabled tools.
pub(crate) fn merge_tools(
    global: (Option<toml::Value>, &Path),
    project: (Option<toml::Value>, &Path),
) -> Result<ToolSettings, ConfigError> {
    let mut merged = ToolSettings::default();
    for (table, file) in [global, project] {
        let Some(table) = table else { continue };
        let raw: RawToolSettings = table.try_into().map_err(|e: toml::de::Error| {
            ConfigError::Invalid(format!("{}: tools: {e}", file.display()))
        })?;
        for name in raw.disabled {
            if !merged.is_disabled(&name) {
                merged.disabled.push(DisabledTool {
                    name,
                    file: file.to_path_buf(),
                });
            }
        }
    }
    Ok(merged)
}
