//! `[sandbox]`: what the commands the agent runs may touch, enforced by the kernel
//! (Landlock and seccomp; see `docs/sandbox.md`), and the `MAGI_SANDBOX` variable that
//! chooses the mode for one run.

use std::path::PathBuf;

use serde::Deserialize;

use crate::{ConfigError, Env};

/// The variable that chooses the sandbox mode over the settings files.
pub const SANDBOX_ENV: &str = "MAGI_SANDBOX";

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// What commands may write.
    #[serde(default)]
    pub mode: SandboxMode,
    /// What commands may reach over the network.
    #[serde(default)]
    pub network: SandboxNetwork,
    /// Directories (absolute) commands may write besides the workspace and the temporary
    /// directories, under `workspace-write`.
    #[serde(default)]
    pub writable_roots: Vec<WritableRoot>,
    /// Whether the agent's file tools may change the workspace's `.git`.
    #[serde(default)]
    pub git_writable: bool,
    /// Refuse commands when the kernel cannot confine them, rather than run them
    /// unconfined with a notice.
    #[serde(default)]
    pub required: bool,
}

/// `[sandbox] mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes to the workspace, the temporary directories, the device files a shell
    /// needs and `writable_roots`; reads everywhere.
    #[default]
    WorkspaceWrite,
    /// Writes to the temporary directories and device files only.
    ReadOnly,
    /// No confinement.
    Off,
}

impl SandboxMode {
    /// The word settings and the variable use.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }

    /// The mode a word names.
    pub fn parse(word: &str) -> Option<SandboxMode> {
        [
            SandboxMode::WorkspaceWrite,
            SandboxMode::ReadOnly,
            SandboxMode::Off,
        ]
        .into_iter()
        .find(|mode| mode.as_str() == word)
    }
}

/// `[sandbox] network`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxNetwork {
    /// No sockets but Unix ones.
    #[default]
    None,
    /// Unix and IP sockets in a network of the command's own, whose only interface is
    /// its loopback: tests reach the servers they start, not the machine's nor other
    /// hosts (without user namespaces, any destination: see `docs/sandbox.md`).
    Loopback,
    /// No restriction on sockets.
    All,
}

impl SandboxNetwork {
    /// The word settings use.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxNetwork::None => "none",
            SandboxNetwork::Loopback => "loopback",
            SandboxNetwork::All => "all",
        }
    }

    /// The setting a word names.
    pub fn parse(word: &str) -> Option<SandboxNetwork> {
        [
            SandboxNetwork::None,
            SandboxNetwork::Loopback,
            SandboxNetwork::All,
        ]
        .into_iter()
        .find(|network| network.as_str() == word)
    }
}

/// One `writable_roots` entry: an absolute path, refused with its place in the file
/// otherwise (a relative one would depend on where the backend was started).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WritableRoot(pub PathBuf);

impl<'de> Deserialize<'de> for WritableRoot {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let path = PathBuf::deserialize(deserializer)?;
        if !path.is_absolute() {
            return Err(serde::de::Error::custom(format!(
                "{:?} is not an absolute path; write the whole path of the directory",
                path.display().to_string()
            )));
        }
        Ok(WritableRoot(path))
    }
}

impl SandboxSettings {
    /// Applies `MAGI_SANDBOX` when it is set: a mode word replaces `mode`; anything else
    /// is an error naming the variable and the words it takes.
    pub fn apply_env(&mut self, env: &Env) -> Result<(), ConfigError> {
        let Some(raw) = env.get_os(SANDBOX_ENV) else {
            return Ok(());
        };
        let word = raw.to_str().map(str::trim).unwrap_or_default();
        self.mode = SandboxMode::parse(word).ok_or_else(|| {
            ConfigError::Invalid(format!(
                "{SANDBOX_ENV}={:?} is not a sandbox mode: set it to workspace-write, \
                 read-only or off, or unset it",
                raw.to_string_lossy()
            ))
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SandboxSettings, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn defaults_are_workspace_write_without_network() {
        let settings = parse("").unwrap();
        assert_eq!(settings.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(settings.network, SandboxNetwork::None);
        assert!(!settings.required && !settings.git_writable);
        assert!(settings.writable_roots.is_empty());
    }

    #[test]
    fn words_are_read_and_bad_ones_refused() {
        let settings = parse(
            "mode = \"read-only\"\nnetwork = \"loopback\"\nwritable_roots = [\"/opt/cache\"]\n\
             required = true\ngit_writable = true\n",
        )
        .unwrap();
        assert_eq!(settings.mode, SandboxMode::ReadOnly);
        assert_eq!(settings.network, SandboxNetwork::Loopback);
        assert_eq!(
            settings.writable_roots,
            [WritableRoot(PathBuf::from("/opt/cache"))]
        );
        assert!(settings.required && settings.git_writable);
        for bad in [
            "mode = \"strict\"",
            "network = \"some\"",
            "writable_roots = [\"relative/dir\"]",
            "required = \"yes\"",
            "modes = \"off\"",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_variable_replaces_the_mode_and_bad_values_name_it() {
        let mut settings = SandboxSettings::default();
        settings
            .apply_env(&Env::from_pairs([(SANDBOX_ENV, "off")]))
            .unwrap();
        assert_eq!(settings.mode, SandboxMode::Off);
        settings.apply_env(&Env::default()).unwrap();
        assert_eq!(settings.mode, SandboxMode::Off);
        let Err(ConfigError::Invalid(why)) =
            settings.apply_env(&Env::from_pairs([(SANDBOX_ENV, "none")]))
        else {
            panic!("a bad mode was admitted");
        };
        assert!(
            why.starts_with("MAGI_SANDBOX=\"none\" is not a sandbox mode"),
            "{why}"
        );
    }
}
