//! `[checkpoints]`: whether turns record the workspace's files, and how many turns'
//! checkpoints a workspace's store keeps.

use magi_protocol::limits::CHECKPOINT_KEEP_TURNS;
use serde::{Deserialize, Deserializer};

/// `[checkpoints]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSettings {
    /// Whether each turn's start and end are recorded (on by default). Off, no `git`
    /// runs for checkpoints and nothing can be undone.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
    /// How many turns' checkpoints the workspace's store keeps, newest first, over all
    /// its sessions; older ones are removed (at least 1).
    #[serde(default = "default_keep_turns", deserialize_with = "at_least_one_turn")]
    pub keep_turns: usize,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            enabled: true,
            keep_turns: CHECKPOINT_KEEP_TURNS,
        }
    }
}

fn default_enabled() -> bool {
    true
}

fn default_keep_turns() -> usize {
    CHECKPOINT_KEEP_TURNS
}

fn at_least_one_turn<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    let turns = usize::deserialize(deserializer)?;
    if turns == 0 {
        return Err(serde::de::Error::custom(
            "keep_turns must be at least 1; to record no checkpoints, set enabled = false",
        ));
    }
    Ok(turns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_are_on_and_keep_the_default_number_of_turns_unless_set() {
        let parse = |text: &str| toml::from_str::<CheckpointSettings>(text);
        assert_eq!(parse("").unwrap(), CheckpointSettings::default());
        assert!(parse("").unwrap().enabled);
        assert!(!parse("enabled = false").unwrap().enabled);
        assert_eq!(parse("keep_turns = 5").unwrap().keep_turns, 5);
        let zero = parse("keep_turns = 0").unwrap_err().to_string();
        assert!(zero.contains("enabled = false"), "{zero}");
        assert!(parse("keep_turns = -1").is_err());
        assert!(parse("keep = 5").is_err());
    }
}
