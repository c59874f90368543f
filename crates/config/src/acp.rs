//! `[acp]`: how `magi-code acp` uses what an editor offers (docs/acp.md).

use serde::Deserialize;

/// `[acp]`: the editor's own facilities an ACP session may use instead of ours.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpSettings {
    /// Run `bash` calls in the editor's terminal (ACP `terminal/*`) when the editor
    /// offers it. Off by default: there our output capture bounds, our kill of the
    /// command's process group and our sandbox do not hold.
    #[serde(default)]
    pub client_terminals: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_unless_set_and_strict() {
        let parsed: AcpSettings = toml::from_str("").unwrap();
        assert!(!parsed.client_terminals);
        let parsed: AcpSettings = toml::from_str("client_terminals = true").unwrap();
        assert!(parsed.client_terminals);
        assert!(toml::from_str::<AcpSettings>("client_terminals = \"yes\"").is_err());
        assert!(toml::from_str::<AcpSettings>("terminals = true").is_err());
    }
}
