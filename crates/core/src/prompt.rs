//! What the model is told before the conversation: the system prompt, rendered once
//! when an agent's exchange is made, from what does not change while the backend
//! serves the session with that model, so every request of a session begins with the
//! same bytes. `docs/prompt.md` is its contract.
//!
//! In order: the base instructions (`base.md`, its tool guidance from `tools.md` for
//! the tools the agent is offered; or the person's `[instructions] base` file), the
//! person's `[instructions] append` file, the environment (`environment`), the
//! person's instruction files, the skills, the primary profile's instructions. What
//! changes during a session (the date, the git state, the approval mode) is no part of
//! it: it goes with each turn's prompt (`environment::turn_note`).

pub(crate) mod environment;
mod git;

use std::path::Path;

use crate::agent::Agent;

/// The built-in base instructions; `{tools}` is where the tool guidance goes.
const BASE: &str = include_str!("prompt/base.md");
/// The tool guidance: one line per job, each after the `[tool]` it needs offered.
const TOOLS: &str = include_str!("prompt/tools.md");
/// Where the tool guidance goes in [`BASE`].
const TOOLS_PLACE: &str = "{tools}";

/// The system prompt of `agent` working in `cwd`, offered the tools `offers` says.
pub(crate) fn system(agent: &Agent, cwd: &Path, offers: &dyn Fn(&str) -> bool) -> String {
    let instructions = &agent.instructions;
    let mut text = match &instructions.base {
        Some(own) => own.text.trim_end().to_owned(),
        None => base(offers),
    };
    if let Some(append) = &instructions.append {
        text.push_str("\n\n");
        text.push_str(append.text.trim_end());
    }
    text.push_str("\n\n");
    text.push_str(&environment::stable(agent, cwd));
    // The instruction files follow, in their documented order, each under its source.
    for instruction in &instructions.files {
        text.push_str(&format!(
            "\n\n# Instructions from {}\n\n{}",
            instruction.source,
            instruction.text.trim_end()
        ));
    }
    if !agent.skills.is_empty() {
        text.push_str(
            "\n\n# Skills\n\nLoad a skill's instructions with the `skill` tool when a task \
             needs it:",
        );
        for skill in agent.skills.iter() {
            text.push_str(&format!("\n- {}: {}", skill.name, skill.description));
        }
    }
    if let Some((name, profile)) = agent.profile.as_deref()
        && let Some(own) = &profile.instructions
    {
        text.push_str(&format!(
            "\n\n# Instructions of the {name} profile\n\n{}",
            own.trim_end()
        ));
    }
    text
}

/// The built-in base instructions with the guidance for the tools `offers` says are
/// offered.
fn base(offers: &dyn Fn(&str) -> bool) -> String {
    let guidance: Vec<&str> = TOOLS
        .lines()
        .filter_map(|line| {
            let (tool, said) = line.strip_prefix('[')?.split_once("] ")?;
            offers(tool).then_some(said)
        })
        .collect();
    BASE.trim_end().replace(TOOLS_PLACE, &guidance.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_guidance_is_that_of_the_tools_offered() {
        let every = base(&|_| true);
        assert!(!every.contains(TOOLS_PLACE));
        assert!(every.contains("`async_bash`") && every.contains("`code_mode`"));
        let without_code_mode = base(&|tool| tool != "code_mode");
        assert!(!without_code_mode.contains("`code_mode`"));
        assert!(without_code_mode.contains("`hash_edit`"));
        // Every line of the guidance names the tool it needs offered.
        for line in TOOLS.lines() {
            let (tool, said) = line
                .strip_prefix('[')
                .and_then(|rest| rest.split_once("] "))
                .unwrap_or_else(|| panic!("a line without its tool: {line}"));
            assert!(said.contains(&format!("`{tool}`")), "{line}");
        }
    }
}
