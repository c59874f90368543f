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
//! A profile with `subagent = true` is also offered to the primary agent's `task` tool,
//! which delegates a task to it (unless `[agent] disabled_subagents` names it):
//!
//! ```toml
//! [profiles.reviewer]
//! subagent = true
//! description = "Reviews a change and reports problems."
//! tools = ["read", "grep", "find", "list"]
//! paths = ["src/**", "tests/**"]
//! ```
//!
//! A subagent's `tools` and `paths` are its task scope: the ceiling of what it may use.
//!
//! A profile that is named but not defined, a tool name this backend does not have, a
//! name off the grammar, or instructions or a model over their bounds fails startup with
//! `profile_invalid`; so does a subagent profile without a description, one that offers
//! `task` itself, one with `paths` that offers a command tool (a command cannot be held
//! to paths), a bad path glob, or a disabled subagent that is not defined.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::ConfigError;

/// Longest profile instructions, in bytes.
pub const PROFILE_INSTRUCTIONS_BYTES: usize = 16 * 1024;
/// Longest subagent description, in bytes.
pub const PROFILE_DESCRIPTION_BYTES: usize = 1024;
/// The tool that delegates a task to a subagent profile.
pub const TASK_TOOL: &str = "task";
/// The tools that run commands, which `paths` cannot hold.
const COMMAND_TOOLS: [&str; 4] = ["bash", "async_bash", "bash_log", "bash_kill"];

/// `[agent]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSettings {
    /// The primary agent's profile.
    #[serde(default)]
    pub profile: Option<String>,
    /// Subagent profiles not offered to `task`.
    #[serde(default)]
    pub disabled_subagents: Vec<String>,
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
    /// Whether the `task` tool may delegate to this profile.
    #[serde(default)]
    pub subagent: bool,
    /// What the delegating model is told the subagent is for (required for a subagent).
    #[serde(default)]
    pub description: Option<String>,
    /// Globs (relative to the workspace) of the paths a subagent's file tools may use;
    /// any path when absent.
    #[serde(default)]
    pub paths: Option<Vec<String>>,
}

impl Profile {
    /// The matcher of `paths`, when set. Checked at startup, so a bad glob here is a
    /// profile that was never admitted.
    pub fn path_scope(&self) -> Option<globset::GlobSet> {
        let paths = self.paths.as_ref()?;
        path_globs(paths).ok()
    }
}

fn path_globs(paths: &[String]) -> Result<globset::GlobSet, String> {
    let mut set = globset::GlobSetBuilder::new();
    for path in paths {
        let glob = globset::GlobBuilder::new(path)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("path glob {path:?}: {e}"))?;
        set.add(glob);
    }
    set.build().map_err(|e| e.to_string())
}

/// The subagent profiles `task` may delegate to, by name: `subagent = true` and not
/// disabled.
pub fn subagent_profiles(
    agent: &AgentSettings,
    profiles: &BTreeMap<String, Profile>,
) -> Vec<(String, Profile)> {
    profiles
        .iter()
        .filter(|(name, p)| p.subagent && !agent.disabled_subagents.contains(name))
        .map(|(name, p)| (name.clone(), p.clone()))
        .collect()
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
        if profile.subagent {
            check_subagent(name, profile).map_err(invalid)?;
        } else if profile.description.is_some() || profile.paths.is_some() {
            return Err(invalid(format!(
                "profiles.{name}: description and paths need subagent = true"
            )));
        }
    }
    if let Some(name) = agent
        .disabled_subagents
        .iter()
        .find(|name| !profiles.get(*name).is_some_and(|p| p.subagent))
    {
        return Err(invalid(format!(
            "[agent] disabled_subagents names {name:?}, which is not a subagent profile"
        )));
    }
    match &agent.profile {
        None => Ok(None),
        Some(name) => profiles
            .get(name)
            .map(|profile| Some((name.clone(), profile.clone())))
            .ok_or_else(|| invalid(format!("[agent] profile {name:?} is not defined"))),
    }
}

/// The rules only a subagent profile has.
fn check_subagent(name: &str, profile: &Profile) -> Result<(), String> {
    match &profile.description {
        Some(d) if !d.trim().is_empty() && d.len() <= PROFILE_DESCRIPTION_BYTES => {}
        _ => return Err(format!("profiles.{name}: a subagent needs a description")),
    }
    let tools = profile.tools.iter().flatten();
    if tools.clone().any(|t| t == TASK_TOOL) {
        return Err(format!("profiles.{name}: a subagent cannot delegate"));
    }
    if let Some(paths) = &profile.paths {
        if profile.tools.is_none() || tools.clone().any(|t| COMMAND_TOOLS.contains(&t.as_str())) {
            return Err(format!(
                "profiles.{name}: paths cannot hold command tools; list the tools without them"
            ));
        }
        path_globs(paths).map_err(|why| format!("profiles.{name}.paths: {why}"))?;
    }
    Ok(())
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
                ..Profile::default()
            },
        )])
    }

    #[test]
    fn profiles_are_checked_and_the_primary_one_chosen() {
        let known = |t: &str| matches!(t, "read" | "bash");
        let agent = AgentSettings {
            profile: Some("careful".into()),
            ..AgentSettings::default()
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
            ..AgentSettings::default()
        };
        assert!(matches!(
            primary_profile(&undefined, &profiles(&["read"]), known),
            Err(ConfigError::ProfileInvalid(_))
        ));
    }

    fn subagent(tools: Option<&[&str]>, paths: Option<&[&str]>) -> Profile {
        Profile {
            subagent: true,
            description: Some("Reviews changes.".into()),
            tools: tools.map(|t| t.iter().map(|t| (*t).to_owned()).collect()),
            paths: paths.map(|p| p.iter().map(|p| (*p).to_owned()).collect()),
            ..Profile::default()
        }
    }

    #[test]
    fn subagent_profiles_are_checked_and_can_be_disabled() {
        let known = |t: &str| matches!(t, "read" | "bash" | "task");
        let check = |profile: Profile, agent: &AgentSettings| {
            let profiles = BTreeMap::from([("reviewer".to_owned(), profile)]);
            primary_profile(agent, &profiles, known).map(|_| subagent_profiles(agent, &profiles))
        };
        let agent = AgentSettings::default();
        let offered = check(subagent(Some(&["read"]), Some(&["src/**"])), &agent).unwrap();
        assert_eq!(offered.len(), 1);
        let scope = offered[0].1.path_scope().unwrap();
        assert!(scope.is_match("src/lib.rs"));
        assert!(!scope.is_match("secrets/key"));
        let disabled = AgentSettings {
            disabled_subagents: vec!["reviewer".into()],
            ..AgentSettings::default()
        };
        assert!(check(subagent(None, None), &disabled).unwrap().is_empty());
        for (profile, agent) in [
            (subagent(Some(&["task"]), None), &agent),
            (subagent(Some(&["read", "bash"]), Some(&["src/**"])), &agent),
            (subagent(None, Some(&["src/**"])), &agent),
            (subagent(Some(&["read"]), Some(&["src/[z-a]"])), &agent),
            (
                Profile {
                    description: None,
                    ..subagent(None, None)
                },
                &agent,
            ),
            (
                Profile {
                    subagent: false,
                    ..subagent(None, None)
                },
                &agent,
            ),
            (
                subagent(None, None),
                &AgentSettings {
                    disabled_subagents: vec!["ghost".into()],
                    ..AgentSettings::default()
                },
            ),
        ] {
            assert!(
                matches!(
                    check(profile.clone(), agent),
                    Err(ConfigError::ProfileInvalid(_))
                ),
                "{profile:?}"
            );
        }
    }
}
