//! `[code_mode]`: the limits of a `code_mode` script. Each value is checked where it is
//! read, so an error names its file, line and key.

use magi_protocol::limits::{
    CODE_MODE_MAX_MEMORY_MIB, CODE_MODE_MAX_TIMEOUT_SECS, CODE_MODE_MAX_TOOL_CALLS,
};
use serde::{Deserialize, Deserializer};

/// Default `timeout_secs`.
pub const DEFAULT_CODE_MODE_TIMEOUT_SECS: u64 = 30;
/// Default `max_tool_calls`.
pub const DEFAULT_CODE_MODE_TOOL_CALLS: usize = 64;
/// Default `memory_mib`.
pub const DEFAULT_CODE_MODE_MEMORY_MIB: usize = 64;

/// `[code_mode]`: what stops a script.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeModeSettings {
    /// Wall time a script may take, in seconds, nested calls included and the time
    /// they wait for a person excluded.
    #[serde(default = "default_timeout", deserialize_with = "timeout")]
    pub timeout_secs: u64,
    /// Nested tool calls one script may start.
    #[serde(default = "default_tool_calls", deserialize_with = "tool_calls")]
    pub max_tool_calls: usize,
    /// Memory the script's engine may allocate, in MiB.
    #[serde(default = "default_memory", deserialize_with = "memory")]
    pub memory_mib: usize,
}

impl Default for CodeModeSettings {
    fn default() -> Self {
        CodeModeSettings {
            timeout_secs: DEFAULT_CODE_MODE_TIMEOUT_SECS,
            max_tool_calls: DEFAULT_CODE_MODE_TOOL_CALLS,
            memory_mib: DEFAULT_CODE_MODE_MEMORY_MIB,
        }
    }
}

fn default_timeout() -> u64 {
    DEFAULT_CODE_MODE_TIMEOUT_SECS
}

fn default_tool_calls() -> usize {
    DEFAULT_CODE_MODE_TOOL_CALLS
}

fn default_memory() -> usize {
    DEFAULT_CODE_MODE_MEMORY_MIB
}

/// A whole number from 1 to `max`, or an error naming the key and the range.
fn bounded<'de, D: Deserializer<'de>>(d: D, key: &str, max: u64) -> Result<u64, D::Error> {
    let value = u64::deserialize(d)?;
    if (1..=max).contains(&value) {
        Ok(value)
    } else {
        Err(serde::de::Error::custom(format!(
            "{key} must be from 1 to {max}, not {value}"
        )))
    }
}

fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    bounded(d, "timeout_secs", CODE_MODE_MAX_TIMEOUT_SECS)
}

fn tool_calls<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let max = CODE_MODE_MAX_TOOL_CALLS as u64;
    bounded(d, "max_tool_calls", max).map(|v| usize::try_from(v).unwrap_or(usize::MAX))
}

fn memory<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let max = CODE_MODE_MAX_MEMORY_MIB as u64;
    bounded(d, "memory_mib", max).map(|v| usize::try_from(v).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        code_mode: CodeModeSettings,
    }

    #[test]
    fn defaults_and_bounds() {
        let none: File = toml::from_str("").unwrap();
        assert_eq!(none.code_mode, CodeModeSettings::default());
        let set: File =
            toml::from_str("[code_mode]\ntimeout_secs = 5\nmax_tool_calls = 3\nmemory_mib = 16\n")
                .unwrap();
        assert_eq!(
            set.code_mode,
            CodeModeSettings {
                timeout_secs: 5,
                max_tool_calls: 3,
                memory_mib: 16
            }
        );
        for (text, says) in [
            (
                "timeout_secs = 0",
                "timeout_secs must be from 1 to 3600, not 0",
            ),
            (
                "max_tool_calls = 5000",
                "max_tool_calls must be from 1 to 1024",
            ),
            ("memory_mib = -1", "memory_mib"),
            ("other = 1", "unknown field"),
        ] {
            let error = toml::from_str::<File>(&format!("[code_mode]\n{text}\n"))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}
