//! Agent profiles: what an agent is told, which tools it is offered and which model it
//! uses. `[agent] profile` names the primary agent's profile; without it the primary
//! agent has every tool and no extra instructions.
//!
//! ```toml
//! [agent]
//! profile = "careful"
//!
//! [profiles.careful]
//! instructions = "Run the tests before you say a change is done."
//! tools = ["read", "grep", "find", "list", "edit", "bash"]
//! model = "o3"
//! ```
//!
//! A profile that is named but not defined, a tool name this backend does not have, a
//! name off the grammar, or instructions or a model over their bounds fails startup with
//! `profile_invalid`.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::ConfigError;

/// Longest profile instructions, in bytes.
pub const PROFILE_INSTRUCTIONS_BYTES: usize = 16 * 1024;

/// `[agent]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSettings {
    /// The primary agent's profile.
    #[serde(default)]
    pub profile: Option<String>,
}

/// One `[profiles.<name>]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Added to the system instructions.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The tools offered; every tool when absent.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The model, at the selected provider; the selection's when absent.
    #[serde(default)]
    pub model: Option<String>,
}

/// The primary agent's profile, checked: none when `[agent] profile` is absent.
/// `known_tool` says whether a tool name exists in this build.
pub fn primary_profile(
    agent: &AgentSettings,
    profiles: &BTreeMap<String, Profile>,
    known_tool: impl Fn(&str) -> bool,
) -> Result<Option<(String, Profile)>, ConfigError> {
    let invalid = |why: String| ConfigError::ProfileInvalid(why);
    for (name, profile) in profiles {
        if !magi_protocol::names::is_valid_name(name) {
            return Err(invalid(format!(
                "profile name {name:?} is not a valid name"
            )));
        }
        if profile
            .instructions
            .as_ref()
            .is_some_and(|i| i.len() > PROFILE_INSTRUCTIONS_BYTES)
        {
            return Err(invalid(format!(
                "profiles.{name}.instructions over its bound"
            )));
        }
        if let Some(tool) = profile
            .tools
            .iter()
            .flatten()
            .find(|tool| !known_tool(tool))
        {
            return Err(invalid(format!("profiles.{name}: no tool named {tool:?}")));
        }
        if profile
            .model
            .as_ref()
            .is_some_and(|m| m.is_empty() || m.len() > 256 || magi_protocol::text::has_control(m))
        {
            return Err(invalid(format!(
                "profiles.{name}.model is not a model name"
            )));
        }
    }
    match &agent.profile {
        None => Ok(None),
        Some(name) => profiles
            .get(name)
            .map(|profile| Some((name.clone(), profile.clone())))
            .ok_or_else(|| invalid(format!("[agent] profile {name:?} is not defined"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profiles(tools: &[&str]) -> BTreeMap<String, Profile> {
        BTreeMap::from([(
            "careful".to_owned(),
            Profile {
                instructions: Some("Test first.".into()),
                tools: Some(tools.iter().map(|t| (*t).to_owned()).collect()),
                model: None,
            },
        )])
    }

    #[test]
    fn profiles_are_checked_and_the_primary_one_chosen() {
        let known = |t: &str| matches!(t, "read" | "bash");
        let agent = AgentSettings {
            profile: Some("careful".into()),
        };
        let (name, profile) = primary_profile(&agent, &profiles(&["read"]), known)
            .unwrap()
            .unwrap();
        assert_eq!(name, "careful");
        assert_eq!(profile.tools.unwrap(), vec!["read"]);
        assert!(
            primary_profile(&AgentSettings::default(), &profiles(&["read"]), known)
                .unwrap()
                .is_none()
        );
        let unknown_tool = primary_profile(&agent, &profiles(&["teleport"]), known);
        assert!(matches!(unknown_tool, Err(ConfigError::ProfileInvalid(_))));
        let undefined = AgentSettings {
            profile: Some("ghost".into()),
        };
        assert!(matches!(
            primary_profile(&undefined, &profiles(&["read"]), known),
            Err(ConfigError::ProfileInvalid(_))
        ));
    }
}
